/**
 * A workflow file as swamp reads it: the YAML parsed and held to swamp's schema
 * (swamp-club/swamp `src/domain/workflows/workflow.ts` `WorkflowSchema`,
 * `job.ts`, `step.ts`, `step_task.ts`, `trigger_condition.ts`; inputs as
 * `src/domain/definitions/definition.ts` `InputsSchemaSchema`), unknown keys
 * refused at the workflow, job and step levels (`unknown_keys.ts`), a schedule
 * that croner cannot parse refused ("Invalid cron expression"), and the checks
 * `swamp workflow validate` adds (`validation_service.ts`: unique job and step
 * names, dependency references that exist, no cycles, an assert `expr` not
 * wrapped in `${{ }}`).
 *
 * @module
 */

import { parse } from "npm:yaml@2";
import { z } from "npm:zod@4";
import { Cron } from "npm:croner@9";

/** A trigger condition (`trigger_condition.ts`). */
export type Condition =
  | { type: "always" | "succeeded" | "failed" | "completed" | "skipped" }
  | { type: "and" | "or"; conditions: Condition[] }
  | { type: "not"; condition: Condition };

const ConditionSchema: z.ZodType<Condition> = z.lazy(() =>
  z.discriminatedUnion("type", [
    z.object({ type: z.literal("always") }),
    z.object({ type: z.literal("succeeded") }),
    z.object({ type: z.literal("failed") }),
    z.object({ type: z.literal("completed") }),
    z.object({ type: z.literal("skipped") }),
    z.object({
      type: z.literal("and"),
      conditions: z.array(ConditionSchema).min(2),
    }),
    z.object({
      type: z.literal("or"),
      conditions: z.array(ConditionSchema).min(2),
    }),
    z.object({ type: z.literal("not"), condition: ConditionSchema }),
  ])
);

const EXPRESSION = /^\$\{\{\s*.+?\s*\}\}\s*$/s;
const recordOrExpression = z.union([
  z.record(z.string(), z.unknown()),
  z.string().regex(EXPRESSION),
]).optional();

const TaskSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("model_method"),
    modelIdOrName: z.string().min(1).optional(),
    modelType: z.string().min(1).optional(),
    modelName: z.string().min(1).optional(),
    methodName: z.string().min(1),
    inputs: recordOrExpression,
    globalArgs: recordOrExpression,
  }),
  z.object({
    type: z.literal("workflow"),
    workflowIdOrName: z.string().min(1),
    inputs: recordOrExpression,
  }),
  z.object({
    type: z.literal("manual_approval"),
    prompt: z.string().min(1),
    timeout: z.number().positive().optional(),
  }),
  z.object({
    type: z.literal("assert"),
    expr: z.string().min(1),
    message: z.string().min(1),
    severity: z.enum(["low", "medium", "high"]).default("high"),
  }),
]);

const placement = {
  target: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  platform: z.string().optional(),
  queueTimeout: z.number().optional(),
};

const StepSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  task: TaskSchema,
  forEach: z.object({ item: z.string().min(1), in: z.string().min(1) })
    .optional(),
  dependsOn: z.array(
    z.object({ step: z.string().min(1), condition: ConditionSchema }),
  ).default([]),
  weight: z.number().default(0),
  concurrency: z.number().int().nonnegative().optional(),
  dataOutputOverrides: z.array(z.unknown()).optional(),
  allowFailure: z.boolean().default(false),
  guard: z.string().optional(),
  ...placement,
});

const StepKeys = [
  "name",
  "description",
  "task",
  "forEach",
  "dependsOn",
  "weight",
  "concurrency",
  "dataOutputOverrides",
  "allowFailure",
  "guard",
  ...Object.keys(placement),
];
const JobKeys = [
  "name",
  "description",
  "steps",
  "dependsOn",
  "weight",
  "concurrency",
  "affinity",
  ...Object.keys(placement),
];

const JobSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  steps: z.array(StepSchema).min(1),
  dependsOn: z.array(
    z.object({ job: z.string().min(1), condition: ConditionSchema }),
  ).default([]),
  weight: z.number().default(0),
  concurrency: z.number().int().nonnegative().optional(),
  affinity: z.boolean().optional(),
  ...placement,
});

const NAME = /^[a-z0-9][a-z0-9-]*$/;
const SCOPED = /^@[a-z0-9_-]+\/[a-z0-9_-]+(\/[a-z0-9_-]+)*$/;

const WorkflowShape = {
  id: z.string().uuid(),
  name: z.string().min(1).refine(
    (n) => n.includes("/") ? SCOPED.test(n) : NAME.test(n) && n.length <= 64,
    "Workflow name must be lowercase alphanumeric with hyphens, or a scoped @collective/name",
  ),
  description: z.string().optional(),
  trigger: z.object({
    schedule: z.string().refine((expr) => {
      try {
        new Cron(expr).stop();
        return true;
      } catch {
        return false;
      }
    }, "Invalid cron expression").optional(),
    inputs: z.record(z.string(), z.unknown()).optional(),
  }).optional(),
  tags: z.record(z.string(), z.string()).default({}),
  inputs: z.looseObject({
    type: z.literal("object").optional(),
    properties: z.record(z.string(), z.record(z.string(), z.unknown()))
      .optional(),
    required: z.array(z.string()).optional(),
    additionalProperties: z.unknown().optional(),
  }).optional(),
  jobs: z.array(JobSchema).min(1),
  version: z.number().int().positive().default(1),
  concurrency: z.number().int().nonnegative().optional(),
  reports: z.unknown().optional(),
  affinity: z.boolean().optional(),
  ...placement,
};
const WorkflowSchema = z.looseObject(WorkflowShape);

/** A parsed workflow (defaults applied). */
export type WorkflowData = z.infer<typeof WorkflowSchema>;
export type JobData = WorkflowData["jobs"][number];
export type StepData = JobData["steps"][number];
export type TaskData = StepData["task"];

/** Keys no schema level knows (swamp's `rejectUnknownKeys`: Zod would drop them silently). */
function unknownKeys(data: WorkflowData, raw: Record<string, unknown>) {
  const problems: string[] = [];
  for (const key of Object.keys(raw)) {
    if (!(key in WorkflowShape)) problems.push(`unknown workflow key '${key}'`);
  }
  const rawJobs = (raw.jobs ?? []) as Record<string, unknown>[];
  rawJobs.forEach((job, j) => {
    for (const key of Object.keys(job)) {
      if (!JobKeys.includes(key)) {
        problems.push(`job '${data.jobs[j]?.name}': unknown key '${key}'`);
      }
    }
    ((job.steps ?? []) as Record<string, unknown>[]).forEach((step) => {
      for (const key of Object.keys(step)) {
        if (!StepKeys.includes(key)) {
          problems.push(`step '${step.name}': unknown key '${key}'`);
        }
      }
    });
  });
  return problems;
}

/** The problems `swamp workflow validate` reports beyond the schema, one line each. */
export function validationProblems(wf: WorkflowData): string[] {
  const problems: string[] = [];
  const dupes = (names: string[]) =>
    names.filter((n, i) => names.indexOf(n) !== i);
  const jobNames = wf.jobs.map((j) => j.name);
  if (dupes(jobNames).length) {
    problems.push(`Duplicate job names: ${dupes(jobNames).join(", ")}`);
  }
  for (const job of wf.jobs) {
    for (const dep of job.dependsOn) {
      if (!jobNames.includes(dep.job)) {
        problems.push(`Invalid job references: ${job.name} -> ${dep.job}`);
      }
    }
    const stepNames = job.steps.map((s) => s.name);
    if (dupes(stepNames).length) {
      problems.push(`Duplicate step names: ${dupes(stepNames).join(", ")}`);
    }
    for (const step of job.steps) {
      for (const dep of step.dependsOn) {
        if (!stepNames.includes(dep.step)) {
          problems.push(`Invalid step references: ${step.name} -> ${dep.step}`);
        }
      }
      if (step.task.type === "assert" && EXPRESSION.test(step.task.expr)) {
        problems.push(
          `Assert expr in job '${job.name}' step '${step.name}': remove the \${{ }} wrapper`,
        );
      }
    }
  }
  return problems;
}

/** Parses and checks a workflow file's text; throws naming every problem. */
export function parseWorkflow(text: string): WorkflowData {
  const raw = parse(text) as Record<string, unknown>;
  const parsed = WorkflowSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(
      `Invalid workflow: ${
        parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`)
          .join("; ")
      }`,
    );
  }
  const problems = [
    ...unknownKeys(parsed.data, raw),
    ...validationProblems(parsed.data),
  ];
  if (problems.length) {
    throw new Error(`Invalid workflow: ${problems.join("; ")}`);
  }
  return parsed.data;
}
