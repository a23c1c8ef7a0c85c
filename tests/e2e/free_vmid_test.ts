/**
 * Free VMIDs end to end: clone and lxc create without `vmid` claim the lowest free one (within
 * `vmidRange`) with the creating request itself — /cluster/nextid only proposes — and say which;
 * an id another guest takes between the proposal and the request is skipped, never counted as ours.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { withEnv, written } from "./env.ts";

const TEMPLATE: SimGuest = {
  vmid: 9000,
  node: "pve1",
  type: "qemu",
  name: "tmpl",
  status: "stopped",
  config: { template: 1, scsi0: "local-zfs:base-9000-disk-0,size=8G" },
};

const RANGE = { min: 500, max: 599 };

Deno.test("clone without vmid: the lowest free VMID of the range is claimed and recorded", async () => {
  await withEnv({ guests: [...demoGuests(), TEMPLATE] }, async (env) => {
    const r = await env.run("clone", {
      templateId: 9000,
      name: "web2",
      vmidRange: RANGE,
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-500").name, "web2");
    assert.equal(env.sim.guest(500)?.name, "web2");
    assert.ok(r.logs.some((l) => /claimed the free VMID 500/.test(l.message)));
  });
});

Deno.test("clone without vmid: an id taken after /cluster/nextid proposed it is skipped", async () => {
  await withEnv({ guests: [...demoGuests(), TEMPLATE] }, async (env) => {
    // Another run's create wins VMID 500 while ours is between the proposal and the clone.
    env.sim.fault({
      method: "POST",
      pathRegex: "/qemu/9000/clone$",
      kind: "status",
      status: 500,
      message: "unable to create VM 500: config file already exists",
    });
    const r = await env.run("clone", {
      templateId: 9000,
      name: "web2",
      vmidRange: RANGE,
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-501").name, "web2");
    assert.deepEqual(r.written.map((w) => w.instance), ["vm-501"]);
    assert.ok(
      r.logs.some((l) =>
        /VMID 500 was claimed by another guest/.test(l.message)
      ),
    );
  });
});

Deno.test("clone without vmid: a full range fails before any clone, naming it", async () => {
  const full = [500, 501].map((vmid) => ({
    ...TEMPLATE,
    vmid,
    name: `t${vmid}`,
  }));
  await withEnv(
    { guests: [...demoGuests(), TEMPLATE, ...full] },
    async (env) => {
      const r = await env.run("clone", {
        templateId: 9000,
        name: "web2",
        vmidRange: { min: 500, max: 501 },
      });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /no free VMID in vmidRange 500–501/);
      assert.equal(
        env.sim.requests.filter((q) => q.method === "POST").length,
        0,
      );
    },
  );
});

Deno.test("clone: ten parallel clones into one range are ten distinct guests, each run reporting its own", async () => {
  await withEnv({ guests: [...demoGuests(), TEMPLATE] }, async (env) => {
    const runs = await Promise.all(
      Array.from(
        { length: 10 },
        (_, i) =>
          env.run("clone", {
            templateId: 9000,
            name: `p${i}`,
            vmidRange: RANGE,
          }),
      ),
    );
    const claimed = runs.map((r, i) => {
      assert.equal(r.status, "succeeded", `run ${i}: ${r.error}`);
      assert.equal(
        r.written.length,
        1,
        `run ${i} wrote ${r.written.length} records`,
      );
      const rec = r.written[0].data as Record<string, unknown>;
      assert.equal(rec.name, `p${i}`, `run ${i} reports another run's guest`);
      assert.equal(env.sim.guest(Number(rec.vmid))?.name, `p${i}`);
      return Number(rec.vmid);
    });
    assert.equal(new Set(claimed).size, 10, `VMIDs ${claimed.join(", ")}`);
    assert.ok(claimed.every((id) => id >= RANGE.min && id <= RANGE.max));
  });
});

Deno.test("lxc create without vmid: a free VMID is claimed by the create itself", async () => {
  await withEnv({ guests: demoGuests(), model: lxcModel }, async (env) => {
    const r = await env.run("create", {
      ostemplate: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
      hostname: "web-ct",
      storage: "local-lvm",
      vmidRange: { min: 800, max: 809 },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-800").name, "web-ct");
    assert.equal(env.sim.guest(800)?.type, "lxc");
  });
});
