/**
 * A compact, `swamp model method run`-like rendering of a {@link RunResult}.
 *
 * @module
 */

import type { RunResult } from "./types.ts";

/**
 * Renders a run: a `Completed  <method> on <name> succeeded|failed in Xms`
 * line, the error (with its code) when it failed, then one line per record
 * written (`<instance> v<N> <spec>`, tombstones marked `(deleted)`).
 */
export function formatRun(r: RunResult): string {
  const ms = Math.round(r.durationMs);
  const lines = [
    `Completed  ${r.method} on ${r.modelName} ${r.status} in ${ms}ms`,
  ];
  if (r.status === "failed") {
    const [first, ...rest] = (r.error ?? "").split("\n");
    lines.push(`  error [${r.errorCode}]: ${first}`);
    for (const line of rest) lines.push(`    ${line}`);
  }
  for (const w of r.written) {
    lines.push(
      `  ${w.instance} v${w.version} ${w.spec}${
        w.tombstone ? " (deleted)" : ""
      }`,
    );
  }
  return lines.join("\n");
}
