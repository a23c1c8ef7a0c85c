/**
 * The effects the Rust core asks for, implemented with Deno: HTTP with `fetch`, the ssh client with
 * `Deno.Command` (argv only, never a shell), sleep, clock, the swamp logger, the record store and
 * swamp's CEL environment. Nothing here decides anything; every decision is the core's.
 *
 * @module
 */

/** The subset of swamp's method context the host uses. */
export interface HostContext {
  logger: {
    debug?(message: string, props?: Record<string, unknown>): void;
    info(message: string, props?: Record<string, unknown>): void;
    warning?(message: string, props?: Record<string, unknown>): void;
    warn?(message: string, props?: Record<string, unknown>): void;
    error(message: string, props?: Record<string, unknown>): void;
  };
  signal?: AbortSignal;
  readResource?(instance: string): Promise<unknown>;
  /** swamp's model type and definition id: the data repository lists records by them. */
  modelType?: unknown;
  modelId?: string;
  /** swamp's data repository (`findAllForModel` lists the latest version of every record). */
  dataRepository?: {
    findAllForModel(
      type: unknown,
      modelId: string,
    ): Promise<{ name: string; tags?: Record<string, string> }[]>;
  };
  /**
   * A fresh cel-js environment with swamp's registrations (swamp's `MethodContext`,
   * src/domain/models/model.ts; built by `createExtensionCelEnvironment`,
   * src/infrastructure/cel/cel_evaluator.ts).
   */
  createCelEnvironment?(): {
    parse(expression: string): (context: Record<string, unknown>) => unknown;
  };
  /**
   * A writer of one file output of a spec the model declares in `files` (swamp's `MethodContext`,
   * src/domain/models/model.ts; `createFileWriterFactory`, data_writer.ts). Absent in a check's
   * context and in a swamp that predates file outputs.
   */
  createFileWriter?(
    spec: string,
    name: string,
  ): { writeText(text: string): Promise<{ name: string }> };
}

/** An HTTP exchange assembled by the core. */
export interface HttpRequest {
  method: string;
  url: string;
  headers: [string, string][];
  body?: string | null;
  timeoutMs: number;
  caCert?: string | null;
  skipTlsVerify: boolean;
}

/** A local program run requested by the core. */
export interface ProcessRequest {
  argv: string[];
  timeoutMs: number;
}

/** Why an effect could not complete; the core classifies by `kind`. */
export interface HostError {
  kind: "network" | "timeout" | "tls" | "spawn" | "aborted" | "internal";
  message: string;
}

/** The object handed to the core; see `CoreHost` in the generated glue. */
export interface Host {
  http(
    request: HttpRequest,
  ): Promise<{ status: number; statusText: string; body: string }>;
  run(
    request: ProcessRequest,
  ): Promise<{
    code: number | null;
    stdout: string;
    stderr: string;
    /** Bytes written to each stream, counted before decoding (the text replaces invalid UTF-8). */
    stdoutBytes?: number;
    stderrBytes?: number;
  }>;
  sleep(ms: number): Promise<void>;
  now(): number;
  log(level: "debug" | "info" | "warning" | "error", message: string): void;
  readRecord(instance: string): Promise<unknown>;
  /** The latest versions of several records, in order; null for one not stored or not readable. */
  readRecords(instances: string[]): Promise<unknown[]>;
  /** Instance names of this definition's records of one spec; null when the context cannot list. */
  listRecords(spec: string): Promise<string[] | null>;
  /** What a selection expression yields over a guest's fields (JSON text); throws why it cannot. */
  select(expression: string, fields: string): unknown;
  /** Stores a text as a file output; the name swamp stored it under, null when it stores no files. */
  writeFile(spec: string, name: string, text: string): Promise<string | null>;
  /** The handles of the files this run stored, in order. */
  files: unknown[];
  aborted(): boolean;
  /** Frees the run's HTTP clients and ends the pauses it left behind. */
  close(): void;
}

/**
 * Builds the host of one method run. Reads share the process's keep-alive connections (see
 * {@link readClient}); everything else is the run's own.
 */
export function createHost(ctx: HostContext): Host {
  const signal = ctx.signal ?? new AbortController().signal;
  // Mutations get a client that never reuses a connection: when a pooled connection drops before
  // the answer, fetch silently re-sends the request, and a re-sent POST (agent/exec, clone) could
  // run twice. Such clients are the run's own and closed with it.
  const mutationClients = new Map<string, Deno.HttpClient>();
  const mutationClient = (caCert: string) => {
    let client = mutationClients.get(caCert);
    if (!client) {
      client = Deno.createHttpClient({
        ...(caCert ? { caCerts: [caCert] } : {}),
        poolMaxIdlePerHost: 0,
      });
      mutationClients.set(caCert, client);
    }
    return client;
  };
  const reads = new Set<string>();
  const sleeping = new Set<() => void>();
  // One listener wakes every pause of the run: a fleet's runs pause often, and a listener added
  // and removed at each pause cost more than the pause itself.
  signal.addEventListener("abort", () => sleeping.forEach((wake) => wake()), {
    once: true,
  });
  const clientFor = (request: HttpRequest) => {
    const caCert = request.caCert ?? "";
    if (request.method !== "GET") return mutationClient(caCert);
    const join = !reads.has(caCert);
    reads.add(caCert);
    return readClient(caCert, join);
  };
  const files: unknown[] = [];
  return {
    http: (request) => sendHttp(request, signal, clientFor(request)),
    run: (request) => runProcess(request, signal),
    sleep: (ms) => sleep(ms, signal, sleeping),
    now: () => Date.now(),
    log: (level, message) => log(ctx, level, message),
    readRecord: async (instance) =>
      (ctx.readResource ? await ctx.readResource(instance) : null) ?? null,
    readRecords: (instances) => readRecords(ctx, instances),
    listRecords: (spec) => listRecords(ctx, spec),
    select: selector(ctx),
    writeFile: async (spec, name, text) => {
      if (!ctx.createFileWriter) return null;
      const handle = await ctx.createFileWriter(spec, name).writeText(text);
      files.push(handle);
      return handle.name;
    },
    files,
    aborted: () => signal.aborted,
    close: () => {
      mutationClients.forEach((client) => client.close());
      reads.forEach(releaseReadClient);
      sleeping.forEach((wake) => wake());
    },
  };
}

/** A keep-alive client for reads and the runs using it now. */
interface SharedClient {
  client: Deno.HttpClient;
  runs: number;
}

/**
 * The read clients of the process, by CA: every run that overlaps another reuses its keep-alive
 * connections (a new TLS handshake costs pveproxy a worker's time), at most as many per node as
 * the core lets requests fly at once (src/watch/mod.rs, 3). Kept on the global symbol registry so
 * both models' bundles share them; a client is closed when its last run ends.
 */
const READ_CLIENTS = Symbol.for("@stateless/proxmox read clients");
const CONNECTIONS_PER_NODE = 3;

function readClients(): Map<string, SharedClient> {
  const registry = globalThis as unknown as Record<
    symbol,
    Map<string, SharedClient> | undefined
  >;
  return (registry[READ_CLIENTS] ??= new Map());
}

/** The shared read client for `caCert`; `join` counts the calling run in (once per run). */
function readClient(caCert: string, join: boolean): Deno.HttpClient {
  const clients = readClients();
  let shared = clients.get(caCert);
  if (!shared) {
    shared = {
      client: Deno.createHttpClient({
        ...(caCert ? { caCerts: [caCert] } : {}),
        poolMaxIdlePerHost: CONNECTIONS_PER_NODE,
      }),
      runs: 0,
    };
    clients.set(caCert, shared);
  }
  if (join) shared.runs++;
  return shared.client;
}

function releaseReadClient(caCert: string): void {
  const clients = readClients();
  const shared = clients.get(caCert);
  if (!shared || --shared.runs > 0) return;
  shared.client.close();
  clients.delete(caCert);
}

/** How many records {@link readRecords} reads at once. */
const RECORD_READS = 8;

/**
 * The latest versions of `instances`, in order, {@link RECORD_READS} reads at a time (a sync of
 * 1,000 guests hands over its whole list in one call); one that is not stored or cannot be read
 * is null, as the core treats both alike (it reads the guest's config instead).
 */
async function readRecords(
  ctx: HostContext,
  instances: string[],
): Promise<unknown[]> {
  const records: unknown[] = instances.map(() => null);
  if (!ctx.readResource) return records;
  // Called on ctx, not detached from it: swamp's readResource may rely on `this`.
  const read = (instance: string) =>
    ctx.readResource?.(instance) ?? Promise.resolve(null);
  let next = 0;
  const reader = async () => {
    while (next < instances.length) {
      const at = next++;
      records[at] = await read(instances[at]).then(
        (r) => r ?? null,
        () => null,
      );
    }
  };
  const readers = Math.min(RECORD_READS, instances.length);
  await Promise.all(Array.from({ length: readers }, reader));
  return records;
}

/** The names of the definition's records of `spec` (swamp tags each version with its `specName`). */
async function listRecords(
  ctx: HostContext,
  spec: string,
): Promise<string[] | null> {
  const repo = ctx.dataRepository;
  if (!repo || ctx.modelId === undefined) return null;
  const all = await repo.findAllForModel(ctx.modelType, ctx.modelId);
  const names = all.filter((d) => d.tags?.specName === spec).map((d) => d.name);
  return [...new Set(names)];
}

/**
 * Evaluates selection expressions in swamp's CEL environment, each compiled once per run; a
 * compile or evaluation error is thrown with cel-js's words (the core names the field).
 */
function selector(ctx: HostContext): Host["select"] {
  const compiled = new Map<
    string,
    (context: Record<string, unknown>) => unknown
  >();
  return (expression, fields) => {
    if (!ctx.createCelEnvironment) {
      throw new Error(
        "this swamp gives extensions no CEL environment (ctx.createCelEnvironment): update swamp",
      );
    }
    let evaluate = compiled.get(expression);
    if (!evaluate) {
      evaluate = ctx.createCelEnvironment().parse(expression);
      compiled.set(expression, evaluate);
    }
    return evaluate(JSON.parse(fields));
  };
}

function hostError(kind: HostError["kind"], message: string): HostError {
  return { kind, message };
}

async function sendHttp(
  request: HttpRequest,
  runSignal: AbortSignal,
  client: Deno.HttpClient,
) {
  const timeout = AbortSignal.timeout(request.timeoutMs);
  try {
    const response = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body ?? undefined,
      signal: AbortSignal.any([runSignal, timeout]),
      client,
    });
    return {
      status: response.status,
      statusText: response.statusText,
      body: await response.text(),
    };
  } catch (error) {
    throw classifyFetchError(error, request, runSignal, timeout);
  }
}

/** Names the failure without echoing the request's headers (they carry the token). */
function classifyFetchError(
  error: unknown,
  request: HttpRequest,
  run: AbortSignal,
  timeout: AbortSignal,
): HostError {
  const where = `${request.method} ${new URL(request.url).origin}${
    new URL(request.url).pathname
  }`;
  if (run.aborted) return hostError("aborted", `${where}: the run was aborted`);
  if (timeout.aborted) {
    return hostError(
      "timeout",
      `${where}: no answer within ${request.timeoutMs} ms`,
    );
  }
  const text = error instanceof Error
    ? `${error.message}${causeOf(error)}`
    : String(error);
  if (/certificate|UnknownIssuer|tls|handshake|self[- ]signed/i.test(text)) {
    const skip = request.skipTlsVerify
      ? " (skipTlsVerify cannot turn verification off inside swamp's Deno runtime: give caCert instead)"
      : "";
    return hostError(
      "tls",
      `${where}: TLS verification failed: ${text}${skip}`,
    );
  }
  return hostError("network", `${where}: ${text}`);
}

function causeOf(error: Error): string {
  return error.cause instanceof Error ? ` (${error.cause.message})` : "";
}

async function runProcess(request: ProcessRequest, runSignal: AbortSignal) {
  const [program, ...args] = request.argv;
  const timeout = AbortSignal.timeout(request.timeoutMs);
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(program, {
      args,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.any([runSignal, timeout]),
    }).spawn();
  } catch (error) {
    throw hostError(
      "spawn",
      `could not start ${program}: ${
        error instanceof Error ? error.message : error
      }`,
    );
  }
  const output = await child.output();
  if (runSignal.aborted) {
    throw hostError("aborted", `${program}: the run was aborted`);
  }
  if (timeout.aborted) {
    throw hostError(
      "timeout",
      `${program} did not finish within ${request.timeoutMs} ms`,
    );
  }
  const decoder = new TextDecoder();
  return {
    code: output.signal ? null : output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
    stdoutBytes: output.stdout.length,
    stderrBytes: output.stderr.length,
  };
}

/**
 * Sleeps `ms`, or less when the run is aborted or its host closed (`sleeping` holds the run's
 * wakers, which the run's one abort listener calls). The core races some pauses against a shared task-list read and drops the pause that
 * lost; its timer is still set, so the run's end clears it rather than let it hold the process
 * for the rest of the run's budget.
 */
function sleep(
  ms: number,
  signal: AbortSignal,
  sleeping: Set<() => void>,
): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      sleeping.delete(done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    sleeping.add(done);
  });
}

/**
 * Logs `message`. swamp's logger (LogTape) reads `{…}` in a message as a placeholder and would
 * blank the braces of a command, a config or a JSON value quoted in it, so such a message goes as
 * the property of a fixed template (the run's log file then shows it quoted); any other as is.
 */
export function log(
  ctx: HostContext,
  level: "debug" | "info" | "warning" | "error",
  message: string,
) {
  const logger = ctx.logger;
  const args: [string, Record<string, unknown>?] = /[{}]/.test(message)
    ? ["{message}", { message }]
    : [message];
  if (level === "debug") logger.debug?.(...args);
  else if (level === "info") logger.info(...args);
  else if (level === "warning") {
    (logger.warning ?? logger.warn)?.call(logger, ...args);
  } else logger.error(...args);
}
