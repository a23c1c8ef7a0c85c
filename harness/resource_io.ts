/**
 * `ctx.writeResource`, `ctx.readResource` and `ctx.deleteResource`.
 *
 * Read from swamp-club/swamp `src/domain/models/data_writer.ts`
 * (`createResourceWriter`, `createResourceReader`, `createResourceDeleter`):
 * - an undeclared spec name throws before anything else;
 * - a schema mismatch is only reported (a `schema_validation_warning` event
 *   the CLI prints as a warning) and the ORIGINAL object is stored, so zod
 *   defaults and transforms are never applied;
 * - an empty name, and the reserved name `latest` (any case, per swamp's data
 *   design doc), throw; so does a name with `..`, `/`, `\` or NUL (the
 *   `DataMetadataSchema` refinement in `src/domain/data/data_metadata.ts`);
 * - a name whose latest version another owner wrote (its
 *   `ownerDefinition` is not this definition's `model-method` one) throws
 *   `OwnershipValidationError`'s message (`allocateVersion` in
 *   `src/infrastructure/persistence/unified_data_repository.ts`);
 * - every call saves a new version, with tags resolved as
 *   `{type: "resource", ...definition tags, ...spec tags, ...override tags,
 *   specName, modelName}` and owner `model-method` / the definition id;
 * - `readResource` returns the parsed latest (or given) version, `null` when
 *   there is none, and throws when the stored JSON is not an object.
 *
 * @module
 */

import type { DataStore, StoredVersion } from "./data_store.ts";
import { handleOf } from "./data_store.ts";
import type { LogCollector } from "./log_collector.ts";
import type {
  DataHandle,
  ResourceSpecLike,
  ResourceWriteOverrides,
} from "./types.ts";
import { formatWriterIssues } from "./zod_introspect.ts";
import { noteFields } from "./record_fields.ts";
import {
  type MemoryVault,
  resolveVaultRefs,
  storeSensitiveFields,
} from "./vault.ts";

/** Everything the resource functions of one run are bound to. */
export interface ResourceScope {
  store: DataStore;
  resources: Record<string, ResourceSpecLike>;
  modelType: string;
  modelId: string;
  definitionName: string;
  definitionTags: Record<string, string>;
  methodName: string;
  logs: LogCollector;
  vault?: MemoryVault;
  /** `rollbackOnFailure`: save versions as pending (deferred latest). */
  deferred?: boolean;
  /** Called with every version saved, in order. */
  onSaved(stored: StoredVersion, handle: DataHandle): void;
}

// swamp's writer and reader are async functions: a validation error surfaces
// as a rejected promise, never as a synchronous throw at the call site.
function asPromise<T>(body: () => T): Promise<T> {
  try {
    return Promise.resolve(body());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Throws when swamp refuses `name` as a data name (empty, reserved, a path). */
export function checkInstanceName(
  name: string,
  specName: string,
  type: string,
) {
  if (name.trim() === "") {
    throw new Error(
      `Resource name must be a non-empty string for spec '${specName}' ` +
        `in model '${type}'`,
    );
  }
  if (name.toLowerCase() === "latest") {
    throw new Error(
      `Data name '${name}' is reserved for internal use in model '${type}'. ` +
        `Use a different name.`,
    );
  }
  if (/\.\.|[/\\\0]/.test(name)) {
    throw new Error(
      "Data name must not contain '..', '/', '\\', or null bytes (path traversal)",
    );
  }
}

/** Builds `ctx.writeResource` for one run. */
export function makeWriteResource(scope: ResourceScope) {
  return (
    specName: string,
    name: string,
    data: Record<string, unknown>,
    overrides?: ResourceWriteOverrides,
  ): Promise<DataHandle> =>
    asPromise(() => {
      const spec = Object.hasOwn(scope.resources, specName)
        ? scope.resources[specName]
        : undefined;
      if (!spec) {
        const declared = Object.keys(scope.resources).join(", ");
        throw new Error(
          `Undeclared resource spec '${specName}' in model '${scope.modelType}'. ` +
            `Declared resource specs: ${declared || "(none)"}`,
        );
      }
      const check = spec.schema.safeParse(data);
      noteFields(
        scope.modelType,
        specName,
        data,
        check.success ? undefined : formatWriterIssues(check.error.issues),
      );
      if (!check.success) {
        const error = formatWriterIssues(check.error.issues);
        scope.logs.push(
          "warning",
          `Resource '${specName}' (instance '${name}') data does not match schema: ${error}`,
          { specName, instanceName: name, error },
        );
      }
      checkInstanceName(name, specName, scope.modelType);
      for (
        const field of storeSensitiveFields(data, spec, scope.vault, {
          modelType: scope.modelType,
          modelId: scope.modelId,
          methodName: scope.methodName,
          specName,
          instanceName: name,
        })
      ) {
        scope.logs.push(
          "info",
          `Stored sensitive field '${field.path}' in vault '${
            scope.vault!.name
          }'`,
        );
      }
      const tags: Record<string, string> = {
        type: "resource",
        ...scope.definitionTags,
        ...(spec.tags ?? {}),
        ...(overrides?.tags ?? {}),
        specName,
        modelName: scope.definitionName,
      };
      const existing = scope.store.get(name);
      const owner = `model-method:${scope.modelId}`;
      const existingOwner = existing &&
        `${existing.ownerType ?? "model-method"}:${existing.ownerRef}`;
      if (existingOwner && existingOwner !== owner) {
        throw new Error(
          `Ownership validation failed for "${name}": existing owner ` +
            `"${existingOwner}" does not match new owner "${owner}"`,
        );
      }
      const stored = scope.store.save({
        name,
        specName,
        content: JSON.stringify(data),
        tags,
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
      return handle;
    });
}

/** Parses stored content the way `createResourceReader` does. */
export function parseStoredObject(
  content: string,
  instanceName: string,
): Record<string, unknown> | null {
  if (content.length === 0) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    throw new Error(
      `Failed to parse stored data for instance '${instanceName}': content is not valid JSON`,
    );
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new Error(
      `Stored data for instance '${instanceName}' is not a JSON object`,
    );
  }
  return parsed as Record<string, unknown>;
}

/** Builds `ctx.readResource` (tombstones come back as their JSON, not null). */
export function makeReadResource(store: DataStore, vault?: MemoryVault) {
  return (
    instanceName: string,
    version?: number,
  ): Promise<Record<string, unknown> | null> =>
    asPromise(() => {
      const stored = store.get(instanceName, version);
      const data = stored
        ? parseStoredObject(stored.content, instanceName)
        : null;
      return data && vault
        ? resolveVaultRefs(data, vault) as Record<string, unknown>
        : data;
    });
}

/** Builds `ctx.deleteResource`: removes every version of the instance. */
export function makeDeleteResource(store: DataStore) {
  return (instanceName: string): Promise<void> => {
    store.remove(instanceName);
    return Promise.resolve();
  };
}
