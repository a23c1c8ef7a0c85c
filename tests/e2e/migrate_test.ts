/**
 * migrate end to end, both models: PVE's preconditions refused up front in PVE's words; success
 * only when /cluster/resources and the target node's status/current show the guest there (running
 * if it was) and unlocked; HA-managed guests go through HA; the record moves to the new node.
 */
import assert from "node:assert/strict";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { container } from "./lxc_fixture.ts";
import { type Env, withEnv, written } from "./env.ts";

/** VM 130 on pve1, running, its disk on shared-less local-lvm. */
function vm(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 130,
    node: "pve1",
    type: "qemu",
    name: "mover",
    status: "running",
    tags: ["swamp"],
    agent: "running",
    ...over,
    config: { memory: 1024, ...over.config },
  };
}

const guests = (over: Partial<SimGuest> = {}) => [...demoGuests(), vm(over)];
const posted = (env: Env) =>
  env.sim.requests.filter((q) =>
    q.method === "POST" && q.path.endsWith("/migrate")
  );

Deno.test("migrate: a running VM moves to pve2 live and back, recorded on its new node each time", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const there = await env.run("migrate", {
      vmid: 130,
      targetNode: "pve2",
      online: true,
    });
    assert.equal(there.status, "succeeded", there.error);
    const rec = written(there, "vm-130");
    assert.equal(rec.node, "pve2");
    assert.equal(rec.status, "running");
    assert.equal(rec.lock, undefined);
    assert.match(String(rec.lastTask), /^UPID:pve1:.*:qmigrate:130:/);
    assert.equal(env.sim.guest(130)?.node, "pve2");
    const back = await env.run("migrate", {
      vmid: 130,
      targetNode: "pve1",
      online: true,
    });
    assert.equal(back.status, "succeeded", back.error);
    assert.equal(written(back, "vm-130").node, "pve1");
    assert.match(String(written(back, "vm-130").lastTask), /^UPID:pve2:/);
  });
});

Deno.test("migrate: an HA-managed VM moves through HA and is verified on the target", async () => {
  await withEnv(
    {
      guests: guests({
        ha: { managed: true, state: "started", applyDelayMs: 300 },
      }),
    },
    async (env) => {
      const r = await env.run("migrate", {
        vmid: 130,
        targetNode: "pve2",
        online: true,
      });
      assert.equal(r.status, "succeeded", r.error);
      assert.match(String(written(r, "vm-130").lastTask), /:hamigrate:130:/);
      assert.equal(written(r, "vm-130").node, "pve2");
      const back = await env.run("migrate", {
        vmid: 130,
        targetNode: "pve1",
        online: true,
      });
      assert.equal(back.status, "succeeded", back.error);
      assert.equal(env.sim.guest(130)?.node, "pve1");
    },
  );
});

Deno.test("migrate: an HA request that never applies fails at the budget naming the HA manager", async () => {
  await withEnv(
    {
      guests: guests({
        ha: { managed: true, state: "started", neverApplies: true },
      }),
      globalArgs: { taskTimeoutSec: 2 },
    },
    async (env) => {
      const r = await env.run("migrate", {
        vmid: 130,
        targetNode: "pve2",
        online: true,
      });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /still places it on node pve1/);
      assert.match(r.error ?? "", /ha-manager status/);
      assert.equal(written(r, "vm-130").node, "pve1");
    },
  );
});

Deno.test("migrate: a running VM without online is refused before anything is sent, in PVE's words", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const r = await env.run("migrate", { vmid: 130, targetNode: "pve2" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /can't migrate running VM without --online/);
    assert.equal(posted(env).length, 0);
  });
});

Deno.test("migrate: attached local disks of a running VM need withLocalDisks, refused up front", async () => {
  const disk = { scsi0: "local-lvm:vm-130-disk-0,size=8G" };
  await withEnv({ guests: guests({ config: disk }) }, async (env) => {
    const refused = await env.run("migrate", {
      vmid: 130,
      targetNode: "pve2",
      online: true,
    });
    assert.equal(refused.status, "failed");
    assert.match(refused.error ?? "", /without with-local-disks option/);
    assert.equal(posted(env).length, 0);
    const r = await env.run("migrate", {
      vmid: 130,
      targetNode: "pve2",
      online: true,
      withLocalDisks: true,
    });
    assert.equal(r.status, "succeeded", r.error);
  });
});

Deno.test("migrate: local devices are refused up front naming them", async () => {
  await withEnv(
    {
      guests: guests({
        status: "stopped",
        config: { hostpci0: "0000:01:00.0" },
      }),
    },
    async (env) => {
      const r = await env.run("migrate", { vmid: 130, targetNode: "pve2" });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /uses local devices: hostpci0/);
      assert.equal(posted(env).length, 0);
    },
  );
});

Deno.test("migrate: a node that is not in the cluster is refused up front", async () => {
  await withEnv({ guests: guests({ status: "stopped" }) }, async (env) => {
    const r = await env.run("migrate", { vmid: 130, targetNode: "pve9" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /not among the nodes PVE allows \(pve2\)/);
    assert.equal(posted(env).length, 0);
  });
});

Deno.test("migrate: a failed migration task fails, and the VM is recorded where it stayed", async () => {
  await withEnv({ guests: guests({ status: "stopped" }) }, async (env) => {
    env.sim.nextTask({ exitstatus: "migration aborted" });
    const r = await env.run("migrate", { vmid: 130, targetNode: "pve2" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /migration aborted/);
    assert.equal(written(r, "vm-130").node, "pve1");
    assert.equal(env.sim.guest(130)?.lock, undefined);
  });
});

Deno.test("migrate: a guest already on the target succeeds without a migration", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const r = await env.run("migrate", {
      vmid: 130,
      targetNode: "pve1",
      online: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(posted(env).length, 0);
  });
});

Deno.test("lxc migrate: a running container needs restart, and moves stopped-then-started with it", async () => {
  await withEnv(
    {
      guests: [...demoGuests(), container(330, { status: "running" })],
      model: lxcModel,
    },
    async (env) => {
      const refused = await env.run("migrate", {
        vmid: 330,
        targetNode: "pve2",
      });
      assert.equal(refused.status, "failed");
      assert.match(refused.error ?? "", /without --online or --restart/);
      const r = await env.run("migrate", {
        vmid: 330,
        targetNode: "pve2",
        restart: true,
      });
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "ct-330");
      assert.equal(rec.node, "pve2");
      assert.equal(rec.status, "running");
      assert.match(String(rec.lastTask), /:vzmigrate:330:/);
    },
  );
});
