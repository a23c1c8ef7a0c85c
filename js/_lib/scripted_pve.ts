/**
 * For the package's own tests (`proxmox_qemu_test.ts`, `proxmox_lxc_test.ts`): a PVE API on loopback
 * that answers from a script, and a method context like swamp's that collects what a method writes
 * and logs. A method runs exactly as in swamp — `execute(args, ctx)`, real HTTP, the real core.
 *
 * @module
 */

/** An answer: the `data` PVE returns, or a status with an error message. */
export type Answer = { data: unknown } | { status: number; message: string };

/** `"GET /nodes/pve1/qemu/100/status/current"` (path without `/api2/json`) → answer. */
export type Script = Record<string, Answer | (() => Answer)>;

/** A running scripted PVE. */
export interface ScriptedPve {
  /** Base URL for `transport.apiUrl`. */
  url: string;
  /** Every request as `"METHOD path"`, in arrival order. */
  requests: string[];
  close(): Promise<void>;
}

/** Serves `script` on 127.0.0.1; a request it does not name is answered 501 (and recorded). */
export function scriptedPve(script: Script): ScriptedPve {
  const requests: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      await req.body?.cancel();
      const key = `${req.method} ${
        new URL(req.url).pathname.replace(/^\/api2\/json/, "")
      }`;
      requests.push(key);
      const entry = script[key];
      const answer = typeof entry === "function" ? entry() : entry;
      if (!answer) {
        return json(501, { data: null, message: `unscripted ${key}` });
      }
      return "data" in answer
        ? json(200, { data: answer.data })
        : json(answer.status, { data: null, message: answer.message });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    close: () => server.shutdown(),
  };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/** A record a method wrote through the context. */
export interface Written {
  spec: string;
  instance: string;
  data: Record<string, unknown>;
}

/** The part of swamp's method context the package uses, recording writes and log lines. */
export interface ScriptedContext {
  globalArgs: Record<string, unknown>;
  logger: {
    debug(message: string): void;
    info(message: string): void;
    warning(message: string): void;
    error(message: string): void;
  };
  writeResource(
    spec: string,
    instance: string,
    data: Record<string, unknown>,
  ): Promise<unknown>;
  readResource(instance: string): Promise<Record<string, unknown> | null>;
  extensionFile(relPath: string): string;
  written: Written[];
  logs: string[];
}

/** A context whose transport points at `pve` (api, node pve1). */
export function scriptedContext(pve: ScriptedPve): ScriptedContext {
  const written: Written[] = [];
  const logs: string[] = [];
  const log = (level: string) => (message: string) => {
    logs.push(`${level}: ${message}`);
  };
  return {
    globalArgs: {
      name: "test",
      transport: {
        kind: "api",
        node: "pve1",
        apiUrl: pve.url,
        tokenId: "svc@pve!test",
        tokenSecret: "test-secret-not-real",
        skipTlsVerify: false,
      },
      taskTimeoutSec: 5,
      pollIntervalSec: 1,
      requestTimeoutSec: 5,
    },
    logger: {
      debug: log("debug"),
      info: log("info"),
      warning: log("warning"),
      error: log("error"),
    },
    writeResource(spec, instance, data) {
      written.push({ spec, instance, data });
      return Promise.resolve({ name: instance, specName: spec });
    },
    readResource(instance) {
      const last = written.findLast((w) => w.instance === instance);
      return Promise.resolve(last?.data ?? null);
    },
    // The package's files, beside its manifest (js/), as swamp resolves them for a local extension.
    extensionFile: (relPath) =>
      new URL(`../${relPath}`, import.meta.url).pathname,
    written,
    logs,
  };
}

/** A model method as the runner below calls it. */
interface RunnableMethod {
  arguments: { parse(value: unknown): unknown };
  // deno-lint-ignore no-explicit-any
  execute(args: any, ctx: any): Promise<{ dataHandles: unknown[] }>;
}

/**
 * Runs `method` of `model` as swamp does — arguments parsed over `{...globalArgs, ...args}`, then
 * `execute` — against a scripted PVE answering `script`: its result or error, the context (what it
 * wrote and logged) and the requests PVE received.
 */
export async function runScripted(
  model: { methods: Record<string, RunnableMethod> },
  method: string,
  args: Record<string, unknown>,
  script: Script,
) {
  const pve = scriptedPve(script);
  const ctx = scriptedContext(pve);
  try {
    const m = model.methods[method];
    const parsed = m.arguments.parse({ ...ctx.globalArgs, ...args });
    const outcome = await m.execute(parsed, ctx).then(
      (result) => ({ result, error: undefined }),
      (error: Error) => ({ result: undefined, error }),
    );
    return { ...outcome, ctx, requests: pve.requests };
  } finally {
    await pve.close();
  }
}
