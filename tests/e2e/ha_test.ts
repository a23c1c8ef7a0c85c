/**
 * haResource and haStatus end to end, both models: a guest made an HA resource succeeds only once
 * the HA manager shows the requested state applied, not when the config is written; a manager that
 * never applies it, or applies another state, fails the method with what it showed last; removal
 * succeeds once the service is gone from the manager's list. PVE's refusals come before any write.
 */
import assert from "node:assert/strict";
import {
  type Env,
  isCheckRequest,
  TOKEN_ID,
  TOKEN_SECRET,
  withEnv,
  written,
} from "./env.ts";
import { api, tokenHeader } from "../../simulator/sim_client.ts";
import { withCt } from "./lxc_fixture.ts";
import type { SimHa } from "../../simulator/types.ts";
import type { RunResult } from "../../harness/types.ts";

/** The package's HA writes. */
const haWrites = (env: Env) =>
  env.sim.requests.filter((q) =>
    !isCheckRequest(q.path) && q.method !== "GET" &&
    q.path.includes("/cluster/ha/")
  ).map((q) => q.method);

/** What a run logged (its summary among it). */
const said = (r: RunResult) => r.logs.map((l) => l.message).join("\n");

/** Sets the manager's knobs (and an existing resource) of guest `vmid`. */
function ha(env: Env, vmid: number, knobs: SimHa): void {
  const g = env.sim.guest(vmid);
  if (!g) throw new Error(`no guest ${vmid}`);
  g.ha = knobs;
}

Deno.test("haResource: a VM made an HA resource succeeds once the manager shows it started", async () => {
  await withEnv({}, async (env) => {
    ha(env, 101, { managed: false, state: "stopped", applyDelayMs: 300 });
    const r = await env.run("haResource", {
      vmid: 101,
      state: "started",
      maxRestart: 2,
      comment: "web tier",
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(haWrites(env), ["POST"]);
    assert.equal(env.sim.guest(101)?.status, "running");
    const record = written(r, "vm-101");
    const h = record.ha as Record<string, unknown>;
    assert.equal(h.managed, true);
    assert.equal(h.crmState, "started");
    assert.equal(h.state, "started");
    assert.equal(h.maxRestart, 2);
    assert.equal(h.comment, "web tier");
  });
});

Deno.test("haResource: an update sends only what differs, and nothing when already so", async () => {
  await withEnv({}, async (env) => {
    ha(env, 101, { managed: true, state: "started" });
    const r = await env.run("haResource", { vmid: 101, state: "stopped" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(101)?.status, "stopped");
    const again = await env.run("haResource", { vmid: 101, state: "stopped" });
    assert.equal(again.status, "succeeded", again.error);
    assert.match(said(again), /nothing sent/);
    assert.deepEqual(haWrites(env), ["PUT"]);
  });
});

Deno.test("haResource: a manager that never applies fails, saying what it showed last", async () => {
  await withEnv({ globalArgs: { taskTimeoutSec: 2 } }, async (env) => {
    ha(env, 101, { managed: false, state: "stopped", neverApplies: true });
    const r = await env.run("haResource", {
      vmid: 101,
      state: "started",
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /did not apply it/);
    assert.match(r.error ?? "", /last observed: the HA manager is not active/);
    const h = written(r, "vm-101").ha as Record<string, unknown>;
    assert.equal(h.managed, true);
    assert.equal(h.crmState, undefined);
  });
});

Deno.test("haResource: a dead manager's last round is no evidence, written or not", async () => {
  await withEnv({ globalArgs: { taskTimeoutSec: 2 } }, async (env) => {
    // Its last round left the service stopped; disabled → stopped reads as applied at once.
    const dead = { crm: "stopped", neverApplies: true } as const;
    ha(env, 101, { managed: true, state: "disabled", ...dead });
    const r = await env.run("haResource", { vmid: 101, state: "stopped" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /HA manager is not active \(master .*dead/);
    const again = await env.run("haResource", { vmid: 101, state: "stopped" });
    assert.equal(again.status, "failed");
    assert.match(again.error ?? "", /nothing needed writing/);
  });
});

Deno.test("haResource: a manager that applies another state fails", async () => {
  await withEnv({ globalArgs: { taskTimeoutSec: 2 } }, async (env) => {
    ha(env, 101, { managed: false, state: "stopped", appliesAs: "stopped" });
    const r = await env.run("haResource", {
      vmid: 101,
      state: "started",
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /crm_state stopped, request_state started/);
  });
});

Deno.test("haResource: removal succeeds once the service is gone; a service in error is refused before any write", async () => {
  await withEnv({}, async (env) => {
    ha(env, 101, { managed: true, state: "started", applyDelayMs: 200 });
    const r = await env.run("haResource", { vmid: 101, delete: true });
    assert.equal(r.status, "succeeded", r.error);
    assert.match(said(r), /gone from the HA manager's service list/);
    assert.equal(
      (written(r, "vm-101").ha as { managed: boolean }).managed,
      false,
    );
    ha(env, 100, { managed: true, state: "started", crm: "error" });
    const refused = await env.run("haResource", {
      vmid: 100,
      state: "stopped",
    });
    assert.equal(refused.status, "failed");
    assert.match(refused.error ?? "", /in error state, must be disabled/);
    assert.deepEqual(haWrites(env), ["DELETE"]);
  });
});

Deno.test("haStatus: the config and the manager's view are recorded", async () => {
  await withEnv({}, async (env) => {
    ha(env, 100, { managed: true, state: "started", maxRelocate: 3 });
    const r = await env.run("haStatus", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    const h = written(r, "vm-100").ha as Record<string, unknown>;
    assert.equal(h.requested, "started");
    assert.equal(h.crmState, "started");
    assert.equal(h.maxRelocate, 3);
    const none = await env.run("haStatus", { vmid: 101 });
    assert.equal(none.status, "succeeded", none.error);
    assert.equal(
      (written(none, "vm-101").ha as { managed: boolean }).managed,
      false,
    );
  });
});

Deno.test("haResource and haStatus of a container: ct:<vmid>, started, updated, removed", async () => {
  await withCt({}, async (env) => {
    ha(env, 303, { managed: false, state: "stopped", applyDelayMs: 100 });
    const r = await env.run("haResource", { vmid: 303, state: "started" });
    assert.equal(r.status, "succeeded", r.error);
    assert.match(said(r), /HA resource ct:303/);
    const u = await env.run("haResource", { vmid: 303, maxRelocate: 2 });
    assert.equal(u.status, "succeeded", u.error);
    const s = await env.run("haStatus", { vmid: 303 });
    assert.equal(s.status, "succeeded", s.error);
    assert.equal(
      (written(s, "ct-303").ha as { maxRelocate: number }).maxRelocate,
      2,
    );
    const d = await env.run("haResource", { vmid: 303, delete: true });
    assert.equal(d.status, "succeeded", d.error);
    assert.deepEqual(haWrites(env), ["POST", "PUT", "DELETE"]);
  });
});

/** The HA rules the simulator holds. */
async function rule(env: Env, id: string) {
  const r = await api(env.sim.url, "GET", `/cluster/ha/rules/${id}`, {}, {
    auth: tokenHeader(TOKEN_ID, TOKEN_SECRET),
  });
  return r.status === 200 ? r.body.data : undefined;
}

Deno.test("haRule: a node-affinity rule is made with the VM among its resources, updated, deleted", async () => {
  await withEnv({}, async (env) => {
    ha(env, 100, { managed: true, state: "started" });
    const r = await env.run("haRule", {
      vmid: 100,
      rule: "pin",
      type: "node-affinity",
      nodes: ["pve1:2", "pve2"],
      strict: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    const made = await rule(env, "pin");
    assert.equal(made.resources, "vm:100");
    assert.equal(made.nodes, "pve1:2,pve2");
    const again = await env.run("haRule", {
      vmid: 100,
      rule: "pin",
      type: "node-affinity",
      nodes: ["pve1:2", "pve2"],
      strict: false,
    });
    assert.equal(again.status, "succeeded", again.error);
    assert.equal((await rule(env, "pin")).strict, 0);
    const gone = await env.run("haRule", {
      vmid: 100,
      rule: "pin",
      delete: true,
    });
    assert.equal(gone.status, "succeeded", gone.error);
    assert.equal(await rule(env, "pin"), undefined);
    assert.deepEqual(haWrites(env), ["POST", "PUT", "DELETE"]);
  });
});

Deno.test("haRule: a resource that is not an HA resource is refused up front as Rules.pm refuses it", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("haRule", {
      vmid: 101,
      rule: "pin",
      type: "node-affinity",
      nodes: ["pve1"],
    });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /only HA resources in a rule and vm:101 is not one/,
    );
    assert.deepEqual(haWrites(env), []);
  });
});

/** The HA write requests, as `<METHOD> <path after /cluster/ha/>`. */
const haSent = (env: Env) =>
  env.sim.requests.filter((q) =>
    !isCheckRequest(q.path) && q.method !== "GET" &&
    q.path.includes("/cluster/ha/")
  ).map((q) => `${q.method} ${q.path.split("/cluster/ha/")[1]}`);

Deno.test("haRule on PVE 8: a node-affinity rule is the HA group of its id, set as each resource's group; updated; deleted after its resources are cleared", async () => {
  await withEnv({ sim: { pveVersion: 8 } }, async (env) => {
    ha(env, 100, { managed: true, state: "started" });
    ha(env, 101, { managed: true, state: "started" });
    const r = await env.run("haRule", {
      vmid: 100,
      rule: "pin",
      type: "node-affinity",
      resources: ["vm:101"],
      nodes: ["pve2", "pve1:2"],
      strict: true,
      comment: "near the disks",
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.match(said(r), /HA rule pin as PVE 8's HA group/);
    assert.deepEqual(env.sim.haGroup("pin"), {
      nodes: ["pve1:2", "pve2"],
      restricted: true,
      comment: "near the disks",
    });
    assert.equal(env.sim.guest(100)?.ha?.group, "pin");
    assert.equal(env.sim.guest(101)?.ha?.group, "pin");
    // The rule without vm:101, and not strict: the group is updated, vm:101 taken out of it.
    const u = await env.run("haRule", {
      vmid: 100,
      rule: "pin",
      type: "node-affinity",
      nodes: ["pve2", "pve1:2"],
      strict: false,
    });
    assert.equal(u.status, "succeeded", u.error);
    assert.equal(env.sim.haGroup("pin")?.restricted, false);
    assert.equal(env.sim.guest(101)?.ha?.group, undefined);
    const d = await env.run("haRule", { vmid: 100, rule: "pin", delete: true });
    assert.equal(d.status, "succeeded", d.error);
    assert.equal(env.sim.haGroup("pin"), undefined);
    assert.equal(env.sim.guest(100)?.ha?.group, undefined);
    assert.deepEqual(haSent(env), [
      "POST groups",
      "PUT resources/vm:100",
      "PUT resources/vm:101",
      "PUT groups/pin",
      "PUT resources/vm:101",
      "PUT resources/vm:100",
      "DELETE groups/pin",
    ]);
  });
});

Deno.test("haRule on PVE 8: what a group cannot be is refused before any write, naming the field", async () => {
  await withEnv({ sim: { pveVersion: 8 } }, async (env) => {
    ha(env, 100, { managed: true, state: "started" });
    ha(env, 101, { managed: true, state: "started", group: "web" });
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        {
          type: "resource-affinity",
          resources: ["vm:101"],
          affinity: "positive",
        },
        /`type` resource-affinity: PVE 8 has none/,
      ],
      [
        { type: "node-affinity", nodes: ["pve1"], disable: true },
        /`disable`: PVE 8's HA groups cannot be disabled/,
      ],
      [
        { type: "node-affinity", nodes: ["pve1"], resources: ["vm:101"] },
        /vm:101 is in HA group web/,
      ],
      [
        { type: "node-affinity", nodes: ["pve1"], resources: ["vm:102"] },
        /vm:102 is not an HA resource/,
      ],
    ];
    for (const [args, why] of cases) {
      const r = await env.run("haRule", { vmid: 100, rule: "pin", ...args });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", why);
      assert.match(r.error ?? "", /HA rule pin/);
    }
    assert.deepEqual(haWrites(env), []);
    // Resources.pm check_service_state: a service in error state takes no group.
    ha(env, 100, { managed: true, state: "started", crm: "error" });
    const r = await env.run("haRule", {
      vmid: 100,
      rule: "pin",
      type: "node-affinity",
      nodes: ["pve1"],
    });
    assert.match(r.error ?? "", /`resources`: vm:100 is in error state/);
    assert.deepEqual(haWrites(env), []);
  });
});

Deno.test("haRule on PVE 8 of a container: the group pins ct:<vmid>, then goes", async () => {
  await withCt({ sim: { pveVersion: 8 } }, async (env) => {
    ha(env, 303, { managed: true, state: "started" });
    const r = await env.run("haRule", {
      vmid: 303,
      rule: "pin",
      type: "node-affinity",
      nodes: ["pve1"],
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(303)?.ha?.group, "pin");
    const u = await env.run("haRule", {
      vmid: 303,
      rule: "pin",
      type: "node-affinity",
      nodes: ["pve1"],
      comment: "pinned",
    });
    assert.equal(u.status, "succeeded", u.error);
    assert.equal(env.sim.haGroup("pin")?.comment, "pinned");
    const d = await env.run("haRule", { vmid: 303, rule: "pin", delete: true });
    assert.equal(d.status, "succeeded", d.error);
    assert.deepEqual(haSent(env), [
      "POST groups",
      "PUT resources/ct:303",
      "PUT groups/pin",
      "PUT resources/ct:303",
      "DELETE groups/pin",
    ]);
  });
});

Deno.test("haRule of containers: a negative resource-affinity rule between two HA containers", async () => {
  await withCt({}, async (env) => {
    ha(env, 300, { managed: true, state: "started" });
    ha(env, 303, { managed: true, state: "started" });
    const r = await env.run("haRule", {
      vmid: 303,
      rule: "apart",
      type: "resource-affinity",
      resources: ["ct:300"],
      affinity: "negative",
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal((await rule(env, "apart")).resources, "ct:300,ct:303");
    const u = await env.run("haRule", {
      vmid: 303,
      rule: "apart",
      type: "resource-affinity",
      resources: ["ct:300"],
      affinity: "negative",
      comment: "spread",
    });
    assert.equal(u.status, "succeeded", u.error);
    const d = await env.run("haRule", {
      vmid: 303,
      rule: "apart",
      delete: true,
    });
    assert.equal(d.status, "succeeded", d.error);
    assert.deepEqual(haWrites(env), ["POST", "PUT", "DELETE"]);
  });
});

Deno.test("haResource and haStatus over the ssh transport: the sid in pvesh's path", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    ha(env, 101, { managed: false, state: "stopped", applyDelayMs: 100 });
    const r = await env.run("haResource", { vmid: 101, state: "started" });
    assert.equal(r.status, "succeeded", r.error);
    const s = await env.run("haStatus", { vmid: 101 });
    assert.equal(s.status, "succeeded", s.error);
    assert.equal(
      (written(s, "vm-101").ha as { crmState: string }).crmState,
      "started",
    );
  });
});
