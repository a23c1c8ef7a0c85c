/**
 * A workflow's trigger as `swamp serve` fires it: the workflow's own `trigger`
 * overridden per workflow by `.swamp/serve.yaml`'s `triggers:` (swamp-club/swamp
 * `src/serve/serve_config.ts` `validateTriggerOverrideEntry`: an object with a
 * `schedule` croner parses and/or `inputs`, a mapping), read as
 * `swamp workflow trigger get` shows it (`src/cli/commands/workflow_trigger_get.ts`:
 * the override's schedule wins; inputs are the built-in ones with the
 * override's over them). A scheduled run passes those inputs as the caller's
 * (`src/libswamp/workflows/scheduled_execution.ts` `executeWorkflow`), layered over
 * `trigger.inputs` (workflow.ts: `runWorkflow(…, { triggered: true })`).
 *
 * @module
 */

import { parse } from "npm:yaml@2";
import { Cron } from "npm:croner@9";
import type { WorkflowData } from "./workflow_def.ts";

/** The schedule and inputs a trigger fires with. */
export interface EffectiveTrigger {
  schedule: string | null;
  inputs: Record<string, unknown>;
}

const isMapping = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The override for `name` in serve.yaml's text, checked as `swamp serve` checks it. */
function overrideOf(
  serveYaml: string | undefined,
  name: string,
): { schedule?: string; inputs?: Record<string, unknown> } | undefined {
  if (!serveYaml) return undefined;
  const triggers = (parse(serveYaml) as Record<string, unknown> | null)
    ?.triggers;
  if (triggers === undefined) return undefined;
  const path = ".swamp/serve.yaml";
  if (!isMapping(triggers)) {
    throw new Error(
      `Invalid triggers in ${path}: expected mapping of workflow name to trigger override`,
    );
  }
  const entry = triggers[name];
  if (entry === undefined) return undefined;
  const bad = (why: string) =>
    new Error(`Invalid trigger override for '${name}' in ${path}: ${why}`);
  if (!isMapping(entry)) {
    throw bad("expected object with optional 'schedule' and 'inputs'");
  }
  if (entry.schedule !== undefined) {
    if (typeof entry.schedule !== "string") {
      throw bad(`schedule must be a string, got ${typeof entry.schedule}`);
    }
    try {
      new Cron(entry.schedule).stop();
    } catch {
      throw bad(`invalid cron expression '${entry.schedule}'`);
    }
  }
  if (entry.inputs !== undefined && !isMapping(entry.inputs)) {
    throw bad("inputs must be a mapping");
  }
  return entry as { schedule?: string; inputs?: Record<string, unknown> };
}

/** The trigger `workflow` fires with under `swamp serve`, given serve.yaml's text (if any). */
export function effectiveTrigger(
  workflow: WorkflowData,
  serveYaml: string | undefined,
): EffectiveTrigger {
  const override = overrideOf(serveYaml, workflow.name);
  return {
    schedule: override?.schedule ?? workflow.trigger?.schedule ?? null,
    inputs: {
      ...(workflow.trigger?.inputs ?? {}),
      ...(override?.inputs ?? {}),
    },
  };
}
