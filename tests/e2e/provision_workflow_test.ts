/**
 * The provisioning workflow of issue 12, through the harness: clone without a vmid → cloudInit →
 * start with waitReady (IPv4, cloud-init done) → guestExec → setConfig applying a pending change by
 * a reboot → convertToTemplate of a second guest → clone from that template. Green with true
 * records; and one fault per step (a VMID taken between nextid and the clone, a dump lacking a key,
 * no address, …, a reboot without a new boot, a template flag never set) fails the sequence at
 * exactly that step, saying why.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, withEnv, written } from "./env.ts";

const RANGE = { min: 400, max: 402 };
const GOLDEN = 9100;

/** A cloud image template: agent, a cloud-init drive, one NIC. */
const template: SimGuest = {
  vmid: 9000,
  node: "pve1",
  type: "qemu",
  name: "debian-cloud",
  status: "stopped",
  agent: "running",
  tags: ["swamp"],
  config: {
    template: 1,
    agent: 1,
    scsi0: "local-lvm:base-9000-disk-0,size=8G",
    ide2: "local-lvm:vm-9000-cloudinit,media=cdrom",
    net0: "virtio=BC:24:11:90:00:00,bridge=vmbr0",
  },
};

/** The second guest, made into a template by the workflow. */
const golden: SimGuest = {
  vmid: GOLDEN,
  node: "pve1",
  type: "qemu",
  name: "golden",
  status: "stopped",
  agent: "running",
  tags: ["swamp"],
  config: {
    scsi0: `local-lvm:vm-${GOLDEN}-disk-0,size=8G`,
    ide2: `local-lvm:vm-${GOLDEN}-cloudinit,media=cdrom`,
    net0: "virtio=BC:24:11:91:00:00,bridge=vmbr0",
  },
};

const SSH_KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOpsWorkflowKey ops@example";

/** What the run learned so far (the VMID the first clone claimed). */
interface Seen {
  vmid?: number;
}

interface Step {
  method: string;
  args: (seen: Seen) => Record<string, unknown>;
  /** The record that tells this step's truth. */
  instance: (seen: Seen) => string;
  check: (rec: Record<string, unknown>, env: Env, seen: Seen) => void;
}

const vm = (seen: Seen) => `vm-${seen.vmid}`;

const steps: Step[] = [
  {
    method: "clone",
    args: () => ({ templateId: 9000, name: "k8s-node-1", vmidRange: RANGE }),
    instance: () => "",
    check: (rec, env, seen) => {
      seen.vmid = Number(rec.vmid);
      assert.equal(seen.vmid, 400, "the lowest free VMID of the range");
      assert.equal(rec.name, "k8s-node-1");
      assert.equal(
        env.sim.guest(400)?.config.ide2,
        "local-lvm:vm-400-cloudinit,media=cdrom",
      );
    },
  },
  {
    method: "cloudInit",
    args: (seen) => ({
      vmid: seen.vmid,
      ciuser: "ops",
      sshkeys: SSH_KEY,
      ipconfig0: "ip=10.0.0.40/24,gw=10.0.0.1",
      nameserver: "1.1.1.1",
    }),
    instance: vm,
    check: (rec, env, seen) => {
      assert.equal(rec.present, true);
      assert.equal(
        env.sim.guest(seen.vmid!)?.cloudinitGenerated?.ciuser,
        "ops",
      );
    },
  },
  {
    method: "start",
    args: (seen) => ({
      vmid: seen.vmid,
      waitReady: { ipv4: true, nic: "net0", cloudInit: true, timeoutSec: 3 },
    }),
    instance: (seen) => `vm-${seen.vmid}-ready`,
    check: (rec) => {
      assert.equal(rec.ready, true);
      assert.equal(rec.ipv4, "10.0.0.40");
      assert.deepEqual(rec.cloudInit, {
        outcome: "exited",
        exitCode: 0,
        status: "done",
      });
    },
  },
  {
    method: "guestExec",
    args: (seen) => ({
      vmid: seen.vmid,
      command: ["bash", "-c", "echo provisioned"],
    }),
    instance: (seen) => `vm-${seen.vmid}-exec`,
    check: (rec) => assert.equal(rec.stdout, "provisioned\n"),
  },
  {
    method: "setConfig",
    args: (seen) => ({
      vmid: seen.vmid,
      config: { memory: 4096 },
      applyPending: "reboot",
    }),
    instance: vm,
    check: (rec, env, seen) => {
      assert.equal(rec.status, "running");
      assert.equal(rec.pending, undefined, "nothing pending after the reboot");
      assert.equal(
        env.sim.guest(seen.vmid!)?.boots,
        2,
        "booted by start, then by the reboot",
      );
    },
  },
  {
    method: "convertToTemplate",
    args: () => ({ vmid: GOLDEN }),
    instance: () => `vm-${GOLDEN}`,
    check: (rec, env) => {
      assert.equal(rec.template, true);
      assert.equal(env.sim.guest(GOLDEN)?.config.template, 1);
    },
  },
  {
    method: "clone",
    args: () => ({ templateId: GOLDEN, name: "k8s-node-2", vmidRange: RANGE }),
    instance: () => "vm-401",
    check: (rec) => {
      assert.equal(rec.name, "k8s-node-2");
      assert.ok((rec.tags as string[]).includes("swamp"));
    },
  },
];

/** One fault per step: what goes wrong in PVE (or the guest), and what the failure must say. */
const faults: { inject: (env: Env, seen: Seen) => void; says: RegExp }[] = [
  {
    // Other runs claim every id of the range between nextid's proposal and each clone request.
    inject: (env) =>
      env.sim.fault({
        method: "POST",
        pathRegex: "/qemu/9000/clone$",
        kind: "status",
        status: 500,
        message: "unable to create VM 400: config file already exists",
        times: Infinity,
      }),
    says: /no free VMID left in vmidRange 400–402: 400, 401, 402 were taken/,
  },
  {
    inject: (env, seen) =>
      env.sim.fault({
        method: "GET",
        pathRegex: `/qemu/${seen.vmid}/cloudinit/dump$`,
        kind: "body",
        body: JSON.stringify({ data: "#cloud-config\nhostname: k8s-node-1\n" }),
      }),
    says: /lacks what was asked: user config has no `user: ops`/,
  },
  {
    // The guest never gets an address: its interfaces show none.
    inject: (env, seen) =>
      env.sim.fault({
        method: "GET",
        pathRegex: `/qemu/${seen.vmid}/agent/network-get-interfaces$`,
        kind: "body",
        body: JSON.stringify({
          data: { result: [{ name: "lo", "ip-addresses": [] }] },
        }),
        times: Infinity,
      }),
    says: /no IPv4 address on net0 .* after 3 s/,
  },
  {
    inject: (env, seen) =>
      env.sim.setGuest(seen.vmid!, { agent: "configured" }),
    says: /QEMU guest agent is not running/,
  },
  {
    // The reboot task ends OK, but the guest never went down: the same boot goes on.
    inject: (env) => env.sim.nextTask({ noEffect: true }),
    says: /no new boot was observed .* still running the same boot/,
  },
  {
    // The template task ends OK without setting the flag.
    inject: (env) => env.sim.nextTask({ noEffect: true }),
    says: /do not both show it as a template/,
  },
  {
    inject: (env) =>
      env.sim.nextTask({
        exitstatus: "clone failed: storage 'local-lvm' is full",
      }),
    says: /storage 'local-lvm' is full/,
  },
];

async function runSequence(env: Env, faultAt?: number): Promise<string[]> {
  const verdicts: string[] = [];
  const seen: Seen = {};
  for (const [index, step] of steps.entries()) {
    if (index === faultAt) faults[index].inject(env, seen);
    const r = await env.run(step.method, step.args(seen));
    verdicts.push(`${step.method}:${r.status}`);
    if (r.status === "failed") {
      assert.equal(
        index,
        faultAt,
        `${step.method} failed unexpectedly: ${r.error}`,
      );
      assert.match(r.error ?? "", faults[index].says);
      return verdicts;
    }
    const instance = step.instance(seen) || r.written[0]?.instance;
    step.check(written(r, instance), env, seen);
  }
  return verdicts;
}

const fixture = {
  guests: [...demoGuests(), template, golden],
  globalArgs: { taskTimeoutSec: 3, pollIntervalSec: 1 },
};

Deno.test("provisioning workflow: clone (no vmid) → cloudInit → start (waitReady) → guestExec → setConfig (reboot) → convertToTemplate → clone runs green with true records", async () => {
  await withEnv(fixture, async (env) => {
    const verdicts = await runSequence(env);
    assert.deepEqual(verdicts, steps.map((s) => `${s.method}:succeeded`));
  });
});

for (const [index, step] of steps.entries()) {
  Deno.test(`provisioning workflow: a fault at step ${index + 1} (${step.method}) fails it at exactly that step`, async () => {
    await withEnv(fixture, async (env) => {
      const verdicts = await runSequence(env, index);
      const before = steps.slice(0, index).map((s) => `${s.method}:succeeded`);
      assert.deepEqual(verdicts, [...before, `${step.method}:failed`]);
    });
  });
}
