/**
 * snapshot, listSnapshots, rollback and deleteSnapshot end to end, both models: success means the
 * snapshot list and the guest's state showed the effect (the tree, the parent, no lock, the power
 * state a rollback implies) — not that a task ended OK. The tree is recorded as observed.
 */
import assert from "node:assert/strict";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { containers } from "./lxc_fixture.ts";
import { type Env, withEnv, written } from "./env.ts";

/** VM 120 on pve1, running, managed. */
function vm(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 120,
    node: "pve1",
    type: "qemu",
    name: "snap",
    status: "running",
    tags: ["swamp"],
    agent: "running",
    config: { memory: 2048 },
    ...over,
  };
}

const guests = (over: Partial<SimGuest> = {}) => [...demoGuests(), vm(over)];
type Tree = {
  currentParent?: string;
  snapshots: { name: string; parent?: string; vmstate: boolean }[];
};

function sent(env: Env, method: string, pattern: RegExp) {
  return env.sim.requests.filter((q) =>
    q.method === method && pattern.test(q.path)
  );
}

// ── snapshot ─────────────────────────────────────────────────────────────────

Deno.test("snapshot: the new snapshot is recorded in the tree with the guest's former parent", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const first = await env.run("snapshot", { vmid: 120, name: "base" });
    assert.equal(first.status, "succeeded", first.error);
    const second = await env.run("snapshot", {
      vmid: 120,
      name: "before-upgrade",
      description: "pre",
    });
    assert.equal(second.status, "succeeded", second.error);
    const tree = written(second, "vm-120-snapshots") as unknown as Tree;
    assert.equal(tree.currentParent, "before-upgrade");
    assert.deepEqual(
      tree.snapshots.map((s) => [s.name, s.parent ?? null]),
      [["base", null], ["before-upgrade", "base"]],
    );
    const rec = written(second, "vm-120");
    assert.equal(rec.lock, undefined);
    assert.match(String(rec.lastTask), /:qmsnapshot:120:/);
    assert.equal(env.sim.guest(120)?.lock, undefined);
  });
});

Deno.test("snapshot: vmstate of a running VM is recorded as a snapshot holding its RAM", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const r = await env.run("snapshot", {
      vmid: 120,
      name: "ram",
      vmstate: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    const tree = written(r, "vm-120-snapshots") as unknown as Tree;
    assert.equal(tree.snapshots[0].vmstate, true);
  });
});

Deno.test("snapshot: a name already used is refused before anything is sent, in PVE's words", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    assert.equal(
      (await env.run("snapshot", { vmid: 120, name: "base" })).status,
      "succeeded",
    );
    const r = await env.run("snapshot", { vmid: 120, name: "base" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /snapshot name 'base' already used/);
    assert.equal(sent(env, "POST", /\/snapshot$/).length, 1);
  });
});

Deno.test("snapshot: a guest locked past the budget fails naming the lock, no snapshot sent", async () => {
  await withEnv({
    guests: guests({ lock: "backup" }),
    globalArgs: { taskTimeoutSec: 2 },
  }, async (env) => {
    const r = await env.run("snapshot", { vmid: 120, name: "base" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VM is locked \(backup\)/);
    assert.equal(sent(env, "POST", /\/snapshot$/).length, 0);
    assert.equal(written(r, "vm-120").lock, "backup");
  });
});

Deno.test("snapshot: names PVE rejects or reserves are refused by the arguments", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    for (
      const name of ["1st", "a", "a.b", "current", "PENDING", "x".repeat(41)]
    ) {
      const r = await env.run("snapshot", { vmid: 120, name });
      assert.equal(r.status, "failed", name);
      assert.match(r.error ?? "", /name/, name);
    }
    assert.equal(sent(env, "POST", /\/snapshot$/).length, 0);
  });
});

Deno.test("snapshot: a failed snapshot task fails with PVE's words and records the tree without it", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    env.sim.nextTask({ exitstatus: "snapshot feature is not available" });
    const r = await env.run("snapshot", { vmid: 120, name: "base" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /snapshot feature is not available/);
    assert.deepEqual(
      (written(r, "vm-120-snapshots") as unknown as Tree).snapshots,
      [],
    );
    assert.equal(env.sim.guest(120)?.lock, undefined);
  });
});

// ── rollback ─────────────────────────────────────────────────────────────────

Deno.test("rollback: the config returns to the snapshot's and a snapshot without RAM leaves the VM stopped", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    await env.run("snapshot", { vmid: 120, name: "base" });
    const change = await env.run("setConfig", {
      vmid: 120,
      config: { memory: 4096 },
    });
    assert.equal(change.status, "succeeded", change.error);
    const r = await env.run("rollback", { vmid: 120, name: "base" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-120").status, "stopped");
    assert.equal(
      (written(r, "vm-120-snapshots") as unknown as Tree).currentParent,
      "base",
    );
    const config = await env.run("getConfig", { vmid: 120 });
    assert.equal(
      (written(config, "vm-120-config").config as Record<string, unknown>)
        .memory,
      // A string option in PVE's schema: the pending rows carry it as text.
      "2048",
    );
  });
});

Deno.test("rollback: start: true is verified running, and so is a snapshot holding RAM", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    await env.run("snapshot", { vmid: 120, name: "disk" });
    await env.run("snapshot", { vmid: 120, name: "ram", vmstate: true });
    const started = await env.run("rollback", {
      vmid: 120,
      name: "disk",
      start: true,
    });
    assert.equal(started.status, "succeeded", started.error);
    assert.equal(written(started, "vm-120").status, "running");
    const resumed = await env.run("rollback", { vmid: 120, name: "ram" });
    assert.equal(resumed.status, "succeeded", resumed.error);
    assert.equal(written(resumed, "vm-120").qmpStatus, "running");
  });
});

Deno.test("rollback: a snapshot that does not exist is refused before anything is sent", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const r = await env.run("rollback", { vmid: 120, name: "nope" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /snapshot 'nope' does not exist/);
    assert.equal(sent(env, "POST", /\/rollback$/).length, 0);
  });
});

Deno.test("rollback: a failed rollback task fails and records the rollback lock it left", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    await env.run("snapshot", { vmid: 120, name: "base" });
    env.sim.nextTask({ exitstatus: "rbd error: rbd: sysfs write failed" });
    const r = await env.run("rollback", { vmid: 120, name: "base" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /rbd: sysfs write failed/);
    assert.equal(env.sim.guest(120)?.lock, "rollback");
  });
});

// ── deleteSnapshot ───────────────────────────────────────────────────────────

Deno.test("deleteSnapshot: the snapshot is gone and its child now descends from its parent", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    await env.run("snapshot", { vmid: 120, name: "a1" });
    await env.run("snapshot", { vmid: 120, name: "b2" });
    const r = await env.run("deleteSnapshot", { vmid: 120, name: "a1" });
    assert.equal(r.status, "succeeded", r.error);
    const tree = written(r, "vm-120-snapshots") as unknown as Tree;
    assert.deepEqual(tree.snapshots.map((s) => [s.name, s.parent ?? null]), [[
      "b2",
      null,
    ]]);
    assert.match(String(written(r, "vm-120").lastTask), /:qmdelsnapshot:120:/);
  });
});

Deno.test("deleteSnapshot: a failed delete fails and the snapshot-delete lock it left is recorded", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    await env.run("snapshot", { vmid: 120, name: "a1" });
    env.sim.nextTask({ exitstatus: "zfs error: dataset is busy" });
    const r = await env.run("deleteSnapshot", { vmid: 120, name: "a1" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /dataset is busy/);
    assert.equal(env.sim.guest(120)?.lock, "snapshot-delete");
  });
});

Deno.test("listSnapshots: records the tree, current parent included", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    await env.run("snapshot", { vmid: 120, name: "a1" });
    const r = await env.run("listSnapshots", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    const tree = written(r, "vm-120-snapshots") as unknown as Tree;
    assert.equal(tree.currentParent, "a1");
    assert.equal(tree.snapshots.length, 1);
  });
});

// ── containers ───────────────────────────────────────────────────────────────

Deno.test("lxc: snapshot, rollback with start and deleteSnapshot are each verified", async () => {
  await withEnv(
    { guests: [...demoGuests(), ...containers()], model: lxcModel },
    async (env) => {
      const taken = await env.run("snapshot", { vmid: 300, name: "base" });
      assert.equal(taken.status, "succeeded", taken.error);
      assert.match(String(written(taken, "ct-300").lastTask), /:vzsnapshot:/);
      const back = await env.run("rollback", {
        vmid: 300,
        name: "base",
        start: true,
      });
      assert.equal(back.status, "succeeded", back.error);
      assert.equal(written(back, "ct-300").status, "running");
      const gone = await env.run("deleteSnapshot", { vmid: 300, name: "base" });
      assert.equal(gone.status, "succeeded", gone.error);
      assert.deepEqual(
        (written(gone, "ct-300-snapshots") as unknown as Tree).snapshots,
        [],
      );
      const reserved = await env.run("snapshot", { vmid: 300, name: "vzdump" });
      assert.equal(reserved.status, "failed");
    },
  );
});
