/**
 * `swamp workflow run` against the harness's definitions: the order and rules of
 * swamp-club/swamp `src/domain/workflows/execution_service.ts`
 * (`WorkflowExecutionService.run`, `runJob`, `runStep`) and
 * `src/libswamp/workflows/run.ts`, over {@link SwampRepo}s named like the
 * repository's definitions.
 *
 * 1. Inputs coerced, defaulted, validated (workflow_inputs.ts); a trigger-fired
 *    run layers its inputs over `trigger.inputs` first.
 * 2. Every `${{ }}` is evaluated once, strictly, before any job runs
 *    (`WorkflowExpressionEvaluator`), except what only a step can know: `self.*`,
 *    `forEach.in`, `trigger.inputs`, guards, and task inputs or assert messages
 *    that call `data.*` — those are evaluated when the step runs. A whole-string
 *    expression keeps its value's type; one inside text is stringified
 *    (`replaceExpressions`).
 * 3. Jobs run level by level of their dependency graph (`TopologicalSortService`:
 *    by weight, then name); a job whose `dependsOn` conditions do not hold is
 *    skipped with every step (`shouldJobRun`, `JobRun.skip`).
 * 4. In a job, forEach steps are expanded (`ForEachExpansionService`: one step
 *    per item, named by the template with `self.<item>`; dependencies mapped to
 *    the expansions), then steps run level by level; once a level has a failed
 *    step (not `allowFailure`) no later level starts — its steps stay
 *    `pending` — and the job fails. A step's `dependsOn` conditions are checked
 *    (not for an expanded step), then its guard (truthy: skipped).
 * 5. A model-method step runs its definition's method (`Model not found: <name>`
 *    when there is none) under a per-definition lock (`stepLockHook`), so steps
 *    on one definition run one at a time; an assert step evaluates `expr` and
 *    interpolates its message.
 * 6. The run fails when a job neither succeeded nor was skipped
 *    (`WorkflowRun.complete`).
 *
 * @module
 */

import type { SwampRepo } from "./swamp.ts";
import {
  CelDataNamespace,
  type DataRecordView,
  type DataSource,
  evaluateCel,
} from "./workflow_cel.ts";
import type {
  Condition,
  JobData,
  StepData,
  TaskData,
  WorkflowData,
} from "./workflow_def.ts";
import { parseWorkflow } from "./workflow_def.ts";
import {
  deepMerge,
  type InputsSchema,
  settleInputs,
} from "./workflow_inputs.ts";

export type RunStatus = "pending" | "succeeded" | "failed" | "skipped";

/** One step as `swamp workflow run --json` shows it. */
export interface StepRunView {
  name: string;
  status: RunStatus;
  error?: string;
  allowedFailure?: boolean;
  assertResult?: { passed: boolean; message: string; expr: string };
  /** The records the step's method wrote. */
  dataArtifacts?: { name: string; version: number }[];
}

/** One job as `swamp workflow run --json` shows it. */
export interface JobRunView {
  name: string;
  status: RunStatus;
  steps: StepRunView[];
}

/** A finished run as `swamp workflow run --json` shows it. */
export interface WorkflowRunView {
  workflowName: string;
  inputs: Record<string, unknown>;
  status: "succeeded" | "failed";
  jobs: JobRunView[];
}

/** Options of {@link runWorkflow}. */
export interface WorkflowRunOptions {
  /** `--input` values (strings are coerced as the CLI's are). */
  inputs?: Record<string, unknown>;
  /**
   * A trigger-fired run (a schedule firing): the inputs layer over the workflow's `trigger.inputs`
   * (serve.yaml's override inputs are passed here, as `swamp serve` passes them).
   */
  triggered?: boolean;
}

const EXPR = /\$\{\{\s*(.+?)\s*\}\}/gs;
const WHOLE = /^(\$\{\{\s*.+?\s*\}\})\s*$/s;
const STEP_TIME = /\b(self\??\.|run\.|workflowRunId\b|vault\.|env\.)/;
const DATA_CALL =
  /data\.(version|latest|listVersions|findBySpec|query|findByTag)\s*\(|file\.contents\s*\(|model\.[a-zA-Z0-9_-]+\.(resource|file|execution)/;

/** The data namespace over the definitions: latest versions by name, or by spec. */
function dataSource(repos: ReadonlyMap<string, SwampRepo>): DataSource {
  const view = (
    model: string,
    repo: SwampRepo,
    name: string,
  ): DataRecordView | null => {
    const last = repo.versions(name).at(-1);
    if (!last) return null;
    return {
      name,
      version: last.version,
      modelName: model,
      specName: last.spec,
      attributes: (repo.latest(name) ?? {}) as Record<string, unknown>,
      tags: { modelName: model, specName: last.spec },
    };
  };
  return {
    latest: (model, name) => {
      const repo = repos.get(model);
      return repo ? view(model, repo, name) : null;
    },
    bySpec: (model, spec) => {
      const repo = repos.get(model);
      if (!repo) return [];
      return repo.instances().map((n) => view(model, repo, n))
        .filter((r): r is DataRecordView => r?.specName === spec);
    },
  };
}

/** Evaluates every `${{ }}` in `value` that `wanted(expression, path)` admits. */
async function resolve(
  value: unknown,
  path: string,
  context: Record<string, unknown>,
  wanted: (cel: string, path: string) => boolean,
): Promise<unknown> {
  if (typeof value === "string") {
    if (WHOLE.test(value)) {
      // swamp looks the whole string up as one expression: one made of several (`${{ a }}-${{ b }}`)
      // is not found and stays as written, none of its parts replaced (`replaceExpressions`).
      const parts = [...value.matchAll(EXPR)];
      if (parts.length !== 1) return value;
      const cel = parts[0][1].trim();
      return wanted(cel, path) ? await evaluateCel(cel, context) : value;
    }
    let out = value;
    for (const [raw, cel] of value.matchAll(EXPR)) {
      if (!wanted(cel.trim(), path)) continue;
      const v = await evaluateCel(cel.trim(), context);
      const text = v === null || v === undefined
        ? ""
        : typeof v === "object"
        ? JSON.stringify(v, null, 2)
        : String(v);
      out = out.split(raw).join(text);
    }
    return out;
  }
  if (Array.isArray(value)) {
    const out = [];
    for (const [i, v] of value.entries()) {
      out.push(await resolve(v, `${path}[${i}]`, context, wanted));
    }
    return out;
  }
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = await resolve(v, path ? `${path}.${k}` : k, context, wanted);
    }
    return out;
  }
  return value;
}

/**
 * An expanded step's name: each `${{ }}` of the template evaluated in place; one that fails stays
 * as written and the item's index or key is appended (`resolveForEachStepName`).
 */
async function forEachName(
  template: string,
  context: Record<string, unknown>,
  suffix: string,
): Promise<string> {
  let failed = false;
  let name = template;
  for (const [raw, cel] of template.matchAll(EXPR)) {
    try {
      name = name.replace(raw, String(await evaluateCel(cel.trim(), context)));
    } catch {
      failed = true;
    }
  }
  return failed ? `${name}-${suffix}` : name;
}

/** What the workflow-level evaluation leaves for run time (`WorkflowExpressionEvaluator`). */
function atStart() {
  return (cel: string, path: string) => {
    if (STEP_TIME.test(cel)) return false;
    if (path.endsWith(".forEach.in")) return false;
    if (path === "trigger.inputs" || path.startsWith("trigger.inputs")) {
      return false;
    }
    if (path.endsWith(".guard")) return false;
    const taskInputs = /\.task\.(inputs|globalArgs)(\.|\[|$)/.test(path);
    return !((taskInputs || path.endsWith(".task.message")) &&
      DATA_CALL.test(cel));
  };
}

/** Levels of a dependency graph: by weight, then name, in each (`TopologicalSortService`). */
export function levels(
  nodes: { name: string; weight: number; deps: string[] }[],
): string[][] {
  const names = new Set(nodes.map((n) => n.name));
  const done = new Set<string>();
  const out: string[][] = [];
  while (done.size < nodes.length) {
    const ready = nodes.filter((n) =>
      !done.has(n.name) &&
      n.deps.every((d) => done.has(d) || !names.has(d))
    ).sort((a, b) => a.weight - b.weight || a.name.localeCompare(b.name));
    if (ready.length === 0) {
      throw new Error(
        `Cyclic dependency detected: ${
          nodes.filter((n) => !done.has(n.name)).map((n) => n.name).join(
            " -> ",
          )
        }`,
      );
    }
    for (const n of ready) done.add(n.name);
    out.push(ready.map((n) => n.name));
  }
  return out;
}

function holds(c: Condition, status: RunStatus | undefined): boolean {
  switch (c.type) {
    case "always":
      return true;
    case "succeeded":
    case "failed":
    case "skipped":
      return status === c.type;
    case "completed":
      return status === "succeeded" || status === "failed";
    case "and":
      return c.conditions.every((x) => holds(x, status));
    case "or":
      return c.conditions.some((x) => holds(x, status));
    case "not":
      return !holds(c.condition, status);
  }
}

interface Expanded {
  step: StepData;
  name: string;
  self?: Record<string, unknown>;
}

/** A workflow run over `repos` (definition name → repository). */
class Run {
  readonly #locks = new Map<string, Promise<unknown>>();
  readonly #data: CelDataNamespace;
  readonly jobs = new Map<string, JobRunView>();

  constructor(
    readonly wf: WorkflowData,
    readonly repos: ReadonlyMap<string, SwampRepo>,
    readonly inputs: Record<string, unknown>,
    readonly startedAt = new Date().toISOString(),
  ) {
    this.#data = new CelDataNamespace(dataSource(repos));
    for (const job of wf.jobs) {
      this.jobs.set(job.name, {
        name: job.name,
        status: "pending",
        steps: job.steps.map((s) => ({ name: s.name, status: "pending" })),
      });
    }
  }

  context(self?: Record<string, unknown>): Record<string, unknown> {
    return {
      inputs: this.inputs,
      data: this.#data,
      model: {},
      self: self ?? {},
      run: { workflowName: this.wf.name, startedAt: this.startedAt },
    };
  }

  async runJob(job: JobData): Promise<void> {
    const view = this.jobs.get(job.name)!;
    const run = job.dependsOn.every((d) =>
      holds(d.condition, this.jobs.get(d.job)?.status)
    );
    if (!run) {
      view.status = "skipped";
      for (const s of view.steps) s.status = "skipped";
      return;
    }
    const expanded = await this.expand(job);
    view.steps = [...expanded.values()].flat().map((e) => ({
      name: e.name,
      status: "pending",
    }));
    const nodes = [...expanded.entries()].flatMap(([template, list]) =>
      list.map((e) => ({
        name: e.name,
        weight: e.step.weight,
        deps: e.step.dependsOn.flatMap((d) =>
          expanded.get(d.step)?.map((x) => x.name) ?? [d.step]
        ),
        template,
      }))
    );
    const byName = new Map(
      [...expanded.values()].flat().map((e) => [e.name, e]),
    );
    let failed = false;
    for (const level of levels(nodes)) {
      await Promise.all(level.map((n) => this.runStep(view, byName.get(n)!)));
      failed = view.steps.some((s) =>
        level.includes(s.name) && s.status === "failed" && !s.allowedFailure
      );
      if (failed) break;
    }
    view.status = failed ? "failed" : "succeeded";
  }

  async expand(job: JobData): Promise<Map<string, Expanded[]>> {
    const out = new Map<string, Expanded[]>();
    for (const step of job.steps) {
      if (!step.forEach) {
        out.set(step.name, [{ step, name: step.name }]);
        continue;
      }
      const cel = step.forEach.in.match(WHOLE)?.[1].slice(3, -2).trim();
      if (!cel) {
        throw new Error(
          `Invalid forEach.in expression: ${step.forEach.in}. Must be in \${{ }} format.`,
        );
      }
      const items = await evaluateCel(cel, this.context());
      const entries: [string, unknown][] = Array.isArray(items)
        ? items.map((v, i) => [String(i), v])
        : items && typeof items === "object"
        ? Object.entries(items).map(([key, value]) => [key, { key, value }])
        : (() => {
          throw new Error(
            `forEach.in must evaluate to an array or object, got: ${typeof items}`,
          );
        })();
      const list: Expanded[] = [];
      for (const [suffix, item] of entries) {
        const self = { [step.forEach.item]: item };
        const named = /\$\{\{.+?\}\}/s.test(step.name);
        const fallback = Array.isArray(items) && !named &&
            (item === null || typeof item !== "object")
          ? String(item)
          : suffix;
        const name = named
          ? await forEachName(step.name, this.context(self), suffix)
          : `${step.name}-${fallback}`;
        list.push({ step, name, self });
      }
      out.set(step.name, list);
    }
    return out;
  }

  async runStep(job: JobRunView, e: Expanded): Promise<void> {
    const view = job.steps.find((s) => s.name === e.name)!;
    const status = (name: string) =>
      job.steps.find((s) => s.name === name)?.status;
    if (
      !e.self &&
      !e.step.dependsOn.every((d) => holds(d.condition, status(d.step)))
    ) {
      view.status = "skipped";
      return;
    }
    const ctx = this.context(e.self);
    try {
      if (e.step.guard) {
        const guard = e.step.guard.match(WHOLE)?.[1].slice(3, -2).trim();
        if (!guard) {
          throw new Error(
            `Step "${e.name}" guard must be a \${{ }} expression, got: ${e.step.guard}`,
          );
        }
        if (await evaluateCel(guard, ctx)) {
          view.status = "skipped";
          return;
        }
      }
      // A model method's task is resolved now (self.*, data.*); an assert's message is
      // interpolated by the assert itself (runStep's assert branch).
      const task = e.step.task.type === "assert"
        ? e.step.task
        : await resolve(e.step.task, "task", ctx, () => true) as TaskData;
      await this.#task(view, task, ctx);
    } catch (error) {
      view.status = "failed";
      view.error = error instanceof Error ? error.message : String(error);
    }
    if (view.status === "failed" && e.step.allowFailure) {
      view.allowedFailure = true;
    }
  }

  async #task(
    view: StepRunView,
    task: TaskData,
    ctx: Record<string, unknown>,
  ): Promise<void> {
    if (task.type === "assert") {
      const passed = !!(await evaluateCel(task.expr, ctx));
      let message = task.message;
      for (const [raw, cel] of task.message.matchAll(EXPR)) {
        try {
          const v = await evaluateCel(cel.trim(), ctx);
          message = message.replace(raw, () => String(v ?? ""));
        } catch {
          // left as written, as swamp leaves it
        }
      }
      view.assertResult = { passed, message, expr: task.expr };
      view.status = passed ? "succeeded" : "failed";
      if (!passed) view.error = message;
      return;
    }
    if (task.type !== "model_method" || !task.modelIdOrName) {
      throw new Error(`the harness runs model_method and assert steps only`);
    }
    const name = task.modelIdOrName;
    const repo = this.repos.get(name);
    if (!repo) throw new Error(`Model not found: ${name}`);
    const inputs = (task.inputs ?? {}) as Record<string, unknown>;
    const result = await this.#locked(
      name,
      () => repo.run(task.methodName, inputs),
    );
    view.dataArtifacts = result.dataHandles.map((h) => ({
      name: h.name,
      version: h.version,
    }));
    view.status = result.status;
    if (result.status === "failed") view.error = result.error;
  }

  /** One step at a time per definition (`stepLockHook(modelType, modelId)`). */
  #locked<T>(definition: string, body: () => Promise<T>): Promise<T> {
    const before = this.#locks.get(definition) ?? Promise.resolve();
    const mine = before.then(body, body);
    this.#locks.set(definition, mine.catch(() => {}));
    return mine;
  }
}

/**
 * Runs `workflow` (its YAML text, or parsed) over `repos` like `swamp workflow run --json`; throws
 * for what stops a run before any job (invalid inputs, an expression that cannot be evaluated).
 */
export async function runWorkflow(
  repos: ReadonlyMap<string, SwampRepo>,
  workflow: string | WorkflowData,
  options: WorkflowRunOptions = {},
): Promise<WorkflowRunView> {
  const raw = typeof workflow === "string" ? parseWorkflow(workflow) : workflow;
  const given = options.triggered
    ? deepMerge(raw.trigger?.inputs ?? {}, options.inputs ?? {})
    : options.inputs ?? {};
  const inputs = settleInputs(given, raw.inputs as InputsSchema | undefined);
  const probe = new Run(raw, repos, inputs);
  const wf = await resolve(
    raw,
    "",
    probe.context(),
    atStart(),
  ) as WorkflowData;
  const run = new Run(wf, repos, inputs);
  const jobs = new Map(wf.jobs.map((j) => [j.name, j]));
  const order = levels(
    wf.jobs.map((j) => ({
      name: j.name,
      weight: j.weight,
      deps: j.dependsOn.map((d) => d.job),
    })),
  );
  for (const level of order) {
    await Promise.all(level.map((name) => run.runJob(jobs.get(name)!)));
  }
  const views = wf.jobs.map((j) => run.jobs.get(j.name)!);
  const ok = views.every((j) =>
    j.status === "succeeded" || j.status === "skipped"
  );
  return {
    workflowName: wf.name,
    inputs,
    status: ok ? "succeeded" : "failed",
    jobs: views,
  };
}

/** A step's status by name, across jobs (tests read runs this way). */
export function stepStatuses(run: WorkflowRunView): Record<string, RunStatus> {
  return Object.fromEntries(
    run.jobs.flatMap((j) => j.steps).map((s) => [s.name, s.status]),
  );
}
