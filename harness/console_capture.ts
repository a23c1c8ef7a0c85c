/**
 * Captures `console.*` output while a method runs, as swamp's
 * `withConsoleGuard` does (swamp-club/swamp
 * `src/domain/models/console_guard.ts`): log/info/debug/warn/error are
 * redirected into a line list (strings as-is, numbers via String, anything
 * else as JSON, arguments joined by spaces) and restored afterwards, so an
 * extension's stray prints never reach swamp's own stdout.
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

/** Runs `fn` with console output appended to `lines` instead of printed. */
export async function withConsoleCapture<T>(
  fn: () => Promise<T>,
  lines: string[],
): Promise<T> {
  const saved = CAPTURED.map((name) => [name, console[name]] as const);
  for (const name of CAPTURED) {
    console[name] = (...args: unknown[]) => {
      lines.push(args.map(formatArg).join(" "));
    };
  }
  try {
    return await fn();
  } finally {
    for (const [name, original] of saved) console[name] = original;
  }
}
