/**
 * The workflow-scope report on a scripted run: one table per guest, a failed step's records found
 * by the run and step tags.
 *
 * @module
 */
import assert from "node:assert/strict";
import { report } from "./observed_workflow_report.ts";

const RUN = "run-1";
const TYPE = "@stateless/proxmox/qemu";

/** A data repository holding `records` (name → [tags, content]) of one definition. */
function repository(
  records: Record<string, [Record<string, string>, unknown]>,
) {
  return {
    findAllForModel: () =>
      Promise.resolve(
        Object.entries(records).map(([name, [tags]]) => ({
          name,
          version: 1,
          tags,
        })),
      ),
    getContent: (_t: unknown, _id: string, name: string) =>
      Promise.resolve(
        records[name]
          ? new TextEncoder().encode(JSON.stringify(records[name][1]))
          : null,
      ),
  };
}

const step = (
  stepName: string,
  methodName: string,
  status: string,
  handles: string[],
) => ({
  jobName: "fleet",
  stepName,
  modelName: "fleet",
  modelType: TYPE,
  modelId: "m-1",
  methodName,
  status,
  dataHandles: handles.map((name) => ({ name, version: 1, kind: "resource" })),
});

Deno.test("workflow report: a failed guestExec step shows its exit code under its guest", async () => {
  const tags = (s: string) => ({
    type: "resource",
    workflowRunId: RUN,
    step: s,
  });
  const result = await report.execute({
    workflowName: "three-steps",
    workflowRunId: RUN,
    workflowStatus: "failed",
    stepExecutions: [
      step("look", "lookup", "succeeded", ["vm-100"]),
      step("exec42", "guestExec", "failed", []),
    ],
    dataRepository: repository({
      "vm-100": [tags("look"), {
        vmid: 100,
        present: true,
        status: "running",
        lock: "backup",
      }],
      "vm-100-exec": [tags("exec42"), {
        vmid: 100,
        outcome: "exited",
        exitCode: 42,
      }],
      "vm-101": [tags("other"), {
        vmid: 101,
        present: true,
        status: "stopped",
      }],
    }),
  });
  assert.match(result.markdown, /## vm-100/);
  assert.match(
    result.markdown,
    /\| exec42 \| guestExec \| failed \| exit 42 \|/,
  );
  assert.match(
    result.markdown,
    /\| look \| lookup \| succeeded \| running \| {2}\| backup \|/,
  );
  assert.doesNotMatch(
    result.markdown,
    /vm-101/,
    "another step's record is not this run's",
  );
  assert.equal(result.json.status, "failed");
  assert.deepEqual(result.json.rows.map((r) => r.observed), [
    "running",
    "exit 42",
  ]);
});

Deno.test("workflow report: steps of other models are left out", async () => {
  const other = {
    ...step("echo", "echo", "succeeded", ["x"]),
    modelType: "@other/thing",
  };
  const result = await report.execute({
    workflowName: "w",
    workflowRunId: RUN,
    workflowStatus: "succeeded",
    stepExecutions: [other],
    dataRepository: repository({}),
  });
  assert.match(result.markdown, /No record of this package was written/);
  assert.deepEqual(result.json.steps, []);
});
