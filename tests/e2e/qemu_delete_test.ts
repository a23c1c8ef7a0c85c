/**
 * delete end to end: gates (swamp tag required; production/protected refused; force overrides), a
 * running guest stopped first, the guest confirmed gone on every node, and ONLY its own vm-<vmid>
 * record written (`status: "deleted"`, `present: false`).
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, withEnv, written } from "./env.ts";

const UUID = "00000000-0000-4000-8000-000000000120";

/** A stopped managed guest to delete (VMID 120 on pve1). */
function guest(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 120,
    node: "pve1",
    type: "qemu",
    name: "doomed",
    status: "stopped",
    tags: ["swamp"],
    config: {
      smbios1: `uuid=${UUID}`,
      scsi0: "local-zfs:vm-120-disk-0,size=8G",
    },
    ...over,
  };
}

const withGuest = (over: Partial<SimGuest> = {}) => [
  ...demoGuests(),
  guest(over),
];

function deletes(env: Env) {
  return env.sim.requests.filter((q) => q.method === "DELETE");
}

Deno.test("delete: a stopped managed VM is deleted, confirmed gone and recorded deleted", async () => {
  await withEnv({ guests: withGuest() }, async (env) => {
    await env.run("lookup", { vmid: 120 });
    const r = await env.run("delete", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-120");
    assert.equal(rec.status, "deleted");
    assert.equal(rec.present, false);
    assert.equal(rec.name, "doomed");
    assert.equal(rec.node, "pve1");
    assert.deepEqual(rec.identity, { smbiosUuid: UUID });
    assert.match(String(rec.lastTask), /:qmdestroy:120:/);
    assert.equal(rec.lastOperation, "delete");
    assert.equal(env.sim.guest(120), undefined);
    assert.ok(
      env.sim.requests.some((q) => q.path.endsWith("/cluster/nextid")),
      "absence confirmed through /cluster/nextid",
    );
  });
});

Deno.test("delete: purge (the default) also destroys unreferenced disks", async () => {
  await withEnv({ guests: withGuest() }, async (env) => {
    const r = await env.run("delete", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(deletes(env)[0].query, {
      purge: "1",
      "destroy-unreferenced-disks": "1",
    });
  });
});

Deno.test("delete: purge false sends no purge parameters", async () => {
  await withEnv({ guests: withGuest() }, async (env) => {
    const r = await env.run("delete", { vmid: 120, purge: false });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(deletes(env)[0].query, {});
  });
});

Deno.test("delete: a running managed VM is stopped first, then deleted", async () => {
  await withEnv({ guests: withGuest({ status: "running" }) }, async (env) => {
    const r = await env.run("delete", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    const order = env.sim.requests
      .filter((q) => q.method !== "GET")
      .map((q) => `${q.method} ${q.path.replace("/api2/json", "")}`);
    assert.deepEqual(order, [
      "POST /nodes/pve1/qemu/120/status/stop",
      "DELETE /nodes/pve1/qemu/120",
    ]);
    assert.equal(written(r, "vm-120").status, "deleted");
  });
});

Deno.test("delete: a running VM that cannot be stopped is not deleted", async () => {
  const ha = { managed: true, state: "started", neverApplies: true };
  await withEnv(
    {
      guests: withGuest({ status: "running", ha }),
      globalArgs: { taskTimeoutSec: 2 },
    },
    async (env) => {
      const r = await env.run("delete", { vmid: 120 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /did not reach status stopped/);
      assert.equal(deletes(env).length, 0);
      const rec = written(r, "vm-120");
      assert.equal(rec.present, true);
      assert.equal(rec.status, "running");
    },
  );
});

Deno.test("delete: a VM without the swamp tag is refused, nothing is sent, the state is recorded", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("delete", { vmid: 102 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /refusing to delete VM 102/);
    assert.match(r.error ?? "", /`swamp` tag/);
    assert.equal(deletes(env).length, 0);
    const rec = written(r, "vm-102");
    assert.equal(rec.present, true);
    assert.equal(rec.status, "stopped");
    assert.ok(env.sim.guest(102));
  });
});

Deno.test("delete: a production-tagged VM is refused", async () => {
  await withEnv(
    { guests: withGuest({ tags: ["swamp", "Production"] }) },
    async (env) => {
      const r = await env.run("delete", { vmid: 120 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /carries the `production` tag/);
      assert.equal(deletes(env).length, 0);
    },
  );
});

Deno.test("delete: a protected-tagged VM is refused", async () => {
  await withEnv(
    { guests: withGuest({ tags: ["swamp", "protected"] }) },
    async (env) => {
      const r = await env.run("delete", { vmid: 120 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /carries the `protected` tag/);
      assert.equal(deletes(env).length, 0);
    },
  );
});

Deno.test("delete: force overrides the gates and the override is recorded", async () => {
  await withEnv(
    { guests: withGuest({ tags: ["production"] }) },
    async (env) => {
      const r = await env.run("delete", { vmid: 120, force: true });
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "vm-120");
      assert.equal(rec.status, "deleted");
      assert.match(
        String((rec.warnings as string[])[0]),
        /overrides the safety gate/,
      );
    },
  );
});

Deno.test("delete: only this guest's record is written; other guests' records stay live", async () => {
  await withEnv({ guests: withGuest() }, async (env) => {
    await env.run("lookup", { vmid: 100 });
    await env.run("lookup", { vmid: 101 });
    const r = await env.run("delete", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(r.written.map((w) => w.instance), ["vm-120"]);
    for (const other of ["vm-100", "vm-101"]) {
      const latest = env.repo.latest(other) as Record<string, unknown>;
      assert.equal(latest.deletedAt, undefined, other);
      assert.equal(latest.present, true, other);
      assert.equal(env.repo.versions(other).length, 1, other);
    }
  });
});

Deno.test("delete: a failed delete task fails with PVE's text and records the observed state", async () => {
  await withEnv({ guests: withGuest() }, async (env) => {
    env.sim.nextTask({ exitstatus: "can't remove VM 120 - storage busy" });
    const r = await env.run("delete", { vmid: 120 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /storage busy/);
    const rec = written(r, "vm-120");
    assert.equal(rec.present, true);
    assert.equal(rec.status, "stopped");
    assert.match(String(rec.lastTask), /:qmdestroy:120:/);
    assert.ok(env.sim.guest(120));
  });
});

Deno.test("delete: a VMID the cluster still holds after the delete task fails the delete", async () => {
  await withEnv(
    { guests: withGuest(), globalArgs: { taskTimeoutSec: 2 } },
    async (env) => {
      // The cluster keeps holding the VMID whatever its task did.
      env.sim.fault({
        pathRegex: "/cluster/nextid$",
        kind: "status",
        status: 400,
        message: "Parameter verification failed. (vmid: VM 120 already exists)",
        times: Infinity,
      });
      const r = await env.run("delete", { vmid: 120 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /delete task ended successfully/);
      assert.match(
        r.error ?? "",
        /VMID 120 still exists \(GET \/cluster\/nextid says so\) when taskTimeoutSec=2s/,
      );
      const rec = written(r, "vm-120");
      assert.equal(rec.present, true);
      assert.equal(
        rec.observedBeforeMutation,
        true,
        "the state shown was read before the delete",
      );
    },
  );
});

Deno.test("delete: an absent VM succeeds and is recorded absent", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("delete", { vmid: 999 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-999");
    assert.equal(rec.present, false);
    assert.equal(rec.status, "absent");
    assert.equal(deletes(env).length, 0);
  });
});
