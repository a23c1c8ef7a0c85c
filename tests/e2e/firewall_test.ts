/**
 * firewallOptions and firewallRules end to end, both models: options succeed only when each reads
 * back as given; a declared rule list only when PVE's list reads back equal to it, rule by rule.
 * Whether the firewall is in effect is reported. Rules PVE would refuse are refused before any
 * change.
 */
import assert from "node:assert/strict";
import { type Env, isCheckRequest, withEnv, written } from "./env.ts";
import { withCt } from "./lxc_fixture.ts";

/** The package's writes, swamp's pre-flight checks left out. */
const writes = (env: Env) =>
  env.sim.requests.filter((q) => !isCheckRequest(q.path) && q.method !== "GET");

const SSH = { type: "in", action: "ACCEPT", proto: "tcp", dport: "22" };
const WEB = { type: "in", action: "ACCEPT", proto: "tcp", dport: "443" };
const DROP = { type: "in", action: "DROP", source: "10.0.0.0/8" };

/** The rules PVE holds for `vmid`, each as `<action> <dport or source>`. */
function held(env: Env, vmid: number): string[] {
  return (env.sim.firewall(vmid)?.rules ?? []).map((r) =>
    `${r.action} ${r.dport ?? r.source ?? ""}`.trim()
  );
}

Deno.test("firewallRules: a declared list is made in order and read back equal", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("firewallRules", {
      vmid: 100,
      rules: [SSH, WEB, DROP],
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(held(env, 100), [
      "ACCEPT 22",
      "ACCEPT 443",
      "DROP 10.0.0.0/8",
    ]);
    assert.equal(written(r, "vm-100").lastOperation, "firewallRules");
  });
});

Deno.test("firewallRules: a changed declaration updates in place and deletes what is left over", async () => {
  await withEnv({}, async (env) => {
    await env.run("firewallRules", { vmid: 100, rules: [SSH, WEB, DROP] });
    const before = env.sim.requests.length;
    const r = await env.run("firewallRules", { vmid: 100, rules: [SSH, DROP] });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(held(env, 100), ["ACCEPT 22", "DROP 10.0.0.0/8"]);
    const sent = env.sim.requests.slice(before).filter((q) =>
      q.method !== "GET"
    );
    assert.deepEqual(sent.map((q) => q.method), ["PUT", "DELETE"]);
  });
});

Deno.test("firewallRules: a list already as declared sends nothing", async () => {
  await withEnv({}, async (env) => {
    await env.run("firewallRules", { vmid: 100, rules: [SSH] });
    const before = writes(env).length;
    const r = await env.run("firewallRules", { vmid: 100, rules: [SSH] });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(writes(env).length, before);
  });
});

Deno.test("firewallRules: the summary says the rules are not in effect while the cluster firewall is off", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("firewallRules", { vmid: 100, rules: [SSH] });
    assert.equal(r.status, "succeeded", r.error);
    assert.ok(
      r.logs.some((l) =>
        l.level === "warning" &&
        /not in effect: .*the cluster's firewall is disabled/.test(l.message)
      ),
      JSON.stringify(r.logs),
    );
  });
});

Deno.test("firewallRules: with the guest, the cluster and the NIC on, the rules are in effect", async () => {
  await withEnv({ sim: { clusterFirewall: true } }, async (env) => {
    env.sim.guest(100)!.config.net0 =
      "virtio=BC:24:11:00:01:00,bridge=vmbr0,firewall=1";
    const on = await env.run("firewallOptions", { vmid: 100, enable: true });
    assert.equal(on.status, "succeeded", on.error);
    const r = await env.run("firewallRules", { vmid: 100, rules: [SSH] });
    assert.equal(r.status, "succeeded", r.error);
    assert.ok(r.logs.some((l) => /; in effect/.test(l.message)));
  });
});

Deno.test("firewallRules: a rule PVE would refuse is refused naming the field before any change", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("firewallRules", {
      vmid: 100,
      rules: [SSH, { type: "in", action: "ACCEPT", source: "10.0.0.1/24" }],
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /source/);
    assert.deepEqual(writes(env), []);
  });
});

Deno.test("firewallOptions: the options given read back as given; only those that differ are sent", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("firewallOptions", {
      vmid: 102,
      enable: true,
      policyIn: "DROP",
      logLevelIn: "info",
    });
    assert.equal(r.status, "succeeded", r.error);
    const options = env.sim.firewall(102)?.options ?? {};
    assert.equal(Number(options.enable), 1);
    assert.equal(options.policy_in, "DROP");
    const again = await env.run("firewallOptions", {
      vmid: 102,
      policyIn: "DROP",
      policyOut: "REJECT",
    });
    assert.equal(again.status, "succeeded", again.error);
    const put = writes(env).at(-1);
    assert.equal(put?.method, "PUT");
    assert.deepEqual(put?.form.map(([k]) => k), ["policy_out"]);
  });
});

Deno.test("firewallRules (lxc): a container's rules are declared, read back, and trimmed", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("firewallRules", {
      vmid: 300,
      rules: [SSH, DROP],
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(held(env, 300), ["ACCEPT 22", "DROP 10.0.0.0/8"]);
    assert.equal(written(r, "ct-300").lastOperation, "firewallRules");
    const fewer = await env.run("firewallRules", { vmid: 300, rules: [SSH] });
    assert.equal(fewer.status, "succeeded", fewer.error);
    assert.deepEqual(held(env, 300), ["ACCEPT 22"]);
  });
});
