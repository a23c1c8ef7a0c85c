/**
 * A swamp-faithful harness: runs an extension model's methods the way
 * `swamp model method run` does, against an in-memory datastore that
 * persists across runs of one {@link SwampRepo}.
 *
 * The order of one run follows swamp-club/swamp `src/libswamp/models/run.ts`
 * and `src/domain/models/method_execution_service.ts` (`executeWorkflow`),
 * with the in-process executor of `in_process_executor.ts`:
 *
 * 1. unknown method → `unknown_method`; `--input` keys outside the method's
 *    arguments → `validation_failed`;
 * 2. a definition whose `typeVersion` is older than the model's version is
 *    moved along the model's `upgrades` and kept so (upgrade.ts); then global
 *    arguments validated (coerced, unknown keys rejected, lenient parse;
 *    parsed values replace the definition's);
 * 3. method kind inferred; for a mutating kind, pre-flight checks;
 * 4. for a mutating kind, the sensitive-output/no-vault fast-fail;
 * 5. for read/update kinds, the all-resources-deleted fast-fail;
 * 6. the executor: writers bound, method args merged and parsed, `execute`
 *    called (console captured), returned handles checked for duplicate names;
 *    a throw anywhere here fails the run but keeps what was written, unless
 *    the method sets `rollbackOnFailure` (then its writes are removed);
 * 7. after a successful delete-kind method, deletion markers.
 *
 * Every failure after step 1 is reported as swamp reports an error out of
 * `executeWorkflow`: code `method_execution_failed` with the error message.
 *
 * @module
 */

import {
  parseMethodArgs,
  unknownInputsError,
  validateGlobalArgs,
} from "./args.ts";
import { withConsoleCapture } from "./console_capture.ts";
import {
  DataStore,
  handleOf,
  recordOf,
  type StoredVersion,
} from "./data_store.ts";
import { createCelEnvironment } from "./cel.ts";
import { makeExtensionFile } from "./extension_file.ts";
import { makeDataRepository } from "./data_repository.ts";
import { makeCreateFileWriter } from "./file_writer.ts";
import { deletedResourceError, writeDeletionMarkers } from "./lifecycle.ts";
import { LogCollector } from "./log_collector.ts";
import { inferMethodKind, isMutatingKind } from "./method_kind.ts";
import { modelProblems } from "./model_shape.ts";
import { normalizeType } from "./model_type.ts";
import { upgradeDefinition } from "./upgrade.ts";
import { runPreflight, selectChecks } from "./preflight.ts";
import {
  makeDeleteResource,
  makeReadResource,
  makeWriteResource,
} from "./resource_io.ts";
import type {
  BaseContext,
  DataHandle,
  Definition,
  MethodContext,
  MethodLike,
  ModelLike,
  RecordVersion,
  RepoOptions,
  RunErrorCode,
  RunOptions,
  RunResult,
} from "./types.ts";
import { MemoryVault, modelRequiresVault, resolveVaultRefs } from "./vault.ts";

export type * from "./types.ts";
export { formatRun } from "./format.ts";
export { inferMethodKind, isMutatingKind } from "./method_kind.ts";

/** What one run accumulates, whatever its outcome. */
interface RunState {
  written: RecordVersion[];
  console: string[];
  logs: LogCollector;
}

type ExecOutcome =
  | { ok: true; handles: DataHandle[] }
  | { ok: false; error: string; handles: DataHandle[] };

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * swamp reads `result.dataHandles` off whatever `execute` resolved to, so a
 * method resolving to nothing fails with the engine's TypeError; handles that
 * share an instance name fail "Data output validation failed".
 */
function returnedHandles(result: unknown): unknown[] | undefined {
  if (result === undefined || result === null) {
    throw new TypeError(
      `Cannot read properties of ${result} (reading 'dataHandles')`,
    );
  }
  const handles = (result as { dataHandles?: unknown[] }).dataHandles;
  if (!handles) return undefined;
  const seen = new Set<unknown>();
  const errors: string[] = [];
  for (const handle of handles) {
    const name = (handle as { name?: unknown } | null)?.name;
    if (seen.has(name)) errors.push(`Duplicate data instance name '${name}'`);
    seen.add(name);
  }
  if (errors.length > 0) {
    throw new Error(`Data output validation failed: ${errors.join("; ")}`);
  }
  return handles;
}

/** One repository's data store for one model definition, shared across runs. */
export class SwampRepo {
  readonly model: ModelLike;
  #definition: Definition;
  readonly #store = new DataStore();
  readonly #vault?: MemoryVault;
  readonly #modelType: { raw: string; normalized: string };
  readonly #definitionId: string;
  readonly #extensionFiles?: Record<string, string>;
  readonly #fileWriters: boolean;

  /**
   * @param model the extension's `model` export
   * @param definition the definition the methods run on
   * @param options repository settings (a configured vault, records already stored)
   * @throws when swamp would not load the model
   */
  constructor(
    model: ModelLike,
    definition: Definition,
    options: RepoOptions = {},
  ) {
    const problems = modelProblems(model);
    if (problems.length > 0) {
      throw new Error(
        `Invalid model '${model.type}':\n${
          problems.map((p) => `  - ${p}`).join("\n")
        }`,
      );
    }
    this.model = model;
    // `swamp model create` stamps the model's version on a new definition.
    this.#definition = {
      ...definition,
      typeVersion: definition.typeVersion === undefined
        ? model.version
        : definition.typeVersion,
    };
    this.#modelType = {
      raw: model.type.trim(),
      normalized: normalizeType(model.type),
    };
    this.#definitionId = definition.id ?? crypto.randomUUID();
    this.#extensionFiles = options.extensionFiles;
    this.#fileWriters = options.fileWriters ?? true;
    if (options.vault) {
      this.#vault = new MemoryVault(
        typeof options.vault === "string" ? options.vault : "default",
      );
    }
    for (const stored of options.data ?? []) this.#store.restore(stored);
  }

  /** The definition as the repository holds it now (upgraded by a run when it was older). */
  get definition(): Definition {
    return this.#definition;
  }

  /** The definition id, i.e. `ctx.modelId`. */
  get modelId(): string {
    return this.#definitionId;
  }

  /**
   * Runs one method like `swamp model method run <name> <method>`, with
   * `args` as the `--input` values. Never throws for a method failure.
   */
  async run(
    method: string,
    args: Record<string, unknown> = {},
    opts: RunOptions = {},
  ): Promise<RunResult> {
    const started = performance.now();
    const state: RunState = {
      written: [],
      console: [],
      logs: new LogCollector(),
    };
    const methodDef = Object.hasOwn(this.model.methods, method)
      ? this.model.methods[method]
      : undefined;
    const kind = methodDef ? inferMethodKind(method, methodDef) : undefined;
    const finish = (
      handles: DataHandle[],
      failure?: { code: RunErrorCode; error: string },
    ): RunResult => ({
      method,
      modelName: this.definition.name,
      kind,
      status: failure ? "failed" : "succeeded",
      ...(failure ? { error: failure.error, errorCode: failure.code } : {}),
      written: state.written,
      dataHandles: handles,
      logs: state.logs.lines,
      console: state.console,
      durationMs: performance.now() - started,
    });

    if (!methodDef) {
      const available = Object.keys(this.model.methods).join(", ");
      return finish([], {
        code: "unknown_method",
        error:
          `Unknown method '${method}' for type '${this.#modelType.normalized}'. ` +
          `Available methods: ${available || "none"}`,
      });
    }
    const inputsError = unknownInputsError(methodDef.arguments, args);
    if (inputsError) {
      return finish([], { code: "validation_failed", error: inputsError });
    }

    try {
      const outcome = await this.#workflow(
        method,
        methodDef,
        kind,
        args,
        opts,
        state,
      );
      return outcome.ok ? finish(outcome.handles) : finish(outcome.handles, {
        code: "method_execution_failed",
        error: outcome.error,
      });
    } catch (error) {
      // run.ts maps an AbortError escaping the service to `cancelled`; the
      // executor rewraps the method's own errors, so in practice only
      // failures outside the method body arrive here.
      const cancelled = error instanceof DOMException &&
        error.name === "AbortError";
      return finish([], {
        code: cancelled ? "cancelled" : "method_execution_failed",
        error: messageOf(error),
      });
    }
  }

  /** Latest data of an instance (tombstone JSON when deleted; a file's text), or null. */
  latest(instance: string): unknown | null {
    const stored = this.#store.get(instance);
    if (!stored) return null;
    if (stored.kind === "file") return stored.content;
    const data: unknown = JSON.parse(stored.content);
    return this.#vault ? resolveVaultRefs(data, this.#vault) : data;
  }

  /** Every version of an instance, oldest first. */
  versions(instance: string): RecordVersion[] {
    return this.#store.all(instance).map(recordOf);
  }

  /** Every instance name in the store, sorted. */
  instances(): string[] {
    return this.#store.names();
  }

  // Steps 2–7 of the module doc; throws for failures before the executor.
  async #workflow(
    method: string,
    methodDef: MethodLike,
    kind: string | undefined,
    args: Record<string, unknown>,
    opts: RunOptions,
    state: RunState,
  ): Promise<ExecOutcome> {
    // executeWorkflow (method_execution_service.ts) upgrades the definition
    // with DefinitionUpgradeService.upgrade (definition_upgrade_service.ts) and
    // saves it before anything else can fail.
    const upgrade = upgradeDefinition(this.#definition, this.model);
    if (upgrade.upgraded) this.#definition = upgrade.definition;
    const resources = this.model.resources ?? {};
    const globalArgs = validateGlobalArgs(
      this.model.globalArguments,
      this.definition.globalArgs,
    );
    const methodArgs = {
      ...(this.definition.methodArgs?.[method] ?? {}),
      ...args,
    };
    const base = this.#baseContext(method, globalArgs, methodArgs, opts, state);

    if (this.model.checks && isMutatingKind(kind)) {
      const selected = selectChecks(this.model.checks, method, {
        require: this.definition.checks?.require,
        skip: this.definition.checks?.skip,
        skipAll: opts.skipChecks,
        skipNames: opts.skipCheckNames,
        skipLabels: opts.skipCheckLabels,
      });
      await runPreflight(
        selected,
        { ...base, globalArgs: { ...globalArgs } },
        state.logs,
      );
    }
    if (isMutatingKind(kind) && modelRequiresVault(resources) && !this.#vault) {
      throw new Error(
        `Model "${this.definition.name}" has sensitive resource output ` +
          `fields but no vault is configured. Create a vault before ` +
          `running this method: swamp vault create <type> <name>`,
      );
    }
    if (kind === "read" || kind === "update") {
      const deleted = deletedResourceError(this.#store, resources);
      if (deleted) throw new Error(deleted);
    }

    const outcome = await this.#execute(methodDef, base, methodArgs, state);
    if (outcome.ok && kind === "delete") {
      for (
        const marker of writeDeletionMarkers(this.#store, resources, method)
      ) {
        state.written.push(recordOf(marker));
        outcome.handles.push(handleOf(marker));
      }
    }
    return outcome;
  }

  #baseContext(
    method: string,
    globalArgs: Record<string, unknown>,
    methodArgs: Record<string, unknown>,
    opts: RunOptions,
    state: RunState,
  ): BaseContext {
    return {
      signal: opts.signal ?? new AbortController().signal,
      modelType: { ...this.#modelType },
      modelId: this.#definitionId,
      globalArgs,
      definition: {
        id: this.#definitionId,
        name: this.definition.name,
        version: this.definition.version ?? 1,
        tags: { ...(this.definition.tags ?? {}) },
      },
      methodName: method,
      logger: state.logs.logger(),
      unresolvedMethodArgs: { ...globalArgs, ...methodArgs },
      extensionFile: makeExtensionFile(
        opts.extensionFiles ?? this.#extensionFiles,
      ),
      // swamp's buildMethodContext (method_context.ts) hands every run the same factory.
      createCelEnvironment,
    };
  }

  // The in-process executor: writers bound to this run, argument parsing and
  // the method body, with everything written before a throw kept.
  async #execute(
    methodDef: MethodLike,
    base: BaseContext,
    methodArgs: Record<string, unknown>,
    state: RunState,
  ): Promise<ExecOutcome> {
    const writerHandles: DataHandle[] = [];
    const saved: StoredVersion[] = [];
    const scope = {
      store: this.#store,
      modelType: this.#modelType.normalized,
      modelId: this.#definitionId,
      definitionName: this.definition.name,
      definitionTags: this.definition.tags ?? {},
      methodName: base.methodName,
      deferred: methodDef.rollbackOnFailure === true,
      onSaved: (stored: StoredVersion, handle: DataHandle) => {
        saved.push(stored);
        state.written.push(recordOf(stored));
        writerHandles.push(handle);
      },
    };
    const deferred = scope.deferred;
    const ctx: MethodContext = {
      ...base,
      globalArgs: { ...base.globalArgs },
      writeResource: makeWriteResource({
        ...scope,
        resources: this.model.resources ?? {},
        logs: state.logs,
        vault: this.#vault,
      }),
      ...(this.#fileWriters
        ? {
          createFileWriter: makeCreateFileWriter({
            ...scope,
            files: this.model.files ?? {},
          }),
        }
        : {}),
      readResource: makeReadResource(this.#store, this.#vault),
      deleteResource: makeDeleteResource(this.#store),
      dataRepository: makeDataRepository(this.#store, this.#definitionId),
    };
    try {
      const returned = await withConsoleCapture(async () => {
        const parsed = parseMethodArgs(
          methodDef.arguments,
          base.globalArgs,
          methodArgs,
        );
        return returnedHandles(await methodDef.execute(parsed, ctx));
      }, state.console);
      // Returned handles, when there are any, ARE the outputs; otherwise every
      // write of the run is.
      const outputs = returned?.length
        ? returned as DataHandle[]
        : writerHandles;
      this.#store.commit(saved);
      return { ok: true, handles: [...outputs] };
    } catch (error) {
      if (!deferred) {
        return {
          ok: false,
          error: messageOf(error),
          handles: [...writerHandles],
        };
      }
      // Rolled back: the versions are gone, so they are neither written nor
      // outputs of this run (swamp's executor returns no outputs then).
      this.#store.rollback(saved);
      state.written.splice(0, state.written.length);
      return { ok: false, error: messageOf(error), handles: [] };
    }
  }
}
