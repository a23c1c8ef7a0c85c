/**
 * sync's selection end to end, both models and both transports: `tags` records only the guests that
 * carry every tag (PVE's tags, compared without case), `nodes` reads just those nodes' lists,
 * `where` (a CEL expression, evaluated in the harness's stand-in for swamp's
 * `ctx.createCelEnvironment()`) only the guests whose fields satisfy it, and every record says
 * which selection wrote it.
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
  { ...vm(504, "pve2", ["web"]), status: "running" as const },
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

Deno.test("sync: where over the cluster records only the guests whose fields satisfy it, with the selection", async () => {
  await withEnv({ guests: FLEET }, async (env) => {
    const where =
      'tags.exists(t, t == "web") && node == "pve2" && status == "running"';
    const r = await env.run("sync", { scope: "cluster", where });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(r.written.map((w) => w.instance), ["vm-504"]);
    assert.deepEqual(written(r, "vm-504").selection, {
      scope: "cluster",
      tags: [],
      where,
    });
    assert.match(
      r.logs.map((l) => l.message).join("\n"),
      /listed outside the selection/,
    );
  });
});

Deno.test("sync (lxc): where sees vmid as a number and the record's fields by their names", async () => {
  await withEnv({ guests: FLEET, model: lxcModel }, async (env) => {
    const r = await env.run("sync", {
      scope: "cluster",
      where: 'vmid % 2 == 0 && "prod" in tags && lock == "" && !template',
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(r.written.map((w) => w.instance), ["ct-602"]);
  });
});

Deno.test("sync: where combined with nodes and tags records only the guests every one selects", async () => {
  await withEnv({ guests: FLEET }, async (env) => {
    const r = await env.run("sync", {
      nodes: ["pve2"],
      tags: ["web"],
      where: 'status != "stopped"',
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(r.written.map((w) => w.instance), ["vm-504"]);
    assert.deepEqual(written(r, "vm-504").selection, {
      scope: "nodes",
      nodes: ["pve2"],
      tags: ["web"],
      where: 'status != "stopped"',
    });
  });
});

for (
  const [why, where, said] of [
    ["does not compile", "tags.exists(t, t ==", /Unexpected token/],
    ["is empty", " ", /Unexpected token/],
    ["names no field of a guest", 'nmae == "web"', /Unknown variable: nmae/],
    ["yields no bool", "vmid + 1", /does not yield a bool/],
    ["compares a string with a number", "name > 5", /no such overload/],
  ] as const
) {
  Deno.test(`sync: a where that ${why} is refused naming where, with nothing sent to PVE`, async () => {
    await withEnv({ guests: FLEET }, async (env) => {
      const r = await env.run("sync", { scope: "cluster", where });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /^invalid argument `where`: must be a CEL expression over the guest's fields \(vmid, name, node, status, tags, lock, template, [^)]*\) that yields a bool: /,
      );
      assert.match(r.error ?? "", said);
      assert.deepEqual(env.sim.requests.map((q) => q.path), []);
      assert.equal(r.written.length, 0);
    });
  });
}

Deno.test("sync: where with a vmid is refused naming where, as tags and nodes are", async () => {
  await withEnv({ guests: FLEET }, async (env) => {
    const r = await env.run("sync", { vmid: 501, where: "true" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /where cannot be given with vmid or vmName/);
    assert.deepEqual(env.sim.requests, []);
  });
});

Deno.test("sync: a stored guest whose record does not satisfy where is left alone when it vanishes", async () => {
  await withEnv({ guests: FLEET }, async (env) => {
    const first = await env.run("sync", { scope: "cluster" });
    assert.equal(first.status, "succeeded", first.error);
    env.sim.removeGuest(501); // recorded stopped
    env.sim.removeGuest(504); // recorded running
    const r = await env.run("sync", {
      scope: "cluster",
      where: 'status == "running"',
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-504").present, false);
    assert.ok(!r.written.some((w) => w.instance === "vm-501"));
    assert.equal(
      (env.repo.latest("vm-501") as { status: string }).status,
      "stopped",
    );
    const confirmed = env.sim.requests.filter((q) =>
      q.path.endsWith("/cluster/nextid")
    ).map((q) => q.query.vmid);
    assert.deepEqual(confirmed, ["504"]);
  });
});
