/**
 * The package's provision-vm workflow through the harness: clone into a free VMID, cloud-init,
 * start until ready, a check, a snapshot, then the change — and the rollback job only when the
 * change failed.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { stepStatuses } from "../../harness/workflow.ts";
import { withWorkflows, type WorkflowEnv } from "./fixture.ts";

/** A cloud-init template: agent, a cloud-init drive, one NIC. */
export const CLOUD_TEMPLATE: SimGuest = {
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
    memory: 2048,
    scsi0: "local-lvm:base-9000-disk-0,size=8G",
    ide2: "local-lvm:vm-9000-cloudinit,media=cdrom",
    net0: "virtio=BC:24:11:90:00:00,bridge=vmbr0",
  },
};

const inputs = (over: Record<string, unknown> = {}) => ({
  templateId: 9000,
  name: "web1",
  vmidRange: { min: 200, max: 299 },
  sshKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOpsWorkflowKey ops@example",
  ipconfig0: "ip=10.0.0.41/24,gw=10.0.0.1",
  config: { memory: 4096 },
  ...over,
});

/** The VMID the clone claimed: the `vm-<n>` record named web1. */
function claimed(w: WorkflowEnv): number {
  const name = w.repo.instances().find((n) =>
    /^vm-\d+$/.test(n) && w.record(n)?.name === "web1"
  );
  assert.ok(name, `no vm-<n> record named web1: ${w.repo.instances()}`);
  return Number(name.slice(3));
}

const opts = { guests: [...demoGuests(), CLOUD_TEMPLATE] };

Deno.test("provision-vm: a failed change is rolled back by its own job, the run fails", async () => {
  await withWorkflows(opts, async (w) => {
    const run = await w.run(
      "provision-vm.yaml",
      inputs({ change: ["sh", "-c", "exit 3"] }),
    );
    assert.equal(run.status, "failed", "the change failed");
    assert.deepEqual(stepStatuses(run), {
      clone: "succeeded",
      "cloud-init": "succeeded",
      start: "succeeded",
      check: "succeeded",
      "pre-change": "succeeded",
      config: "succeeded",
      command: "failed",
      "to-pre-change": "succeeded",
    });
    const vmid = claimed(w);
    assert.ok(vmid >= 200 && vmid <= 299, `VMID ${vmid} in the range`);
    const vm = w.env.sim.guest(vmid);
    assert.equal(vm?.status, "running", "rolled back, then started");
    assert.equal(String(vm?.config.memory), "2048", "the change undone");
    assert.equal(w.record(`vm-${vmid}-ready`)?.ipv4, "10.0.0.41");
    assert.equal(w.record(`vm-${vmid}-exec`)?.exitCode, 3);
    assert.equal(w.record(`vm-${vmid}-snapshots`)?.currentParent, "pre-change");
  });
});

Deno.test("provision-vm: a change that succeeds leaves the rollback job skipped", async () => {
  await withWorkflows(opts, async (w) => {
    const run = await w.run("provision-vm.yaml", inputs({ change: ["true"] }));
    assert.equal(run.status, "succeeded");
    const statuses = stepStatuses(run);
    assert.equal(statuses.command, "succeeded");
    assert.equal(statuses["to-pre-change"], "skipped");
    assert.equal(
      run.jobs.find((j) => j.name === "rollback")?.status,
      "skipped",
    );
    const vm = w.env.sim.guest(claimed(w));
    assert.equal(String(vm?.config.memory), "4096", "the change kept");
  });
});

Deno.test("provision-vm: without a config change or a command their steps are skipped by their guards", async () => {
  await withWorkflows(opts, async (w) => {
    const run = await w.run("provision-vm.yaml", inputs({ config: {} }));
    assert.equal(run.status, "succeeded");
    const statuses = stepStatuses(run);
    assert.equal(statuses.config, "skipped");
    assert.equal(statuses.command, "skipped");
    assert.equal(statuses["to-pre-change"], "skipped");
  });
});

Deno.test("provision-vm: a failed check stops the provisioning; no snapshot, no change, no rollback", async () => {
  await withWorkflows(opts, async (w) => {
    const run = await w.run(
      "provision-vm.yaml",
      inputs({ check: ["sh", "-c", "exit 1"], change: ["true"] }),
    );
    assert.equal(run.status, "failed");
    const statuses = stepStatuses(run);
    assert.equal(statuses.check, "failed");
    assert.equal(statuses["pre-change"], "skipped");
    assert.equal(statuses.command, "skipped");
    assert.equal(statuses["to-pre-change"], "skipped");
  });
});

Deno.test("provision-vm: a missing required input is refused before anything is sent", async () => {
  await withWorkflows(opts, async (w) => {
    const before = w.env.sim.requests.length;
    await assert.rejects(
      w.run("provision-vm.yaml", { templateId: 9000, name: "web1" }),
      /Input validation failed:\n {2}sshKey is required/,
    );
    assert.equal(w.env.sim.requests.length, before);
  });
});
