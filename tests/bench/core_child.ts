/**
 * The wasm core's own share of a cold start, in a fresh process: `<glue url> <wasm path>` times
 * (1) the glue's import and the module's read, compile and instantiation, (2) the first lookup of
 * VM 100 on a host that answers at once from memory — no network, so what it measures is V8
 * compiling, on first call, the code a lookup runs, and the run — and (3) the same lookup again
 * (the run alone); then (4) a sync of a 1,000-guest node whose list the host holds in memory, the
 * first in the process and (5) again: the core's own part of a sync (issue 32: ≤ 60 ms). Prints
 * one JSON line.
 *
 * @module
 */

interface Glue {
  initSync(init: { module: Uint8Array }): unknown;
  runMethod(
    model: string,
    method: string,
    argsJson: string,
    host: unknown,
  ): Promise<string>;
}

const [glueUrl, wasmPath] = Deno.args;

const ANSWERS: Record<string, unknown> = {
  "status/current": { status: "running", qmpstatus: "running", name: "web" },
  config: { name: "web", smbios1: "uuid=6a3c2f1e-0000-4000-8000-000000000100" },
};

/** `GET /nodes/pve1/qemu?full=1` of a node with 1,000 guests, as PVE lists them. */
const SYNC_GUESTS = 1000;
const NODE_LIST = JSON.stringify({
  data: Array.from({ length: SYNC_GUESTS }, (_, i) => ({
    vmid: 1000 + i,
    name: `guest-${i}`,
    status: i % 3 ? "running" : "stopped",
    qmpstatus: i % 3 ? "running" : "stopped",
    cpu: 0.0123,
    cpus: 2,
    maxmem: 2147483648,
    mem: 1073741824,
    maxdisk: 34359738368,
    disk: 0,
    uptime: 12345,
    netin: 1234,
    netout: 4321,
    tags: "swamp;web",
    pid: 4000 + i,
  })),
});

const host = {
  http: (request: { url: string }) =>
    Promise.resolve({
      status: 200,
      statusText: "OK",
      body: /\/nodes\/pve1\/qemu(\?|$)/.test(request.url)
        ? NODE_LIST
        : JSON.stringify({
          data: ANSWERS[request.url.replace(/^.*\/qemu\/100\//, "")] ?? null,
        }),
    }),
  run: () => Promise.reject({ kind: "spawn", message: "no ssh here" }),
  sleep: (ms: number) => new Promise((done) => setTimeout(done, ms)),
  now: () => Date.now(),
  log: () => {},
  readRecord: () => Promise.resolve(null),
  readRecords: (instances: string[]) =>
    Promise.resolve(instances.map(() => null)),
  listRecords: () => Promise.resolve(null),
  aborted: () => false,
};

const ARGS = JSON.stringify({
  name: "cold",
  transport: {
    kind: "api",
    node: "pve1",
    apiUrl: "https://pve1.invalid:8006",
    tokenId: "root@pam!bench",
    tokenSecret: "bench-secret",
  },
  vmid: 100,
});

async function lookupMs(glue: Glue): Promise<number> {
  const started = performance.now();
  const outcome = JSON.parse(
    await glue.runMethod("qemu", "lookup", ARGS, host),
  ) as { verdict: { status: string } };
  const ms = performance.now() - started;
  if (outcome.verdict.status !== "succeeded") {
    throw new Error(`lookup ${JSON.stringify(outcome.verdict)}`);
  }
  return ms;
}

async function syncMs(glue: Glue): Promise<number> {
  const { vmid: _, ...node } = JSON.parse(ARGS);
  const started = performance.now();
  const outcome = JSON.parse(
    await glue.runMethod("qemu", "sync", JSON.stringify(node), host),
  ) as { verdict: { status: string }; writes?: unknown[] };
  const ms = performance.now() - started;
  if (
    outcome.verdict.status !== "succeeded" ||
    outcome.writes?.length !== SYNC_GUESTS
  ) {
    throw new Error(`sync ${JSON.stringify(outcome.verdict)}`);
  }
  return ms;
}

const started = performance.now();
const glue = await import(glueUrl) as Glue;
glue.initSync({ module: Deno.readFileSync(wasmPath) });
const loadMs = performance.now() - started;
const firstMs = await lookupMs(glue);
const againMs = await lookupMs(glue);
const syncFirstMs = await syncMs(glue);
const syncAgainMs = await syncMs(glue);
console.log(
  JSON.stringify({
    status: "succeeded",
    loadMs,
    firstMs,
    againMs,
    syncFirstMs,
    syncAgainMs,
  }),
);
