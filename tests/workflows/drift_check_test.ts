/**
 * The package's drift-check workflow through the harness: a sync, then an assert that names every
 * declared guest whose record differs; scheduled hourly, schedule and inputs overridable in
 * `.swamp/serve.yaml`.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { stepStatuses } from "../../harness/workflow.ts";
import { effectiveTrigger } from "../../harness/serve_triggers.ts";
import { packageWorkflow } from "../../harness/project_package.ts";
import { parseWorkflow } from "../../harness/workflow_def.ts";
import { withWorkflows } from "./fixture.ts";

const opts = { guests: demoGuests() };

Deno.test("drift-check: guests as declared pass the assert", async () => {
  await withWorkflows(opts, async (w) => {
    const run = await w.run("drift-check.yaml", {
      declared: [
        { vmid: 100, status: "running", node: "pve1" },
        { vmid: 102, status: "stopped" },
      ],
    });
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.deepEqual(stepStatuses(run), {
      sync: "succeeded",
      "as-declared": "succeeded",
    });
  });
});

Deno.test("drift-check: the assert fails naming each declared guest that differs", async () => {
  await withWorkflows(opts, async (w) => {
    const run = await w.run("drift-check.yaml", {
      declared: [
        { vmid: 100, status: "running" },
        { vmid: 101, status: "stopped" }, // running
        { vmid: 102, status: "stopped", node: "pve2" }, // on pve1
        { vmid: 777, status: "running" }, // no such guest
      ],
    });
    assert.equal(run.status, "failed");
    const step = run.jobs.flatMap((j) => j.steps).find((s) =>
      s.name === "as-declared"
    );
    assert.equal(step?.status, "failed");
    assert.equal(
      step?.assertResult?.message,
      "guests that differ from the declared state: 101,102,777",
    );
  });
});

Deno.test("drift-check: a guest that drifts after it was declared is caught by the next run", async () => {
  await withWorkflows(opts, async (w) => {
    const declared = [{ vmid: 100, status: "running" }];
    assert.equal(
      (await w.run("drift-check.yaml", { declared })).status,
      "succeeded",
    );
    w.env.sim.setGuest(100, { status: "stopped" });
    const run = await w.run("drift-check.yaml", { declared });
    assert.equal(run.status, "failed");
    assert.equal(w.record("vm-100")?.status, "stopped");
  });
});

Deno.test("drift-check: scheduled hourly; serve.yaml's trigger override replaces the schedule and supplies the inputs", () => {
  const wf = parseWorkflow(packageWorkflow("drift-check.yaml"));
  assert.deepEqual(effectiveTrigger(wf, undefined), {
    schedule: "0 * * * *",
    inputs: {},
  });
  const serve = [
    "triggers:",
    `  "${wf.name}":`,
    '    schedule: "*/15 * * * *"',
    "    inputs:",
    "      model: pve-east",
    "      declared: [{ vmid: 100, status: running }]",
  ].join("\n");
  assert.deepEqual(effectiveTrigger(wf, serve), {
    schedule: "*/15 * * * *",
    inputs: { model: "pve-east", declared: [{ vmid: 100, status: "running" }] },
  });
});

Deno.test("drift-check: a scheduled run takes serve.yaml's inputs over the workflow's defaults", async () => {
  await withWorkflows(opts, async (w) => {
    const wf = parseWorkflow(packageWorkflow("drift-check.yaml"));
    const serve =
      `triggers:\n  "${wf.name}":\n    inputs:\n      declared: [{ vmid: 101, status: stopped }]\n`;
    const run = await w.run(
      "drift-check.yaml",
      effectiveTrigger(wf, serve).inputs,
      { triggered: true },
    );
    assert.equal(run.status, "failed", "101 runs");
    assert.deepEqual(run.inputs.declared, [{ vmid: 101, status: "stopped" }]);
    assert.equal(run.inputs.model, "proxmox", "the schema default");
  });
});

Deno.test("drift-check: a serve.yaml override with a schedule cron cannot parse is refused", () => {
  const wf = parseWorkflow(packageWorkflow("drift-check.yaml"));
  assert.throws(
    () =>
      effectiveTrigger(
        wf,
        `triggers:\n  "${wf.name}":\n    schedule: "every hour"\n`,
      ),
    /invalid cron expression 'every hour'/,
  );
});
