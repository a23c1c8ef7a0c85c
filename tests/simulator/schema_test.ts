/**
 * Proves the simulator holds every request to PVE 9's API schema the way a
 * node does (pve-common JSONSchema.pm): 400 `Parameter verification failed.`
 * with PVE's per-parameter messages, HTTP form decoding vs pvesh's, and that
 * its facts file is exactly what apidata.json gives.
 */

import assert from "node:assert/strict";
import { api, tokenHeader } from "../../simulator/sim_client.ts";
import {
  type Simulator,
  simulatorEndpoints,
  startSimulator,
} from "../../simulator/simulator.ts";
import { FACTS_URL, factsText } from "../../simulator/schema/generate.ts";
import { readApidata } from "../../simulator/schema/apidata.ts";
import { endpointFacts } from "../../simulator/schema/facts.ts";
import { checkParameters } from "../../simulator/schema/check.ts";
import {
  insideFacts,
  type Major,
  optionClasses,
  permissionsTable,
  PRIVILEGES_RS,
  privilegesOf,
  privilegesRust,
  requirementOf,
  sortedEndpoints,
} from "../../simulator/schema/permissions_table.ts";

const TOKEN = { id: "root@pam!ci", secret: "schema-secret" };
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };

async function withSim(fn: (sim: Simulator) => Promise<void>): Promise<void> {
  const sim = await startSimulator({
    nodes: ["pve1"],
    guests: [
      {
        vmid: 100,
        node: "pve1",
        type: "qemu",
        name: "web",
        status: "stopped",
        config: { cores: 2, scsi0: "local-lvm:vm-100-disk-0,size=8G" },
      },
      {
        vmid: 9000,
        node: "pve1",
        type: "qemu",
        name: "tmpl",
        status: "stopped",
        config: { template: 1, scsi0: "local-lvm:base-9000-disk-0,size=8G" },
      },
    ],
    tokens: [TOKEN],
    taskDurationMs: 10,
  });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

Deno.test("the committed facts file is exactly what apidata.json gives (regenerated and compared)", async () => {
  const tree = await readApidata<Parameters<typeof factsText>[0]>();
  const committed = await Deno.readTextFile(FACTS_URL);
  assert.equal(
    committed,
    factsText(tree),
    "run: deno run --allow-read --allow-write --allow-env simulator/schema/generate.ts",
  );
});

Deno.test("the facts file holds no description prose", async () => {
  const facts = JSON.parse(await Deno.readTextFile(FACTS_URL));
  const prose: string[] = [];
  const walk = (node: unknown, at: string, names: boolean) => {
    if (typeof node !== "object" || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      // Inside `properties`/`format` the keys are names (a config key may be called "description").
      if (
        !names &&
        ["description", "verbose_description", "typetext"].includes(key)
      ) {
        prose.push(`${at}.${key}`);
      }
      walk(
        value,
        `${at}.${key}`,
        !names && (key === "properties" || key === "format"),
      );
    }
  };
  for (const [endpoint, info] of Object.entries(facts.endpoints)) {
    walk(info, endpoint, false);
  }
  assert.deepEqual(prose, []);
});

Deno.test("every endpoint the simulator serves is one of PVE 9's", () => {
  const missing = simulatorEndpoints().filter((e) => {
    const [method, template] = e.split(" ");
    return endpointFacts(method, template) === undefined;
  });
  assert.deepEqual(missing, []);
});

Deno.test("an unknown parameter is 400 not defined in schema", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "GET", "/nodes/pve1/qemu/100/status/current", {
      verbose: 1,
    }, AUTH);
    assert.equal(r.status, 400);
    assert.equal(r.body.message, "Parameter verification failed.\n");
    assert.deepEqual(r.body.errors, {
      verbose:
        "property is not defined in schema and the schema does not allow additional properties",
    });
  });
});

Deno.test("over HTTP a boolean is only 0 or 1: yes is 400 type check failed", async () => {
  await withSim(async (sim) => {
    const r = await api(
      sim.url,
      "GET",
      "/nodes/pve1/qemu",
      { full: "yes" },
      AUTH,
    );
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      full: "type check ('boolean') failed - got 'yes'",
    });
  });
});

Deno.test("over HTTP a config boolean is only 0 or 1: onboot=yes is refused and nothing changes", async () => {
  await withSim(async (sim) => {
    const r = await api(
      sim.url,
      "PUT",
      "/nodes/pve1/qemu/100/config",
      { onboot: "yes" },
      AUTH,
    );
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      onboot: "type check ('boolean') failed - got 'yes'",
    });
    assert.equal(sim.guest(100)?.config.onboot, undefined);
    const ok = await api(
      sim.url,
      "PUT",
      "/nodes/pve1/qemu/100/config",
      { onboot: "1" },
      AUTH,
    );
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });
});

Deno.test("pending rows carry the JSON types a node sends: agent a string, cores a number, onboot 1/0", async () => {
  await withSim(async (sim) => {
    // A guest with an agent: the simulator's state holds its `agent: 1` as a number.
    sim.setGuest(100, { agent: "running" });
    const set = await api(
      sim.url,
      "PUT",
      "/nodes/pve1/qemu/100/config",
      { onboot: "1", cores: "4" },
      AUTH,
    );
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const r = await api(
      sim.url,
      "GET",
      "/nodes/pve1/qemu/100/pending",
      {},
      AUTH,
    );
    assert.equal(r.status, 200);
    const rows = r.body.data as { key: string; value?: unknown }[];
    const value = (key: string) => rows.find((row) => row.key === key)?.value;
    assert.equal(value("agent"), "1");
    assert.equal(value("cores"), 4);
    assert.equal(value("onboot"), 1);
  });
});

Deno.test("pvesh parses a boolean option like parse_boolean: yes is 1, a bare flag is 1, maybe is refused", () => {
  const facts = endpointFacts("GET", "/nodes/{node}/qemu")!;
  const check = (value: string) =>
    checkParameters(
      facts,
      "/nodes/{node}/qemu",
      new Map([["node", ["pve1"]], ["full", [value]]]),
      "cli",
    );
  assert.equal(check("yes").values.get("full"), "1");
  assert.equal(check("").values.get("full"), "1");
  assert.equal(check("off").values.get("full"), "0");
  assert.equal(check("maybe").refusal, "unable to parse boolean option");
});

Deno.test("a missing required parameter is 400 property is missing", async () => {
  await withSim(async (sim) => {
    const r = await api(
      sim.url,
      "POST",
      "/nodes/pve1/qemu/9000/clone",
      {},
      AUTH,
    );
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      newid: "property is missing and it is not optional",
    });
  });
});

Deno.test("a clone name that is not a DNS name is 400 invalid format", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "POST", "/nodes/pve1/qemu/9000/clone", {
      newid: 300,
      name: "web_01",
    }, AUTH);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      name: "invalid format - value does not look like a valid DNS name\n",
    });
  });
});

Deno.test("an integer below its minimum is 400 with PVE's text", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      cores: 0,
    }, AUTH);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      cores: "value must have a minimum value of 1",
    });
  });
});

Deno.test("a value outside its enum is 400 naming the enumeration", async () => {
  await withSim(async (sim) => {
    const r = await api(
      sim.url,
      "GET",
      "/cluster/resources",
      { type: "qemu" },
      AUTH,
    );
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      type:
        "value 'qemu' does not have a value in the enumeration 'vm, storage, node, sdn'",
    });
  });
});

Deno.test("a property string with an unknown key is 400 invalid key", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      net0: "virtio,bridge=vmbr0,colour=blue",
    }, AUTH);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      net0:
        "invalid format - invalid key in comma-separated list property: colour\n",
    });
  });
});

Deno.test("a property string part failing its own check is 400 format error naming the part", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      net0: "model=virtio,bridge=vmbr0,firewall=maybe",
    }, AUTH);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      net0:
        "invalid format - format error\nnet0.firewall: type check ('boolean') failed - got 'maybe'\n",
    });
  });
});

Deno.test("a delete list with an invalid key is 400 invalid configuration ID", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      delete: "tags,9bad",
    }, AUTH);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      delete: "invalid format - invalid configuration ID '9bad'\n",
    });
  });
});

Deno.test("an indexed option beyond PVE's count is 400 not defined (scsi31)", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      scsi31: "local-lvm:1",
    }, AUTH);
    assert.equal(r.status, 400);
    assert.match(r.body.errors.scsi31, /not defined in schema/);
  });
});

Deno.test("a refused request is logged with the rule it broke", async () => {
  await withSim(async (sim) => {
    await api(sim.url, "GET", "/nodes/pve1/qemu", { full: "true" }, AUTH);
    const entry = sim.conformance.entries.at(-1)!;
    assert.equal(entry.template, "/nodes/{node}/qemu");
    assert.deepEqual(entry.paramErrors, {
      full: "type check ('boolean') failed - got 'true'",
    });
  });
});

Deno.test("the simulator's answers to the package's reads pass PVE's returns schema", async () => {
  await withSim(async (sim) => {
    for (
      const path of [
        "/version",
        "/nodes",
        "/cluster/resources",
        "/cluster/nextid",
        "/nodes/pve1/qemu",
        "/nodes/pve1/qemu/100/status/current",
        "/nodes/pve1/qemu/100/config",
        "/nodes/pve1/qemu/100/pending",
        "/nodes/pve1/status",
        "/nodes/pve1/storage",
        "/nodes/pve1/network",
        "/nodes/pve1/disks/list",
        "/nodes/pve1/subscription",
        "/nodes/pve1/apt/repositories",
        "/nodes/pve1/tasks",
      ]
    ) {
      const r = await api(sim.url, "GET", path, {}, AUTH);
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    }
    const violations = sim.conformance.entries.flatMap((e) =>
      (e.answerViolations ?? []).map((v) =>
        `${e.method} ${e.path} ${v.at}: ${v.rule}`
      )
    );
    assert.deepEqual(violations, []);
  });
});

/** A markdown table's rows as trimmed cells (deno fmt pads them; a rule row becomes `---`). */
function tableCells(text: string, header: string): string[][] {
  const lines = text.split("\n");
  const start = lines.findIndex((l) =>
    l.replace(/\s+/g, " ").startsWith(header)
  );
  assert.ok(start >= 0, `no table starting ${header}`);
  const rows: string[][] = [];
  for (const line of lines.slice(start)) {
    if (!line.trim().startsWith("|")) break;
    rows.push(
      line.trim().slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim()).map((
        c,
      ) => /^-+$/.test(c) ? "---" : c),
    );
  }
  return rows;
}

Deno.test("the core's privilege table (src/pve/privileges.rs) is the one the schema and the handlers' checks generate", async () => {
  const committed = await Deno.readTextFile(PRIVILEGES_RS);
  assert.equal(
    committed,
    privilegesRust(),
    "regenerate: deno run --allow-read --allow-write simulator/schema/permissions_table.ts --rust",
  );
});

Deno.test("docs/pve.md's endpoint and option tables are the ones the schema and the handlers' checks generate", async () => {
  const readme = await Deno.readTextFile(
    new URL("../../docs/pve.md", import.meta.url),
  );
  for (const header of ["| endpoint | privileges", "| options | privileges"]) {
    assert.deepEqual(
      tableCells(readme, header),
      tableCells(permissionsTable(), header),
    );
  }
});

/** The privileges a check expression names. */
function privilegesIn(check: unknown): string[] {
  if (!Array.isArray(check)) return [];
  if (check[0] === "perm") return check[2] as string[];
  return check.slice(1).flatMap(privilegesIn);
}

Deno.test("every endpoint the package uses was audited for the checks inside its handler, citing it", () => {
  for (const endpoint of sortedEndpoints()) {
    const facts = insideFacts(endpoint);
    assert.ok(facts, `${endpoint}: not in pve_inside_checks.json`);
    assert.match(
      facts.at,
      /^(qemu-server|pve-container|pve-manager|pve-storage|pve-access-control|pve-firewall|pve-ha-manager) \S+\.pm \S/,
    );
    for (const i of facts.inside ?? []) {
      assert.ok(i.at, `${endpoint}: a check without its source`);
    }
  }
});

Deno.test("each version's checks name only privileges that version has (VM.Monitor on 8, VM.GuestAgent.* on 9)", () => {
  for (const major of [8, 9] as Major[]) {
    const has = privilegesOf(major);
    for (const endpoint of sortedEndpoints()) {
      for (
        const privilege of privilegesIn(requirementOf(endpoint, major).check)
      ) {
        assert.ok(
          has.has(privilege),
          `PVE ${major}: ${endpoint} names ${privilege}`,
        );
      }
    }
    for (const table of ["qemu", "lxc"]) {
      for (const [privs] of optionClasses(table)) {
        for (
          const privilege of privs.replace(/^\/:/, "").split(/[|&]/).filter((
            p,
          ) => p)
        ) {
          assert.ok(
            has.has(privilege),
            `PVE ${major}: ${table} option class ${privilege}`,
          );
        }
      }
    }
  }
  const agent = "POST /nodes/{node}/qemu/{vmid}/agent/file-write";
  assert.deepEqual(privilegesIn(requirementOf(agent, 8).check), ["VM.Monitor"]);
  assert.ok(
    !privilegesIn(requirementOf(agent, 9).check).includes("VM.Monitor"),
  );
});

/** The ACL paths a check expression names. */
function pathsIn(check: unknown): string[] {
  if (!Array.isArray(check)) return [];
  if (check[0] === "perm" || check[0] === "options") {
    return [check[1] as string];
  }
  return check.slice(1).flatMap(pathsIn);
}

Deno.test("every ACL path of the table ends in at most one placeholder, the core's one rule for filling it", () => {
  for (const endpoint of sortedEndpoints()) {
    for (const major of [8, 9] as Major[]) {
      for (const path of pathsIn(requirementOf(endpoint, major).check)) {
        const filled = path.replace("{node}", "pve1");
        assert.match(
          filled,
          /^\/[a-z0-9/]*(\/\{[a-z]+\})?$/,
          `${endpoint}: ${path}`,
        );
      }
    }
  }
});
