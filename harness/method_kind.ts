/**
 * Method kinds, as swamp infers them (`inferMethodKind` and `isMutatingKind`
 * in swamp-club/swamp `src/domain/models/model.ts`).
 *
 * @module
 */

import type { MethodKind } from "./types.ts";

// The name is compared WHOLE (after lower-casing), not as a prefix: `get` is a
// read, `getConfig` is not. Any other name yields undefined.
const KIND_BY_NAME: Record<string, MethodKind> = {
  create: "create",
  get: "read",
  read: "read",
  describe: "read",
  show: "read",
  update: "update",
  patch: "update",
  delete: "delete",
  destroy: "delete",
  remove: "delete",
  list: "list",
  search: "list",
  find: "list",
};

/**
 * The kind swamp gives a method: an explicit (truthy) `kind` wins as written,
 * otherwise the lower-cased name must equal one of the known verbs.
 */
export function inferMethodKind(
  methodName: string,
  definition?: { kind?: string },
): MethodKind | string | undefined {
  if (definition?.kind) return definition.kind;
  return Object.hasOwn(KIND_BY_NAME, methodName.toLowerCase())
    ? KIND_BY_NAME[methodName.toLowerCase()]
    : undefined;
}

/**
 * Whether swamp treats the kind as mutating: everything but `read` and `list`,
 * including an unrecognised name (undefined) and `action`. Pre-flight checks
 * and the vault fast-fail apply to mutating kinds only.
 */
export function isMutatingKind(kind: string | undefined): boolean {
  return kind !== "read" && kind !== "list";
}
