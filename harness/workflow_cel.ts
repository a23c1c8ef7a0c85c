/**
 * swamp's CEL for workflows: the extension environment swamp builds (cel.ts,
 * `createExtensionCelEnvironment`) with the `data` namespace registered as a
 * type whose receiver methods read the repository (swamp-club/swamp
 * `src/infrastructure/cel/cel_evaluator.ts` `CelEvaluator`, `CelDataNamespace`:
 * `latest`, `findBySpec`). Results are awaited and ints coerced to numbers
 * (`evaluateAsync`, `coerceBigInts`); a failure is an error naming the
 * expression (`InvalidExpressionError`).
 *
 * `data.latest(model, name)` answers the latest version of `name` in the
 * definition `model`'s store as swamp's DataRecord (`name`, `version`,
 * `specName`, `attributes`, …), or null; `data.findBySpec(model, spec)` the
 * latest version of each of its records of that spec
 * (`src/domain/expressions/model_resolver.ts` `buildDataNamespace`).
 *
 * @module
 */

import { Optional } from "npm:@marcbachmann/cel-js@7.6.1";
import { createCelEnvironment } from "./cel.ts";

/** One record as `data.latest` answers it. */
export interface DataRecordView {
  name: string;
  version: number;
  modelName: string;
  specName: string;
  attributes: Record<string, unknown>;
  tags: Record<string, string>;
}

/** What the data namespace reads: a definition's records by name. */
export interface DataSource {
  latest(model: string, name: string): DataRecordView | null;
  bySpec(model: string, spec: string): DataRecordView[];
}

/** The `data` namespace object (a registered type, so cel-js calls its methods). */
export class CelDataNamespace {
  constructor(readonly source: DataSource) {}
}

/** An expression that could not be evaluated (swamp's message: `Invalid expression: <why>`). */
export class InvalidExpressionError extends Error {
  constructor(message: string, readonly expression: string) {
    super(`Invalid expression: ${message}`);
  }
}

function environment() {
  const env = createCelEnvironment();
  env.registerType("CelDataNamespace", CelDataNamespace);
  env.registerFunction(
    "CelDataNamespace.latest(string, string): dyn",
    (ns: CelDataNamespace, model: string, name: string) =>
      ns.source.latest(model, name),
  );
  env.registerFunction(
    "CelDataNamespace.findBySpec(string, string): dyn",
    (ns: CelDataNamespace, model: string, spec: string) =>
      ns.source.bySpec(model, spec),
  );
  return env;
}

const ENV = environment();

/** cel-js's ints as numbers where they fit (swamp's `coerceBigInts`). */
export function coerceBigInts(value: unknown): unknown {
  if (typeof value === "bigint") {
    return value >= Number.MIN_SAFE_INTEGER && value <= Number.MAX_SAFE_INTEGER
      ? Number(value)
      : value;
  }
  if (Array.isArray(value)) return value.map(coerceBigInts);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, coerceBigInts(v)]),
    );
  }
  return value;
}

/** Evaluates `expression` against `context` as swamp's `CelEvaluator.evaluateAsync` does. */
export async function evaluateCel(
  expression: string,
  context: Record<string, unknown>,
): Promise<unknown> {
  try {
    let result = await ENV.evaluate(expression, context);
    if (result instanceof Optional) {
      result = result.hasValue() ? result.value() : null;
    }
    return coerceBigInts(result);
  } catch (error) {
    throw new InvalidExpressionError(
      error instanceof Error ? error.message : String(error),
      expression,
    );
  }
}
