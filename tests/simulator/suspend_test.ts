/**
 * Proves the simulator's suspend and resume as qemu-server and pve-container implement them
 * (simulator/routes_suspend.ts): PVE's refusals before the task, the locks and the state volume of
 * a suspend to disk, a failed save, a start that resumes from disk, a container's checkpoint.
 */
import assert from "node:assert/strict";
import { api, tokenHeader, waitTask } from "../../simulator/sim_client.ts";
import {
  type SimGuest,
  type Simulator,
  startSimulator,
} from "../../simulator/simulator.ts";

const TOKEN = { id: "root@pam!ci", secret: "sus-secret" };
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };

function guests(): SimGuest[] {
  return [
    {
      vmid: 100,
      node: "pve1",
      type: "qemu",
      name: "vm",
      status: "running",
      config: { memory: 1024, scsi0: "local-lvm:vm-100-disk-0,size=8G" },
    },
    {
      vmid: 300,
      node: "pve1",
      type: "lxc",
      name: "ct",
      status: "stopped",
      config: { rootfs: "local-lvm:vm-300-disk-0,size=8G" },
    },
  ];
}

async function withSim(fn: (sim: Simulator) => Promise<void>) {
  const sim = await startSimulator({
    nodes: ["pve1"],
    guests: guests(),
    tokens: [TOKEN],
    taskDurationMs: 200,
  });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

const post = (sim: Simulator, path: string, params = {}) =>
  api(sim.url, "POST", `/nodes/pve1${path}`, params, AUTH);

Deno.test("sim suspend: a VM that does not run is refused before any task (VM … not running)", async () => {
  await withSim(async (sim) => {
    sim.setGuest(100, { status: "stopped" });
    const r = await post(sim, "/qemu/100/status/suspend");
    assert.equal(r.status, 500);
    assert.match(JSON.stringify(r.body), /VM 100 not running/);
    assert.equal(sim.tasks().length, 0);
  });
});

Deno.test("sim suspend: statestorage needs todisk (the schema's requires)", async () => {
  await withSim(async (sim) => {
    const r = await post(sim, "/qemu/100/status/suspend", {
      statestorage: "local-lvm",
    });
    assert.equal(r.status, 400);
    assert.match(
      JSON.stringify(r.body),
      /missing property required by 'statestorage'/,
    );
  });
});

Deno.test("sim suspend: to disk locks suspending, writes the state volume, then stops the VM locked suspended", async () => {
  await withSim(async (sim) => {
    const r = await post(sim, "/qemu/100/status/suspend", { todisk: 1 });
    assert.equal(r.status, 200);
    assert.match(r.body.data, /:qmsuspend:100:/);
    const vm = sim.guest(100)!;
    assert.equal(vm.lock, "suspending");
    assert.match(String(vm.config.vmstate), /^local-lvm:vm-100-state-suspend-/);
    await waitTask(sim.url, r.body.data, AUTH);
    assert.equal(vm.status, "stopped");
    assert.equal(vm.lock, "suspended");
    const content = await api(
      sim.url,
      "GET",
      "/nodes/pve1/storage/local-lvm/content",
      {},
      AUTH,
    );
    const state = (content.body.data as { volid: string; size: number }[])
      .find((v) => v.volid === vm.config.vmstate);
    assert.equal(state?.size, (1024 * 2 + 500) * 2 ** 20);
  });
});

Deno.test("sim suspend: a failed save drops the state volume and leaves lock suspending", async () => {
  await withSim(async (sim) => {
    sim.nextTask({
      exitstatus: "query-savevm failed with error 'No space left'",
    });
    const r = await post(sim, "/qemu/100/status/suspend", { todisk: 1 });
    const end = await waitTask(sim.url, r.body.data, AUTH);
    assert.match(String(end.exitstatus), /query-savevm failed/);
    const vm = sim.guest(100)!;
    assert.equal(vm.lock, "suspending");
    assert.equal(vm.config.vmstate, undefined);
    assert.equal(vm.status, "running");
  });
});

Deno.test("sim resume: a VM suspended to disk starts from its state, which is freed", async () => {
  await withSim(async (sim) => {
    const down = await post(sim, "/qemu/100/status/suspend", { todisk: 1 });
    await waitTask(sim.url, down.body.data, AUTH);
    const up = await post(sim, "/qemu/100/status/resume");
    assert.equal(up.status, 200);
    await waitTask(sim.url, up.body.data, AUTH);
    const vm = sim.guest(100)!;
    assert.equal(vm.status, "running");
    assert.equal(vm.lock, undefined);
    assert.equal(vm.config.vmstate, undefined);
    assert.ok(
      sim.task(up.body.data)?.log.includes("Resumed VM, removing state"),
    );
  });
});

Deno.test("sim start: a VM suspended to disk is resumed by a start too (vm_start passes its lock)", async () => {
  await withSim(async (sim) => {
    const down = await post(sim, "/qemu/100/status/suspend", { todisk: 1 });
    await waitTask(sim.url, down.body.data, AUTH);
    const up = await post(sim, "/qemu/100/status/start");
    const end = await waitTask(sim.url, up.body.data, AUTH);
    assert.equal(end.exitstatus, "OK");
    assert.equal(sim.guest(100)?.lock, undefined);
    assert.equal(sim.guest(100)?.status, "running");
  });
});

Deno.test("sim resume: a stopped VM without the suspended lock is refused (VM … not running)", async () => {
  await withSim(async (sim) => {
    sim.setGuest(100, { status: "stopped" });
    const r = await post(sim, "/qemu/100/status/resume");
    assert.equal(r.status, 500);
    assert.match(JSON.stringify(r.body), /VM 100 not running/);
  });
});

Deno.test("sim shutdown: a paused VM is refused before any task (VM is paused - cannot shutdown)", async () => {
  await withSim(async (sim) => {
    sim.setGuest(100, { qmpstatus: "paused" });
    const r = await post(sim, "/qemu/100/status/shutdown");
    assert.equal(r.status, 500);
    assert.match(JSON.stringify(r.body), /VM is paused - cannot shutdown/);
    assert.equal(sim.tasks().length, 0);
  });
});

Deno.test("sim shutdown: with forceStop a paused VM is stopped instead", async () => {
  await withSim(async (sim) => {
    sim.setGuest(100, { qmpstatus: "paused" });
    const r = await post(sim, "/qemu/100/status/shutdown", { forceStop: 1 });
    assert.equal(r.status, 200);
    await waitTask(sim.url, r.body.data, AUTH);
    assert.equal(sim.guest(100)?.status, "stopped");
  });
});

Deno.test("sim lxc: suspend needs a running container; resume restores only a checkpoint", async () => {
  await withSim(async (sim) => {
    const refused = await post(sim, "/lxc/300/status/suspend");
    assert.equal(refused.status, 500);
    assert.match(JSON.stringify(refused.body), /CT 300 not running/);
    const noCheckpoint = await post(sim, "/lxc/300/status/resume");
    const failed = await waitTask(sim.url, noCheckpoint.body.data, AUTH);
    assert.match(String(failed.exitstatus), /lxc-checkpoint -n 300 -r/);
    sim.setGuest(300, { status: "running" });
    const down = await post(sim, "/lxc/300/status/suspend");
    await waitTask(sim.url, down.body.data, AUTH);
    assert.equal(sim.guest(300)?.status, "stopped");
    const again = await post(sim, "/lxc/300/status/resume");
    const end = await waitTask(sim.url, again.body.data, AUTH);
    assert.equal(end.exitstatus, "OK");
    assert.equal(sim.guest(300)?.status, "running");
    const running = await post(sim, "/lxc/300/status/resume");
    assert.equal(running.status, 500);
    assert.match(JSON.stringify(running.body), /CT 300 already running/);
  });
});
