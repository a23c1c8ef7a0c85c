/**
 * Deletion markers and the deleted-resource fast-fail, as in swamp-club/swamp
 * `src/domain/models/method_execution_service.ts`:
 * - only DECLARED resource data counts: the latest version of each name whose
 *   `type` tag is `resource` and whose `specName` tag is a declared spec;
 * - fast-fail (read/update kinds only, before the method runs): when there is
 *   such data and ALL of it is deleted, fail with
 *   "Resource '<first name>' was deleted at <its deletedAt> — run a 'create'
 *   method to re-create it first" (names in name order; `unknown` when the
 *   marker has no `deletedAt`);
 * - after a SUCCESSFUL delete-kind method, every such name not yet deleted —
 *   all instances of the whole definition, not just the one the method
 *   touched, and including anything the method itself just wrote — gets a
 *   new version `{...lastKnownState, deletedAt, deletedByMethod}` with
 *   `lifecycle: deleted`, and its handle joins the run's data handles.
 *
 * @module
 */

import type { DataStore, StoredVersion } from "./data_store.ts";
import type { ResourceSpecLike } from "./types.ts";

function declaredResourceData(
  store: DataStore,
  resources: Record<string, ResourceSpecLike>,
): StoredVersion[] {
  return store.latestOfEach().filter((v) =>
    v.tags["type"] === "resource" &&
    v.tags["specName"] !== undefined &&
    Object.hasOwn(resources, v.tags["specName"])
  );
}

/**
 * The fast-fail message for a read/update method, or null when it may run.
 */
export function deletedResourceError(
  store: DataStore,
  resources: Record<string, ResourceSpecLike>,
): string | null {
  if (Object.keys(resources).length === 0) return null;
  const data = declaredResourceData(store, resources);
  if (data.length === 0 || !data.every((v) => v.lifecycle === "deleted")) {
    return null;
  }
  const first = data[0];
  let deletedAt = "unknown";
  try {
    const marker = JSON.parse(first.content) as { deletedAt?: unknown };
    if (marker.deletedAt) deletedAt = String(marker.deletedAt);
  } catch {
    // swamp keeps "unknown" when the marker cannot be read.
  }
  return `Resource '${first.name}' was deleted at ${deletedAt} — run a 'create' method to re-create it first`;
}

/** Writes deletion markers after a successful delete-kind method. */
export function writeDeletionMarkers(
  store: DataStore,
  resources: Record<string, ResourceSpecLike>,
  methodName: string,
): StoredVersion[] {
  if (Object.keys(resources).length === 0) return [];
  const markers: StoredVersion[] = [];
  for (const data of declaredResourceData(store, resources)) {
    if (data.lifecycle === "deleted") continue;
    let lastKnownState: Record<string, unknown> = {};
    try {
      lastKnownState = JSON.parse(data.content) as Record<string, unknown>;
    } catch {
      // Not JSON: swamp proceeds with an empty state.
    }
    markers.push(store.save({
      name: data.name,
      specName: data.specName,
      content: JSON.stringify({
        ...lastKnownState,
        deletedAt: new Date().toISOString(),
        deletedByMethod: methodName,
      }),
      tags: data.tags,
      lifetime: data.lifetime,
      garbageCollection: data.garbageCollection,
      lifecycle: "deleted",
      writtenBy: methodName,
      ownerRef: data.ownerRef,
      ...(data.ownerType ? { ownerType: data.ownerType } : {}),
    }));
  }
  return markers;
}
