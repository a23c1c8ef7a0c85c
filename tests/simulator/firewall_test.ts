/**
 * A guest's firewall and the cluster switch as the simulator serves them, held to pve-firewall's
 * Perl (`src/PVE/API2/Firewall/VM.pm`, `Rules.pm`, `IPSet.pm`, `Aliases.pm`, `Cluster.pm`,
 * `src/PVE/Firewall.pm`): one behaviour per test, through the HTTP API.
 */

import assert from "node:assert/strict";
import {
  api,
  type ApiParams,
  tokenHeader,
} from "../../simulator/sim_client.ts";
import { type Simulator, startSimulator } from "../../simulator/simulator.ts";
import type { SimOptions, SimToken } from "../../simulator/types.ts";

const ROOT: SimToken = { id: "root@pam!ci", secret: "s1" };
/** A token that may read the guests but not change their network (no VM.Config.Network). */
const AUDITOR: SimToken = {
  id: "audit@pve!ro",
  secret: "s2",
  privsep: true,
  tokenAcl: { "/": ["VM.Audit", "Sys.Audit"] },
};
const FW = "/nodes/pve1/qemu/100/firewall";
/** SHA-1 of nothing: the digest PVE reports for an empty (absent) config section. */
const EMPTY_DIGEST = "da39a3ee5e6b4b0d3255bfef95601890afd80709";

async function withSim(
  fn: (call: Call, sim: Simulator) => Promise<void>,
  opts: Partial<SimOptions> = {},
): Promise<void> {
  const sim = await startSimulator({
    nodes: ["pve1"],
    guests: [
      { vmid: 100, node: "pve1", type: "qemu", name: "web", status: "stopped" },
      { vmid: 300, node: "pve1", type: "lxc", name: "ct", status: "stopped" },
    ],
    tokens: [ROOT, AUDITOR],
    ...opts,
  });
  const call: Call = (method, path, params = {}, token = ROOT) =>
    api(sim.url, method, path, params, {
      auth: tokenHeader(token.id, token.secret),
    });
  try {
    await fn(call, sim);
  } finally {
    await sim.close();
  }
}

type Call = (
  method: string,
  path: string,
  params?: ApiParams,
  token?: SimToken,
  // deno-lint-ignore no-explicit-any
) => Promise<{ status: number; body: any }>;

/** The rules' actions (with their comments) in order. */
async function ruleOrder(call: Call, base = FW): Promise<string[]> {
  const r = await call("GET", `${base}/rules`);
  assert.equal(r.status, 200);
  // deno-lint-ignore no-explicit-any
  return r.body.data.map((rule: any) => `${rule.pos}:${rule.comment}`);
}

/** Adds rules so that they read `a`, `b`, `c`… from the top (each POST goes first). */
async function addRules(call: Call, comments: string[]): Promise<void> {
  for (const comment of [...comments].reverse()) {
    const r = await call("POST", `${FW}/rules`, {
      type: "in",
      action: "ACCEPT",
      comment,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
}

Deno.test("firewall options of a guest never configured read as just the empty digest", async () => {
  await withSim(async (call) => {
    const r = await call("GET", `${FW}/options`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data, { digest: EMPTY_DIGEST });
  });
});

Deno.test("firewall options set are read back as PVE's parser reads them: flags 0/1", async () => {
  await withSim(async (call) => {
    const put = await call("PUT", `${FW}/options`, {
      enable: true,
      policy_in: "DROP",
      log_level_in: "info",
      macfilter: false,
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.data, null);
    const { data } = (await call("GET", `${FW}/options`)).body;
    assert.equal(data.enable, 1);
    assert.equal(data.macfilter, 0);
    assert.equal(data.policy_in, "DROP");
    assert.equal(data.log_level_in, "info");
    assert.equal(data.policy_out, undefined);
    assert.match(data.digest, /^[0-9a-f]{40}$/);
    assert.notEqual(data.digest, EMPTY_DIGEST);
  });
});

Deno.test("firewall options listed in delete are removed", async () => {
  await withSim(async (call) => {
    await call("PUT", `${FW}/options`, { enable: 1, policy_in: "DROP" });
    const r = await call("PUT", `${FW}/options`, { delete: "policy_in" });
    assert.equal(r.status, 200);
    const { data } = (await call("GET", `${FW}/options`)).body;
    assert.equal(data.policy_in, undefined);
    assert.equal(data.enable, 1);
  });
});

Deno.test("deleting an unknown firewall option is refused naming delete", async () => {
  await withSim(async (call) => {
    const r = await call("PUT", `${FW}/options`, { delete: "bogus" });
    assert.equal(r.status, 400);
    assert.equal(r.body.errors.delete, "no such option 'bogus'");
  });
});

Deno.test("a firewall options write with a stale digest is refused and changes nothing", async () => {
  await withSim(async (call) => {
    const r = await call("PUT", `${FW}/options`, {
      enable: 1,
      digest: "0".repeat(40),
    });
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message,
      "detected modified configuration - file changed by other user? Try again.\n",
    );
    const { data } = (await call("GET", `${FW}/options`)).body;
    assert.equal(data.enable, undefined);
  });
});

Deno.test("a firewall options write with the current digest is accepted", async () => {
  await withSim(async (call) => {
    const r = await call("PUT", `${FW}/options`, {
      enable: 1,
      digest: EMPTY_DIGEST,
    });
    assert.equal(r.status, 200);
  });
});

Deno.test("a new rule goes to the top, disabled unless enable is given, even with pos", async () => {
  await withSim(async (call) => {
    await addRules(call, ["b"]);
    const r = await call("POST", `${FW}/rules`, {
      type: "in",
      action: "DROP",
      comment: "a",
      pos: 1,
    });
    assert.equal(r.status, 200);
    assert.deepEqual(await ruleOrder(call), ["0:a", "1:b"]);
    const { data } = (await call("GET", `${FW}/rules/0`)).body;
    assert.equal(data.enable, 0);
    assert.equal(data.type, "in");
    assert.equal(data.action, "DROP");
    assert.equal(data.pos, 0);
    assert.match(data.digest, /^[0-9a-f]{40}$/);
  });
});

Deno.test("a rule's fields are read back as written, with the ipversion its addresses decide", async () => {
  await withSim(async (call) => {
    const r = await call("POST", `${FW}/rules`, {
      type: "in",
      action: "ACCEPT",
      enable: 1,
      proto: "tcp",
      dport: "22",
      source: "192.168.1.0/24",
      iface: "net0",
      macro: "ssh",
      log: "info",
      comment: "  ssh in  ",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const [rule] = (await call("GET", `${FW}/rules`)).body.data;
    const { digest, ...rest } = rule;
    assert.match(digest, /^[0-9a-f]{40}$/);
    assert.deepEqual(rest, {
      pos: 0,
      type: "in",
      action: "ACCEPT",
      enable: 1,
      proto: "tcp",
      dport: "22",
      source: "192.168.1.0/24",
      iface: "net0",
      macro: "SSH",
      log: "info",
      comment: "ssh in",
      ipversion: 4,
    });
  });
});

Deno.test("a rule updated by pos changes only the fields given; delete clears fields", async () => {
  await withSim(async (call) => {
    await addRules(call, ["a", "b"]);
    await call("PUT", `${FW}/rules/1`, { proto: "udp", dport: "53" });
    let rule = (await call("GET", `${FW}/rules/1`)).body.data;
    assert.equal(rule.comment, "b");
    assert.equal(rule.dport, "53");
    const r = await call("PUT", `${FW}/rules/1`, { delete: "dport,proto" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    rule = (await call("GET", `${FW}/rules/1`)).body.data;
    assert.equal(rule.dport, undefined);
    assert.equal(rule.proto, undefined);
    assert.equal((await call("GET", `${FW}/rules/0`)).body.data.comment, "a");
  });
});

Deno.test("a refused rule update leaves the rule as it was", async () => {
  await withSim(async (call) => {
    await addRules(call, ["a"]);
    const r = await call("PUT", `${FW}/rules/0`, { dport: "22", comment: "b" });
    assert.equal(r.status, 400);
    assert.equal(
      r.body.errors.proto,
      "missing property - 'dport' requires this property",
    );
    const rule = (await call("GET", `${FW}/rules/0`)).body.data;
    assert.equal(rule.comment, "a");
    assert.equal(rule.dport, undefined);
  });
});

Deno.test("deleting a rule's type is refused with PVE's words", async () => {
  await withSim(async (call) => {
    await addRules(call, ["a"]);
    const r = await call("PUT", `${FW}/rules/0`, { delete: "type" });
    assert.equal(r.status, 400);
    assert.equal(
      r.body.errors.delete,
      "unable to delete required property 'type'",
    );
  });
});

Deno.test("moveto puts the rule before the one at that position, counted before the move", async () => {
  await withSim(async (call) => {
    await addRules(call, ["a", "b", "c", "d"]);
    await call("PUT", `${FW}/rules/0`, { moveto: 2 });
    assert.deepEqual(await ruleOrder(call), ["0:b", "1:a", "2:c", "3:d"]);
    await call("PUT", `${FW}/rules/3`, { moveto: 0 });
    assert.deepEqual(await ruleOrder(call), ["0:d", "1:b", "2:a", "3:c"]);
  });
});

Deno.test("moveto past the end moves the rule last", async () => {
  await withSim(async (call) => {
    await addRules(call, ["a", "b", "c"]);
    await call("PUT", `${FW}/rules/0`, { moveto: 3 });
    assert.deepEqual(await ruleOrder(call), ["0:b", "1:c", "2:a"]);
  });
});

Deno.test("deleting a rule renumbers the ones after it", async () => {
  await withSim(async (call) => {
    await addRules(call, ["a", "b", "c"]);
    const r = await call("DELETE", `${FW}/rules/1`);
    assert.equal(r.status, 200);
    assert.deepEqual(await ruleOrder(call), ["0:a", "1:c"]);
  });
});

Deno.test("a rule position past the end is refused with PVE's words", async () => {
  await withSim(async (call) => {
    await addRules(call, ["a"]);
    for (const method of ["GET", "PUT", "DELETE"]) {
      const r = await call(method, `${FW}/rules/1`);
      assert.equal(r.status, 500, method);
      assert.equal(r.body.message, "no rule at position 1\n");
    }
  });
});

Deno.test("a rule change with a stale digest is refused and changes nothing", async () => {
  await withSim(async (call) => {
    await addRules(call, ["a"]);
    const r = await call("DELETE", `${FW}/rules/0`, { digest: "0".repeat(40) });
    assert.equal(r.status, 500);
    assert.match(r.body.message, /^detected modified configuration/);
    assert.deepEqual(await ruleOrder(call), ["0:a"]);
  });
});

Deno.test("a rule change with the list's digest is accepted", async () => {
  await withSim(async (call) => {
    await addRules(call, ["a"]);
    const { digest } = (await call("GET", `${FW}/rules/0`)).body.data;
    const r = await call("DELETE", `${FW}/rules/0`, { digest });
    assert.equal(r.status, 200);
    assert.deepEqual(await ruleOrder(call), []);
  });
});

Deno.test("bad rules are refused with verify_rule's words, naming the parameter", async () => {
  await withSim(async (call) => {
    const cases: [ApiParams, string, string][] = [
      [
        { dport: "22" },
        "proto",
        "missing property - 'dport' requires this property",
      ],
      [{ macro: "Nope" }, "macro", "unknown macro 'Nope'"],
      [
        { proto: "tcp", dport: "22:21" },
        "dport",
        "invalid format - backwards range '22:21' not allowed, did you mean '21:22'?\n",
      ],
      [
        { proto: "gre", dport: "22" },
        "dport",
        "protocol 'gre' does not support ports",
      ],
      [
        { iface: "eth0" },
        "iface",
        "value does not match the regex pattern 'net\\d+'",
      ],
      [
        { type: "forward" },
        "type",
        "invalid rule type 'forward' for rule_env 'vm'",
      ],
      [{ source: "+nosuch" }, "source", "no such ipset 'nosuch'"],
      [{ dest: "nosuch" }, "dest", "no such alias 'nosuch'"],
      [
        { proto: "icmp", source: "fd00::1" },
        "source",
        "detected mixed ipv4/ipv6 addresses in rule",
      ],
    ];
    for (const [extra, field, words] of cases) {
      const r = await call("POST", `${FW}/rules`, {
        type: "in",
        action: "ACCEPT",
        ...extra,
      });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.body.errors[field], words, JSON.stringify(extra));
    }
    assert.deepEqual(await ruleOrder(call), []);
  });
});

Deno.test("a rule address that is not an address is refused by the schema's format", async () => {
  await withSim(async (call) => {
    const r = await call("POST", `${FW}/rules`, {
      type: "in",
      action: "ACCEPT",
      source: "10.0.0.1/24",
    });
    assert.equal(r.status, 400);
    assert.match(
      r.body.errors.source,
      /^invalid format - invalid IP address: /,
    );
  });
});

Deno.test("an ipset is created empty and listed with its comment", async () => {
  await withSim(async (call) => {
    const r = await call("POST", `${FW}/ipset`, {
      name: "web",
      comment: "hosts",
    });
    assert.equal(r.status, 200);
    const list = (await call("GET", `${FW}/ipset`)).body.data;
    assert.equal(list.length, 1);
    assert.equal(list[0].name, "web");
    assert.equal(list[0].comment, "hosts");
    assert.deepEqual((await call("GET", `${FW}/ipset/web`)).body.data, []);
  });
});

Deno.test("an ipset name is kept in lower case, as the config parser reads it", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/ipset`, { name: "WebHosts" });
    const list = (await call("GET", `${FW}/ipset`)).body.data;
    assert.equal(list[0].name, "webhosts");
    const r = await call("GET", `${FW}/ipset/WebHosts`);
    assert.equal(r.status, 500);
    assert.equal(r.body.message, "no such IPSet 'WebHosts'\n");
  });
});

Deno.test("creating an ipset that exists is refused naming name", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/ipset`, { name: "web" });
    const r = await call("POST", `${FW}/ipset`, { name: "web" });
    assert.equal(r.status, 400);
    assert.equal(r.body.errors.name, "IPSet 'web' already exists");
  });
});

Deno.test("an ipset is renamed by POSTing the new name with rename naming the old one", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/ipset`, { name: "old", comment: "c" });
    await call("POST", `${FW}/ipset/old`, { cidr: "10.0.0.1" });
    const r = await call("POST", `${FW}/ipset`, { name: "new", rename: "old" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const list = (await call("GET", `${FW}/ipset`)).body.data;
    assert.deepEqual(list.map((s: { name: string }) => s.name), ["new"]);
    assert.equal(list[0].comment, "c");
    const entries = (await call("GET", `${FW}/ipset/new`)).body.data;
    assert.equal(entries[0].cidr, "10.0.0.1");
  });
});

Deno.test("ipset entries are normalized like the parser does and listed sorted", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/ipset`, { name: "web" });
    for (const cidr of ["10.0.0.9/32", "10.0.1.7/24", "10.0.0.10"]) {
      const r = await call("POST", `${FW}/ipset/web`, { cidr });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    await call("POST", `${FW}/ipset/web`, {
      cidr: "192.168.0.0/16",
      nomatch: 1,
      comment: "lan",
    });
    const entries = (await call("GET", `${FW}/ipset/web`)).body.data;
    assert.deepEqual(
      // deno-lint-ignore no-explicit-any
      entries.map(({ digest: _, ...e }: any) => e),
      [
        { cidr: "10.0.0.10" },
        { cidr: "10.0.0.9" },
        { cidr: "10.0.1.0/24" },
        { cidr: "192.168.0.0/16", nomatch: 1, comment: "lan" },
      ],
    );
  });
});

Deno.test("adding an ipset entry twice is refused naming cidr", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/ipset`, { name: "web" });
    await call("POST", `${FW}/ipset/web`, { cidr: "10.0.0.1" });
    const r = await call("POST", `${FW}/ipset/web`, { cidr: "10.0.0.1/32" });
    assert.equal(r.status, 400);
    assert.equal(r.body.errors.cidr, "address '10.0.0.1' already exists");
  });
});

Deno.test("an ipset entry is read, updated and removed by its cidr", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/ipset`, { name: "web" });
    await call("POST", `${FW}/ipset/web`, { cidr: "10.0.0.0/8", comment: "x" });
    const entry = `${FW}/ipset/web/${encodeURIComponent("10.0.0.0/8")}`;
    assert.equal((await call("GET", entry)).body.data.comment, "x");
    assert.equal((await call("PUT", entry, { nomatch: 1 })).status, 200);
    const read = (await call("GET", entry)).body.data;
    assert.equal(read.nomatch, 1);
    assert.equal(read.comment, undefined);
    assert.equal((await call("DELETE", entry)).status, 200);
    assert.deepEqual((await call("GET", `${FW}/ipset/web`)).body.data, []);
    const gone = await call("GET", entry);
    assert.equal(gone.status, 400);
    assert.equal(gone.body.errors.cidr, "no such IP/Network");
  });
});

Deno.test("deleting an ipset with entries is refused unless force", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/ipset`, { name: "web" });
    await call("POST", `${FW}/ipset/web`, { cidr: "10.0.0.1" });
    const refused = await call("DELETE", `${FW}/ipset/web`);
    assert.equal(refused.status, 500);
    assert.equal(refused.body.message, "IPSet 'web' is not empty\n");
    const forced = await call("DELETE", `${FW}/ipset/web`, { force: 1 });
    assert.equal(forced.status, 200);
    assert.deepEqual((await call("GET", `${FW}/ipset`)).body.data, []);
  });
});

Deno.test("a rule may name an ipset that exists", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/ipset`, { name: "web" });
    const r = await call("POST", `${FW}/rules`, {
      type: "in",
      action: "ACCEPT",
      source: "+web",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  });
});

Deno.test("an alias is created and read back with its ip version", async () => {
  await withSim(async (call) => {
    const r = await call("POST", `${FW}/aliases`, {
      name: "Gateway",
      cidr: "10.0.0.1/32",
      comment: "gw",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const one = (await call("GET", `${FW}/aliases/gateway`)).body.data;
    assert.deepEqual(one, {
      name: "Gateway",
      cidr: "10.0.0.1",
      ipversion: 4,
      comment: "gw",
    });
    const list = (await call("GET", `${FW}/aliases`)).body.data;
    assert.equal(list.length, 1);
    assert.match(list[0].digest, /^[0-9a-f]{40}$/);
  });
});

Deno.test("creating an alias that exists (in any case) is refused naming name", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/aliases`, { name: "gw", cidr: "10.0.0.1" });
    const r = await call("POST", `${FW}/aliases`, {
      name: "GW",
      cidr: "10.0.0.2",
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.errors.name, "alias 'GW' already exists");
  });
});

Deno.test("an alias is renamed by PUT with rename, its cidr replaced", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/aliases`, {
      name: "gw",
      cidr: "10.0.0.1",
      comment: "c",
    });
    const r = await call("PUT", `${FW}/aliases/gw`, {
      cidr: "fd00::1",
      rename: "router",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const list = (await call("GET", `${FW}/aliases`)).body.data;
    // deno-lint-ignore no-explicit-any
    assert.deepEqual(list.map(({ digest: _, ...a }: any) => a), [
      { name: "router", cidr: "fd00::1", ipversion: 6 },
    ]);
  });
});

Deno.test("an alias is deleted; reading it then answers no such alias", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/aliases`, { name: "gw", cidr: "10.0.0.1" });
    assert.equal((await call("DELETE", `${FW}/aliases/gw`)).status, 200);
    const r = await call("GET", `${FW}/aliases/gw`);
    assert.equal(r.status, 400);
    assert.equal(r.body.errors.name, "no such alias");
  });
});

Deno.test("a rule naming an alias takes the alias's ip version", async () => {
  await withSim(async (call) => {
    await call("POST", `${FW}/aliases`, { name: "v6host", cidr: "fd00::5" });
    await call("POST", `${FW}/rules`, {
      type: "in",
      action: "ACCEPT",
      dest: "v6host",
    });
    const rule = (await call("GET", `${FW}/rules/0`)).body.data;
    assert.equal(rule.ipversion, 6);
  });
});

Deno.test("a container's firewall is its own, with rule_env ct in verify_rule's words", async () => {
  await withSim(async (call) => {
    const ct = "/nodes/pve1/lxc/300/firewall";
    await call("POST", `${ct}/rules`, {
      type: "out",
      action: "DROP",
      comment: "x",
    });
    assert.deepEqual(await ruleOrder(call, ct), ["0:x"]);
    assert.deepEqual(await ruleOrder(call), []);
    const r = await call("POST", `${ct}/rules`, {
      type: "forward",
      action: "DROP",
    });
    assert.equal(
      r.body.errors.type,
      "invalid rule type 'forward' for rule_env 'ct'",
    );
  });
});

Deno.test("a guest's firewall config is removed with the guest", async () => {
  await withSim(async (call, sim) => {
    await addRules(call, ["a"]);
    assert.equal(sim.firewall(100)?.rules.length, 1);
    sim.removeGuest(100);
    assert.equal(sim.firewall(100), undefined);
  });
});

Deno.test("reading a guest's firewall needs VM.Audit; changing it needs VM.Config.Network", async () => {
  await withSim(async (call) => {
    const read = await call("GET", `${FW}/rules`, {}, AUDITOR);
    assert.equal(read.status, 200);
    const write = await call(
      "POST",
      `${FW}/rules`,
      { type: "in", action: "ACCEPT" },
      AUDITOR,
    );
    assert.equal(write.status, 403);
    assert.equal(
      write.body.message,
      "Permission check failed (/vms/100, VM.Config.Network)\n",
    );
  });
});

Deno.test("the cluster firewall is disabled by default: no enable option", async () => {
  await withSim(async (call) => {
    const r = await call("GET", "/cluster/firewall/options");
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data, { digest: EMPTY_DIGEST });
  });
});

Deno.test("the cluster firewall switch set by the test reads enable 1", async () => {
  await withSim(async (call) => {
    const r = await call("GET", "/cluster/firewall/options");
    assert.equal(r.body.data.enable, 1);
  }, { clusterFirewall: true });
});

Deno.test("the cluster firewall is switched on by PUT enable=1", async () => {
  await withSim(async (call) => {
    const put = await call("PUT", "/cluster/firewall/options", { enable: 1 });
    assert.equal(put.status, 200);
    const r = await call("GET", "/cluster/firewall/options");
    assert.equal(r.body.data.enable, 1);
  });
});

Deno.test("switching the cluster firewall needs Sys.Modify on /", async () => {
  await withSim(async (call) => {
    const r = await call(
      "PUT",
      "/cluster/firewall/options",
      { enable: 1 },
      AUDITOR,
    );
    assert.equal(r.status, 403);
    assert.equal(r.body.message, "Permission check failed (/, Sys.Modify)\n");
  });
});

Deno.test("comments read back as pve-firewall's parser reads the file's bytes", async () => {
  // perl on generic_fw_config_parser's, parse_alias's and parse_fw_rule's regexes: the line's
  // trailing `\h` takes byte 0xA0 (`à` is C3 A0: decoded, U+FFFD), the comment is trimmed of
  // ASCII white space only (U+3000 stays), a `0` is false and dropped, the header is trimmed.
  await withSim(async (call) => {
    await call("POST", `${FW}/ipset`, { name: "web", comment: " 0 " });
    await call("POST", `${FW}/ipset`, { name: "lan", comment: " a\u3000 " });
    const sets = (await call("GET", `${FW}/ipset`)).body.data;
    assert.deepEqual(sets.map((s: { comment?: string }) => s.comment), [
      "a\u3000",
      undefined,
    ]);
    await call("POST", `${FW}/ipset/web`, { cidr: "10.0.0.0/8", comment: "0" });
    await call("POST", `${FW}/ipset/web`, {
      cidr: "10.0.0.1",
      comment: "voilà",
    });
    const entries = (await call("GET", `${FW}/ipset/web`)).body.data;
    assert.deepEqual(entries.map((e: { comment?: string }) => e.comment), [
      undefined,
      "voil\ufffd",
    ]);
    await call("POST", `${FW}/aliases`, {
      name: "gw",
      cidr: "10.0.0.1",
      comment: "\tx\u3000\t",
    });
    const aliases = (await call("GET", `${FW}/aliases`)).body.data;
    assert.equal(aliases[0].comment, "x\u3000");
    await call("POST", `${FW}/rules`, {
      type: "in",
      action: "ACCEPT",
      comment: "x\u00a0",
    });
    const rules = (await call("GET", `${FW}/rules`)).body.data;
    assert.equal(rules[0].comment, "x\ufffd");
  });
});
