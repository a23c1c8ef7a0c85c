/**
 * Captures `console.*` output while a method runs, as swamp's
 * `withConsoleGuard` does (swamp-club/swamp
 * `src/domain/models/console_guard.ts`): log/info/debug/warn/error are
 * redirected into a line list (strings as-is, numbers via String, anything
 * else as JSON, arguments joined by spaces) and restored afterwards, so an
 * extension's stray prints never reach swamp's own stdout. Like swamp's guard
 * it is shared by runs that overlap (parallel steps in one process): the first
 * one in installs the redirect, a line goes to every run active when it is
 * printed, and the last one out restores the console.
 *
 * @module
 */

const CAPTURED = ["log", "info", "debug", "warn", "error"] as const;

function formatArg(arg: unknown): string {
  if (typeof arg === "string") return arg;
  if (typeof arg === "number") return String(arg);
  try {
    return JSON.stringify(arg) ?? Deno.inspect(arg);
  } catch {
    return Deno.inspect(arg);
  }
}

const REAL_CONSOLE = CAPTURED.map((name) => [name, console[name]] as const);
/** The line lists of the runs in progress. */
const active = new Set<string[]>();

/** Runs `fn` with console output appended to `lines` instead of printed. */
export async function withConsoleCapture<T>(
  fn: () => Promise<T>,
  lines: string[],
): Promise<T> {
  if (active.size === 0) {
    for (const name of CAPTURED) {
      console[name] = (...args: unknown[]) => {
        const line = args.map(formatArg).join(" ");
        for (const list of active) list.push(line);
      };
    }
  }
  active.add(lines);
  try {
    return await fn();
  } finally {
    active.delete(lines);
    if (active.size === 0) {
      for (const [name, original] of REAL_CONSOLE) console[name] = original;
    }
  }
}
