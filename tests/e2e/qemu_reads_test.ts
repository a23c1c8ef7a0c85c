/**
 * getConfig, nodeStatus and nodeConfig end to end: a read that succeeded is recorded; a missing
 * privilege for disks, bridges or the repositories degrades to an explicit flag in the record,
 * never silence.
 */
import assert from "node:assert/strict";
import { withEnv, written } from "./env.ts";

const SYS_AUDIT_403 = {
  kind: "status" as const,
  status: 403,
  message: "Permission check failed (/nodes/pve1, Sys.Audit)",
  times: Infinity,
};

Deno.test("getConfig: the running config is recorded as vm-<vmid>-config with vmid and node", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("getConfig", { vmid: 101 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-101-config");
    assert.equal(rec.vmid, 101);
    assert.equal(rec.node, "pve2");
    const config = rec.config as Record<string, unknown>;
    assert.equal(config.name, "db");
    assert.equal(
      config.smbios1,
      "uuid=00000000-0000-4000-8000-000000000101",
    );
    assert.equal(rec.pending, undefined);
    assert.equal(typeof rec.recordedAt, "string");
  });
});

Deno.test("getConfig: pending changes are recorded apart from the running config", async () => {
  await withEnv({}, async (env) => {
    env.sim.setGuest(100, {
      config: {
        smbios1: "uuid=00000000-0000-4000-8000-000000000100",
        memory: 2048,
      },
      pending: { memory: 4096 },
    });
    const r = await env.run("getConfig", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100-config");
    // `memory` is a string option in PVE's schema: a node's pending rows carry it as text
    // (pve-guest-common config_with_pending_array copies the parsed config's values).
    assert.equal((rec.config as Record<string, unknown>).memory, "2048");
    assert.deepEqual(rec.pending, { memory: "4096" });
  });
});

Deno.test("getConfig: an absent guest fails and writes nothing", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("getConfig", { vmid: 999 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /does not exist on any node/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("getConfig: a 403 on the config read fails naming the privilege and writes nothing", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/qemu/100/pending$",
      kind: "status",
      status: 403,
      message: "Permission check failed (/vms/100, VM.Audit)",
    });
    const r = await env.run("getConfig", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VM\.Audit/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("nodeStatus: the transport's node is recorded as node-<node> with usage and SMART health", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("nodeStatus", {});
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "node-pve1");
    assert.equal(rec.node, "pve1");
    assert.equal(rec.cpuPct, 3.21);
    assert.equal(rec.cpus, 16);
    assert.deepEqual(rec.loadavg, [0.42, 0.37, 0.3]);
    assert.equal(rec.memTotal, 64 * 2 ** 30);
    assert.equal(rec.memPct, 25);
    assert.equal(rec.swapPct, 0);
    assert.equal(rec.rootfsPct, 25);
    assert.equal(rec.uptimeSec, 864000);
    assert.match(String(rec.kernelVersion), /6\.8\.12-4-pve/);
    assert.equal(rec.pveVersion, "pve-manager/9.0.3/025864202ebb6109");
    assert.equal(rec.disksAvailable, true);
    const disks = rec.disks as Record<string, unknown>[];
    assert.deepEqual(disks.map((d) => [d.device, d.health, d.wearoutPct]), [
      ["/dev/nvme0n1", "PASSED", 97],
      ["/dev/sda", "PASSED", undefined],
    ]);
    assert.equal(disks[0].type, "nvme");
    assert.equal(disks[1].usedBy, "ZFS");
  });
});

Deno.test("nodeStatus: a node argument reads that node instead of the transport's", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("nodeStatus", { node: "pve2" });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "node-pve2");
    assert.equal(
      (rec.disks as Record<string, unknown>[])[0].serial,
      "S5GXNF0RPVE2",
    );
    assert.ok(
      env.sim.requests.some((q) => q.path === "/api2/json/nodes/pve2/status"),
    );
  });
});

Deno.test("nodeStatus: without Sys.Audit for disks the record says disksAvailable false and why", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({ ...SYS_AUDIT_403, pathRegex: "/disks/list$" });
    const r = await env.run("nodeStatus", {});
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "node-pve1");
    assert.equal(rec.disksAvailable, false);
    assert.match(String(rec.disksUnavailableReason), /Sys\.Audit/);
    assert.deepEqual(rec.disks, []);
    assert.equal(rec.cpus, 16, "the status is still recorded");
    assert.ok(
      r.logs.some((l) => l.level === "warning" && /Sys\.Audit/.test(l.message)),
    );
  });
});

Deno.test("nodeStatus: another disk-list error records the status, then fails", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/disks/list$",
      kind: "status",
      status: 500,
      message: "smartctl hung",
      times: Infinity,
    });
    const r = await env.run("nodeStatus", {});
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /smartctl hung/);
    assert.equal(written(r, "node-pve1").disksAvailable, false);
  });
});

Deno.test("nodeStatus: a fresh install's facts are recorded: no subscription, the enterprise repository configured", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("nodeStatus", {});
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "node-pve1");
    assert.equal(rec.subscriptionStatus, "notfound");
    assert.equal(rec.subscriptionActive, false);
    assert.equal(rec.subscriptionStatusAvailable, true);
    assert.equal(rec.enterpriseRepo, true);
    assert.equal(rec.repositoriesAvailable, true);
  });
});

Deno.test("nodeStatus: an active subscription and a disabled enterprise repository are recorded, never the key", async () => {
  await withEnv({
    sim: {
      nodeFacts: {
        pve2: { subscription: "active", enterpriseRepo: "disabled" },
      },
    },
  }, async (env) => {
    const r = await env.run("nodeStatus", { node: "pve2" });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "node-pve2");
    assert.equal(rec.subscriptionStatus, "active");
    assert.equal(rec.subscriptionActive, true);
    assert.equal(rec.enterpriseRepo, false);
    // The simulator's answer carries the key (the token holds Sys.Audit): kept out of everything.
    assert.doesNotMatch(JSON.stringify(r), /pve2c-0123456789/);
  });
});

Deno.test("nodeStatus: without Sys.Audit for the repositories the record says repositoriesAvailable false and why", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({ ...SYS_AUDIT_403, pathRegex: "/apt/repositories$" });
    const r = await env.run("nodeStatus", {});
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "node-pve1");
    assert.equal(rec.repositoriesAvailable, false);
    assert.equal(rec.enterpriseRepo, undefined, "no fact without the read");
    assert.match(String(rec.repositoriesUnavailableReason), /Sys\.Audit/);
    assert.equal(rec.subscriptionActive, false, "the other facts recorded");
    assert.ok(
      r.logs.some((l) =>
        l.level === "warning" && /APT repositories/.test(l.message)
      ),
    );
  });
});

Deno.test("nodeStatus: a failed subscription read records the other facts, then fails", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/subscription$",
      kind: "status",
      status: 500,
      message: "subscription file unreadable",
      times: Infinity,
    });
    const r = await env.run("nodeStatus", {});
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /subscription status could not be read/);
    assert.match(r.error ?? "", /subscription file unreadable/);
    const rec = written(r, "node-pve1");
    assert.equal(rec.subscriptionStatusAvailable, false);
    assert.equal(rec.subscriptionActive, undefined);
    assert.equal(rec.enterpriseRepo, true);
  });
});

Deno.test("nodeStatus: an unreadable node status fails and writes nothing", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({ ...SYS_AUDIT_403, pathRegex: "/nodes/pve1/status$" });
    const r = await env.run("nodeStatus", {});
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /could not read the status of node pve1/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("nodeStatus: a node argument that would change the API path is refused before any request", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("nodeStatus", { node: "../cluster" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /node/);
    assert.equal(env.sim.requests.length, 0);
  });
});

Deno.test("nodeConfig: storages with content types and bridges are recorded as node-<node>-config", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("nodeConfig", {});
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "node-pve1-config");
    assert.equal(rec.node, "pve1");
    const storages = rec.storages as Record<string, unknown>[];
    const lvm = storages.find((s) => s.storage === "local-lvm");
    assert.ok(lvm, JSON.stringify(storages));
    assert.equal(lvm.type, "lvmthin");
    assert.deepEqual([...(lvm.content as string[])].sort(), [
      "images",
      "rootdir",
    ]);
    assert.equal(typeof lvm.avail, "number");
    assert.deepEqual(
      rec.bridges,
      env.sim.bridges("pve1").map((b) => b.iface),
    );
    assert.ok((rec.bridges as string[]).length > 0);
    assert.equal(rec.bridgesAvailable, true);
  });
});

Deno.test("nodeConfig: without Sys.Audit for the network the record says bridgesAvailable false", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({ ...SYS_AUDIT_403, pathRegex: "/nodes/pve1/network$" });
    const r = await env.run("nodeConfig", {});
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "node-pve1-config");
    assert.equal(rec.bridgesAvailable, false);
    assert.match(String(rec.bridgesUnavailableReason), /Sys\.Audit/);
    assert.ok((rec.storages as unknown[]).length > 0);
  });
});

Deno.test("nodeConfig: an unreadable storage list fails and writes nothing", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/nodes/pve1/storage$",
      kind: "status",
      status: 500,
      message: "storage daemon down",
    });
    const r = await env.run("nodeConfig", {});
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /storage daemon down/);
    assert.equal(r.written.length, 0);
  });
});
