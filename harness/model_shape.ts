/**
 * Load-time validation of a model object, so a model swamp would refuse to
 * register is refused here too.
 *
 * Sources: resource specs must carry a valid `lifetime` and
 * `garbageCollection` (`ResourceOutputSpecSchema` in swamp-club/swamp
 * `src/domain/models/model.ts`, `LifetimeSchema`/`GarbageCollectionSchema` in
 * `src/domain/data/data_metadata.ts`); the version is CalVer
 * `YYYY.MM.DD.MICRO` naming a real date (`calver.ts`); spec keys must not
 * contain `-` (stated in the project's swamp contract doc); an upgrade chain
 * has a CalVer `toVersion`, a `description` and an `upgradeAttributes`
 * function per step (`UserUpgradeSchema` in
 * `src/domain/extensions/model_kind_adapter.ts`), steps in strictly
 * increasing order (`ModelRegistry.register` in `model.ts`), the last one at
 * the model's `version` (both). The loader's own wording was not always
 * found, so the messages below are the harness's.
 *
 * @module
 */

import { compareCalVer, isCalVer } from "./calver.ts";
import type { ModelLike } from "./types.ts";

const DURATION = /^\d+(mo|y|h|m|d|w)$/;
const LIFETIMES = ["ephemeral", "infinite", "job", "workflow"];

function lifetimeProblem(value: unknown): string | null {
  if (
    typeof value === "string" &&
    (DURATION.test(value) || LIFETIMES.includes(value))
  ) {
    return null;
  }
  return `lifetime must be a duration like '1h' or one of ${
    LIFETIMES.join(", ")
  }`;
}

function gcProblem(value: unknown): string | null {
  if (typeof value === "number" && Number.isInteger(value) && value > 0) {
    return null;
  }
  if (
    typeof value === "string" && DURATION.test(value) && parseInt(value) > 0
  ) {
    return null;
  }
  return "garbageCollection must be a positive integer or a non-zero duration";
}

function isZodSchema(value: unknown): boolean {
  return typeof (value as { safeParse?: unknown } | null)?.safeParse ===
    "function";
}

/** Every reason swamp would not load the model (empty when it is fine). */
export function modelProblems(model: ModelLike): string[] {
  const problems: string[] = [];
  if (typeof model.type !== "string" || model.type.trim() === "") {
    problems.push("type must be a non-empty string");
  }
  if (!isCalVer(model.version)) {
    problems.push(`version '${model.version}' is not CalVer YYYY.MM.DD.MICRO`);
  }
  problems.push(...upgradeProblems(model));
  if (
    model.globalArguments !== undefined && !isZodSchema(model.globalArguments)
  ) {
    problems.push("globalArguments must be a zod schema");
  }
  for (const [key, spec] of Object.entries(model.resources ?? {})) {
    if (key.includes("-")) problems.push(`resource spec '${key}' contains '-'`);
    if (!isZodSchema(spec.schema)) {
      problems.push(`resources.${key}.schema must be a zod schema`);
    }
    const lifetime = lifetimeProblem(spec.lifetime);
    if (lifetime) problems.push(`resources.${key}: ${lifetime}`);
    const gc = gcProblem(spec.garbageCollection);
    if (gc) problems.push(`resources.${key}: ${gc}`);
  }
  // swamp's `FileOutputSpecSchema` (model.ts): a content type, lifetime and garbage collection.
  for (const [key, spec] of Object.entries(model.files ?? {})) {
    if (key.includes("-")) problems.push(`file spec '${key}' contains '-'`);
    if (typeof spec.contentType !== "string") {
      problems.push(`files.${key}.contentType must be a string`);
    }
    const lifetime = lifetimeProblem(spec.lifetime);
    if (lifetime) problems.push(`files.${key}: ${lifetime}`);
    const gc = gcProblem(spec.garbageCollection);
    if (gc) problems.push(`files.${key}: ${gc}`);
  }
  for (const [name, method] of Object.entries(model.methods ?? {})) {
    if (!isZodSchema(method.arguments)) {
      problems.push(`methods.${name}.arguments must be a zod schema`);
    }
    if (typeof method.execute !== "function") {
      problems.push(`methods.${name}.execute must be a function`);
    }
  }
  for (const [name, check] of Object.entries(model.checks ?? {})) {
    if (typeof check.execute !== "function") {
      problems.push(`checks.${name}.execute must be a function`);
    }
  }
  return problems;
}

function upgradeProblems(model: ModelLike): string[] {
  const upgrades = model.upgrades;
  if (upgrades === undefined) return [];
  if (!Array.isArray(upgrades)) return ["upgrades must be an array"];
  const problems: string[] = [];
  upgrades.forEach((upgrade, i) => {
    if (!isCalVer(upgrade?.toVersion)) {
      problems.push(
        `upgrades[${i}].toVersion '${upgrade?.toVersion}' is not CalVer`,
      );
    } else if (i > 0 && isCalVer(upgrades[i - 1]?.toVersion)) {
      const before = upgrades[i - 1].toVersion;
      if (compareCalVer(before, upgrade.toVersion) >= 0) {
        problems.push(
          `upgrades are not in chronological order: '${before}' must be before '${upgrade.toVersion}'`,
        );
      }
    }
    if (typeof upgrade?.description !== "string") {
      problems.push(`upgrades[${i}].description must be a string`);
    }
    if (typeof upgrade?.upgradeAttributes !== "function") {
      problems.push(`upgrades[${i}].upgradeAttributes must be a function`);
    }
  });
  const last = upgrades.at(-1);
  if (last && last.toVersion !== model.version) {
    problems.push(
      `the last upgrade's toVersion '${last.toVersion}' is not the model version '${model.version}'`,
    );
  }
  return problems;
}
