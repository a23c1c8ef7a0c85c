/**
 * A backup and restore round trip on a REAL guest (issue 22 item 5): a file written with fileWrite
 * on VM 110's disk, the VM shut down and backed up, the archive restored to a new VMID, the restored
 * VM booted — a second QEMU on a copy of the archived disk — and the file read back with fileRead
 * from the restored guest. The archive is the simulator's (simulator/backups.ts: the config and, for
 * a real guest, a copy of its qcow2 overlay); what the package sees is PVE's API only.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ensureGuestImage } from "../../simulator/guest_image.ts";
import { realDemoGuest } from "../../simulator/demo_cluster.ts";
import { backupsOf } from "../../simulator/backups.ts";
import { type Env, startEnv, written } from "../e2e/env.ts";
import { note, runGuarded, secondsSince, step } from "./steps.ts";

const GUEST = realDemoGuest();
const VMID = GUEST.vmid;
const RESTORED = 111;
const PATH = "/data/roundtrip.txt";
const CONTENT = "written before the backup, read after the restore\n";
/** A method on a real guest that takes longer than this is hung: the test fails instead of waiting. */
const HANG_GUARD_MS = 120_000;

let env: Env;
let archive = "";
const began = performance.now();

/** Runs a method, guarded against hanging; notes how long it took. */
function run(method: string, args: Record<string, unknown>) {
  return runGuarded(env, method, args, HANG_GUARD_MS, "round trip");
}

step(
  "round trip setup: the image is built, VM 110 boots and its agent answers",
  async () => {
    const image = await ensureGuestImage();
    env = await startEnv({
      guests: [GUEST],
      sim: { realGuests: { image } },
      globalArgs: { taskTimeoutSec: 90 },
    });
    const started = await run("start", { vmid: VMID });
    assert.equal(started.status, "succeeded", started.error);
    const ready = await run("waitReady", { vmid: VMID, timeoutSec: 90 });
    assert.equal(ready.status, "succeeded", ready.error);
  },
);

step(
  "round trip: fileWrite puts the file on VM 110's disk, then the VM shuts down",
  async () => {
    const w = await run("fileWrite", {
      vmid: VMID,
      path: PATH,
      content: CONTENT,
    });
    assert.equal(w.status, "succeeded", w.error);
    assert.equal(written(w, `vm-${VMID}-file`).verified, true);
    // The guest's shutdown unmounts /data: the disk the backup copies holds the file.
    const down = await run("shutdown", { vmid: VMID, timeoutSec: 60 });
    assert.equal(down.status, "succeeded", down.error);
    assert.equal(env.sim.realVm(VMID), undefined);
  },
);

step(
  "round trip: the backup is listed on local with a size, and holds the disk",
  async () => {
    const b = await run("backup", { vmid: VMID, storage: "local" });
    assert.equal(b.status, "succeeded", b.error);
    archive = String(written(b, `vm-${VMID}-backup`).volid);
    const held = backupsOf(env.sim.storage("pve1", "local")!)
      .find((a) => a.volid === archive);
    assert.ok(held?.disk, "the archive holds a copy of the real guest's disk");
    assert.equal(written(b, `vm-${VMID}`).status, "stopped");
  },
);

step(
  "round trip: restore to VMID 111, boot it, and fileRead the file from the restored guest",
  async () => {
    const r = await run("restore", { archive, vmid: RESTORED, unique: true });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(RESTORED)?.real, true);
    const started = await run("start", { vmid: RESTORED });
    assert.equal(started.status, "succeeded", started.error);
    const ready = await run("waitReady", { vmid: RESTORED, timeoutSec: 90 });
    assert.equal(ready.status, "succeeded", ready.error);
    assert.notEqual(
      env.sim.realVm(RESTORED)?.pid,
      undefined,
      "a QEMU of its own",
    );
    const read = await run("fileRead", { vmid: RESTORED, path: PATH });
    assert.equal(read.status, "succeeded", read.error);
    assert.equal(written(read, `vm-${RESTORED}-file`).content, CONTENT);
  },
);

step("round trip teardown: VM 111 stops, no QEMU is left behind", async () => {
  const stopped = await run("stop", { vmid: RESTORED });
  assert.equal(stopped.status, "succeeded", stopped.error);
  await env.close();
  note(`round trip total ${secondsSince(began)} s`);
});
