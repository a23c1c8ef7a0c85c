/**
 * The package's backup-verify workflow through the harness: backup, restore of the new archive to a
 * scratch VMID, started, a command checked in it, the scratch deleted — whether the check passed or
 * not, and only when this run restored it.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { backupsOf } from "../../simulator/backups.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { stepStatuses } from "../../harness/workflow.ts";
import { withWorkflows } from "./fixture.ts";

/** VM 120 on pve1: running, its agent up, one disk and a NIC. */
const VM: SimGuest = {
  vmid: 120,
  node: "pve1",
  type: "qemu",
  name: "web",
  status: "running",
  agent: "running",
  tags: ["swamp"],
  config: {
    agent: 1,
    memory: 2048,
    scsi0: "local-lvm:vm-120-disk-0,size=8G",
    net0: "virtio=BC:24:11:00:01:20,bridge=vmbr0",
  },
};

const opts = { guests: [...demoGuests(), VM] };
const inputs = (over: Record<string, unknown> = {}) => ({
  vmid: 120,
  storage: "local",
  scratchVmid: 930,
  readyTimeoutSec: 30,
  ...over,
});

Deno.test("backup-verify: backed up, restored to the scratch VMID, started, checked, the scratch deleted", async () => {
  await withWorkflows(opts, async (w) => {
    const run = await w.run("backup-verify.yaml", inputs());
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.deepEqual(stepStatuses(run), {
      backup: "succeeded",
      restore: "succeeded",
      start: "succeeded",
      check: "succeeded",
      "delete-scratch": "succeeded",
    });
    const archive = String(w.record("vm-120-backup")?.volid);
    assert.ok(
      backupsOf(w.env.sim.storage("pve1", "local")!).some((b) =>
        b.volid === archive
      ),
      "the archive stays",
    );
    assert.equal(w.record("vm-930-exec")?.exitCode, 0);
    assert.equal(w.env.sim.guest(930), undefined, "the scratch VM is gone");
    assert.equal(w.env.sim.guest(120)?.status, "running");
  });
});

Deno.test("backup-verify: a failed check fails the run, and the scratch is still deleted", async () => {
  await withWorkflows(opts, async (w) => {
    const run = await w.run(
      "backup-verify.yaml",
      inputs({ check: ["sh", "-c", "exit 1"] }),
    );
    assert.equal(run.status, "failed");
    const statuses = stepStatuses(run);
    assert.equal(statuses.check, "failed");
    assert.equal(statuses["delete-scratch"], "succeeded");
    assert.equal(w.env.sim.guest(930), undefined);
  });
});

Deno.test("backup-verify: a scratch VMID that is taken fails the restore, and nothing is deleted", async () => {
  await withWorkflows(opts, async (w) => {
    const run = await w.run("backup-verify.yaml", inputs({ scratchVmid: 102 }));
    assert.equal(run.status, "failed");
    const statuses = stepStatuses(run);
    assert.equal(statuses.restore, "failed");
    assert.equal(statuses.start, "skipped");
    assert.equal(statuses["delete-scratch"], "skipped");
    assert.equal(w.env.sim.guest(102)?.name, "stopped", "the guest is left");
  });
});
