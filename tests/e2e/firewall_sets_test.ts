/**
 * firewallIpset and firewallAlias end to end, both models: an IP set succeeds only when it reads
 * back equal to the declaration (its comment, every entry with nomatch and comment), an alias when
 * PVE lists it as declared; each is deleted on request, nothing is sent when it already is, and
 * what PVE would refuse is refused before any change.
 */
import assert from "node:assert/strict";
import { type Env, isCheckRequest, withEnv, written } from "./env.ts";
import { withCt } from "./lxc_fixture.ts";

/** The package's writes since `from`, swamp's pre-flight checks left out: `VERB path-after-firewall`. */
const writes = (env: Env, from = 0) =>
  env.sim.requests.slice(from).filter((q) =>
    !isCheckRequest(q.path) && q.method !== "GET"
  ).map((q) =>
    `${q.method} ${decodeURIComponent(q.path.split("/firewall/")[1])}`
  );

const WEB = {
  name: "web",
  comment: "front ends",
  cidrs: [
    { cidr: "10.0.0.0/8", comment: "lab" },
    { cidr: "192.0.2.1/32" },
    { cidr: "fd00::/8", nomatch: true },
  ],
};

/** The entries PVE holds in set `name` of `vmid`, each `[!]cidr[ # comment]`. */
function held(env: Env, vmid: number, name = "web"): string[] | undefined {
  return env.sim.firewall(vmid)?.ipsets[name]?.map((e) =>
    `${e.nomatch ? "!" : ""}${e.cidr}${e.comment ? ` # ${e.comment}` : ""}`
  );
}

/** An IP set made, changed every way, left alone when as declared, then deleted, on `vmid`. */
async function ipsetCourse(env: Env, vmid: number, prefix: string) {
  const made = await env.run("firewallIpset", { vmid, ...WEB });
  assert.equal(made.status, "succeeded", made.error);
  assert.deepEqual(held(env, vmid), [
    "10.0.0.0/8 # lab",
    "192.0.2.1",
    "!fd00::/8",
  ]);
  assert.equal(env.sim.firewall(vmid)?.ipsetComments.web, "front ends");
  assert.equal(
    written(made, `${prefix}-${vmid}`).lastOperation,
    "firewallIpset",
  );
  const before = env.sim.requests.length;
  const changed = await env.run("firewallIpset", {
    vmid,
    name: "Web",
    comment: "edge",
    cidrs: [{ cidr: "10.0.0.0/8" }, { cidr: "fd00::/8", nomatch: true }, {
      cidr: "198.51.100.0/24",
    }],
  });
  assert.equal(changed.status, "succeeded", changed.error);
  assert.deepEqual(writes(env, before), [
    "POST ipset",
    "PUT ipset/web/10.0.0.0/8",
    "DELETE ipset/web/192.0.2.1",
    "POST ipset/web",
  ]);
  assert.deepEqual(held(env, vmid), [
    "10.0.0.0/8",
    "198.51.100.0/24",
    "!fd00::/8",
  ]);
  const still = env.sim.requests.length;
  const again = await env.run("firewallIpset", {
    vmid,
    name: "web",
    comment: "edge",
    cidrs: [{ cidr: "198.51.100.0/24" }, { cidr: "fd00::/8", nomatch: true }, {
      cidr: "10.0.0.0/8",
    }],
  });
  assert.equal(again.status, "succeeded", again.error);
  assert.deepEqual(writes(env, still), []);
  const gone = await env.run("firewallIpset", {
    vmid,
    name: "web",
    delete: true,
  });
  assert.equal(gone.status, "succeeded", gone.error);
  assert.equal(held(env, vmid), undefined);
  assert.deepEqual(writes(env, still), ["DELETE ipset/web"]);
}

/** An alias made, updated (its name's case and cidr), left alone, then deleted, on `vmid`. */
async function aliasCourse(env: Env, vmid: number) {
  const made = await env.run("firewallAlias", {
    vmid,
    name: "gateway",
    cidr: "10.0.0.1",
    comment: "router",
  });
  assert.equal(made.status, "succeeded", made.error);
  const before = env.sim.requests.length;
  const changed = await env.run("firewallAlias", {
    vmid,
    name: "Gateway",
    cidr: "10.0.0.254/32",
  });
  assert.equal(changed.status, "succeeded", changed.error);
  assert.deepEqual(env.sim.firewall(vmid)?.aliases.gateway, {
    name: "Gateway",
    cidr: "10.0.0.254",
    ipversion: 4,
  });
  const same = await env.run("firewallAlias", {
    vmid,
    name: "Gateway",
    cidr: "10.0.0.254",
  });
  assert.equal(same.status, "succeeded", same.error);
  const gone = await env.run("firewallAlias", {
    vmid,
    name: "gateway",
    delete: true,
  });
  assert.equal(gone.status, "succeeded", gone.error);
  assert.equal(env.sim.firewall(vmid)?.aliases.gateway, undefined);
  assert.deepEqual(writes(env, before), [
    "PUT aliases/Gateway",
    "DELETE aliases/gateway",
  ]);
}

/** The datacenter's aliases the alias course names. */
const DC_ALIASES = { clusterAliases: [{ name: "lan", cidr: "10.0.0.0/8" }] };

/**
 * IP set entries naming aliases on `vmid`: the guest's (made first), the datacenter's, kept as
 * written; one PVE cannot resolve is refused before the set changes.
 */
async function aliasEntriesCourse(env: Env, vmid: number) {
  const alias = await env.run("firewallAlias", {
    vmid,
    name: "gateway",
    cidr: "192.0.2.1",
  });
  assert.equal(alias.status, "succeeded", alias.error);
  const made = await env.run("firewallIpset", {
    vmid,
    name: "edge",
    cidrs: [{ cidr: "gateway" }, { cidr: "dc/LAN" }, {
      cidr: "198.51.100.0/24",
    }],
  });
  assert.equal(made.status, "succeeded", made.error);
  assert.deepEqual(held(env, vmid, "edge"), [
    "198.51.100.0/24",
    "dc/LAN",
    "gateway",
  ]);
  const before = env.sim.requests.length;
  const refused = await env.run("firewallIpset", {
    vmid,
    name: "edge",
    cidrs: [{ cidr: "gateway" }, { cidr: "guest/lan" }],
  });
  assert.equal(refused.status, "failed");
  assert.match(
    refused.error ?? "",
    /cidrs\[1\]\.cidr: PVE has no such alias 'lan'/,
  );
  assert.deepEqual(writes(env, before), []);
  assert.equal(held(env, vmid, "edge")?.length, 3);
}

Deno.test("firewallIpset: entries naming the guest's and the datacenter's aliases are kept as written; one naming no alias is refused first", async () => {
  await withEnv({ sim: DC_ALIASES }, (env) => aliasEntriesCourse(env, 100));
});

Deno.test("firewallIpset (lxc): entries naming aliases, as for a VM", async () => {
  await withCt({ sim: DC_ALIASES }, (env) => aliasEntriesCourse(env, 300));
});

Deno.test("firewallIpset: a set is made, changed entry by entry, left alone when as declared, and deleted", async () => {
  await withEnv({}, (env) => ipsetCourse(env, 100, "vm"));
});

Deno.test("firewallAlias: an alias is made, updated, left alone when as declared, and deleted", async () => {
  await withEnv({}, (env) => aliasCourse(env, 100));
});

Deno.test("firewallIpset (lxc): a container's set is made, changed, and deleted", async () => {
  await withCt({}, (env) => ipsetCourse(env, 300, "ct"));
});

Deno.test("firewallAlias (lxc): a container's alias is made, updated, and deleted", async () => {
  await withCt({}, (env) => aliasCourse(env, 300));
});

Deno.test("firewallIpset and firewallAlias: what PVE would refuse is refused before any change", async () => {
  await withEnv({}, async (env) => {
    for (
      const [method, args, field] of [
        ["firewallIpset", { cidrs: [{ cidr: "10.0.0.1/24" }] }, "cidr"],
        ["firewallIpset", { cidrs: [{ cidr: "0.0.0.0/0" }] }, "cidr"],
        ["firewallAlias", { cidr: "10.0.0.0/33" }, "cidr"],
        ["firewallAlias", { name: "1gw", cidr: "10.0.0.1" }, "name"],
      ] as const
    ) {
      const r = await env.run(method, { vmid: 100, name: "web", ...args });
      assert.equal(r.status, "failed", method);
      assert.match(r.error ?? "", new RegExp(field));
    }
    assert.deepEqual(writes(env), []);
  });
});

Deno.test("firewallIpset: a guest that does not exist fails, saying so", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("firewallIpset", { vmid: 999, ...WEB });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /999 does not exist/);
    assert.deepEqual(writes(env), []);
  });
});
