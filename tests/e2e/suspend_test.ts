/**
 * suspend and resume end to end, and start's `resume`: success means status/current showed the
 * state — a VM's `qmpstatus: paused`, stopped with `lock: suspended` after a suspend to disk,
 * `qmpstatus: running` and no lock after a resume — not that a task ended OK.
 */
import assert from "node:assert/strict";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, withEnv, written } from "./env.ts";
import { container } from "./lxc_fixture.ts";

/** A managed, running VM (VMID 120 on pve1) with a disk on local-lvm. */
function vm(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 120,
    node: "pve1",
    type: "qemu",
    name: "sleepy",
    status: "running",
    tags: ["swamp"],
    config: {
      memory: 2048,
      scsi0: "local-lvm:vm-120-disk-0,size=8G",
      smbios1: "uuid=00000000-0000-4000-8000-000000000120",
    },
    ...over,
  };
}

const withVm = (over: Partial<SimGuest> = {}) => ({
  guests: [...demoGuests(), vm(over)],
});
/** Failure paths wait out their budget: keep it short. */
const short = { globalArgs: { taskTimeoutSec: 2 } };

function posted(env: Env, suffix: string) {
  return env.sim.requests.filter((q) =>
    q.method === "POST" && q.path.endsWith(suffix)
  );
}

Deno.test("suspend: a running VM is suspended to RAM and recorded with qmpStatus paused", async () => {
  await withEnv(withVm(), async (env) => {
    const r = await env.run("suspend", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-120");
    assert.equal(rec.status, "running");
    assert.equal(rec.qmpStatus, "paused");
    assert.match(String(rec.lastTask), /:qmpause:120:/);
    assert.equal(env.sim.guest(120)?.qmpstatus, "paused");
  });
});

Deno.test("suspend: to disk the VM is stopped, locked suspended, its state on the storage asked", async () => {
  await withEnv(withVm(), async (env) => {
    const r = await env.run("suspend", {
      vmid: 120,
      toDisk: true,
      stateStorage: "local-lvm",
    });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-120");
    assert.equal(rec.status, "stopped");
    assert.equal(rec.lock, "suspended");
    assert.match(String(rec.lastTask), /:qmsuspend:120:/);
    const state = String(env.sim.guest(120)?.config.vmstate);
    assert.match(state, /^local-lvm:vm-120-state-suspend-\d{4}-\d\d-\d\d$/);
    const config = await env.run("getConfig", { vmid: 120 });
    assert.equal(
      (written(config, "vm-120-config").config as Record<string, unknown>)
        .vmstate,
      state,
    );
  });
});

Deno.test("suspend: to disk without a storage PVE picks the VM's disk storage", async () => {
  await withEnv(withVm(), async (env) => {
    const r = await env.run("suspend", { vmid: 120, toDisk: true });
    assert.equal(r.status, "succeeded", r.error);
    const form = posted(env, "/qemu/120/status/suspend")[0].form;
    assert.deepEqual(form, [["todisk", "1"]]);
    assert.match(String(env.sim.guest(120)?.config.vmstate), /^local-lvm:/);
  });
});

Deno.test("suspend: a task that ends OK while the VM keeps running fails naming what was seen", async () => {
  await withEnv({ ...withVm(), ...short }, async (env) => {
    env.sim.nextTask({ noEffect: true });
    const r = await env.run("suspend", { vmid: 120 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /suspend task ended successfully/);
    assert.match(r.error ?? "", /qmpstatus paused/);
    assert.equal(written(r, "vm-120").qmpStatus, "running");
  });
});

Deno.test("suspend: a save to disk that never finishes leaves lock suspending, which is not yet", async () => {
  await withEnv({ ...withVm(), ...short }, async (env) => {
    env.sim.nextTask({ noEffect: true });
    const r = await env.run("suspend", { vmid: 120, toDisk: true });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /still locked: suspending/);
    assert.equal(written(r, "vm-120").lock, "suspending");
  });
});

Deno.test("suspend: a stopped VM is refused with PVE's reason before anything is sent", async () => {
  await withEnv(withVm({ status: "stopped" }), async (env) => {
    const r = await env.run("suspend", { vmid: 120 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VM 120 not running/);
    assert.equal(posted(env, "/status/suspend").length, 0);
  });
});

Deno.test("suspend: an HA-managed VM is not suspended to disk", async () => {
  const ha = { managed: true, state: "started" };
  await withEnv(withVm({ ha }), async (env) => {
    const r = await env.run("suspend", { vmid: 120, toDisk: true });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /Cannot suspend HA managed VM to disk/);
    assert.equal(posted(env, "/status/suspend").length, 0);
  });
});

Deno.test("suspend: a VM without the swamp tag is refused unless forced", async () => {
  await withEnv(withVm({ tags: [] }), async (env) => {
    const refused = await env.run("suspend", { vmid: 120 });
    assert.equal(refused.status, "failed");
    assert.match(refused.error ?? "", /^refusing to suspend VM 120/);
    const forced = await env.run("suspend", { vmid: 120, force: true });
    assert.equal(forced.status, "succeeded", forced.error);
  });
});

Deno.test("resume: a paused VM runs again", async () => {
  await withEnv(withVm({ qmpstatus: "paused" }), async (env) => {
    const r = await env.run("resume", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-120").qmpStatus, "running");
    assert.match(String(written(r, "vm-120").lastTask), /:qmresume:120:/);
  });
});

Deno.test("resume: a VM suspended to disk starts from its state, which is then gone", async () => {
  await withEnv(withVm(), async (env) => {
    const down = await env.run("suspend", { vmid: 120, toDisk: true });
    assert.equal(down.status, "succeeded", down.error);
    assert.match(String(env.sim.guest(120)?.config.vmstate), /-state-suspend-/);
    const r = await env.run("resume", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-120");
    assert.equal(rec.status, "running");
    assert.equal(rec.qmpStatus, "running");
    assert.equal(rec.lock, undefined);
    assert.equal(env.sim.guest(120)?.config.vmstate, undefined);
  });
});

Deno.test("resume: a stopped VM is refused with PVE's reason", async () => {
  await withEnv(withVm({ status: "stopped" }), async (env) => {
    const r = await env.run("resume", { vmid: 120 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VM 120 not running/);
    assert.equal(posted(env, "/status/resume").length, 0);
  });
});

Deno.test("start: a paused VM is refused without resume and resumed with resume: true", async () => {
  await withEnv(withVm({ qmpstatus: "paused" }), async (env) => {
    const refused = await env.run("start", { vmid: 120 });
    assert.equal(refused.status, "failed");
    assert.match(refused.error ?? "", /resume: true/);
    assert.equal(posted(env, "/status/resume").length, 0);
    const r = await env.run("start", { vmid: 120, resume: true });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-120").qmpStatus, "running");
    assert.equal(posted(env, "/status/start").length, 0);
  });
});

Deno.test("start: a VM suspended to disk is refused at once without resume, resumed with it", async () => {
  await withEnv(withVm(), async (env) => {
    await env.run("suspend", { vmid: 120, toDisk: true });
    const began = Date.now();
    const refused = await env.run("start", { vmid: 120 });
    assert.equal(refused.status, "failed");
    assert.match(refused.error ?? "", /lock suspended/);
    assert.ok(Date.now() - began < 5_000, "its lock is not waited out");
    const r = await env.run("start", { vmid: 120, resume: true });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-120").lock, undefined);
  });
});

Deno.test("shutdown: a paused VM is refused with PVE's reason before anything is sent", async () => {
  await withEnv(withVm({ qmpstatus: "paused" }), async (env) => {
    const r = await env.run("shutdown", { vmid: 120, forceStopAfter: true });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VM is paused - cannot shutdown/);
    assert.match(r.error ?? "", /resume it first, or stop it/);
    assert.equal(env.sim.requests.filter((q) => q.method !== "GET").length, 0);
    assert.equal(env.sim.guest(120)?.qmpstatus, "paused");
  });
});

Deno.test("setConfig: a VM suspended to disk is refused naming its lock before anything is sent", async () => {
  await withEnv(withVm(), async (env) => {
    const down = await env.run("suspend", { vmid: 120, toDisk: true });
    assert.equal(down.status, "succeeded", down.error);
    const before = env.sim.requests.length;
    const r = await env.run("setConfig", { vmid: 120, config: { cores: 2 } });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /is locked \(suspended\)/);
    assert.match(
      r.error ?? "",
      /suspended to disk: resume it \(resume, or start with resume: true\) first/,
    );
    const sent = env.sim.requests.slice(before).filter((q) =>
      q.method !== "GET"
    );
    assert.equal(sent.length, 0);
  });
});

Deno.test("suspend: a VM suspended to disk is told to resume, not start", async () => {
  await withEnv(withVm(), async (env) => {
    const down = await env.run("suspend", { vmid: 120, toDisk: true });
    assert.equal(down.status, "succeeded", down.error);
    const r = await env.run("suspend", { vmid: 120 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /suspended to disk: resume it first/);
    assert.doesNotMatch(r.error ?? "", /start it first/);
    assert.equal(posted(env, "/status/suspend").length, 1);
  });
});

// ── containers ───────────────────────────────────────────────────────────────

const ct = {
  model: lxcModel,
  guests: [
    ...demoGuests(),
    container(300, { status: "running" }),
    container(301),
  ],
};

Deno.test("lxc suspend and resume: checkpointed and stopped, then restored and running", async () => {
  await withEnv(ct, async (env) => {
    const down = await env.run("suspend", { vmid: 300 });
    assert.equal(down.status, "succeeded", down.error);
    assert.equal(written(down, "ct-300").status, "stopped");
    assert.ok(
      down.logs.some((l) => /checkpointed by its suspend task/.test(l.message)),
      JSON.stringify(down.logs),
    );
    const up = await env.run("resume", { vmid: 300 });
    assert.equal(up.status, "succeeded", up.error);
    assert.equal(written(up, "ct-300").status, "running");
  });
});

Deno.test("lxc resume: a container without a checkpoint fails with the task's words and log tail", async () => {
  await withEnv(ct, async (env) => {
    const r = await env.run("resume", { vmid: 301 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /lxc-checkpoint -n 301 -r/);
    assert.match(r.error ?? "", /task log ends: TASK ERROR: command/);
    assert.equal(written(r, "ct-301").status, "stopped");
  });
});
