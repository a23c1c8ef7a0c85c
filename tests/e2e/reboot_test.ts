/**
 * reboot end to end, both models: success means the guest runs again with a NEW boot (another pid)
 * — a reboot task that ended OK is not enough; an HA-managed VM is started again by the HA manager
 * and proven the same way; pending changes apply.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { withEnv, written } from "./env.ts";

function vm(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 720,
    node: "pve1",
    type: "qemu",
    name: "web",
    status: "running",
    tags: ["swamp"],
    config: { memory: 1024 },
    ...over,
  };
}

const quick = { taskTimeoutSec: 2, pollIntervalSec: 1 };

Deno.test("reboot: the VM runs again with another QEMU process, pending changes applied", async () => {
  await withEnv({
    guests: [...demoGuests(), vm({ pending: { memory: 2048 } })],
  }, async (env) => {
    const pid = env.sim.guest(720)?.pid;
    const r = await env.run("reboot", { vmid: 720 });
    assert.equal(r.status, "succeeded", r.error);
    const g = env.sim.guest(720);
    assert.equal(g?.status, "running");
    assert.notEqual(g?.pid, pid);
    assert.equal(g?.config.memory, 2048);
    assert.equal(written(r, "vm-720").status, "running");
    assert.ok(
      r.logs.some((l) => new RegExp(`pid ${pid} → ${g?.pid}`).test(l.message)),
    );
  });
});

Deno.test("reboot: a task that ends OK without a reboot fails: the same boot goes on", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm()], globalArgs: quick },
    async (env) => {
      env.sim.nextTask({ noEffect: true });
      const r = await env.run("reboot", { vmid: 720 });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /no new boot was observed .* still running the same boot \(pid \d+\)/,
      );
    },
  );
});

Deno.test("reboot: an HA-managed VM comes back through the HA manager and is verified the same way", async () => {
  const ha = { managed: true, state: "started", applyDelayMs: 300 };
  await withEnv({ guests: [...demoGuests(), vm({ ha })] }, async (env) => {
    const pid = env.sim.guest(720)?.pid;
    const r = await env.run("reboot", { vmid: 720 });
    assert.equal(r.status, "succeeded", r.error);
    assert.notEqual(env.sim.guest(720)?.pid, pid);
  });
});

Deno.test("reboot: an HA-managed VM the HA manager never starts again fails, pointing at it", async () => {
  const ha = { managed: true, state: "started", neverApplies: true };
  await withEnv(
    { guests: [...demoGuests(), vm({ ha })], globalArgs: quick },
    async (env) => {
      const r = await env.run("reboot", { vmid: 720 });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /no new boot was observed.*ha-manager status/,
      );
      assert.equal(written(r, "vm-720").status, "stopped");
    },
  );
});

Deno.test("reboot: a stopped VM has nothing to reboot, and nothing is sent", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ status: "stopped" })] },
    async (env) => {
      const r = await env.run("reboot", { vmid: 720 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /is not running/);
      assert.equal(
        env.sim.requests.filter((q) => q.path.endsWith("/reboot")).length,
        0,
      );
    },
  );
});

Deno.test("reboot: an unmanaged VM is refused unless force", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ tags: [] })] },
    async (env) => {
      const r = await env.run("reboot", { vmid: 720 });
      assert.match(r.error ?? "", /refusing to reboot VM 720/);
      assert.equal(
        (await env.run("reboot", { vmid: 720, force: true })).status,
        "succeeded",
      );
    },
  );
});

Deno.test("reboot (lxc): the container runs again with another init", async () => {
  const ct: SimGuest = {
    vmid: 730,
    node: "pve1",
    type: "lxc",
    name: "ct",
    status: "running",
    tags: ["swamp"],
    config: { hostname: "ct", rootfs: "local-lvm:vm-730-disk-0,size=8G" },
  };
  await withEnv(
    { guests: [...demoGuests(), ct], model: lxcModel },
    async (env) => {
      const pid = env.sim.guest(730)?.pid;
      const r = await env.run("reboot", { vmid: 730 });
      assert.equal(r.status, "succeeded", r.error);
      assert.notEqual(env.sim.guest(730)?.pid, pid);
      assert.equal(written(r, "ct-730").status, "running");
    },
  );
});

Deno.test("setConfig applyPending reboot: a pending change is applied by a verified reboot, nothing pending after", async () => {
  await withEnv({ guests: [...demoGuests(), vm()] }, async (env) => {
    const pid = env.sim.guest(720)?.pid;
    const r = await env.run("setConfig", {
      vmid: 720,
      config: { memory: 4096 },
      applyPending: "reboot",
    });
    assert.equal(r.status, "succeeded", r.error);
    const g = env.sim.guest(720);
    assert.notEqual(g?.pid, pid);
    assert.equal(String(g?.config.memory), "4096");
    assert.deepEqual(g?.pending, {});
    assert.equal(written(r, "vm-720").pending, undefined);
    assert.ok(r.logs.some((l) => /nothing is pending/.test(l.message)));
  });
});

Deno.test("setConfig applyPending reboot: nothing pending, no reboot", async () => {
  await withEnv({ guests: [...demoGuests(), vm()] }, async (env) => {
    const pid = env.sim.guest(720)?.pid;
    const r = await env.run("setConfig", {
      vmid: 720,
      config: { description: "web" },
      applyPending: "reboot",
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(720)?.pid, pid);
    assert.equal(
      env.sim.requests.filter((q) => q.path.endsWith("/reboot")).length,
      0,
    );
  });
});

Deno.test("setConfig applyPending reboot: a reboot without a new boot fails, the change still pending", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm()], globalArgs: quick },
    async (env) => {
      env.sim.nextTask({ noEffect: true });
      const r = await env.run("setConfig", {
        vmid: 720,
        config: { memory: 4096 },
        applyPending: "reboot",
      });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /applyPending: .*no new boot was observed/);
      assert.deepEqual(written(r, "vm-720").pending, { memory: "4096" });
    },
  );
});
