/**
 * lookup end to end: a new version of vm-<vmid> on every run, with the observed state or a confirmed
 * absence; a state that cannot be determined fails and writes nothing.
 */
import assert from "node:assert/strict";
import { z } from "npm:zod@4";
import { model } from "../../js/proxmox_qemu.ts";
import { withEnv, written } from "./env.ts";

Deno.test("lookup: a running guest is recorded with status, qmpStatus, node, tags and identity", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100");
    assert.equal(rec.present, true);
    assert.equal(rec.status, "running");
    assert.equal(rec.qmpStatus, "running");
    assert.equal(rec.node, "pve1");
    assert.equal(rec.name, "web");
    assert.deepEqual(rec.tags, ["swamp"]);
    assert.deepEqual(rec.identity, {
      smbiosUuid: "00000000-0000-4000-8000-000000000100",
    });
    assert.equal(rec.lastOperation, "lookup");
  });
});

Deno.test("lookup: two runs write two new versions of vm-<vmid>", async () => {
  await withEnv({}, async (env) => {
    await env.run("lookup", { vmid: 100 });
    await env.run("lookup", { vmid: 100 });
    assert.deepEqual(env.repo.versions("vm-100").map((v) => v.version), [1, 2]);
  });
});

Deno.test("lookup: a guest on another node is found and recorded with its node", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("lookup", { vmid: 101 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-101").node, "pve2");
  });
});

Deno.test("lookup: an absent guest is recorded explicitly as absent", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("lookup", { vmid: 999 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-999");
    assert.equal(rec.present, false);
    assert.equal(rec.status, "absent");
  });
});

Deno.test("lookup: a guest the token may not audit fails with PVE's refusal and writes nothing", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("lookup", { vmid: 150 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /Permission check failed \(\/vms\/150/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("lookup: a 403 on the status read fails and writes nothing", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/qemu/100/status/current$",
      kind: "status",
      status: 403,
      message: "Permission check failed (/vms/100, VM.Audit)",
    });
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /Permission check failed \(\/vms\/100, VM\.Audit\)/,
    );
    assert.equal(r.written.length, 0);
  });
});

Deno.test("lookup: an unparsable answer fails and writes nothing", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/qemu/100/status/current$",
      kind: "body",
      body: '{"data": {"status": ',
    });
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.equal(r.written.length, 0);
  });
});

Deno.test("lookup: a transport error fails and writes nothing", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/qemu/100/status/current$",
      kind: "reset",
      times: Infinity,
    });
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /could not read the state of VM 100 on node pve1/,
    );
    assert.equal(r.written.length, 0);
  });
});

Deno.test("lookup: a guest on another node is found through the cluster listing after its configured node says it is not there", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("lookup", { vmid: 101 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-101").node, "pve2");
    assert.deepEqual(
      env.sim.requests.map((q) => `${q.method} ${q.path}`),
      [
        "GET /api2/json/nodes/pve1/qemu/101/status/current",
        "GET /api2/json/cluster/resources",
        "GET /api2/json/nodes/pve2/qemu/101/status/current",
        "GET /api2/json/nodes/pve2/qemu/101/config",
      ],
    );
  });
});

Deno.test("lookup: a guest on its configured node costs its status and its config, no cluster listing", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(
      env.sim.requests.map((q) => `${q.method} ${q.path}`),
      [
        "GET /api2/json/nodes/pve1/qemu/100/status/current",
        "GET /api2/json/nodes/pve1/qemu/100/config",
      ],
    );
  });
});

Deno.test("lookup: the node a stored record names is asked first", async () => {
  await withEnv({}, async (env) => {
    await env.run("lookup", { vmid: 101 });
    const before = env.sim.requests.length;
    const r = await env.run("lookup", { vmid: 101 });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(
      env.sim.requests.slice(before).map((q) => `${q.method} ${q.path}`),
      [
        "GET /api2/json/nodes/pve2/qemu/101/status/current",
        "GET /api2/json/nodes/pve2/qemu/101/config",
      ],
    );
  });
});

Deno.test("lookup: after another guest's delete-kind tombstone, the record is live again without deletedAt", async () => {
  // The upstream failure: a delete-kind method tombstones every record of the definition.
  const withDelete = {
    ...model,
    methods: {
      ...model.methods,
      delete: {
        description: "stand-in delete-kind method",
        arguments: z.object({}),
        execute: () => Promise.resolve({ dataHandles: [] }),
      },
    },
  };
  await withEnv(
    { model: withDelete as unknown as typeof model },
    async (env) => {
      await env.run("lookup", { vmid: 100 });
      const del = await env.run("delete", {});
      assert.equal(del.status, "succeeded", del.error);
      assert.ok(
        "deletedAt" in (env.repo.latest("vm-100") as object),
        "the harness tombstoned vm-100",
      );
      const r = await env.run("lookup", { vmid: 100 });
      assert.equal(r.status, "succeeded", r.error);
      const latest = env.repo.latest("vm-100") as Record<string, unknown>;
      assert.equal(latest.deletedAt, undefined);
      assert.equal(latest.status, "running");
      assert.equal(latest.present, true);
    },
  );
});

Deno.test("lookup: a reused VMID is reported with the previous and current identity", async () => {
  await withEnv({}, async (env) => {
    await env.run("lookup", { vmid: 100 });
    env.sim.setGuest(100, {
      config: { smbios1: "uuid=11111111-2222-4333-8444-555555555555" },
    });
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100");
    assert.deepEqual(rec.identityChanged, {
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

Deno.test("lookup: by vmName resolves to the guest's vmid", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("lookup", { vmName: "db" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-101").node, "pve2");
  });
});

Deno.test("lookup: a container's VMID is refused for the qemu model", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("lookup", { vmid: 200 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /is a lxc guest/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("lookup: no method of the model is delete-, read- or update-kind", () => {
  for (const [name, method] of Object.entries(model.methods)) {
    assert.equal(method.kind, "action", name);
  }
});
