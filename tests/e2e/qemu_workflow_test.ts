/**
 * A workflow-like sequence, as a provisioning run would chain it: clone → setConfig (cloud-init keys)
 * → resizeDisk → start (waitForIp) → guestExec → shutdown → delete. Every step's records must be the
 * truth; with one fault injected per step, the sequence fails at exactly that step, with a message
 * that says what went wrong, and the steps before it stay green.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, withEnv, written } from "./env.ts";

const VMID = 400;

/** A template with a guest agent configured; its clones run one. */
const template: SimGuest = {
  vmid: 9000,
  node: "pve1",
  type: "qemu",
  name: "debian-tmpl",
  status: "stopped",
  agent: "running",
  tags: ["swamp"],
  config: {
    template: 1,
    agent: 1,
    smbios1: "uuid=00000000-0000-4000-8000-000000009000",
    scsi0: "local-zfs:base-9000-disk-0,size=8G",
  },
};

const SSH_KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOpsKeyForTheWorkflowTest ops@example";

interface Step {
  method: string;
  args: Record<string, unknown>;
  /** What the simulator does that PVE would do by itself (cloud-init hands the agent an address). */
  after?: (env: Env) => void;
  /** The truth this step's record must tell. */
  check: (rec: Record<string, unknown>) => void;
  instance?: string;
}

const steps: Step[] = [
  {
    method: "clone",
    args: { templateId: 9000, vmid: VMID, name: "k8s-node-1" },
    check: (rec) => {
      assert.equal(rec.name, "k8s-node-1");
      assert.equal(rec.status, "stopped");
      assert.ok((rec.tags as string[]).includes("swamp"));
    },
  },
  {
    method: "setConfig",
    args: {
      vmid: VMID,
      config: {
        ciuser: "ops",
        ipconfig0: "ip=10.0.0.40/24,gw=10.0.0.1",
        sshkeys: SSH_KEY,
        nameserver: "1.1.1.1",
      },
    },
    after: (env) => env.sim.setGuest(VMID, { ips: ["10.0.0.40/24"] }),
    check: (rec) => assert.equal(rec.present, true),
  },
  {
    method: "resizeDisk",
    args: { vmid: VMID, disk: "scsi0", size: "+8G" },
    check: (rec) => assert.equal(rec.present, true),
  },
  {
    method: "start",
    args: { vmid: VMID, waitForIp: true },
    check: (rec) => {
      assert.equal(rec.status, "running");
      assert.equal(rec.qmpStatus, "running");
      assert.equal(rec.ipv4, "10.0.0.40");
    },
  },
  {
    method: "guestExec",
    args: { vmid: VMID, command: ["bash", "-c", "echo provisioned"] },
    instance: `vm-${VMID}-exec`,
    check: (rec) => {
      assert.equal(rec.exitCode, 0);
      assert.equal(rec.stdout, "provisioned\n");
    },
  },
  {
    method: "shutdown",
    args: { vmid: VMID },
    check: (rec) => assert.equal(rec.status, "stopped"),
  },
  {
    method: "delete",
    args: { vmid: VMID },
    check: (rec) => {
      assert.equal(rec.status, "deleted");
      assert.equal(rec.present, false);
    },
  },
];

/** One fault per step: what goes wrong in PVE, and what the failure must say. */
const faults: Record<string, { inject: (env: Env) => void; says: RegExp }> = {
  clone: {
    inject: (env) =>
      env.sim.nextTask({
        exitstatus: "clone failed: storage 'local-zfs' is full",
      }),
    says: /storage 'local-zfs' is full/,
  },
  setConfig: {
    inject: (env) =>
      env.sim.fault({
        method: "PUT",
        pathRegex: `/qemu/${VMID}/config$`,
        kind: "status",
        status: 500,
        message: `VM ${VMID} is locked (backup)`,
      }),
    says: /is locked \(backup\)/,
  },
  resizeDisk: {
    inject: (env) =>
      env.sim.nextTask({ exitstatus: "zfs error: out of space" }),
    says: /out of space/,
  },
  start: {
    inject: (env) => env.sim.setGuest(VMID, { ips: [] }),
    says: /no IPv4 address|IPv4/,
  },
  guestExec: {
    inject: (env) => env.sim.setGuest(VMID, { agent: "configured" }),
    says: /QEMU guest agent is not running/,
  },
  shutdown: {
    inject: (env) => env.sim.setGuest(VMID, { tags: [] }),
    says: /does not carry the `swamp` tag/,
  },
  delete: {
    inject: (env) => env.sim.setGuest(VMID, { tags: ["swamp", "production"] }),
    says: /carries the `production` tag/,
  },
};

async function runSequence(env: Env, faultAt?: string): Promise<string[]> {
  const verdicts: string[] = [];
  for (const step of steps) {
    if (step.method === faultAt) faults[step.method].inject(env);
    const r = await env.run(step.method, step.args);
    verdicts.push(`${step.method}:${r.status}`);
    if (r.status === "failed") {
      assert.equal(
        step.method,
        faultAt,
        `${step.method} failed unexpectedly: ${r.error}`,
      );
      assert.match(r.error ?? "", faults[step.method].says);
      return verdicts;
    }
    step.check(written(r, step.instance ?? `vm-${VMID}`));
    step.after?.(env);
  }
  return verdicts;
}

Deno.test("workflow: clone → setConfig → resizeDisk → start(waitForIp) → guestExec → shutdown → delete runs green with true records", async () => {
  await withEnv({
    guests: [...demoGuests(), template],
    globalArgs: { taskTimeoutSec: 3 },
  }, async (env) => {
    const verdicts = await runSequence(env);
    assert.deepEqual(verdicts, steps.map((s) => `${s.method}:succeeded`));
    assert.equal(
      env.sim.guest(VMID),
      undefined,
      "the guest is gone from the simulator",
    );
  });
});

for (const [index, step] of steps.entries()) {
  Deno.test(`workflow: a fault at ${step.method} fails the sequence at exactly that step`, async () => {
    await withEnv({
      guests: [...demoGuests(), template],
      globalArgs: { taskTimeoutSec: 3 },
    }, async (env) => {
      const verdicts = await runSequence(env, step.method);
      const expected = steps.slice(0, index).map((s) =>
        `${s.method}:succeeded`
      );
      assert.deepEqual(verdicts, [...expected, `${step.method}:failed`]);
    });
  });
}
