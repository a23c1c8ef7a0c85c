/**
 * Pre-flight checks, run as swamp-club/swamp
 * `src/domain/models/method_execution_service.ts` (`executeWorkflow`) runs
 * them:
 * - only for a MUTATING kind (anything but read/list: create, update,
 *   delete, action and unrecognised names), only when the model has checks;
 * - after global-argument validation, before the vault and deleted-resource
 *   fast-fails and before method arguments are parsed;
 * - selection: a definition-level `skip` always wins; `appliesTo` (when set)
 *   must list the method, even for a required check; a definition-level
 *   `require` makes the check immune to the CLI skip flags; otherwise
 *   `--skip-checks`, `--skip-check <name>` and `--skip-check-label <label>`
 *   remove it;
 * - "Running N pre-flight check(s)" is logged, then EVERY selected check runs
 *   in declaration order (no short-circuit); a `pass: false` contributes its
 *   `errors` (or "Check failed"), a throw its message, a result without a
 *   boolean `pass` "Check returned invalid result (expected { pass: boolean })";
 * - any failure fails the run with one message listing them all; the method
 *   body never runs and nothing is written.
 *
 * @module
 */

import type { CheckContext, CheckLike } from "./types.ts";
import type { LogCollector } from "./log_collector.ts";

/** Which checks to leave out or insist on. */
export interface CheckSelection {
  /** Definition-level `checks.require`. */
  require?: string[];
  /** Definition-level `checks.skip`. */
  skip?: string[];
  skipAll?: boolean;
  skipNames?: string[];
  skipLabels?: string[];
}

/** The checks swamp would run for `methodName`, in declaration order. */
export function selectChecks(
  checks: Record<string, CheckLike>,
  methodName: string,
  selection: CheckSelection,
): [string, CheckLike][] {
  const required = new Set(selection.require ?? []);
  const skipped = new Set(selection.skip ?? []);
  return Object.entries(checks).filter(([name, check]) => {
    if (skipped.has(name)) return false;
    if (check.appliesTo && !check.appliesTo.includes(methodName)) return false;
    if (required.has(name)) return true;
    if (selection.skipAll) return false;
    if (selection.skipNames?.includes(name)) return false;
    const labels = selection.skipLabels ?? [];
    return !check.labels?.some((label) => labels.includes(label));
  });
}

async function runOne(check: CheckLike, ctx: CheckContext): Promise<string[]> {
  try {
    const result: unknown = await check.execute(ctx);
    const pass = (result as { pass?: unknown } | null | undefined)?.pass;
    if (typeof pass !== "boolean") {
      return ["Check returned invalid result (expected { pass: boolean })"];
    }
    if (pass) return [];
    return (result as { errors?: string[] }).errors ?? ["Check failed"];
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
}

/**
 * Runs the selected checks; throws swamp's "Pre-flight checks failed …"
 * error when any of them fails.
 */
export async function runPreflight(
  selected: [string, CheckLike][],
  ctx: CheckContext,
  logs: LogCollector,
): Promise<void> {
  if (selected.length === 0) return;
  logs.push("info", `Running ${selected.length} pre-flight check(s)`);
  const lines: string[] = [];
  for (const [name, check] of selected) {
    const errors = await runOne(check, ctx);
    if (errors.length === 0) continue;
    lines.push(`  ${name}:`, ...errors.map((e) => `    - ${e}`));
  }
  if (lines.length > 0) {
    throw new Error(
      [
        `Pre-flight checks failed for "${ctx.definition.name}" → ${ctx.methodName}:`,
        ...lines,
      ].join("\n"),
    );
  }
}
