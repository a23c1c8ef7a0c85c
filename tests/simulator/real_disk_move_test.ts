/**
 * A REAL running guest's disk moves between storages while it runs (routes_move.ts, real_guests.ts
 * moveDisk): the simulator's VM 110 is a QEMU VM (scripts/guest_image.sh) whose disk is mirrored
 * by QMP `drive-mirror` to a new file standing for its volume on the target storage, completed
 * once ready. Then the guest reads back what it wrote before the move (its page cache dropped),
 * QEMU's `query-block` names the new file, the old file is gone (`delete=1`), and the next boot
 * runs from the new file.
 *
 * Driven through the simulator's HTTP API, without the package. Where this machine cannot build
 * the guest image or has no QEMU, the test is reported as not run (and ignored).
 *
 * @module
 */
import assert from "node:assert/strict";
import { ensureGuestImage } from "../../simulator/guest_image.ts";
import { realDemoGuest } from "../../simulator/demo_cluster.ts";
import type { GuestImage } from "../../simulator/real_vm.ts";
import {
  api,
  type ApiParams,
  tokenHeader,
  until,
} from "../../simulator/sim_client.ts";
import { type Simulator, startSimulator } from "../../simulator/simulator.ts";

const TOKEN = { id: "root@pam!ci", secret: "real-move" };
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };
const VMID = realDemoGuest().vmid;
const QM = `/nodes/pve1/qemu/${VMID}`;

/** The image, or why this machine cannot run a real guest. */
async function image(): Promise<GuestImage | string> {
  // Spawning a program that is not there throws before any promise exists (Deno's spawn is
  // synchronous): on a machine where the real-guest layer has not installed QEMU yet, that is
  // "not run", not a crash of this file.
  const qemu = await (async () => {
    try {
      const o = await new Deno.Command("qemu-system-x86_64", {
        args: ["--version"],
      }).output();
      return o.success;
    } catch {
      return false;
    }
  })();
  if (!qemu) return "qemu-system-x86_64 is not installed";
  try {
    return await ensureGuestImage();
  } catch (err) {
    return (err as Error).message;
  }
}

const found = await image();
if (typeof found === "string") {
  console.log(`real guest: disk move while running not run: ${found}`);
}

async function call(
  sim: Simulator,
  method: string,
  path: string,
  params: ApiParams = {},
) {
  const r = await api(sim.url, method, path, params, AUTH);
  assert.equal(r.status, 200, `${method} ${path}: ${JSON.stringify(r.body)}`);
  return r.body.data;
}

/** Waits up to `seconds` for a task to end and returns its exitstatus. */
async function taskEnds(sim: Simulator, upid: string, seconds: number) {
  const path = `/nodes/pve1/tasks/${encodeURIComponent(upid)}/status`;
  return await until(
    async () => {
      const r = await api(sim.url, "GET", path, {}, AUTH);
      return r.status === 200 && r.body.data.status === "stopped"
        ? String(r.body.data.exitstatus)
        : undefined;
    },
    `task ${upid}`,
    seconds * 1000,
    200,
  );
}

/** Starts the VM and waits for its agent. */
async function boot(sim: Simulator) {
  const upid = await call(sim, "POST", `${QM}/status/start`);
  assert.equal(await taskEnds(sim, upid, 60), "OK");
  await until(
    async () => {
      const r = await api(sim.url, "POST", `${QM}/agent/ping`, {}, AUTH);
      return r.status === 200 ? true : undefined;
    },
    "the guest agent",
    90_000,
    500,
  );
}

/** Runs `script` in the guest and returns its stdout (exit code 0 asserted). */
async function inGuest(sim: Simulator, script: string): Promise<string> {
  const { pid } = await call(sim, "POST", `${QM}/agent/exec`, {
    command: ["sh", "-c", script],
  });
  const done = await until(
    async () => {
      const s = await call(sim, "GET", `${QM}/agent/exec-status`, { pid });
      return s.exited ? s : undefined;
    },
    `exec ${script}`,
    30_000,
    200,
  );
  assert.equal(done.exitcode, 0, JSON.stringify(done));
  return String(done["out-data"] ?? "");
}

/** The file QEMU's drive runs on (`query-block`). */
async function driveFile(sim: Simulator): Promise<string> {
  const blocks = await sim.realVm(VMID)!.qmp("query-block") as {
    device: string;
    inserted?: { file: string };
  }[];
  const drive = blocks.find((b) => b.device === "drive-virtio0");
  return drive?.inserted?.file ?? "";
}

Deno.test({
  name:
    "real guest: a running VM's disk moves to another storage by drive mirror and the guest runs on, also after a reboot",
  ignore: typeof found === "string",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const sim = await startSimulator({
      nodes: ["pve1"],
      tokens: [TOKEN],
      guests: [realDemoGuest()],
      realGuests: { image: found as GuestImage },
      taskDurationMs: 50,
    });
    try {
      await boot(sim);
      await inGuest(sim, "printf 'before the move' > /data/marker && sync");
      const before = await driveFile(sim);
      const pid = sim.realVm(VMID)?.pid;
      const upid = await call(sim, "POST", `${QM}/move_disk`, {
        disk: "virtio0",
        storage: "local-zfs",
        delete: 1,
      });
      assert.equal(await taskEnds(sim, upid, 120), "OK");
      const config = await call(sim, "GET", `${QM}/config`);
      assert.equal(config.virtio0, "local-zfs:vm-110-disk-0,size=64M");
      // The same QEMU process runs on, now on the new file.
      assert.equal(sim.realVm(VMID)?.pid, pid);
      const after = await driveFile(sim);
      assert.match(after, /\/local-zfs\/[^/]+\.qcow2$/);
      assert.notEqual(after, before);
      await assert.rejects(Deno.stat(before), Deno.errors.NotFound);
      assert.equal(
        await inGuest(
          sim,
          "echo 3 > /proc/sys/vm/drop_caches; cat /data/marker",
        ),
        "before the move",
      );
      // The next boot runs from the new file.
      const stop = await call(sim, "POST", `${QM}/status/stop`);
      assert.equal(await taskEnds(sim, stop, 60), "OK");
      await boot(sim);
      assert.equal(await driveFile(sim), after);
      assert.equal(await inGuest(sim, "cat /data/marker"), "before the move");
    } finally {
      await sim.close();
    }
  },
});
