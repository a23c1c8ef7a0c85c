/**
 * sync end to end: every guest in scope recorded from as few requests as PVE allows (one per node
 * list in steady state); stored guests that vanished recorded absent only once confirmed; a reused
 * VMID reported.
 */
import assert from "node:assert/strict";
import { z } from "npm:zod@4";
import { model } from "../../js/proxmox_qemu.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, withEnv, written } from "./env.ts";

/** The requests a run sent to the simulator. */
async function counted(env: Env, run: () => Promise<unknown>) {
  const before = env.sim.requests.length;
  await run();
  return env.sim.requests.slice(before).map((q) =>
    q.path.replace("/api2/json", "")
  );
}

/** The model plus a method that stores a guest record, standing in for an earlier run's record. */
const withSeed = {
  ...model,
  methods: {
    ...model.methods,
    seed: {
      description: "stores a guest record (test stand-in)",
      kind: "action" as const,
      arguments: z.object({ record: z.record(z.string(), z.unknown()) }),
      execute: async (
        args: { record: Record<string, unknown> },
        ctx: {
          writeResource(s: string, i: string, d: unknown): Promise<unknown>;
        },
      ) => ({
        dataHandles: [
          await ctx.writeResource(
            "guest",
            `vm-${args.record.vmid}`,
            args.record,
          ),
        ],
      }),
    },
  },
};

function fleet(n: number): SimGuest[] {
  return Array.from({ length: n }, (_, i) => ({
    vmid: 1000 + i,
    node: "pve1",
    type: "qemu" as const,
    name: `guest-${i}`,
    status: i % 2 === 0 ? "running" as const : "stopped" as const,
    agent: "none" as const,
    config: {
      smbios1: `uuid=00000000-0000-4000-8000-${
        String(1000 + i).padStart(12, "0")
      }`,
    },
  }));
}

Deno.test("sync: every VM of the transport's node is recorded, and nothing else", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("sync", {});
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(r.written.map((w) => w.instance).sort(), [
      "vm-100",
      "vm-102",
      "vm-103",
      "vm-104",
      "vm-105",
    ]);
    const rec = written(r, "vm-102");
    assert.equal(rec.status, "stopped");
    assert.equal(rec.node, "pve1");
    assert.equal(rec.present, true);
    assert.equal(rec.lastOperation, "sync");
    // Seen for the first time: no config read, so no fingerprint yet (lookup establishes it).
    assert.equal(rec.identity, undefined);
    assert.equal(written(r, "vm-100").qmpStatus, "running");
  });
});

Deno.test("sync: a steady-state node sync sends exactly one request", async () => {
  await withEnv({}, async (env) => {
    await env.run("sync", {});
    const sent = await counted(env, () => env.run("sync", {}));
    assert.deepEqual(sent, ["/nodes/pve1/qemu"]);
  });
});

Deno.test("sync: 1,000 VMs cost one request, on the first sync and in steady state", async () => {
  await withEnv({ guests: fleet(1000) }, async (env) => {
    const first = await counted(env, async () => {
      const r = await env.run("sync", {});
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(r.written.length, 1000);
    });
    assert.deepEqual(first, ["/nodes/pve1/qemu"]);
    const looked = await env.run("lookup", { vmid: 1999 });
    const second = await counted(env, async () => {
      const r = await env.run("sync", {});
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(r.written.length, 1000);
      assert.equal(written(r, "vm-1001").status, "stopped");
      assert.deepEqual(written(r, "vm-1999").identity, {
        smbiosUuid: "00000000-0000-4000-8000-000000001999",
      });
      // Carried forward, not re-read: the record says when it was read (by lookup), not now.
      assert.equal(
        written(r, "vm-1999").identityObservedAt,
        written(looked, "vm-1999").identityObservedAt,
      );
    });
    assert.deepEqual(second, ["/nodes/pve1/qemu"]);
  });
});

Deno.test("sync: scope cluster reads /nodes and each node's list and records the VMs of every node", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("sync", { scope: "cluster" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-101").node, "pve2");
    assert.equal(written(r, "vm-100").node, "pve1");
    assert.ok(
      !r.written.some((w) =>
        w.instance === "vm-150" || w.instance === "vm-200"
      ),
    );
    const sent = await counted(
      env,
      () => env.run("sync", { scope: "cluster" }),
    );
    assert.deepEqual(sent, ["/nodes", "/nodes/pve1/qemu", "/nodes/pve2/qemu"]);
  });
});

Deno.test("sync: with a vmid only that VM is recorded", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("sync", { vmid: 101 });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(r.written.map((w) => w.instance), ["vm-101"]);
    assert.equal(written(r, "vm-101").lastOperation, "sync");
  });
});

Deno.test("sync: a stored VM that disappeared is recorded absent once its absence is confirmed", async () => {
  await withEnv({}, async (env) => {
    await env.run("sync", {});
    env.sim.removeGuest(102);
    const r = await env.run("sync", {});
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-102");
    assert.equal(rec.present, false);
    assert.equal(rec.status, "absent");
    assert.ok(
      env.sim.requests.some((q) =>
        q.path.endsWith("/cluster/nextid") && q.query.vmid === "102"
      ),
    );
    // Recorded absent once: the next sync has nothing to confirm.
    const sent = await counted(env, () => env.run("sync", {}));
    assert.deepEqual(sent, ["/nodes/pve1/qemu"]);
  });
});

Deno.test("sync: a stored VM that migrated away is left as recorded by a node sync, with a warning", async () => {
  await withEnv({}, async (env) => {
    await env.run("sync", {});
    env.sim.setGuest(103, { node: "pve2" });
    const r = await env.run("sync", {});
    assert.equal(r.status, "succeeded", r.error);
    assert.ok(!r.written.some((w) => w.instance === "vm-103"));
    assert.ok(
      r.logs.some((l) =>
        l.level === "warning" && /103 .*still exists/.test(l.message)
      ),
    );
  });
});

Deno.test("sync: a stored VM the token cannot see fails a cluster sync after recording the rest", async () => {
  await withEnv({ model: withSeed as typeof model }, async (env) => {
    const seeded = await env.run("seed", {
      record: {
        vmid: 150,
        present: true,
        status: "running",
        node: "pve2",
        tags: [],
        lastOperation: "lookup",
        recordedAt: "2026-01-01T00:00:00.000Z",
      },
    });
    assert.equal(seeded.status, "succeeded", seeded.error);
    const r = await env.run("sync", { scope: "cluster" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VM 150 exists but no node lists it/);
    assert.ok(r.written.some((w) => w.instance === "vm-101"));
    assert.ok(!r.written.some((w) => w.instance === "vm-150"));
  });
});

Deno.test("sync: a renamed guest whose record held no identity is flagged as possibly reused", async () => {
  await withEnv({}, async (env) => {
    await env.run("sync", {});
    env.sim.setGuest(100, { name: "web-new" });
    const r = await env.run("sync", {});
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100");
    assert.match(String((rec.warnings as string[])[0]), /may have been reused/);
    assert.deepEqual(rec.identity, {
      smbiosUuid: "00000000-0000-4000-8000-000000000100",
    });
  });
});

Deno.test("sync: a reused VMID is reported with the previous and current identity", async () => {
  await withEnv({}, async (env) => {
    await env.run("lookup", { vmid: 100 });
    env.sim.setGuest(100, {
      name: "web-new",
      config: { smbios1: "uuid=11111111-2222-4333-8444-555555555555" },
    });
    const r = await env.run("sync", {});
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(written(r, "vm-100").identityChanged, {
      previous: { smbiosUuid: "00000000-0000-4000-8000-000000000100" },
      current: { smbiosUuid: "11111111-2222-4333-8444-555555555555" },
    });
    assert.ok(
      r.logs.some((l) =>
        l.level === "warning" && /VMID was reused/.test(l.message)
      ),
    );
  });
});

Deno.test("sync: an unreadable node list fails and writes nothing", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/nodes/pve1/qemu$",
      kind: "status",
      status: 500,
      message: "pvestatd not running",
    });
    const r = await env.run("sync", {});
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /pvestatd not running/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("sync: a scope other than node or cluster is refused before any request", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("sync", { scope: "world" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /scope/);
    assert.equal(env.sim.requests.length, 0);
  });
});
