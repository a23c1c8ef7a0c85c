/**
 * `ctx.createFileWriter`: a method's file outputs (text, logs), declared in the model's `files`.
 *
 * Read from swamp-club/swamp `src/domain/models/data_writer.ts` (`createFileWriterFactory`,
 * `DefaultDataWriter`) and `model.ts` (`FileOutputSpec`, `DataWriter`, `DataHandle`):
 * - an undeclared spec name throws (naming the declared ones) when the writer is created; so do an
 *   empty name and a reserved one (the same rules as a resource's name, resource_io.ts);
 * - tags resolve as `{type: "file", ...definition tags, ...spec tags, ...override tags, specName,
 *   modelName}`; content type, lifetime and garbage collection come from the spec unless
 *   overridden;
 * - `writeAll` / `writeText` save one new version of the name and return its handle (`kind:
 *   "file"`, `size` in bytes); a writer writes once (a second write throws).
 * Streaming (`writeLine`, `writeStream`, `getFilePath`, `finalize`) is not reproduced.
 *
 * @module
 */

import { type DataStore, handleOf, type StoredVersion } from "./data_store.ts";
import { checkInstanceName } from "./resource_io.ts";
import type { DataHandle, FileSpecLike, FileWriterLike } from "./types.ts";

/** Everything the file writers of one run are bound to. */
export interface FileScope {
  store: DataStore;
  files: Record<string, FileSpecLike>;
  modelType: string;
  modelId: string;
  definitionName: string;
  definitionTags: Record<string, string>;
  methodName: string;
  deferred?: boolean;
  onSaved(stored: StoredVersion, handle: DataHandle): void;
}

/** Per-writer overrides (swamp's `FileWriterOverrides`, streaming left out). */
export interface FileWriterOverrides {
  contentType?: string;
  lifetime?: string;
  garbageCollection?: number | string;
  tags?: Record<string, string>;
}

/** Builds `ctx.createFileWriter` for one run. */
export function makeCreateFileWriter(scope: FileScope) {
  return (
    specName: string,
    name: string,
    overrides?: FileWriterOverrides,
  ): FileWriterLike => {
    const spec = Object.hasOwn(scope.files, specName)
      ? scope.files[specName]
      : undefined;
    if (!spec) {
      const declared = Object.keys(scope.files).join(", ");
      throw new Error(
        `Undeclared file spec '${specName}' in model '${scope.modelType}'. ` +
          `Declared file specs: ${declared || "(none)"}`,
      );
    }
    checkInstanceName(name, specName, scope.modelType);
    let written = false;
    const writeAll = (content: Uint8Array): Promise<DataHandle> => {
      if (written) {
        return Promise.reject(new Error(`writer '${name}' already finalized`));
      }
      written = true;
      const stored = scope.store.save({
        name,
        specName,
        kind: "file",
        contentType: overrides?.contentType ?? spec.contentType,
        content: new TextDecoder().decode(content),
        tags: {
          type: "file",
          ...scope.definitionTags,
          ...(spec.tags ?? {}),
          ...(overrides?.tags ?? {}),
          specName,
          modelName: scope.definitionName,
        },
        lifetime: overrides?.lifetime ?? spec.lifetime,
        garbageCollection: overrides?.garbageCollection ??
          spec.garbageCollection,
        lifecycle: "active",
        writtenBy: scope.methodName,
        ownerRef: scope.modelId,
        pending: scope.deferred === true,
      });
      const handle = handleOf(stored);
      scope.onSaved(stored, handle);
      return Promise.resolve(handle);
    };
    return {
      name,
      writeAll,
      writeText: (text) => writeAll(new TextEncoder().encode(text)),
    };
  };
}
