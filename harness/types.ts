/**
 * Public types of the swamp-faithful harness.
 *
 * Shapes mirror swamp's own (`src/domain/models/model.ts` in
 * swamp-club/swamp): `DataHandle`, `MethodContext`, `CheckDefinition`,
 * `ResourceOutputSpec`. Only the parts an extension model can observe are
 * reproduced; swamp-internal plumbing (repositories, tracing, runModel,
 * workflow gates, swamp's own CEL namespaces) is left out.
 *
 * @module
 */

import { z } from "npm:zod@4";
import type { CelEnvironment } from "./cel.ts";

/** Semantic kind of a method (`MethodKind` in swamp's model.ts). */
export type MethodKind =
  | "create"
  | "read"
  | "update"
  | "delete"
  | "list"
  | "action";

/**
 * Metadata carried by a {@link DataHandle}; swamp's `DataMetadata` without
 * the auto-generated fields (id, name, version, createdAt, size, checksum).
 */
export interface DataHandleMetadata {
  contentType: string;
  lifetime: string;
  garbageCollection: number | string;
  streaming: boolean;
  tags: Record<string, string>;
  ownerDefinition: { ownerType: string; ownerRef: string };
  /** Present (`"deleted"`) only on the handles of deletion markers. */
  lifecycle?: "active" | "deleted";
}

/**
 * Lightweight reference to data already persisted, exactly the fields of
 * swamp's `DataHandle` (model.ts). `writeResource` returns one; a method may
 * return them as `dataHandles`.
 */
export interface DataHandle {
  /** Instance name. */
  name: string;
  /** Declared spec name (key in `resources`). */
  specName: string;
  /** `"file"` for what `createFileWriter` wrote (file_writer.ts). */
  kind: "resource" | "file";
  /** UUID shared by every version of one instance name. */
  dataId: string;
  /** Version number of this write (1-based, per instance name). */
  version: number;
  /** Byte length of the stored JSON. */
  size: number;
  /** Resolved tags (`type`, definition tags, spec tags, `specName`, `modelName`). */
  tags: Record<string, string>;
  metadata: DataHandleMetadata;
  /** Top-level resource attributes; swamp's writer never sets it. */
  attributes?: Record<string, unknown>;
}

/** One collected log line. `warn` and `warning` both map to `"warning"`. */
export interface LogLine {
  level: "debug" | "info" | "warning" | "error";
  /** The message as swamp prints it (LogTape `{key}` placeholders filled). */
  message: string;
  /** The properties passed with the message (and any `with()` context). */
  props?: Record<string, unknown>;
}

/** The LogTape-like logger a method or check receives as `ctx.logger`. */
export interface HarnessLogger {
  debug(message: unknown, ...rest: unknown[]): void;
  info(message: unknown, ...rest: unknown[]): void;
  warn(message: unknown, ...rest: unknown[]): void;
  warning(message: unknown, ...rest: unknown[]): void;
  error(message: unknown, ...rest: unknown[]): void;
  trace(message: unknown, ...rest: unknown[]): void;
  fatal(message: unknown, ...rest: unknown[]): void;
  /** Returns a logger whose lines carry `props` as well. */
  with(props: Record<string, unknown>): HarnessLogger;
  /** LogTape child logger; categories are not tracked, so it logs here too. */
  getChild(subcategory: string | readonly string[]): HarnessLogger;
}

/** Per-call overrides accepted by `ctx.writeResource` (swamp's `ResourceWriteOverrides`). */
export interface ResourceWriteOverrides {
  lifetime?: string;
  garbageCollection?: number | string;
  tags?: Record<string, string>;
}

/** Definition metadata exposed as `ctx.definition`. */
export interface DefinitionMeta {
  id: string;
  name: string;
  version: number;
  tags: Record<string, string>;
}

/**
 * Context shared by checks and methods: what swamp's CLI builds with
 * `buildMethodContext` (method_context.ts) before the executor adds writers.
 */
export interface BaseContext {
  signal: AbortSignal;
  modelType: { raw: string; normalized: string };
  modelId: string;
  globalArgs: Record<string, unknown>;
  definition: DefinitionMeta;
  methodName: string;
  logger: HarnessLogger;
  /** `{...globalArgs, ...methodArgs}` before parsing (swamp: pre-vault args). */
  unresolvedMethodArgs: Record<string, unknown>;
  /** Absolute path of a file shipped with the extension (`additionalFiles`). */
  extensionFile(relPath: string): string;
  /** A fresh cel-js environment with swamp's baseline registrations (cel.ts). */
  createCelEnvironment(): CelEnvironment;
}

/** What a pre-flight check's `execute` receives: no data writers or readers. */
export type CheckContext = BaseContext;

/** What a method's `execute` receives (swamp's `MethodContext` with writers). */
export interface MethodContext extends BaseContext {
  writeResource(
    specName: string,
    instanceName: string,
    data: Record<string, unknown>,
    overrides?: ResourceWriteOverrides,
  ): Promise<DataHandle>;
  readResource(
    instanceName: string,
    version?: number,
  ): Promise<Record<string, unknown> | null>;
  /** Removes every version of the instance (swamp's hard delete). */
  deleteResource(instanceName: string): Promise<void>;
  /** swamp's data repository, as far as extensions list their own records with it. */
  dataRepository: DataRepositoryLike;
  /**
   * A writer of one file output of a spec the model declares in `files` (file_writer.ts);
   * absent under `RepoOptions.fileWriters: false`, as in a swamp that predates it.
   */
  createFileWriter?(
    specName: string,
    name: string,
    overrides?: { contentType?: string; tags?: Record<string, string> },
  ): FileWriterLike;
}

/** The part of swamp's `DataWriter` the harness reproduces (no streaming). */
export interface FileWriterLike {
  readonly name: string;
  writeAll(content: Uint8Array): Promise<DataHandle>;
  writeText(text: string): Promise<DataHandle>;
}

/** A declared file output (swamp's `FileOutputSpec`). */
export interface FileSpecLike {
  description?: string;
  contentType: string;
  lifetime: string;
  garbageCollection: number | string;
  streaming?: boolean;
  tags?: Record<string, string>;
}

/** The listing part of swamp's `UnifiedDataRepository`. */
export interface DataRepositoryLike {
  /** The latest version of every data name of a model definition. */
  findAllForModel(
    type: unknown,
    modelId: string,
  ): Promise<{ name: string; version: number; tags: Record<string, string> }[]>;
}

/** A declared resource output (swamp's `ResourceOutputSpec`). */
export interface ResourceSpecLike {
  description?: string;
  schema: z.ZodType;
  lifetime: string;
  garbageCollection: number | string;
  tags?: Record<string, string>;
  sensitiveOutput?: boolean;
  vaultName?: string;
}

/** Result of a pre-flight check (swamp's `CheckResult`). */
export interface CheckResultLike {
  pass: boolean;
  errors?: string[];
}

/** A pre-flight check (swamp's `CheckDefinition`). */
export interface CheckLike {
  description: string;
  labels?: string[];
  appliesTo?: string[];
  execute(ctx: CheckContext): Promise<CheckResultLike>;
}

/** What a method's `execute` may resolve to. */
export interface MethodResultLike {
  dataHandles?: unknown[];
  followUpActions?: unknown[];
}

/** A model method (swamp's `MethodDefinition`). */
export interface MethodLike {
  description: string;
  kind?: string;
  /** Deferred-latest writes: kept on success, removed on failure. */
  rollbackOnFailure?: boolean;
  arguments: z.ZodType;
  // Method syntax on purpose: parameters are then compared bivariantly, so a
  // model whose execute is typed `(args: {vmid: number}, ctx: Ctx)` fits.
  execute(args: unknown, ctx: MethodContext): Promise<MethodResultLike | void>;
}

/** One step of a model's upgrade chain (swamp's `VersionUpgrade`). */
export interface VersionUpgradeLike {
  /** The CalVer version this step produces. */
  toVersion: string;
  description: string;
  /** The global arguments of the version before → those of `toVersion`. */
  upgradeAttributes(old: Record<string, unknown>): Record<string, unknown>;
}

/** The `model` export of an extension module, as far as the harness uses it. */
export interface ModelLike {
  type: string;
  version: string;
  globalArguments?: z.ZodType;
  resources: Record<string, ResourceSpecLike>;
  /** File outputs (swamp's `files`), written with `ctx.createFileWriter`. */
  files?: Record<string, FileSpecLike>;
  checks?: Record<string, CheckLike>;
  methods: Record<string, MethodLike>;
  /** Oldest first; the last one's `toVersion` is `version`. */
  upgrades?: VersionUpgradeLike[];
}

/** A model definition (swamp's `models/<type>/<name>.yaml`). */
export interface Definition {
  name: string;
  globalArgs: Record<string, unknown>;
  /**
   * The model version the definition was written at (swamp's `typeVersion`). Omitted: the
   * model's own version, as `swamp model create` stamps it; `null`: none recorded (a legacy
   * definition: every upgrade applies). An older one is upgraded by the next method run.
   */
  typeVersion?: string | null;
  /** Definition UUID (becomes `ctx.modelId`); random when omitted. */
  id?: string;
  /** Definition version number; 1 when omitted. */
  version?: number;
  tags?: Record<string, string>;
  /** Per-method arguments stored in the definition; `run` args override them. */
  methodArgs?: Record<string, Record<string, unknown>>;
  /** Definition-level check selection (`checks: {require, skip}`). */
  checks?: { require?: string[]; skip?: string[] };
}

/** Repository-wide settings. */
export interface RepoOptions {
  /**
   * A configured vault: `true` for one named `default`, or its name. Without
   * one, mutating methods of a model with sensitive fields fail fast.
   */
  vault?: boolean | string;
  /** Files the model's manifest ships (relative path → absolute path): `ctx.extensionFile`'s. */
  extensionFiles?: Record<string, string>;
  /**
   * Versions the definition's data store holds before the first run, e.g. read from a
   * repository's files by `readDataDirectory` (repo_files.ts); each name's versions oldest first.
   */
  data?: readonly StoredVersionLike[];
  /** `false`: methods get no `ctx.createFileWriter` (a swamp that predates file outputs). */
  fileWriters?: boolean;
}

/**
 * One stored version as the data store keeps it (data_store.ts's `StoredVersion`): swamp's
 * metadata.yaml fields the harness uses, and the `raw` content.
 */
export interface StoredVersionLike {
  name: string;
  version: number;
  dataId: string;
  specName: string;
  /** `file`: a file output's version (its text in `content`); omitted: a resource's. */
  kind?: "file";
  /** A file's content type (a resource's is `application/json`). */
  contentType?: string;
  /** Serialised JSON, exactly what swamp writes to the version's `raw` file (a file's text). */
  content: string;
  tags: Record<string, string>;
  lifetime: string;
  garbageCollection: number | string;
  lifecycle: "active" | "deleted";
  /** The method that wrote it; empty for a version read from files (swamp does not record it). */
  writtenBy: string;
  /** `ownerDefinition.ownerRef`: the definition id of a method's writes. */
  ownerRef: string;
  /** `ownerDefinition.ownerType`; omitted: `model-method`, a method's writes. */
  ownerType?: string;
  /** Written in deferred-latest mode and not yet committed. */
  pending?: boolean;
}

/** Options of one `swamp model method run`. */
export interface RunOptions {
  signal?: AbortSignal;
  /** Files shipped by the manifest, for this run only (else the repository's). */
  extensionFiles?: Record<string, string>;
  /** `--skip-checks`. */
  skipChecks?: boolean;
  /** `--skip-check <name>`. */
  skipCheckNames?: string[];
  /** `--skip-check-label <label>`. */
  skipCheckLabels?: string[];
}

/** One stored version of one instance. */
export interface RecordVersion {
  spec: string;
  instance: string;
  version: number;
  /** The stored JSON (vault references stay unresolved here); a file's text. */
  data: unknown;
  /** Method whose run wrote this version. */
  writtenBy: string;
  tombstone: boolean;
}

/** Error codes `swamp model method run` reports. */
export type RunErrorCode =
  | "method_execution_failed"
  | "validation_failed"
  | "unknown_method"
  | "cancelled";

/** Outcome of one run. */
export interface RunResult {
  method: string;
  /** Definition name the method ran on. */
  modelName: string;
  /** Inferred method kind (undefined: unrecognised name, treated as mutating). */
  kind: MethodKind | string | undefined;
  status: "succeeded" | "failed";
  error?: string;
  errorCode?: RunErrorCode;
  /** This run's writes in order, deletion markers included. */
  written: RecordVersion[];
  /**
   * On success the method's outputs (returned handles, else every write) plus
   * deletion-marker handles; on failure the handles of writes made before it.
   */
  dataHandles: DataHandle[];
  logs: LogLine[];
  /** Lines the method printed with `console.*` (swamp captures them). */
  console: string[];
  durationMs: number;
}
