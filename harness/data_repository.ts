/**
 * `ctx.dataRepository`, the part extensions use to list their own records: `findAllForModel(type,
 * modelId)` (swamp-club/swamp `src/domain/data/repositories.ts`, `UnifiedDataRepository`) yields the
 * latest version of every data name of one model definition, with its metadata (`name`, `version`,
 * `tags` — `specName` among them); tombstones included, as their latest version.
 *
 * @module
 */

import type { DataStore } from "./data_store.ts";
import type { DataRepositoryLike } from "./types.ts";

/** The data repository of one definition's store. Other model ids have no data here. */
export function makeDataRepository(
  store: DataStore,
  modelId: string,
): DataRepositoryLike {
  return {
    findAllForModel: (_type, id) =>
      Promise.resolve(
        id !== modelId ? [] : store.latestOfEach().map((v) => ({
          name: v.name,
          version: v.version,
          tags: { ...v.tags },
        })),
      ),
  };
}
