/**
 * `@stateless/proxmox/workflow-observed`: after a workflow run, one table per guest of what this
 * package's records say was observed — each step's method, verdict, exit code or state reached,
 * pending config and locks — in markdown and JSON. A failed step's records are found by the run and
 * step tags swamp puts on every version (a failed method returns no data handles).
 *
 * @module
 */
import {
  type DataReader,
  markdownOf,
  type ObservedRow,
  readJson,
  rowOf,
} from "./observed.ts";

interface StepExecution {
  jobName: string;
  stepName: string;
  modelName: string;
  modelType: string;
  modelId: string;
  methodName: string;
  status: string;
  dataHandles: {
    name: string;
    version: number;
    specName?: string;
    kind?: string;
  }[];
}

interface WorkflowContext {
  workflowName: string;
  workflowRunId: string;
  workflowStatus: string;
  stepExecutions: StepExecution[];
  dataRepository: DataReader;
}

const OURS = /^@stateless\/proxmox\//;

/** The records one step wrote: its handles, else the versions tagged with this run and step. */
async function stepRows(
  ctx: WorkflowContext,
  step: StepExecution,
): Promise<ObservedRow[]> {
  const data = ctx.dataRepository;
  let written = step.dataHandles.filter((h) => h.kind !== "report")
    .map((h) => ({ name: h.name, version: h.version as number | undefined }));
  if (written.length === 0) {
    const all = await data.findAllForModel(step.modelType, step.modelId);
    written = all.filter((d) =>
      d.tags.type === "resource" &&
      d.tags.workflowRunId === ctx.workflowRunId &&
      d.tags.step === step.stepName
    ).map((d) => ({ name: d.name, version: d.version }));
  }
  const rows: ObservedRow[] = [];
  for (const w of written) {
    const record = await readJson(
      data,
      step.modelType,
      step.modelId,
      w.name,
      w.version,
    );
    if (record) {
      rows.push(
        rowOf(w.name, record, step.methodName, step.status, step.stepName),
      );
    }
  }
  return rows;
}

/** The workflow-scope report. */
export const report = {
  name: "@stateless/proxmox/workflow-observed",
  description:
    "One table per guest of what each step observed: method, verdict, exit code or state, pending config, locks",
  scope: "workflow" as const,
  labels: ["proxmox", "observed"],
  execute: async (ctx: WorkflowContext) => {
    const steps = ctx.stepExecutions.filter((s) => OURS.test(s.modelType));
    const rows = (await Promise.all(steps.map((s) => stepRows(ctx, s)))).flat();
    const failed = steps.filter((s) => s.status !== "succeeded");
    const summary = [
      `Workflow \`${ctx.workflowName}\` ${ctx.workflowStatus}: ${steps.length} step(s) of @stateless/proxmox ran, ${failed.length} failed${
        failed.length
          ? ` (${failed.map((s) => `${s.jobName}/${s.stepName}`).join(", ")})`
          : ""
      }.`,
    ];
    return {
      markdown: markdownOf("What was observed", summary, rows),
      json: {
        workflow: ctx.workflowName,
        workflowRunId: ctx.workflowRunId,
        status: ctx.workflowStatus,
        steps: steps.map((s) => ({
          job: s.jobName,
          step: s.stepName,
          model: s.modelName,
          method: s.methodName,
          verdict: s.status,
        })),
        rows,
      },
    };
  },
};
