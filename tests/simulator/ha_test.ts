/**
 * The HA stack as the simulator serves it, held to pve-ha-manager's Perl (`src/PVE/API2/HA/
 * Resources.pm`, `Status.pm`, `src/PVE/HA/Manager.pm`, `Tools.pm` get_verbose_service_state): a
 * config write only edits the config, the manager applies it one round later (or never, or as
 * another state: the fault knobs).
 */

import assert from "node:assert/strict";
import {
  api,
  type ApiParams,
  tokenHeader,
} from "../../simulator/sim_client.ts";
import { type Simulator, startSimulator } from "../../simulator/simulator.ts";
import type { SimHa, SimToken } from "../../simulator/types.ts";

const ROOT: SimToken = { id: "root@pam!ci", secret: "s1" };
const AUDITOR: SimToken = {
  id: "audit@pve!ro",
  secret: "s2",
  privsep: true,
  tokenAcl: { "/": ["VM.Audit", "Sys.Audit"] },
};

type Call = (
  method: string,
  path: string,
  params?: ApiParams,
  token?: SimToken,
  // deno-lint-ignore no-explicit-any
) => Promise<{ status: number; body: any }>;

async function withSim(
  fn: (call: Call, sim: Simulator) => Promise<void>,
  ha?: SimHa,
  pveVersion?: 8,
): Promise<void> {
  const sim = await startSimulator({
    pveVersion,
    nodes: ["pve1"],
    guests: [
      {
        vmid: 100,
        node: "pve1",
        type: "qemu",
        name: "web",
        status: "stopped",
        ha,
      },
      { vmid: 300, node: "pve1", type: "lxc", name: "ct", status: "stopped" },
    ],
    tokens: [ROOT, AUDITOR],
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

// deno-lint-ignore no-explicit-any
async function service(call: Call, sid: string): Promise<any> {
  const r = await call("GET", "/cluster/ha/status/current");
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // deno-lint-ignore no-explicit-any
  return r.body.data.find((e: any) => e.id === `service:${sid}`);
}

const settle = (ms = 30) => new Promise((r) => setTimeout(r, ms));

/** A manager round long enough that a read sent right after a write always lands before it, on a
 * loaded machine too (with 10 ms, a slow first request saw the round already done). */
const SLOW_ROUND_MS = 500;

Deno.test("a new resource is queued, then started by the manager's round", async () => {
  await withSim(async (call, sim) => {
    const r = await call("POST", "/cluster/ha/resources", {
      sid: "vm:100",
      state: "started",
      max_restart: 2,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const config = await call("GET", "/cluster/ha/resources/vm:100");
    assert.equal(config.body.data.max_restart, 2);
    await settle();
    const s = await service(call, "vm:100");
    assert.equal(s.crm_state, "started");
    assert.equal(s.state, "started");
    assert.equal(s.request_state, "started");
    assert.equal(sim.guest(100)?.status, "running");
  }, { managed: false, state: "stopped", applyDelayMs: 10 });
});

Deno.test("a manager that never applies leaves the service queued; one that applies another state shows it", async () => {
  await withSim(async (call) => {
    await call("POST", "/cluster/ha/resources", { sid: "vm:100" });
    await settle();
    const s = await service(call, "vm:100");
    assert.equal(s.state, "queued");
    assert.equal(s.crm_state, undefined);
    const list = (await call("GET", "/cluster/ha/status/current")).body.data;
    const master = list.find((e: { id: string }) => e.id === "master");
    assert.match(master.status, /\(old timestamp - dead\?, /);
  }, { managed: false, state: "stopped", neverApplies: true });
  await withSim(async (call) => {
    await call("POST", "/cluster/ha/resources", { sid: "vm:100" });
    await settle();
    const s = await service(call, "vm:100");
    assert.equal(s.crm_state, "stopped");
    assert.equal(s.state, "starting");
  }, { managed: false, state: "stopped", appliesAs: "stopped" });
});

Deno.test("PVE's refusals: already defined, not HA managed, not a VM, error state, group on PVE 9, Sys.Console", async () => {
  await withSim(async (call) => {
    const dup = await call("POST", "/cluster/ha/resources", { sid: "vm:100" });
    assert.match(dup.body.message, /resource ID 'vm:100' already defined/);
    const ct = await call("POST", "/cluster/ha/resources", { sid: "vm:300" });
    assert.match(ct.body.message, /guest with ID 300 is not a VM/);
    const gone = await call("DELETE", "/cluster/ha/resources/ct:300");
    assert.match(
      gone.body.message,
      /cannot delete service 'ct:300', not HA managed!/,
    );
    const missing = await call("GET", "/cluster/ha/resources/ct:300");
    assert.equal(missing.status, 500);
    assert.match(missing.body.message, /no such resource 'ct:300'/);
    const error = await call("PUT", "/cluster/ha/resources/vm:100", {
      state: "started",
    });
    assert.match(
      error.body.message,
      /in error state, must be disabled and fixed first/,
    );
    const ok = await call("PUT", "/cluster/ha/resources/vm:100", {
      state: "disabled",
    });
    assert.equal(ok.status, 200);
    const group = await call("PUT", "/cluster/ha/resources/vm:100", {
      group: "g1",
    });
    assert.match(group.body.message, /ha groups have been migrated to rules/);
    const denied = await call(
      "DELETE",
      "/cluster/ha/resources/vm:100",
      {},
      AUDITOR,
    );
    assert.equal(denied.status, 403);
    assert.match(denied.body.message, /Sys\.Console/);
  }, { managed: true, state: "started", crm: "error" });
});

Deno.test("a removed resource shows `deleting` until the manager's round drops it", async () => {
  await withSim(async (call) => {
    const r = await call("DELETE", "/cluster/ha/resources/vm:100");
    assert.equal(r.status, 200);
    const s = await service(call, "vm:100");
    assert.equal(s.state, "deleting");
    await settle(SLOW_ROUND_MS + 30);
    assert.equal(await service(call, "vm:100"), undefined);
  }, { managed: true, state: "started", applyDelayMs: SLOW_ROUND_MS });
});

Deno.test("an ignored resource is dropped from the manager's services but listed from its config", async () => {
  await withSim(async (call) => {
    await call("PUT", "/cluster/ha/resources/vm:100", { state: "ignored" });
    await settle();
    const s = await service(call, "vm:100");
    assert.equal(s.state, "ignored");
    assert.equal(s.crm_state, undefined);
    assert.equal(s.request_state, "ignored");
  }, { managed: true, state: "started" });
});

Deno.test("HA rules (PVE 9): made, read back with their order, refused as Rules.pm does, deleted", async () => {
  await withSim(async (call) => {
    const unmanaged = await call("POST", "/cluster/ha/rules", {
      rule: "pin",
      type: "node-affinity",
      resources: "vm:100,ct:300",
      nodes: "pve1:2",
    });
    assert.match(
      unmanaged.body.message,
      /cannot use unmanaged resource\(s\) ct:300\./,
    );
    const nowhere = await call("POST", "/cluster/ha/rules", {
      rule: "pin",
      type: "node-affinity",
      resources: "vm:100",
      nodes: "pve9",
    });
    assert.match(
      nowhere.body.message,
      /cannot use non-existent node\(s\) pve9\./,
    );
    const made = await call("POST", "/cluster/ha/rules", {
      rule: "pin",
      type: "node-affinity",
      resources: "vm:100",
      nodes: "pve1:5,pve1:02", // NodeAffinity.pm: one entry per node, the priority `int`
      strict: 1,
    });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const read = await call("GET", "/cluster/ha/rules/pin");
    assert.equal(read.body.data.nodes, "pve1:2");
    assert.equal(read.body.data.strict, 1);
    assert.equal(read.body.data.errors, undefined);
    const twice = await call("POST", "/cluster/ha/rules", {
      rule: "pin2",
      type: "node-affinity",
      resources: "vm:100",
      nodes: "pve1",
    });
    assert.equal(twice.status, 400);
    assert.match(twice.body.message, /Rule 'pin2' is invalid/);
    const lonely = await call("POST", "/cluster/ha/rules", {
      rule: "apart",
      type: "resource-affinity",
      resources: "vm:100",
      affinity: "negative",
    });
    assert.equal(lonely.status, 400);
    const updated = await call("PUT", "/cluster/ha/rules/pin", {
      type: "node-affinity",
      comment: "web",
      delete: "strict",
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(
      (await call("GET", "/cluster/ha/rules/pin")).body.data.strict,
      undefined,
    );
    assert.equal((await call("DELETE", "/cluster/ha/rules/pin")).status, 200);
    const gone = await call("GET", "/cluster/ha/rules/pin");
    assert.match(gone.body.message, /no such ha rule 'pin'/);
    // Removing the resource purges it from the rules (Config.pm delete_service_from_config).
    await call("POST", "/cluster/ha/rules", {
      rule: "pin",
      type: "node-affinity",
      resources: "vm:100",
      nodes: "pve1",
    });
    assert.equal(
      (await call("DELETE", "/cluster/ha/resources/vm:100")).status,
      200,
    );
    const purged = await call("GET", "/cluster/ha/rules/pin");
    assert.match(purged.body.message, /no such ha rule 'pin'/);
  }, { managed: true, state: "started" });
});

Deno.test("a service in error whose config asks disabled reads 'clearing error flag' until the round", async () => {
  await withSim(async (call) => {
    const s = await service(call, "vm:100");
    assert.equal(s.crm_state, "error");
    assert.equal(s.state, "clearing error flag");
  }, { managed: true, state: "disabled", crm: "error", neverApplies: true });
});

Deno.test("HA groups (PVE 8, Groups.pm of stable-4): made, set as a resource's group, refused while in use, deleted; PVE 9 refuses them", async () => {
  await withSim(
    async (call, sim) => {
      const missing = await call("PUT", "/cluster/ha/resources/vm:100", {
        group: "pin",
      });
      assert.match(missing.body.message, /HA group 'pin' does not exist/);
      const made = await call("POST", "/cluster/ha/groups", {
        group: "pin",
        nodes: "pve1:2,pve1:2,pve2",
        restricted: 1,
      });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const again = await call("POST", "/cluster/ha/groups", {
        group: "pin",
        nodes: "pve1",
      });
      assert.match(again.body.message, /ha group ID 'pin' already defined/);
      const read = await call("GET", "/cluster/ha/groups/pin");
      assert.equal(read.body.data.nodes, "pve1:2,pve2");
      assert.equal(read.body.data.restricted, 1);
      const set = await call("PUT", "/cluster/ha/resources/vm:100", {
        group: "pin",
      });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      const list = await call("GET", "/cluster/ha/resources");
      assert.equal(list.body.data[0].group, "pin");
      const used = await call("DELETE", "/cluster/ha/groups/pin");
      assert.match(used.body.message, /ha group is used by service 'vm:100'/);
      await call("PUT", "/cluster/ha/resources/vm:100", { delete: "group" });
      const gone = await call("DELETE", "/cluster/ha/groups/pin");
      assert.equal(gone.status, 200, JSON.stringify(gone.body));
      assert.equal(sim.haGroup("pin"), undefined);
      const none = await call("GET", "/cluster/ha/groups/pin");
      assert.match(none.body.message, /no such ha group 'pin'/);
    },
    { managed: true, state: "stopped" },
    8,
  );
  await withSim(async (call) => {
    const r = await call("POST", "/cluster/ha/groups", {
      group: "pin",
      nodes: "pve1",
    });
    assert.match(
      r.body.message,
      /cannot create group: ha groups have been migrated to rules/,
    );
  });
});
