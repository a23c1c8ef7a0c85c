/**
 * The package's provision-ct workflow through the harness, the lxc model over ssh (a container's
 * commands run as `pct exec` on its node): create into a free VMID, start until its address is
 * there, a check, a snapshot, the change — and the rollback job only when the change failed.
 */
import assert from "node:assert/strict";
import { stepStatuses } from "../../harness/workflow.ts";
import { TEMPLATE } from "../e2e/lxc_fixture.ts";
import { withWorkflows, type WorkflowEnv } from "./fixture.ts";

const inputs = (change: string[]) => ({
  ostemplate: TEMPLATE,
  hostname: "web-ct1",
  vmidRange: { min: 300, max: 399 },
  sshKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOpsWorkflowKey ops@example",
  net0: "name=eth0,bridge=vmbr0,ip=10.0.0.51/24,gw=10.0.0.1",
  config: { memory: 1024 },
  change,
});

/** The VMID the create claimed: the `ct-<n>` record named web-ct1. */
function claimed(w: WorkflowEnv): number {
  const name = w.repo.instances().find((n) =>
    /^ct-\d+$/.test(n) && w.record(n)?.name === "web-ct1"
  );
  assert.ok(name, `no ct-<n> record named web-ct1: ${w.repo.instances()}`);
  return Number(name.slice(3));
}

Deno.test("provision-ct: a failed change is rolled back by its own job, the run fails", async () => {
  await withWorkflows({ lxc: true }, async (w) => {
    const run = await w.run(
      "provision-ct.yaml",
      inputs(["sh", "-c", "exit 3"]),
    );
    assert.equal(run.status, "failed", "the change failed");
    assert.deepEqual(stepStatuses(run), {
      create: "succeeded",
      start: "succeeded",
      check: "succeeded",
      "pre-change": "succeeded",
      config: "succeeded",
      command: "failed",
      "to-pre-change": "succeeded",
    });
    const vmid = claimed(w);
    assert.ok(vmid >= 300 && vmid <= 399, `VMID ${vmid} in the range`);
    const ct = w.env.sim.guest(vmid);
    assert.equal(ct?.status, "running", "rolled back, then started");
    assert.notEqual(String(ct?.config.memory), "1024", "the change undone");
    assert.equal(w.record(`ct-${vmid}-exec`)?.exitCode, 3);
    assert.equal(w.record(`ct-${vmid}-snapshots`)?.currentParent, "pre-change");
  });
});

Deno.test("provision-ct: a change that succeeds leaves the rollback job skipped", async () => {
  await withWorkflows({ lxc: true }, async (w) => {
    const run = await w.run("provision-ct.yaml", inputs(["true"]));
    assert.equal(run.status, "succeeded");
    assert.equal(stepStatuses(run)["to-pre-change"], "skipped");
    const ct = w.env.sim.guest(claimed(w));
    assert.equal(String(ct?.config.memory), "1024", "the change kept");
  });
});
