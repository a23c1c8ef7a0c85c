/**
 * Moving a definition written at an older model version to the model's current one, as
 * swamp-club/swamp does at the start of every method run:
 * `src/domain/models/definition_upgrade_service.ts` (`DefinitionUpgradeService.upgrade`), called
 * from `executeWorkflow` in `src/domain/models/method_execution_service.ts`, which saves the
 * upgraded definition (`YamlDefinitionRepository.save`) before it validates the global arguments
 * — so the upgrade stays on disk even when the run then fails.
 *
 * The rules:
 * - a model without `upgrades` leaves every definition as it is (even an older `typeVersion`);
 * - a `typeVersion` at or past the model's `version` is left as it is;
 * - otherwise the upgrades whose `toVersion` is newer than the `typeVersion` run in the order the
 *   model lists them (all of them when the definition records no `typeVersion`), each given what
 *   the one before returned, starting from a copy of the definition's global arguments;
 * - the result replaces the global arguments and `typeVersion` becomes the model's `version`
 *   (id, name, version number, tags and method arguments stay);
 * - a `typeVersion` or `toVersion` that is not CalVer throws `CalVer.create`'s error, and an
 *   `upgradeAttributes` that throws fails the run; neither saves anything.
 *
 * @module
 */

import { compareCalVer } from "./calver.ts";
import type { Definition, ModelLike } from "./types.ts";

/** What {@link upgradeDefinition} did. */
export interface UpgradeOutcome {
  upgraded: boolean;
  /** The definition after the upgrade (the one given when nothing applied). */
  definition: Definition;
  /** The `typeVersion` before (null: none recorded). */
  fromVersion: string | null;
  /** The model's version. */
  toVersion: string;
}

/** `definition` moved to `model.version` through the model's upgrade chain, when it applies. */
export function upgradeDefinition(
  definition: Definition,
  model: ModelLike,
): UpgradeOutcome {
  const fromVersion = definition.typeVersion ?? null;
  const toVersion = model.version;
  const unchanged = { upgraded: false, definition, fromVersion, toVersion };
  const upgrades = model.upgrades ?? [];
  if (upgrades.length === 0) return unchanged;
  if (fromVersion !== null && compareCalVer(fromVersion, toVersion) >= 0) {
    return unchanged;
  }
  const applicable = fromVersion === null
    ? upgrades
    : upgrades.filter((u) => compareCalVer(u.toVersion, fromVersion) > 0);
  if (applicable.length === 0) return unchanged;
  let globalArgs = structuredClone(definition.globalArgs);
  for (const upgrade of applicable) {
    globalArgs = upgrade.upgradeAttributes(globalArgs);
  }
  return {
    upgraded: true,
    definition: {
      ...definition,
      typeVersion: toVersion,
      globalArgs: structuredClone(globalArgs),
    },
    fromVersion,
    toVersion,
  };
}
