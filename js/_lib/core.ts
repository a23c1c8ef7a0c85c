/**
 * Runs a method on the Rust core: loads the wasm module the manifest ships (once per process, on
 * first use), hands it a host, writes the records it returns, and throws when its verdict is
 * "failed" (after the records are written, so swamp keeps the evidence).
 *
 * @module
 */
import {
  initSync,
  runMethod,
  validateArguments,
} from "./generated/core_glue.ts";
import { CORE_ID } from "./generated/core_id.ts";
import { createHost, type HostContext, log } from "./host.ts";

/** The core's wasm module: a manifest `binaries` entry, relative to the manifest. */
export const WASM_FILE = "_lib/generated/proxmox_core.wasm";

/**
 * Where the wasm module is found: swamp's `ctx.extensionFile`, which resolves a shipped file
 * wherever the package lives (a local extension, a pulled one, a remote worker's cache).
 */
export interface PackageFiles {
  extensionFile(relPath: string): string;
}

/** The models the core implements. */
export type ModelName = "qemu" | "lxc";

/** A swamp data handle, as `ctx.writeResource` returns it. */
export type DataHandle = unknown;

/** The part of swamp's method context a core run uses. */
export interface MethodContext extends HostContext, PackageFiles {
  globalArgs: Record<string, unknown>;
  writeResource(
    spec: string,
    instance: string,
    data: unknown,
  ): Promise<DataHandle>;
}

interface CoreOutcome {
  writes: { spec: string; instance: string; data: unknown }[];
  /** The handles of the files the run stored (the host's, not the core's answer). */
  files: DataHandle[];
  verdict: { status: "succeeded"; summary: string } | {
    status: "failed";
    message: string;
  };
}

/** The loaded core's entry points. */
interface Core {
  runMethod: typeof runMethod;
  validateArguments: typeof validateArguments;
}

/**
 * Where the process keeps its one loaded core. swamp bundles each model on its own, glue
 * included, so a module-level variable would give the qemu and the lxc model an instance each;
 * the global symbol registry gives them one, and with it one set of shared waits and request caps
 * per node (src/watch/). Keyed by the module's digest: only the same core is shared.
 */
const PROCESS_CORE = Symbol.for(`@stateless/proxmox core ${CORE_ID}`);

/** Instantiates the wasm once per process, on first use (never at import: swamp imports to index). */
function loadCore(files: PackageFiles): Core {
  const registry = globalThis as unknown as Record<symbol, Core | undefined>;
  const shared = registry[PROCESS_CORE];
  if (shared) return shared;
  initSync({ module: Deno.readFileSync(files.extensionFile(WASM_FILE)) });
  const core = { runMethod, validateArguments };
  registry[PROCESS_CORE] = core;
  return core;
}

/** Asks the core for a method's outcome, without writing anything. */
export async function decide(
  model: ModelName,
  method: string,
  args: Record<string, unknown>,
  ctx: HostContext & PackageFiles,
): Promise<CoreOutcome> {
  const core = loadCore(ctx);
  const host = createHost(ctx);
  try {
    // The outcome crosses as its JSON text: one string, parsed once (src/wasm.rs).
    const outcome = JSON.parse(
      await core.runMethod(model, method, JSON.stringify(args), host),
    ) as CoreOutcome;
    return { ...outcome, files: host.files };
  } finally {
    host.close();
  }
}

/** What a run acts on, for its first log line: the guest or the node its arguments name. */
function subject(model: ModelName, args: Record<string, unknown>): string {
  const guest = args.vmid ?? args.vmName;
  if (typeof guest === "number" || typeof guest === "string") {
    return ` on ${model === "qemu" ? "VM" : "container"} ${guest}`;
  }
  return typeof args.node === "string" ? ` on node ${args.node}` : "";
}

/** Runs a method: records first, then the verdict (a throw on failure). */
export async function runOnCore(
  model: ModelName,
  method: string,
  args: Record<string, unknown>,
  ctx: MethodContext,
): Promise<{ dataHandles: DataHandle[] }> {
  log(ctx, "info", `running ${method}${subject(model, args)}`);
  const outcome = await decide(
    model,
    method,
    { ...ctx.globalArgs, ...args },
    ctx,
  );
  // The files (a task's log) were stored during the run; they are outputs as the records are.
  const dataHandles: DataHandle[] = [...outcome.files];
  for (const write of outcome.writes) {
    dataHandles.push(
      await ctx.writeResource(write.spec, write.instance, write.data),
    );
  }
  if (outcome.verdict.status === "failed") {
    throw new Error(outcome.verdict.message);
  }
  log(ctx, "info", outcome.verdict.summary);
  return { dataHandles };
}

/** The part of swamp's check context a core check uses (checks get no record writers). */
export interface CheckContext extends HostContext, PackageFiles {
  globalArgs: Record<string, unknown>;
}

/** Runs a check on the core: `{pass, errors}` as swamp expects. */
export async function checkOnCore(
  model: ModelName,
  check: string,
  ctx: CheckContext,
): Promise<{ pass: boolean; errors?: string[] }> {
  const outcome = await decide(model, `check:${check}`, ctx.globalArgs, ctx);
  return outcome.verdict.status === "succeeded"
    ? { pass: true }
    : { pass: false, errors: [outcome.verdict.message] };
}

/**
 * The core's verdict on a method's arguments (`{...globalArgs, ...methodArgs}`): the error naming
 * the field and the rule, or `undefined` when they are valid. No request is made.
 */
export function validateOnCore(
  files: PackageFiles,
  model: ModelName,
  method: string,
  args: Record<string, unknown>,
): string | undefined {
  return loadCore(files).validateArguments(
    model,
    method,
    JSON.stringify(args),
  ) ??
    undefined;
}
