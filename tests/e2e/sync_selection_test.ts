/**
 * sync's selection end to end, both models and both transports: `tags` records only the guests that
 * carry every tag (PVE's tags, compared without case), `nodes` reads just those nodes' lists, and
 * every record says which selection wrote it.
 */
import assert from "node:assert/strict";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { withEnv, written } from "./env.ts";

const TRANSPORTS = ["api", "ssh"] as const;

function vm(vmid: number, node: string, tags: string[]): SimGuest {
  return {
    vmid,
    node,
    type: "qemu",
    name: `vm${vmid}`,
    status: "stopped",
    tags,
    config: { smbios1: `uuid=00000000-0000-4000-8000-000000000${vmid}` },
  };
}

function ct(vmid: number, node: string, tags: string[]): SimGuest {
  return {
    ...vm(vmid, node, tags),
    type: "lxc",
    name: `ct${vmid}`,
    config: {},
  };
}

const FLEET = [
  ...demoGuests(),
  vm(501, "pve1", ["web", "prod"]),
  vm(502, "pve1", ["web"]),
  vm(503, "pve2", ["Web", "prod"]),
  ct(601, "pve1", ["web", "prod"]),
  ct(602, "pve2", ["db", "prod"]),
];

for (const via of TRANSPORTS) {
  Deno.test(`sync (${via}): tags over the cluster record only the guests carrying every tag, with the selection`, async () => {
    await withEnv({ via, guests: FLEET }, async (env) => {
      const r = await env.run("sync", {
        scope: "cluster",
        tags: ["web", "prod"],
      });
      assert.equal(r.status, "succeeded", r.error);
      const written_ = r.written.map((w) => w.instance).sort();
      assert.deepEqual(written_, ["vm-501", "vm-503"]);
      assert.deepEqual(written(r, "vm-503").selection, {
        scope: "cluster",
        tags: ["web", "prod"],
      });
      assert.equal(written(r, "vm-503").node, "pve2");
    });
  });

  Deno.test(`sync (${via}, lxc): nodes reads just those nodes, and the records say so`, async () => {
    await withEnv({ via, guests: FLEET, model: lxcModel }, async (env) => {
      const r = await env.run("sync", { nodes: ["pve2"], tags: ["prod"] });
      assert.equal(r.status, "succeeded", r.error);
      assert.deepEqual(r.written.map((w) => w.instance), ["ct-602"]);
      assert.deepEqual(written(r, "ct-602").selection, {
        scope: "nodes",
        nodes: ["pve2"],
        tags: ["prod"],
      });
      const lists = env.sim.requests.filter((q) =>
        /\/nodes\/[^/]+\/lxc$/.test(q.path)
      ).map((q) => q.path);
      assert.deepEqual(lists, ["/api2/json/nodes/pve2/lxc"]);
    });
  });
}

Deno.test("sync: a node sync without a selection records every guest, stating the node scope", async () => {
  await withEnv({ guests: FLEET }, async (env) => {
    const r = await env.run("sync", {});
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(written(r, "vm-502").selection, {
      scope: "node",
      nodes: ["pve1"],
      tags: [],
    });
  });
});

Deno.test("sync: a tag in the wrong syntax is refused, naming it", async () => {
  await withEnv({ guests: FLEET }, async (env) => {
    const r = await env.run("sync", { tags: ["web", "no spaces"] });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /tags/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("sync: nodes with an unreadable node writes the others, then fails naming it", async () => {
  await withEnv({ guests: FLEET }, async (env) => {
    env.sim.fault({
      pathRegex: "^/api2/json/nodes/pve2/qemu$",
      kind: "status",
      status: 595,
      message: "no route to host",
      times: Infinity,
    });
    const r = await env.run("sync", { nodes: ["pve1", "pve2"], tags: ["web"] });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /could not list the VMs of node pve2/);
    assert.deepEqual(r.written.map((w) => w.instance).sort(), [
      "vm-501",
      "vm-502",
    ]);
  });
});
