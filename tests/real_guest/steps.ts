/**
 * What every real-guest file shares: its tests are steps in order on VMs that span them (the
 * sanitizers would count a VM as a leak of every single test), each method run is guarded against
 * hanging, and times are printed as `real guest: …` lines (test.sh shows them with the layer).
 *
 * @module
 */
import type { RunResult } from "../../harness/types.ts";
import type { Env } from "../e2e/env.ts";

/** Prints `line` as a `real guest: …` line. */
export function note(line: string): void {
  console.log(`real guest: ${line}`);
}

/** A test sharing the file's VMs (steps run in order; see the module comment for the sanitizers). */
export function step(name: string, fn: () => Promise<void>): void {
  Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn });
}

/** Seconds since `t0` (a `performance.now()`), one decimal. */
export function secondsSince(t0: number): string {
  return ((performance.now() - t0) / 1000).toFixed(1);
}

/**
 * Runs `method` on `env`; a run that does not come back within `guardMs` fails the test instead
 * of hanging it. With `label`, notes `<label>: <method> <args> <status> in <s> s`.
 */
export async function runGuarded(
  env: Env,
  method: string,
  args: Record<string, unknown>,
  guardMs: number,
  label?: string,
): Promise<RunResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${method} did not return within ${guardMs} ms`)),
      guardMs,
    );
  });
  const t0 = performance.now();
  try {
    const r = await Promise.race([env.run(method, args), guard]);
    if (label) {
      note(
        `${label}: ${method} ${JSON.stringify(args)} ${r.status} in ${
          secondsSince(t0)
        } s`,
      );
    }
    return r;
  } finally {
    clearTimeout(timer);
  }
}
