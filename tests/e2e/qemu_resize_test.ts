/**
 * resizeDisk end to end: success means the resize task ended and the disk's `size=` in the config
 * reached the target computed before the call; refusals, task errors and a size that never arrives
 * fail with what was expected and what was observed — after the guest record is written.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, isCheckRequest, withEnv, written } from "./env.ts";

/** The demo cluster, with a 32G scsi0 and a CD-ROM on the stopped VM 102. */
function guestsWithDisks(): SimGuest[] {
  return demoGuests().map((g) =>
    g.vmid === 102
      ? {
        ...g,
        config: {
          ...g.config,
          scsi0: "local-lvm:vm-102-disk-0,iothread=1,size=32G",
          ide2: "none,media=cdrom",
        },
      }
      : g
  );
}

const scsi0 = (env: Env) => String(env.sim.guest(102)?.config.scsi0);

Deno.test("resizeDisk: +1G grows the disk through the resize task to the target", async () => {
  await withEnv({ guests: guestsWithDisks() }, async (env) => {
    const r = await env.run("resizeDisk", {
      vmid: 102,
      disk: "scsi0",
      size: "+1G",
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(scsi0(env), "local-lvm:vm-102-disk-0,iothread=1,size=33G");
    const rec = written(r, "vm-102");
    assert.match(String(rec.lastTask), /^UPID:pve1:.*:resize:102:/);
    assert.equal(rec.lastOperation, "resizeDisk");
    assert.ok(
      r.logs.some((l) =>
        /scsi0 .* is 33G \(target 33G, was 32G\)/.test(l.message)
      ),
    );
  });
});

Deno.test("resizeDisk: an absolute size grows the disk to that size, scsi0 by default", async () => {
  await withEnv({ guests: guestsWithDisks() }, async (env) => {
    const r = await env.run("resizeDisk", { vmid: 102, size: "40G" });
    assert.equal(r.status, "succeeded", r.error);
    assert.match(scsi0(env), /size=40G$/);
    assert.equal(written(r, "vm-102").maxDiskBytes, 40 * 2 ** 30);
  });
});

Deno.test("resizeDisk: shrinking fails with PVE's refusal and records the guest", async () => {
  await withEnv({ guests: guestsWithDisks() }, async (env) => {
    const r = await env.run("resizeDisk", { vmid: 102, size: "16G" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /shrinking disks is not supported/);
    assert.match(scsi0(env), /size=32G$/);
    assert.equal(written(r, "vm-102").lastOperation, "resizeDisk");
  });
});

Deno.test("resizeDisk: an unknown disk fails naming it before any change", async () => {
  await withEnv({ guests: guestsWithDisks() }, async (env) => {
    const r = await env.run("resizeDisk", {
      vmid: 102,
      disk: "virtio3",
      size: "+1G",
    });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /has no disk virtio3 \(its disks: ide2, scsi0\)/,
    );
    assert.ok(!env.sim.requests.some((q) => q.method === "PUT"));
    assert.equal(written(r, "vm-102").status, "stopped");
  });
});

Deno.test("resizeDisk: a resize task that fails is reported with the task's error", async () => {
  await withEnv({ guests: guestsWithDisks() }, async (env) => {
    env.sim.nextTask({ exitstatus: "lvextend: insufficient free space" });
    const r = await env.run("resizeDisk", { vmid: 102, size: "+1G" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /insufficient free space/);
    assert.match(String(written(r, "vm-102").lastTask), /:resize:102:/);
  });
});

Deno.test("resizeDisk: PVE before 8 answering null is verified against the config at once", async () => {
  await withEnv({ guests: guestsWithDisks() }, async (env) => {
    // The fault stands in for the old synchronous answer; the sim's state for its effect, which
    // shows right after the answer.
    env.sim.fault({
      method: "PUT",
      pathRegex: "/qemu/102/resize$",
      kind: "body",
      body: '{"data":null}',
    });
    const run = env.run("resizeDisk", { vmid: 102, size: "+2G" });
    while (!env.sim.requests.some((q) => q.method === "PUT")) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    env.sim.setGuest(102, {
      config: {
        ...env.sim.guest(102)?.config,
        scsi0: "local-lvm:vm-102-disk-0,iothread=1,size=34G",
      },
    });
    const r = await run;
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-102").lastTask, undefined);
  });
});

Deno.test("resizeDisk: a size that never arrives fails with the expected and the observed size", async () => {
  await withEnv({
    guests: guestsWithDisks(),
    globalArgs: { taskTimeoutSec: 2 },
  }, async (env) => {
    env.sim.fault({
      method: "PUT",
      pathRegex: "/qemu/102/resize$",
      kind: "body",
      body: '{"data":null}',
    });
    const r = await env.run("resizeDisk", { vmid: 102, size: "+1G" });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /did not reach the target size: expected at least 33G, observed 32G/,
    );
    assert.equal(written(r, "vm-102").lastOperation, "resizeDisk");
  });
});

Deno.test("resizeDisk: a CD-ROM is refused by PVE in its own words", async () => {
  await withEnv({ guests: guestsWithDisks() }, async (env) => {
    const r = await env.run("resizeDisk", {
      vmid: 102,
      disk: "ide2",
      size: "10G",
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /you can't resize a cdrom/);
  });
});

Deno.test("resizeDisk: a malformed size is refused before any request", async () => {
  await withEnv({ guests: guestsWithDisks() }, async (env) => {
    const r = await env.run("resizeDisk", { vmid: 102, size: "20GB" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /size/);
    const sent = env.sim.requests.filter((q) => !isCheckRequest(q.path));
    assert.deepEqual(sent, []);
  });
});
