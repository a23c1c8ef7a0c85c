/**
 * The lxc model's reads end to end — lookup, sync, getConfig, nodeStatus, nodeConfig — and setConfig:
 * the qemu model's logic on the lxc paths, recorded as ct-<vmid>, ct-<vmid>-config, node-<node>,
 * node-<node>-config.
 */
import assert from "node:assert/strict";
import { model } from "../../js/proxmox_lxc.ts";
import { written } from "./env.ts";
import { withCt } from "./lxc_fixture.ts";

// ── lookup ───────────────────────────────────────────────────────────────────

Deno.test("lxc lookup: a running container is recorded as ct-<vmid> with its state", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("lookup", { vmid: 300 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(r.written[0].spec, "container");
    const rec = written(r, "ct-300");
    assert.equal(rec.present, true);
    assert.equal(rec.status, "running");
    assert.equal(rec.name, "web-ct");
    assert.equal(rec.node, "pve1");
    assert.deepEqual(rec.tags, ["swamp"]);
    assert.equal(rec.qmpStatus, undefined);
    assert.equal(typeof rec.maxDiskBytes, "number");
  });
});

Deno.test("lxc lookup: by vmName, on another node", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("lookup", { vmName: "far-ct" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-302").node, "pve2");
  });
});

Deno.test("lxc lookup: an absent container is recorded absent; a VM's VMID is refused", async () => {
  await withCt({}, async (env) => {
    const absent = await env.run("lookup", { vmid: 399 });
    assert.equal(absent.status, "succeeded", absent.error);
    assert.equal(written(absent, "ct-399").status, "absent");
    const vm = await env.run("lookup", { vmid: 100 });
    assert.equal(vm.status, "failed");
    assert.match(vm.error ?? "", /use the @stateless\/proxmox\/qemu model/);
  });
});

Deno.test("lxc: no method of the model is delete-, read- or update-kind", () => {
  for (const [name, method] of Object.entries(model.methods)) {
    assert.equal(method.kind, "action", name);
  }
});

// ── sync ─────────────────────────────────────────────────────────────────────

Deno.test("lxc sync: every container of the node in one list read, VMs left out", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("sync", {});
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(
      r.written.map((w) => w.instance).sort(),
      ["ct-200", "ct-300", "ct-301", "ct-303", "ct-304"],
    );
    assert.ok(r.written.every((w) => w.spec === "container"));
    assert.equal(
      env.sim.requests.filter((q) => q.path.endsWith("/nodes/pve1/lxc")).length,
      1,
    );
  });
});

Deno.test("lxc sync: scope cluster reads every node", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("sync", { scope: "cluster" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-302").node, "pve2");
  });
});

Deno.test("lxc sync: a container deleted behind the model's back is recorded absent", async () => {
  await withCt({}, async (env) => {
    await env.run("sync", {});
    env.sim.removeGuest(301);
    const r = await env.run("sync", {});
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-301").present, false);
  });
});

// ── getConfig ────────────────────────────────────────────────────────────────

Deno.test("lxc getConfig: the running config is recorded as ct-<vmid>-config", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("getConfig", { vmid: 302 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "ct-302-config");
    assert.equal(r.written[0].spec, "config");
    assert.equal(rec.node, "pve2");
    const config = rec.config as Record<string, unknown>;
    assert.equal(config.hostname, "far-ct");
    assert.match(String(config.rootfs), /^local-lvm:vm-302-disk-0/);
  });
});

Deno.test("lxc getConfig: an absent container fails and writes nothing", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("getConfig", { vmid: 399 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /container 399 does not exist/);
    assert.equal(r.written.length, 0);
  });
});

// ── nodeStatus / nodeConfig ──────────────────────────────────────────────────

Deno.test("lxc nodeStatus and nodeConfig record node-<node> and node-<node>-config", async () => {
  await withCt({}, async (env) => {
    const status = await env.run("nodeStatus", {});
    assert.equal(status.status, "succeeded", status.error);
    assert.equal(written(status, "node-pve1").node, "pve1");
    const config = await env.run("nodeConfig", { node: "pve2" });
    assert.equal(config.status, "succeeded", config.error);
    const rec = written(config, "node-pve2-config");
    assert.deepEqual(rec.bridges, ["vmbr0"]);
    const storages = rec.storages as { storage: string; content: string[] }[];
    assert.ok(
      storages.some((s) =>
        s.storage === "local-lvm" && s.content.includes("rootdir")
      ),
    );
  });
});

// ── setConfig ────────────────────────────────────────────────────────────────

Deno.test("lxc setConfig: a stopped container's change reads back applied", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 301,
      config: { cores: 2, nameserver: "1.1.1.1" },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(301)?.config.nameserver, "1.1.1.1");
    assert.equal(written(r, "ct-301").pending, undefined);
  });
});

Deno.test("lxc setConfig: a running container's non-hotplug change is recorded pending", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 300,
      config: { memory: 1024, ostype: "ubuntu" },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(written(r, "ct-300").pending, { ostype: "ubuntu" });
    assert.match(
      r.logs.map((l) => l.message).join("\n"),
      /pending until the next start: ostype/,
    );
  });
});

Deno.test("lxc setConfig: a new net0 on a missing bridge of a running container fails with PVE's words", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 300,
      config: { net1: "name=eth1,bridge=vmbr9,ip=dhcp" },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /bridge 'vmbr9' does not exist/);
    assert.equal(written(r, "ct-300").present, true);
  });
});
