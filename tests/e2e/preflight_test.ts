/**
 * preflight and the `permissions` check end to end: PVE is asked what the token may do
 * (`GET /access/permissions`, computed by the simulator as pve-access-control does: a
 * privilege-separated token holds its own ACLs intersected with its user's), and each method asked
 * about is held to the privileges PVE's schema requires for the endpoints it calls.
 */
import assert from "node:assert/strict";
import { TOKEN_SECRET, withEnv, written } from "./env.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { model as qemuModel } from "../../js/proxmox_qemu.ts";
import type { SimToken } from "../../simulator/types.ts";

/** The package's token, privilege-separated, holding `tokenAcl` (its user holds everything). */
const separated = (tokenAcl: Record<string, string[]>, user = "root@pam") => ({
  sim: {
    tokens: [
      {
        id: `${user}!swamp`,
        secret: TOKEN_SECRET,
        privsep: true,
        tokenAcl,
      } satisfies SimToken,
    ],
  },
  transport: { tokenId: `${user}!swamp` },
});

Deno.test("preflight: clone names what the token lacks on the template and the storage, and records it", async () => {
  const acl = { "/vms": ["VM.Audit", "VM.Allocate", "VM.Config.Options"] };
  await withEnv(separated(acl), async (env) => {
    const r = await env.run("preflight", {
      methods: ["clone"],
      templateId: 9000,
      vmid: 123,
      storage: "local-lvm",
    });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /clone needs VM\.Clone on \/vms\/9000 and Datastore\.AllocateSpace on \/storage\/local-lvm: missing/,
    );
    const rec = written(r, "preflight-pve1");
    assert.equal(rec.reachable, true);
    assert.equal(rec.ready, false);
    assert.equal(rec.caller, "token");
    assert.equal(typeof rec.pveVersion, "string");
    const [clone] = rec.methods as { ready: boolean; missing: string[] }[];
    assert.equal(clone.ready, false);
    assert.deepEqual(clone.missing, [
      "VM.Clone on /vms/9000",
      "Datastore.AllocateSpace on /storage/local-lvm",
    ]);
  });
});

Deno.test("preflight: a token's own ACL beyond its user's grants nothing (the intersection)", async () => {
  await withEnv({
    ...separated({ "/": ["*"] }, "ops@pve"),
    sim: {
      tokens: [{
        id: "ops@pve!swamp",
        secret: TOKEN_SECRET,
        privsep: true,
        tokenAcl: { "/": ["*"] },
        userAcl: { "/vms": ["VM.Audit"] },
      }],
    },
  }, async (env) => {
    const r = await env.run("preflight", {
      methods: ["lookup", "stop"],
      vmid: 100,
    });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /stop needs VM\.PowerMgmt on \/vms\/100: missing/,
    );
    assert.doesNotMatch(r.error ?? "", /lookup needs/);
    const rec = written(r, "preflight-pve1");
    assert.deepEqual(
      (rec.privileges as Record<string, string[]>)["/vms/100"],
      ["VM.Audit"],
    );
  });
});

Deno.test("preflight: a full token may run every method of the qemu model", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("preflight", { vmid: 100, templateId: 9000 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "preflight-pve1");
    const asked = (rec.methods as { method: string }[]).map((m) => m.method);
    const own = Object.keys(qemuModel.methods).filter((m) => m !== "preflight");
    assert.deepEqual([...asked].sort(), own.sort());
    assert.equal(rec.ready, true);
  });
});

Deno.test("preflight (ssh): pvesh runs as root@pam, so a container's guestExec can work", async () => {
  await withEnv({ via: "ssh", model: lxcModel }, async (env) => {
    const r = await env.run("preflight", {
      methods: ["guestExec", "create"],
      storage: "local-lvm",
    });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "preflight-pve1");
    assert.equal(rec.caller, "root@pam");
  });
});

Deno.test("preflight (api): a container's guestExec needs the ssh transport", async () => {
  await withEnv({ model: lxcModel }, async (env) => {
    const r = await env.run("preflight", { methods: ["guestExec"] });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /guestExec needs the ssh transport/);
  });
});

Deno.test("permissions check: a multi-step method the token lacks a privilege for fails before anything is sent", async () => {
  const acl = { "/vms": ["VM.Audit"] };
  await withEnv(separated(acl), async (env) => {
    const r = await env.run("delete", { vmid: 102, force: true });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /Pre-flight checks failed[\s\S]*permissions:[\s\S]*delete needs VM\.Allocate on \/vms\/102[\s\S]*missing/,
    );
    assert.equal(
      env.sim.requests.filter((q) => q.method !== "GET").length,
      0,
      "nothing was sent but reads",
    );
    assert.ok(env.sim.guest(102), "the VM is still there");
  });
});

Deno.test("permissions check: a multi-step method the token may run passes it and runs", async () => {
  const acl = { "/vms/102": ["VM.Audit", "VM.Allocate", "VM.PowerMgmt"] };
  await withEnv(separated(acl), async (env) => {
    const r = await env.run("delete", { vmid: 102, force: true });
    assert.equal(r.status, "succeeded", r.error);
    assert.ok(
      env.sim.requests.some((q) => q.path.endsWith("/access/permissions")),
      "the check asked PVE",
    );
  });
});

Deno.test("permissions check: a one-request method is not asked about first; PVE's own check refuses it with its reason", async () => {
  const acl = { "/vms": ["VM.Audit"] };
  await withEnv(separated(acl), async (env) => {
    const r = await env.run("start", { vmid: 102 });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /Permission check failed \(\/vms\/102, VM\.PowerMgmt\)/,
    );
    assert.ok(
      !env.sim.requests.some((q) => q.path.endsWith("/access/permissions")),
      "no permissions read before a start",
    );
    assert.equal(env.sim.guest(102)?.status, "stopped");
  });
});

Deno.test("preflight: by default every method of the lxc model is asked about (api: guestExec cannot work)", async () => {
  await withEnv({ model: lxcModel }, async (env) => {
    const r = await env.run("preflight", { vmid: 300, storage: "local-lvm" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /guestExec needs the ssh transport/);
    const rec = written(r, "preflight-pve1");
    const asked = rec.methods as { method: string; ready: boolean }[];
    const own = Object.keys(lxcModel.methods).filter((m) => m !== "preflight");
    assert.deepEqual(asked.map((m) => m.method).sort(), own.sort());
    assert.deepEqual(
      asked.filter((m) => !m.ready).map((m) => m.method),
      ["guestExec"],
    );
  });
});
