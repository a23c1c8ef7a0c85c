/**
 * The wasm core's own share of a cold start, in a fresh process: `<glue url> <wasm path>` times
 * (1) the glue's import and the module's read, compile and instantiation, (2) the first lookup of
 * VM 100 on a host that answers at once from memory — no network, so what it measures is V8
 * compiling, on first call, the code a lookup runs, and the run — and (3) the same lookup again
 * (the run alone). Prints one JSON line.
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

const host = {
  http: (request: { url: string }) =>
    Promise.resolve({
      status: 200,
      statusText: "OK",
      body: JSON.stringify({
        data: ANSWERS[request.url.replace(/^.*\/qemu\/100\//, "")] ?? null,
      }),
    }),
  run: () => Promise.reject({ kind: "spawn", message: "no ssh here" }),
  sleep: (ms: number) => new Promise((done) => setTimeout(done, ms)),
  now: () => Date.now(),
  log: () => {},
  readRecord: () => Promise.resolve(null),
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

const started = performance.now();
const glue = await import(glueUrl) as Glue;
glue.initSync({ module: Deno.readFileSync(wasmPath) });
const loadMs = performance.now() - started;
const firstMs = await lookupMs(glue);
const againMs = await lookupMs(glue);
console.log(
  JSON.stringify({ status: "succeeded", loadMs, firstMs, againMs }),
);
