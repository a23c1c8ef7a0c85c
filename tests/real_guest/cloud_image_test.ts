/**
 * From nothing to a running guest on a REAL VM (issue 22 items 5 and 6): a cloud image — a qcow2
 * disk holding a fresh marker file (simulator/cloud_image.ts) — served over loopback HTTP,
 * downloaded onto `local` by downloadUrl (the simulator fetches it and checks its sha256), a VM
 * created with its disk imported from it, booted as a real QEMU VM on that disk, commands run in
 * it through its agent, and stopped. The marker read inside the guest is the proof that the disk
 * it runs on is the downloaded image. The arguments are the main job's own (`./run.sh`, the steps
 * of cli/demos.ts provisionSteps, read as swamp reads `--input`), so this file holds the main job to
 * its records.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ensureGuestImage } from "../../simulator/guest_image.ts";
import {
  serveCloudImage,
  type ServedCloudImage,
} from "../../simulator/cloud_image.ts";
import { DOWNLOAD_STORAGES } from "../../simulator/image_server.ts";
import { parseInputPairs } from "../../harness/cli_inputs.ts";
import { provisionSteps } from "../../cli/demos.ts";
import { type Env, startEnv, written } from "../e2e/env.ts";
import { note, runGuarded, secondsSince, step } from "./steps.ts";

const VMID = 120;
/** A method on a real guest that takes longer than this is hung: the test fails instead of waiting. */
const HANG_GUARD_MS = 120_000;

let env: Env;
let image: ServedCloudImage;
const began = performance.now();

/** Runs a method, guarded against hanging; notes how long it took. */
function run(method: string, args: Record<string, unknown>) {
  return runGuarded(env, method, args, HANG_GUARD_MS, "cloud image");
}

/** The main job's `nth` step running `method`: its arguments as swamp parses them, its verdict. */
function mainJobStep(method: string, nth = 0) {
  const step =
    provisionSteps(VMID, image).filter((s) => s.method === method)[nth];
  assert.ok(step, `the main job has a ${method} step #${nth}`);
  const pairs = Object.entries(step.inputs).map(([k, v]) => `${k}=${v}`);
  return { args: parseInputPairs(pairs), expected: step.expected, step };
}

/** Runs the main job's `nth` `method` step; its verdict must be the one the demo expects. */
async function runMainJobStep(method: string, nth = 0) {
  const { args, expected } = mainJobStep(method, nth);
  const r = await run(method, args);
  assert.equal(r.status, expected, r.error);
  return r;
}

step(
  "cloud image setup: the image is built with a fresh marker and served over loopback HTTP",
  async () => {
    const kernel = await ensureGuestImage();
    image = await serveCloudImage();
    env = await startEnv({
      guests: [],
      sim: { storages: DOWNLOAD_STORAGES, realGuests: { image: kernel } },
      globalArgs: { taskTimeoutSec: 90 },
    });
  },
);

step(
  "cloud image: downloadUrl brings it onto local with its size, PVE's sha256 check seen",
  async () => {
    const r = await runMainJobStep("downloadUrl");
    const vol = written(r, `volume-local-${image.filename}`);
    assert.equal(vol.checksumVerified, true);
    assert.equal(vol.size, vol.urlSize);
  },
);

step(
  "cloud image: create makes VM 120 with its disk imported from the image, a real VM",
  async () => {
    const r = await runMainJobStep("create");
    assert.equal(written(r, `vm-${VMID}`).status, "stopped");
    assert.equal(env.sim.guest(VMID)?.real, true);
  },
);

step(
  "cloud image: VM 120 boots and its agent answers (waitReady)",
  async () => {
    await runMainJobStep("start");
    await runMainJobStep("waitReady");
    assert.notEqual(env.sim.realVm(VMID)?.pid, undefined, "a QEMU of its own");
  },
);

step(
  "cloud image: guestExec inside VM 120 reads the marker the image was built with",
  async () => {
    const r = await runMainJobStep("guestExec");
    assert.equal(written(r, `vm-${VMID}-exec`).stdout, image.marker);
  },
);

step(
  "cloud image: guestExec exiting 42 inside VM 120 fails with the code recorded",
  async () => {
    const r = await runMainJobStep("guestExec", 1);
    assert.equal(written(r, `vm-${VMID}-exec`).exitCode, 42);
  },
);

step(
  "cloud image teardown: VM 120 stops, no QEMU is left behind",
  async () => {
    await runMainJobStep("stop");
    assert.equal(env.sim.realVm(VMID), undefined);
    await env.close();
    await image.close();
    note(`cloud image total ${secondsSince(began)} s`);
  },
);
