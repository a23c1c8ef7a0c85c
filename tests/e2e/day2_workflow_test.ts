/**
 * The day-2 workflow of issue 13, as a maintenance run would chain it: snapshot → a change
 * (setConfig) → the check of the change fails (guestExec exits 1) → rollback → the VM verified as
 * it was (getConfig) → deleteSnapshot; migrate a running VM to pve2 and back, then an HA-managed
 * one; write a 200 KB file and read it back; and a container command that exits 3 (over ssh). Every
 * step's record must be the truth; with one fault injected per step, the sequence fails at exactly
 * that step, saying what went wrong, and the steps before it stay green.
 */
import assert from "node:assert/strict";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { containers } from "./lxc_fixture.ts";
import { type Env, withEnv, written } from "./env.ts";

const VM = 140;
const HA_VM = 141;
const DIR = Deno.makeTempDirSync({ prefix: "swamp-day2-" });
globalThis.addEventListener(
  "unload",
  () => Deno.removeSync(DIR, { recursive: true }),
);
const FILE = `${DIR}/payload.bin`;
const PAYLOAD = Uint8Array.from(
  { length: 200 * 1024 },
  (_, i) => (i * 31 + 7) % 256,
);

function base64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}

const vm = (vmid: number, over: Partial<SimGuest> = {}): SimGuest => ({
  vmid,
  node: "pve1",
  type: "qemu",
  name: `day2-${vmid}`,
  status: "running",
  tags: ["swamp"],
  agent: "running",
  config: {
    memory: 2048,
    smbios1: `uuid=00000000-0000-4000-8000-000000000${vmid}`,
  },
  ...over,
});

const guests = () => [
  ...demoGuests(),
  vm(VM),
  vm(HA_VM, { ha: { managed: true, state: "started", applyDelayMs: 200 } }),
];

interface Step {
  label: string;
  method: string;
  args: Record<string, unknown>;
  /** The step's own verdict when nothing is injected (the failing check of the change fails). */
  status?: "succeeded" | "failed";
  instance?: string;
  check: (rec: Record<string, unknown>, env: Env) => void | Promise<void>;
  /** One fault for this step, and what the failure must say. */
  fault: { inject: (env: Env) => void; says: RegExp };
}

const failTask = (exitstatus: string) => (env: Env) =>
  env.sim.nextTask({ exitstatus });
const failRequest =
  (method: string, path: string, message: string) => (env: Env) =>
    env.sim.fault({
      method,
      pathRegex: path,
      kind: "status",
      status: 500,
      message,
    });

const steps: Step[] = [
  {
    label: "snapshot",
    method: "snapshot",
    args: {
      vmid: VM,
      name: "pre-change",
      description: "before the memory change",
    },
    instance: `vm-${VM}-snapshots`,
    check: (rec) => assert.equal(rec.currentParent, "pre-change"),
    fault: {
      inject: failTask("snapshot feature is not available"),
      says: /snapshot feature is not available/,
    },
  },
  {
    label: "the change",
    method: "setConfig",
    args: { vmid: VM, config: { memory: 4096 } },
    check: (rec) => assert.equal(rec.present, true),
    fault: {
      inject: failRequest(
        "PUT",
        `/qemu/${VM}/config$`,
        `VM is locked (backup)`,
      ),
      says: /is locked \(backup\)/,
    },
  },
  {
    label: "the check of the change fails",
    method: "guestExec",
    args: {
      vmid: VM,
      command: ["sh", "-c", "echo 'service did not come back' >&2; exit 1"],
    },
    status: "failed",
    instance: `vm-${VM}-exec`,
    check: (rec) => {
      assert.equal(rec.exitCode, 1);
      assert.equal(rec.accepted, false);
    },
    fault: {
      inject: (env) => env.sim.setGuest(VM, { agent: "configured" }),
      says: /QEMU guest agent is not running/,
    },
  },
  {
    label: "rollback",
    method: "rollback",
    args: { vmid: VM, name: "pre-change", start: true },
    check: (rec) => {
      assert.equal(rec.status, "running");
      assert.equal(rec.lock, undefined);
    },
    fault: {
      inject: failTask("rbd error: rbd: sysfs write failed"),
      says: /sysfs write failed/,
    },
  },
  {
    label: "verified as it was",
    method: "getConfig",
    args: { vmid: VM },
    instance: `vm-${VM}-config`,
    check: (rec) => {
      const config = rec.config as Record<string, unknown>;
      // `memory` is a string option in PVE's schema: the pending rows carry it as text.
      assert.equal(config.memory, "2048");
      assert.equal(config.parent, "pre-change");
    },
    fault: {
      inject: failRequest("GET", `/qemu/${VM}/pending$`, "got timeout"),
      says: /got timeout/,
    },
  },
  {
    label: "delete the snapshot",
    method: "deleteSnapshot",
    args: { vmid: VM, name: "pre-change" },
    instance: `vm-${VM}-snapshots`,
    check: (rec) => assert.deepEqual(rec.snapshots, []),
    fault: {
      inject: failTask("zfs error: dataset is busy"),
      says: /dataset is busy/,
    },
  },
  {
    label: "migrate to pve2",
    method: "migrate",
    args: { vmid: VM, targetNode: "pve2", online: true },
    check: (rec, env) => {
      assert.equal(rec.node, "pve2");
      assert.equal(rec.status, "running");
      assert.equal(env.sim.guest(VM)?.node, "pve2");
    },
    fault: {
      inject: (env) => {
        const g = env.sim.guest(VM)!;
        g.config.hostpci0 = "0000:01:00.0";
      },
      says: /uses local devices: hostpci0/,
    },
  },
  {
    label: "migrate back",
    method: "migrate",
    args: { vmid: VM, targetNode: "pve1", online: true },
    check: (rec) => assert.equal(rec.node, "pve1"),
    fault: {
      inject: failTask("migration aborted"),
      says: /migration aborted/,
    },
  },
  {
    label: "HA migrate to pve2",
    method: "migrate",
    args: { vmid: HA_VM, targetNode: "pve2", online: true },
    instance: `vm-${HA_VM}`,
    check: (rec) => {
      assert.equal(rec.node, "pve2");
      assert.match(String(rec.lastTask), /:hamigrate:/);
    },
    fault: {
      inject: (env) => {
        env.sim.guest(HA_VM)!.ha!.neverApplies = true;
      },
      says: /still places it on node pve1.*ha-manager status/,
    },
  },
  {
    label: "HA migrate back",
    method: "migrate",
    args: { vmid: HA_VM, targetNode: "pve1", online: true },
    instance: `vm-${HA_VM}`,
    check: (rec) => assert.equal(rec.node, "pve1"),
    fault: {
      inject: failRequest(
        "POST",
        `/qemu/${HA_VM}/migrate$`,
        "cluster not ready - no quorum?",
      ),
      says: /no quorum/,
    },
  },
  {
    label: "write 200 KB",
    method: "fileWrite",
    args: { vmid: VM, path: FILE, contentBase64: base64(PAYLOAD) },
    instance: `vm-${VM}-file`,
    check: async (rec) => {
      assert.equal(rec.verified, true);
      assert.deepEqual(await Deno.readFile(FILE), PAYLOAD);
    },
    fault: {
      inject: failRequest(
        "POST",
        `/qemu/${VM}/agent/file-write$`,
        "QEMU guest agent is not running",
      ),
      says: /QEMU guest agent is not running/,
    },
  },
  {
    label: "read it back",
    method: "fileRead",
    args: { vmid: VM, path: FILE, maxBytes: 262144 },
    instance: `vm-${VM}-file`,
    check: (rec) => {
      assert.equal(rec.contentBase64, base64(PAYLOAD));
      assert.equal(rec.truncated, false);
    },
    fault: {
      inject: failRequest(
        "GET",
        `/qemu/${VM}/agent/file-read$`,
        "Agent error: Permission denied",
      ),
      says: /Permission denied/,
    },
  },
];

async function runSequence(env: Env, faultAt?: number): Promise<string[]> {
  const verdicts: string[] = [];
  for (const [index, step] of steps.entries()) {
    if (index === faultAt) step.fault.inject(env);
    const r = await env.run(step.method, step.args);
    verdicts.push(`${step.label}:${r.status}`);
    if (index === faultAt) {
      assert.equal(r.status, "failed", `${step.label} should have failed`);
      assert.match(r.error ?? "", step.fault.says);
      return verdicts;
    }
    assert.equal(
      r.status,
      step.status ?? "succeeded",
      `${step.label}: ${r.error}`,
    );
    await step.check(written(r, step.instance ?? `vm-${VM}`), env);
  }
  return verdicts;
}

const expected = (upTo: number) =>
  steps.slice(0, upTo).map((s) => `${s.label}:${s.status ?? "succeeded"}`);

Deno.test("day-2 workflow: snapshot → change → failed check → rollback → verified → delete snapshot; migrate there and back (plain, HA); 200 KB file written and read back", async () => {
  await withEnv(
    { guests: guests(), globalArgs: { taskTimeoutSec: 3 } },
    async (env) => {
      assert.deepEqual(await runSequence(env), expected(steps.length));
    },
  );
});

for (const [index, step] of steps.entries()) {
  Deno.test(`day-2 workflow: a fault at "${step.label}" fails the sequence at exactly that step`, async () => {
    await withEnv(
      { guests: guests(), globalArgs: { taskTimeoutSec: 3 } },
      async (env) => {
        assert.deepEqual(await runSequence(env, index), [
          ...expected(index),
          `${step.label}:failed`,
        ]);
      },
    );
  });
}

const overSsh = {
  guests: [...demoGuests(), ...containers()],
  model: lxcModel,
  via: "ssh" as const,
};

Deno.test("day-2 workflow: a container command that exits 3 fails with 3 recorded", async () => {
  await withEnv(overSsh, async (env) => {
    const r = await env.run("guestExec", {
      vmid: 300,
      command: ["sh", "-c", "exit 3"],
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /exited with code 3/);
    assert.equal(written(r, "ct-300-exec").exitCode, 3);
  });
});

Deno.test("day-2 workflow: a fault at the container command (container stopped) fails there, not started", async () => {
  await withEnv(overSsh, async (env) => {
    env.sim.setGuest(300, { status: "stopped" });
    const r = await env.run("guestExec", {
      vmid: 300,
      command: ["sh", "-c", "exit 3"],
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /is not running/);
    assert.equal(written(r, "ct-300-exec").outcome, "notStarted");
  });
});
