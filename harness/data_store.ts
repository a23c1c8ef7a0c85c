/**
 * In-memory stand-in for one model definition's datastore
 * (swamp-club/swamp `src/infrastructure/persistence/unified_data_repository.ts`
 * and `src/domain/data/data.ts`).
 *
 * Facts kept: data is addressed by instance name; every save appends the next
 * version (never overwrites, never dedupes); one UUID serves every version of
 * a name; the latest version decides whether a name is deleted (a tombstone
 * carries `lifecycle: "deleted"`); listing for a model yields the latest
 * version of each name in name order (`findAllForModel`). Content is kept as
 * the serialised JSON so every read returns a fresh parse, as from disk.
 *
 * {@link DataStore.restore} takes a version as it was stored (its number and
 * data id kept): how a store is seeded from a repository's files.
 *
 * A `pending` version is one written by a `rollbackOnFailure` method (swamp's
 * deferred-latest mode, `in_process_executor.ts`): it exists, but the latest
 * marker does not move to it until the method succeeds ({@link
 * DataStore.commit}); on failure it is removed ({@link DataStore.rollback}).
 *
 * @module
 */

import type { DataHandle, RecordVersion, StoredVersionLike } from "./types.ts";

/** One stored version. */
export type StoredVersion = StoredVersionLike;

/** What a caller supplies to {@link DataStore.save}. */
export type NewVersion = Omit<StoredVersion, "version" | "dataId">;

/** Versioned, in-memory resource storage for one definition. */
export class DataStore {
  #byName = new Map<string, StoredVersion[]>();
  #ids = new Map<string, string>();

  /** Appends the next version of `entry.name` and returns it. */
  save(entry: NewVersion): StoredVersion {
    const list = this.#byName.get(entry.name) ?? [];
    const dataId = this.#ids.get(entry.name) ?? crypto.randomUUID();
    this.#ids.set(entry.name, dataId);
    const stored: StoredVersion = {
      ...entry,
      tags: { ...entry.tags },
      version: (list.at(-1)?.version ?? 0) + 1,
      dataId,
    };
    list.push(stored);
    this.#byName.set(entry.name, list);
    return stored;
  }

  /**
   * Adds a version as it was stored elsewhere (number and data id kept), after the name's
   * versions so far; throws when it does not follow them.
   */
  restore(stored: StoredVersion): StoredVersion {
    const list = this.#byName.get(stored.name) ?? [];
    const last = list.at(-1);
    if (last && stored.version <= last.version) {
      throw new Error(
        `${stored.name}: version ${stored.version} does not follow version ${last.version}`,
      );
    }
    const copy: StoredVersion = { ...stored, tags: { ...stored.tags } };
    list.push(copy);
    this.#byName.set(stored.name, list);
    this.#ids.set(stored.name, stored.dataId);
    return copy;
  }

  /** A given version, or the latest committed one when `version` is omitted. */
  get(name: string, version?: number): StoredVersion | undefined {
    const list = this.#byName.get(name) ?? [];
    return version === undefined
      ? list.findLast((v) => !v.pending)
      : list.find((v) => v.version === version);
  }

  /** Every version of a name, oldest first. */
  all(name: string): StoredVersion[] {
    return [...(this.#byName.get(name) ?? [])];
  }

  /** Every instance name, sorted (swamp lists data names in name order). */
  names(): string[] {
    return [...this.#byName.keys()].sort();
  }

  /** The latest committed version of each name, in name order. */
  latestOfEach(): StoredVersion[] {
    return this.names().flatMap((name) => this.get(name) ?? []);
  }

  /** Makes deferred versions visible as latest (the method succeeded). */
  commit(versions: readonly StoredVersion[]): void {
    for (const v of versions) v.pending = false;
  }

  /** Removes deferred versions (the method failed). */
  rollback(versions: readonly StoredVersion[]): void {
    for (const v of versions) {
      const list = (this.#byName.get(v.name) ?? []).filter((x) => x !== v);
      if (list.length > 0) this.#byName.set(v.name, list);
      else this.remove(v.name);
    }
  }

  /** Removes every version of a name (swamp's `deleteResource`). */
  remove(name: string): void {
    this.#byName.delete(name);
    this.#ids.delete(name);
  }
}

/** The `DataHandle` swamp builds for a stored version. */
export function handleOf(stored: StoredVersion): DataHandle {
  const metadata: DataHandle["metadata"] = {
    contentType: stored.contentType ?? "application/json",
    lifetime: stored.lifetime,
    garbageCollection: stored.garbageCollection,
    streaming: false,
    tags: { ...stored.tags },
    ownerDefinition: {
      ownerType: stored.ownerType ?? "model-method",
      ownerRef: stored.ownerRef,
    },
  };
  // Only deletion-marker handles carry the lifecycle field.
  if (stored.lifecycle === "deleted") metadata.lifecycle = "deleted";
  return {
    name: stored.name,
    specName: stored.specName,
    kind: stored.kind ?? "resource",
    dataId: stored.dataId,
    version: stored.version,
    size: new TextEncoder().encode(stored.content).byteLength,
    tags: { ...stored.tags },
    metadata,
  };
}

/** The public view of a stored version. */
export function recordOf(stored: StoredVersion): RecordVersion {
  return {
    spec: stored.specName,
    instance: stored.name,
    version: stored.version,
    data: stored.kind === "file" ? stored.content : JSON.parse(stored.content),
    writtenBy: stored.writtenBy,
    tombstone: stored.lifecycle === "deleted",
  };
}
