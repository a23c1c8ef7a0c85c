/**
 * `ctx.createCelEnvironment()`, after swamp-club/swamp
 * `src/infrastructure/cel/cel_evaluator.ts` (`createExtensionCelEnvironment`): each call builds a
 * fresh cel-js `Environment` from the package and version swamp imports (`cel-js` in swamp's
 * deno.json: `npm:@marcbachmann/cel-js@7.6.1`) with swamp's options — variables not declared are
 * `dyn`, optional types on, mixed-type list and map literals allowed — and swamp's only
 * registrations: the `double`/`int` arithmetic operators in both orders (cel-js keeps CEL ints as
 * bigint, JSON numbers arrive as doubles). None of swamp's own namespaces (`data`, `file`, …).
 *
 * @module
 */
import { Environment } from "npm:@marcbachmann/cel-js@7.6.1";

/** The environment an extension gets (swamp's `MethodContext.createCelEnvironment`). */
export type CelEnvironment = Environment;

const ARITHMETIC: Record<string, (a: number, b: number) => number> = {
  "+": (a, b) => a + b,
  "-": (a, b) => a - b,
  "*": (a, b) => a * b,
  "/": (a, b) => a / b,
  "%": (a, b) => a % b,
};

/** A fresh environment as swamp builds one for an extension. */
export function createCelEnvironment(): CelEnvironment {
  const env = new Environment({
    unlistedVariablesAreDyn: true,
    enableOptionalTypes: true,
    homogeneousAggregateLiterals: false,
  });
  for (const [op, apply] of Object.entries(ARITHMETIC)) {
    env.registerOperator(
      `double ${op} int`,
      (a: number, b: bigint) => apply(a, Number(b)),
    );
    env.registerOperator(
      `int ${op} double`,
      (a: bigint, b: number) => apply(Number(a), b),
    );
  }
  return env;
}
