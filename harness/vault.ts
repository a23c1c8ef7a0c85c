/**
 * Sensitive resource fields and a stand-in vault.
 *
 * Read from swamp-club/swamp: `src/domain/models/sensitive_field_extractor.ts`
 * (fields marked `.meta({ sensitive: true })`, looked up in zod's global
 * registry at every wrapper level, recursing into nested objects) and
 * `src/domain/models/data_writer.ts` (`processSensitiveResourceData`: with no
 * vault the write throws; otherwise each value goes to the vault and the
 * payload — the caller's own object, mutated in place — gets
 * `${{ vault.get('<vault>', '<key>') }}`; `readResource` resolves those
 * references back). `modelRequiresVault` (a spec with a sensitive field or
 * `sensitiveOutput: true`) is described in swamp's design docs
 * (`doctor vaults`); its source was not in the index.
 *
 * @module
 */

import { z } from "npm:zod@4";
import type { ResourceSpecLike } from "./types.ts";
import { schemaType, unwrapSchema } from "./zod_introspect.ts";

interface SensitiveMeta {
  sensitive?: boolean;
  vaultName?: string;
  vaultKey?: string;
}

/** A sensitive field found in a schema. */
export interface SensitiveField {
  path: string;
  vaultName?: string;
  vaultKey?: string;
}

interface WrapperDef {
  type?: string;
  innerType?: z.ZodType;
  schema?: z.ZodType;
  shape?: Record<string, z.ZodType>;
}

function defOf(schema: z.ZodType): WrapperDef {
  return (schema as unknown as { _def?: WrapperDef })._def ?? {};
}

function sensitiveMeta(schema: z.ZodType): SensitiveMeta | undefined {
  // `.optional().meta()` registers the outer schema, `.meta().optional()` an
  // inner one; swamp checks every level.
  let current: z.ZodType | undefined = schema;
  while (current) {
    const meta = z.globalRegistry.get(current) as SensitiveMeta | undefined;
    if (meta?.sensitive) return meta;
    const def = defOf(current);
    current = ["optional", "nullable", "default"].includes(def.type ?? "")
      ? def.innerType
      : def.type === "effects"
      ? def.schema
      : undefined;
  }
  return undefined;
}

/** Every field of an object schema marked sensitive, as dotted paths. */
export function extractSensitiveFields(
  schema: z.ZodType,
  prefix = "",
): SensitiveField[] {
  const inner = unwrapSchema(schema);
  const shape = schemaType(inner) === "object" ? defOf(inner).shape : undefined;
  if (!shape) return [];
  const found: SensitiveField[] = [];
  for (const [key, field] of Object.entries(shape)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const meta = sensitiveMeta(field);
    if (meta) {
      found.push({ path, vaultName: meta.vaultName, vaultKey: meta.vaultKey });
    }
    found.push(...extractSensitiveFields(field, path));
  }
  return found;
}

/** Whether any declared resource needs a vault to be written. */
export function modelRequiresVault(
  resources: Record<string, ResourceSpecLike>,
): boolean {
  return Object.values(resources).some((spec) =>
    spec.sensitiveOutput === true ||
    extractSensitiveFields(spec.schema).length > 0
  );
}

function getPath(obj: Record<string, unknown>, path: string): unknown {
  let current: unknown = obj;
  for (const part of path.split(".")) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown) {
  const parts = path.split(".");
  let current = obj;
  for (const part of parts.slice(0, -1)) {
    if (typeof current[part] !== "object" || current[part] === null) {
      current[part] = {};
    }
    current = current[part] as Record<string, unknown>;
  }
  current[parts.at(-1)!] = value;
}

// Vault keys become file names in swamp's local vault: no `@`, `/`, `\`, `..`.
function sanitizeVaultKey(key: string): string {
  return key.replace(/@/g, "").replace(/[/\\]/g, "-").replace(/\.\./g, ".")
    .replace(/\0/g, "");
}

/** An in-memory vault: name → key → secret. */
export class MemoryVault {
  readonly #secrets = new Map<string, string>();
  constructor(readonly name: string) {}

  /** Stores a secret. */
  put(key: string, value: string): void {
    this.#secrets.set(key, value);
  }

  /** Reads a secret; throws when the key is unknown. */
  get(key: string): string {
    const value = this.#secrets.get(key);
    if (value === undefined) {
      throw new Error(`Secret '${key}' not found in vault '${this.name}'`);
    }
    return value;
  }
}

/** Where a sensitive value is being written from (for the vault key). */
export interface SensitiveWriteScope {
  modelType: string;
  modelId: string;
  methodName: string;
  specName: string;
  instanceName: string;
}

/**
 * Moves sensitive values of `data` into the vault, replacing them in `data`
 * (in place, as swamp does) with vault expressions. Returns the stored paths.
 */
export function storeSensitiveFields(
  data: Record<string, unknown>,
  spec: ResourceSpecLike,
  vault: MemoryVault | undefined,
  scope: SensitiveWriteScope,
): SensitiveField[] {
  const fields = extractSensitiveFields(spec.schema);
  if (spec.sensitiveOutput) {
    const known = new Set(fields.map((f) => f.path));
    for (const key of Object.keys(data)) {
      if (!known.has(key)) fields.push({ path: key });
    }
  }
  const snapshot = structuredClone(data);
  const withValues = fields.filter((f) => getPath(snapshot, f.path) != null);
  if (withValues.length === 0) return [];
  if (!vault) {
    const list = withValues.map((f) => `'${f.path}'`).join(", ");
    throw new Error(
      `Cannot persist data: fields ${list} are marked as sensitive but no ` +
        `vault is configured. Create a vault using: swamp vault create <type> <name>`,
    );
  }
  for (const field of withValues) {
    const original = getPath(snapshot, field.path);
    const key = field.vaultKey ?? sanitizeVaultKey(
      [
        scope.modelType,
        scope.modelId,
        scope.methodName,
        scope.specName,
        scope.instanceName,
        field.path,
      ].join("/"),
    );
    vault.put(
      key,
      typeof original === "string" ? original : JSON.stringify(original),
    );
    // One harness vault: a field's or spec's vaultName is kept in the
    // reference, and resolved against the single configured vault.
    const vaultName = field.vaultName ?? spec.vaultName ?? vault.name;
    setPath(data, field.path, `\${{ vault.get('${vaultName}', '${key}') }}`);
  }
  return withValues;
}

const VAULT_REF =
  /^\$\{\{\s*vault\.get\(\s*'([^']+)'\s*,\s*'([^']+)'\s*\)\s*\}\}$/;

/** Replaces every vault expression in a parsed record with its secret. */
export function resolveVaultRefs(value: unknown, vault: MemoryVault): unknown {
  if (typeof value === "string") {
    const match = VAULT_REF.exec(value);
    return match ? vault.get(match[2]) : value;
  }
  if (Array.isArray(value)) return value.map((v) => resolveVaultRefs(v, vault));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, resolveVaultRefs(v, vault)]),
    );
  }
  return value;
}
