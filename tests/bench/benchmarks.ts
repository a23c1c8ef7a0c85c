/**
 * The measurements: each drives a package's methods through the harness against the simulator (the
 * real qemu-ga for guestExec) and returns table rows with one cell per package. A method a package
 * does not have gives "not implemented yet" (this package) or "no <method> method" (a baseline),
 * never a number.
 *
 * @module
 */
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { GuestAgent } from "../../simulator/qga.ts";
import { startBenchEnv, TOKEN } from "./fixture.ts";
import { fleet, scenarioGuests } from "./guests.ts";
import { hasMethod, type Package, packageFiles } from "./package.ts";
import { type Cell, formatValue, type Row, type Target } from "./table.ts";
import { pushArchiveBytes } from "./archive.ts";
import { FLEET_SIZE, fleetRows } from "./fleet.ts";
import { fleetScaleRows } from "./fleet_scale.ts";
import { marginalRows } from "./marginal.ts";
import budget from "../../size_budget.json" with { type: "json" };

/** The benchmark groups, in table order. */
export const GROUPS = [
  "sync",
  "exec",
  "task",
  "requests",
  "cold",
  "size",
  "marginal",
  "archive",
  "fleet",
] as const;
/** A benchmark group. */
export type Group = typeof GROUPS[number];

/** What to measure and how often. */
export interface BenchOptions {
  /** Repetitions per measurement (median reported). */
  reps: number;
  /** Repetitions of each cold-start process (after one unmeasured warm-up). */
  coldReps: number;
  groups: readonly Group[];
  syncSizes: number[];
  latenciesMs: number[];
  /** guestExec poll settings: undefined = the package's default. */
  pollIntervals: (number | undefined)[];
  /** Methods of the requests group; default all of {@link METHOD_CASES}. */
  methods?: string[];
  /** Per-run bound. */
  timeoutMs: number;
  /** The optimised wasm of this package (first package only), for the size rows. */
  wasmPath?: string;
  /** The project root (builds for the marginal-cost rows). */
  root: string;
  /** The project's deno.json, for the cold-start child processes. */
  denoConfig: string;
  /** Progress lines (stderr). */
  progress?: (line: string) => void;
}

/** Default options: the full run of `deno task bench`. */
export function defaultOptions(root: string): BenchOptions {
  return {
    reps: 5,
    coldReps: 9,
    groups: GROUPS,
    syncSizes: [10, 100, 1000],
    latenciesMs: [0, 5],
    pollIntervals: [undefined, 1],
    timeoutMs: 120_000,
    wasmPath: join(root, "target/wasm-bindgen/proxmox_core.opt.wasm"),
    root,
    denoConfig: join(root, "deno.json"),
  };
}

/** "not implemented yet" for this package (index 0), "no <m> method" for a baseline. */
function absent(index: number, method: string): Cell {
  return {
    missing: index === 0 ? "not implemented yet" : `no ${method} method`,
  };
}

const firstLine = (s: string | undefined) =>
  (s ?? "").split("\n")[0].slice(0, 80);

/** Runs every selected group; rows in table order. */
export async function runBenchmarks(
  pkgs: Package[],
  agent: GuestAgent,
  opts: BenchOptions,
): Promise<Row[]> {
  const rows: Row[] = [];
  const say = opts.progress ?? (() => {});
  for (const pkg of pkgs) await warmUp(pkg, agent);
  if (opts.groups.includes("sync")) {
    for (const n of opts.syncSizes) {
      for (const latency of opts.latenciesMs) {
        say(`sync ${n} guests @ ${latency} ms`);
        const cells = [];
        for (const [i, pkg] of pkgs.entries()) {
          cells.push(await syncCells(pkg, i, n, latency, opts));
        }
        rows.push(...syncRows(n, latency, cells));
      }
    }
  }
  if (opts.groups.includes("exec")) {
    for (const poll of opts.pollIntervals) {
      for (const [label, command, nominalMs] of EXEC_COMMANDS) {
        say(`guestExec ${label}, pollIntervalSec ${poll ?? "default"}`);
        const cells: Cell[] = [];
        for (const [i, pkg] of pkgs.entries()) {
          cells.push(
            await execOverhead(pkg, i, agent, command, nominalMs, poll, opts),
          );
        }
        rows.push(execRow(label, poll, nominalMs, cells));
      }
    }
  }
  if (opts.groups.includes("task")) {
    for (const [action, taskMs] of TASK_RUNS) {
      say(`${action}, task of ${taskMs} ms: task end → return`);
      const lags: Cell[] = [];
      const polls: Cell[] = [];
      for (const [i, pkg] of pkgs.entries()) {
        const measured = await taskEndLag(pkg, i, action, taskMs, opts);
        lags.push(measured.lag);
        polls.push(measured.polls);
      }
      const name = `${action}, task of ${taskMs.toLocaleString("en-US")} ms`;
      rows.push({
        benchmark: name,
        measure: "return after the task's end",
        unit: "ms",
        cells: lags,
        target: noticed(taskMs),
      }, {
        benchmark: name,
        measure: "task status reads",
        unit: "requests",
        cells: polls,
      });
    }
  }
  if (opts.groups.includes("requests")) {
    const cases = METHOD_CASES.filter(([m]) =>
      !opts.methods || opts.methods.includes(m)
    );
    for (const [method, args] of cases) {
      say(`requests of ${method}`);
      const cells: Cell[] = [];
      for (const [i, pkg] of pkgs.entries()) {
        cells.push(await requestsOf(pkg, i, agent, method, args, opts));
      }
      const most = REQUEST_TARGETS[method];
      rows.push({
        benchmark: `${method} (one run)`,
        measure: "requests (besides swamp's GET /version check)",
        unit: "requests",
        cells,
        target: most === undefined
          ? undefined
          : { text: `≤ ${most}`, met: (v) => v <= most },
      });
    }
  }
  if (opts.groups.includes("cold")) {
    say("cold start");
    rows.push(...await coldStartRows(pkgs, opts));
  }
  if (opts.groups.includes("size")) {
    say("shipped size");
    rows.push(...await sizeRows(pkgs, opts));
  }
  if (opts.groups.includes("marginal")) {
    say("marginal cost of a method (builds the core without it)");
    rows.push(...await marginalRows(opts.root, pkgs.length));
  }
  if (opts.groups.includes("fleet")) {
    say(`fleet: ${FLEET_SIZE} guests started together`);
    rows.push(...await fleetRows(pkgs, opts));
    rows.push(...await fleetScaleRows(pkgs, opts));
  }
  if (opts.groups.includes("archive")) {
    say("push archive (real swamp: extension quality)");
    rows.push(await archiveRow(pkgs));
  }
  return rows;
}

/** One unmeasured lookup per package: instantiates the wasm and warms the JIT. */
async function warmUp(pkg: Package, agent: GuestAgent): Promise<void> {
  if (!hasMethod(pkg, "lookup")) return;
  const env = await startBenchEnv(pkg, agent, { guests: scenarioGuests() });
  try {
    await env.run("lookup", { vmid: 100 });
  } finally {
    await env.close();
  }
}

// ---------------------------------------------------------------- sync

async function syncCells(
  pkg: Package,
  index: number,
  n: number,
  latencyMs: number,
  opts: BenchOptions,
): Promise<{ requests: Cell; wall: Cell }> {
  if (!hasMethod(pkg, "sync")) {
    const a = absent(index, "sync");
    return { requests: a, wall: a };
  }
  const env = await startBenchEnv(pkg, undefined, {
    guests: fleet(n),
    nodes: ["pve1"],
    latencyMs,
  });
  const requests: number[] = [];
  const wall: number[] = [];
  try {
    for (let r = 0; r < opts.reps; r++) {
      const run = await env.run("sync", {}, opts.timeoutMs);
      if (run.result.status !== "succeeded") {
        const m = { missing: `failed: ${firstLine(run.result.error)}` };
        return { requests: m, wall: m };
      }
      // One record per guest, whatever the package names it (upstream: the guest's name).
      const guests = new Set(
        run.result.written.filter((w) => !w.tombstone).map((w) => w.instance),
      );
      if (guests.size < n) {
        const m = { missing: `recorded ${guests.size} of ${n} guests` };
        return { requests: m, wall: m };
      }
      requests.push(run.requests);
      wall.push(run.wallMs);
    }
  } finally {
    await env.close();
  }
  return { requests: { samples: requests }, wall: { samples: wall } };
}

function syncRows(
  n: number,
  latencyMs: number,
  cells: { requests: Cell; wall: Cell }[],
): Row[] {
  const name = `sync ${n.toLocaleString("en-US")} guests @ ${latencyMs} ms`;
  const headline = n === 1000 && latencyMs === 5;
  return [
    {
      benchmark: name,
      measure: "requests",
      unit: "requests",
      cells: cells.map((c) => c.requests),
      target: headline ? { text: "≤ 3", met: (v) => v <= 3 } : undefined,
    },
    {
      benchmark: name,
      measure: "wall time",
      unit: "ms",
      cells: cells.map((c) => c.wall),
    },
  ];
}

// ---------------------------------------------------------------- guestExec

const EXEC_COMMANDS: [string, string[], number][] = [
  ["`true`", ["true"], 0],
  ["`sleep 0.2`", ["sleep", "0.2"], 200],
];

async function execOverhead(
  pkg: Package,
  index: number,
  agent: GuestAgent,
  command: string[],
  nominalMs: number,
  poll: number | undefined,
  opts: BenchOptions,
): Promise<Cell> {
  if (!hasMethod(pkg, "guestExec")) return absent(index, "guestExec");
  const env = await startBenchEnv(pkg, agent, {
    guests: scenarioGuests(),
    globalArgs: poll === undefined ? {} : { pollIntervalSec: poll },
  });
  const samples: number[] = [];
  try {
    for (let r = 0; r < opts.reps; r++) {
      const run = await env.run(
        "guestExec",
        { vmid: 100, command },
        opts.timeoutMs,
      );
      if (run.result.status !== "succeeded") {
        return { missing: `failed: ${firstLine(run.result.error)}` };
      }
      samples.push(run.wallMs - nominalMs);
    }
  } finally {
    await env.close();
  }
  return { samples };
}

function execRow(
  label: string,
  poll: number | undefined,
  nominalMs: number,
  cells: Cell[],
): Row {
  const sleep = nominalMs > 0;
  return {
    benchmark: `guestExec ${label}, pollIntervalSec ${poll ?? "default (3)"}`,
    measure: `wall time − ${nominalMs} ms command`,
    unit: "ms",
    cells,
    target: sleep ? { text: "≤ 100 ms", met: (v) => v <= 100 } : shortExec,
  };
}

/** Short exec: overhead ≤ max(2 × baseline, baseline + 3 ms), the baseline measured in the same run. */
function shortExec(base: number | undefined): Target | undefined {
  if (base === undefined) return undefined;
  const bound = Math.max(2 * base, base + 3);
  return {
    text: `≤ ${formatValue(bound, "ms")} (max(2 × baseline, baseline + 3 ms))`,
    met: (v) => v <= bound,
  };
}

// ---------------------------------------------------------------- task end

/** Guest state before each repetition: the action must have something to do. */
const TASK_CASES = {
  start: { vmid: 102, before: "stopped" },
  stop: { vmid: 100, before: "running" },
  shutdown: { vmid: 100, before: "running" },
} as const;

/** The task-end runs: every action with a 500 ms task, and start with longer ones. */
const TASK_RUNS: ["start" | "stop" | "shutdown", number][] = [
  ["start", 500],
  ["stop", 500],
  ["shutdown", 500],
  ["start", 2_000],
  ["start", 5_000],
];

/** Noticed ≤ 120 ms after a 500 ms task, and within 10% + 50 ms of any task's length. */
function noticed(taskMs: number): Target {
  const bound = Math.min(taskMs === 500 ? 120 : Infinity, taskMs / 10 + 50);
  return {
    text: `≤ ${formatValue(bound, "ms")} (10% + 50 ms${
      taskMs === 500 ? "; ≤ 120 ms" : ""
    })`,
    met: (v) => v <= bound,
  };
}

async function taskEndLag(
  pkg: Package,
  index: number,
  action: "start" | "stop" | "shutdown",
  taskMs: number,
  opts: BenchOptions,
): Promise<{ lag: Cell; polls: Cell }> {
  if (!hasMethod(pkg, action)) {
    const a = absent(index, action);
    return { lag: a, polls: a };
  }
  const { vmid, before } = TASK_CASES[action];
  const env = await startBenchEnv(pkg, undefined, {
    guests: scenarioGuests(),
  });
  const samples: number[] = [];
  const polls: number[] = [];
  let early = 0;
  const fail = (m: string) => ({ lag: { missing: m }, polls: { missing: m } });
  try {
    for (let r = 0; r < opts.reps; r++) {
      env.sim.setGuest(vmid, { status: before });
      const known = env.sim.tasks().length;
      const from = env.sim.requests.length;
      env.sim.nextTask({ durationMs: taskMs });
      const run = await env.run(action, { vmid }, opts.timeoutMs);
      const returnedAt = Date.now();
      if (run.result.status !== "succeeded") {
        return fail(`failed: ${firstLine(run.result.error)}`);
      }
      const task = env.sim.tasks().slice(known).filter((t) =>
        t.type.endsWith(action)
      ).at(-1);
      if (!task) return fail("no task was created");
      // A method that returned before its task ended: wait for the end to report how early.
      for (let i = 0; i < 500 && task.endedAt === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      if (task.endedAt === undefined) return fail("task never ended");
      if (returnedAt < task.endedAt) early++;
      samples.push(returnedAt - task.endedAt);
      polls.push(
        env.sim.requests.slice(from).filter((q) =>
          /\/tasks\/[^/]+\/status$/.test(q.path)
        ).length,
      );
    }
  } finally {
    await env.close();
  }
  return {
    lag: early
      ? { samples, note: `returned before the task ended in ${early} runs` }
      : { samples },
    polls: { samples: polls },
  };
}

// ---------------------------------------------------------------- requests per method

/** Requests a method may send in the common case (issue 15): state before, the mutation, its task, the proof. */
const REQUEST_TARGETS: Record<string, number> = {
  lookup: 2,
  guestExec: 2,
  start: 5,
  stop: 5,
  delete: 6,
};

/** The methods whose requests are counted, with their arguments. */
export const METHOD_CASES: [string, Record<string, unknown>][] = [
  ["lookup", { vmid: 100 }],
  ["guestExec", { vmid: 100, command: ["true"] }],
  ["clone", { templateId: 9000, vmid: 120, name: "bench-clone" }],
  ["setConfig", { vmid: 100, config: { memory: 4096 } }],
  ["resizeDisk", { vmid: 100, disk: "scsi0", size: "+1G" }],
  ["start", { vmid: 102 }],
  ["stop", { vmid: 100 }],
  ["delete", { vmid: 110 }],
];

async function requestsOf(
  pkg: Package,
  index: number,
  agent: GuestAgent,
  method: string,
  args: Record<string, unknown>,
  opts: BenchOptions,
): Promise<Cell> {
  if (!hasMethod(pkg, method)) return absent(index, method);
  const samples: number[] = [];
  let failed: string | undefined;
  for (let r = 0; r < opts.reps; r++) {
    // A fresh cluster each time: clone, start, stop and delete change it.
    const env = await startBenchEnv(pkg, agent, { guests: scenarioGuests() });
    try {
      const run = await env.run(method, args, opts.timeoutMs);
      if (run.result.status !== "succeeded") {
        failed = firstLine(run.result.error);
      }
      samples.push(run.requests - run.preflight);
    } finally {
      await env.close();
    }
  }
  return failed ? { samples, note: `failed: ${failed}` } : { samples };
}

// ---------------------------------------------------------------- cold start

const CHILD = new URL("./cold_child.ts", import.meta.url).pathname;

/**
 * One `deno run` of a bench child script (flags before the script, arguments after): its wall time,
 * spawn to exit, and the JSON line it printed (empty for the `empty` child); throws when it fails.
 */
async function denoChild(
  opts: BenchOptions,
  script: string,
  args: string[],
  flags: string[] = [],
): Promise<{ wallMs: number; text: string }> {
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--quiet",
      `--config=${opts.denoConfig}`,
      ...flags,
      script,
      ...args,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const wallMs = performance.now() - started;
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success || (text && !text.includes('"status":"succeeded"'))) {
    throw new Error(
      `bench child ${script.split("/").pop()} ${args[0] ?? ""} failed: ${text}${
        new TextDecoder().decode(out.stderr).slice(0, 400)
      }`,
    );
  }
  return { wallMs, text };
}

/** `coldReps` results of `once`, after one unmeasured warm-up run (it fills Deno's module cache). */
async function afterWarmUp<T>(
  opts: BenchOptions,
  once: () => Promise<T>,
): Promise<T[]> {
  await once();
  const results: T[] = [];
  for (let r = 0; r < opts.coldReps; r++) results.push(await once());
  return results;
}

async function coldSamples(
  opts: BenchOptions,
  childArgs: string[],
): Promise<Cell> {
  try {
    const runs = await afterWarmUp(
      opts,
      () => denoChild(opts, CHILD, childArgs),
    );
    return { samples: runs.map((run) => run.wallMs) };
  } catch (error) {
    return { missing: firstLine((error as Error).message) };
  }
}

// The wasm core's own share of a cold start (tests/bench/core_child.ts): packages without one get
// "no wasm core".
const CORE_CHILD = new URL("./core_child.ts", import.meta.url).pathname;
const CORE_GLUE = "_lib/generated/core_glue.ts";
const CORE_WASM = "_lib/generated/proxmox_core.wasm";

/** What one core child measured, in ms. */
interface CoreSplit {
  loadMs: number;
  firstMs: number;
  againMs: number;
  syncFirstMs: number;
  syncAgainMs: number;
}

async function coreChildRun(
  opts: BenchOptions,
  dir: string,
  v8Flags: string[],
): Promise<CoreSplit> {
  const { text } = await denoChild(opts, CORE_CHILD, [
    pathToFileURL(join(dir, CORE_GLUE)).href,
    join(dir, CORE_WASM),
  ], v8Flags);
  return JSON.parse(text) as CoreSplit;
}

/** Load, first lookup and second lookup cells of one package (`missing` without a wasm core). */
async function coreSplitCells(
  pkg: Package,
  opts: BenchOptions,
  v8Flags: string[],
): Promise<Record<keyof CoreSplit, Cell>> {
  const none = (missing: string) => ({
    loadMs: { missing },
    firstMs: { missing },
    againMs: { missing },
    syncFirstMs: { missing },
    syncAgainMs: { missing },
  });
  const hasCore = await Deno.stat(join(pkg.dir, CORE_WASM)).then(
    () => true,
    () => false,
  );
  if (!hasCore) return none("no wasm core");
  try {
    const runs = await afterWarmUp(
      opts,
      () => coreChildRun(opts, pkg.dir, v8Flags),
    );
    const cell = (key: keyof CoreSplit) => ({
      samples: runs.map((run) => run[key]),
    });
    return {
      loadMs: cell("loadMs"),
      firstMs: cell("firstMs"),
      againMs: cell("againMs"),
      syncFirstMs: cell("syncFirstMs"),
      syncAgainMs: cell("syncAgainMs"),
    };
  } catch (error) {
    return none(firstLine((error as Error).message));
  }
}

/** Rows of the wasm core's share of a cold start: lazy compilation (V8's default), then eager. */
async function coreSplitRows(
  pkgs: Package[],
  opts: BenchOptions,
): Promise<Row[]> {
  const lazy = [];
  const eager = [];
  for (const pkg of pkgs) {
    lazy.push(await coreSplitCells(pkg, opts, []));
    eager.push(
      await coreSplitCells(pkg, opts, [
        "--v8-flags=--no-wasm-lazy-compilation",
      ]),
    );
  }
  const row = (
    benchmark: string,
    cells: Cell[],
    target?: Row["target"],
  ): Row => ({
    benchmark,
    measure: "in-process time",
    unit: "ms",
    cells,
    target,
  });
  // Issue 32: the core's part of a 1,000-guest sync ≤ 60 ms.
  const syncGoal = { text: "≤ 60", met: (v: number) => v <= 60 };
  return [
    row(
      "wasm core, cold: glue import + module read, compile, instantiate",
      lazy.map((c) => c.loadMs),
    ),
    row(
      "wasm core, cold: first lookup, host answering from memory (V8 compiles what it runs)",
      lazy.map((c) => c.firstMs),
    ),
    row(
      "wasm core, warm: the same lookup again (the run alone)",
      lazy.map((c) => c.againMs),
    ),
    row(
      "wasm core: sync of 1,000 guests, the process's first (host answering from memory)",
      lazy.map((c) => c.syncFirstMs),
      syncGoal,
    ),
    row(
      "wasm core: sync of 1,000 guests again (the run alone)",
      lazy.map((c) => c.syncAgainMs),
      syncGoal,
    ),
    row(
      "wasm core, cold, whole module compiled up front (`--no-wasm-lazy-compilation`): load",
      eager.map((c) => c.loadMs),
    ),
    row(
      "wasm core, cold, whole module compiled up front: first lookup",
      eager.map((c) => c.firstMs),
    ),
  ];
}

async function coldStartRows(
  pkgs: Package[],
  opts: BenchOptions,
): Promise<Row[]> {
  const floor = await coldSamples(opts, ["empty"]);
  const imports: Cell[] = [];
  const lookups: Cell[] = [];
  for (const [i, pkg] of pkgs.entries()) {
    const entry = pathToFileURL(pkg.entry).href;
    imports.push(await coldSamples(opts, ["import", entry]));
    if (!hasMethod(pkg, "lookup")) {
      lookups.push(absent(i, "lookup"));
      continue;
    }
    const env = await startBenchEnv(pkg, undefined, {
      guests: scenarioGuests(),
    });
    try {
      lookups.push(
        await coldSamples(opts, [
          "lookup",
          entry,
          env.sim.url,
          TOKEN.id,
          TOKEN.secret,
        ]),
      );
    } finally {
      await env.close();
    }
  }
  return [
    {
      benchmark: "cold start: `deno run` of an empty script",
      measure: "process wall time (floor)",
      unit: "ms",
      cells: pkgs.map(() => floor),
    },
    {
      benchmark: "cold start: import the model module",
      measure: "process wall time",
      unit: "ms",
      cells: imports,
    },
    {
      benchmark: "cold start: import + one lookup",
      measure: "process wall time",
      unit: "ms",
      cells: lookups,
      target: (base) =>
        base === undefined ? undefined : {
          text: `≤ ${formatValue(base * 1.1, "ms")} (baseline + 10%)`,
          met: (v) => v <= base * 1.1,
        },
    },
    ...await coreSplitRows(pkgs, opts),
  ];
}

// ---------------------------------------------------------------- size

function gzipLength(bytes: Uint8Array): number {
  return gzipSync(bytes, { level: 9 }).length;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Bytes of `tar -c` of the folder, gzip -9: the package as a tar.gz. */
async function tarGzBytes(dir: string): Promise<number> {
  const out = await new Deno.Command("bash", {
    args: ["-c", 'tar -C "$1" -cf - . | gzip -9 -n | wc -c', "tar-gz", dir],
    stdout: "piped",
  }).output();
  const n = Number(new TextDecoder().decode(out.stdout).trim());
  if (!out.success || !Number.isFinite(n)) throw new Error(`tar.gz of ${dir}`);
  return n;
}

async function sizeRows(pkgs: Package[], opts: BenchOptions): Promise<Row[]> {
  const wasm: Cell[] = [];
  const wasmGz: Cell[] = [];
  const files: Cell[] = [];
  const tarGz: Cell[] = [];
  for (const [i, pkg] of pkgs.entries()) {
    const all = await packageFiles(pkg.dir);
    let bytes: Uint8Array | undefined;
    if (i === 0 && opts.wasmPath) {
      try {
        bytes = await Deno.readFile(opts.wasmPath);
      } catch {
        bytes = undefined;
      }
    } else {
      const found = all.filter((f) => f.path.endsWith(".wasm"));
      if (found.length) bytes = concat(found.map((f) => f.bytes));
    }
    if (bytes) {
      wasm.push({ samples: [bytes.length] });
      wasmGz.push({ samples: [gzipLength(bytes)] });
    } else {
      const m = {
        missing: i === 0 ? "not built (run ./build.sh)" : "no .wasm",
      };
      wasm.push(m);
      wasmGz.push(m);
    }
    const joined = concat(all.map((f) => f.bytes));
    files.push({ samples: [joined.length], note: `${all.length} files` });
    tarGz.push({ samples: [await tarGzBytes(pkg.dir)] });
  }
  return [
    {
      benchmark: "shipped wasm (after wasm-opt)",
      measure: "bytes",
      unit: "bytes",
      cells: wasm,
      target: {
        text: `≤ ${budget.goalBytes.toLocaleString("en")} B`,
        met: (v) => v <= budget.goalBytes,
      },
    },
    {
      benchmark: "shipped wasm (after wasm-opt)",
      measure: "gzip -9",
      unit: "bytes",
      cells: wasmGz,
    },
    {
      benchmark: "package (every file of the package folder)",
      measure: "bytes",
      unit: "bytes",
      cells: files,
    },
    {
      benchmark: "package (every file of the package folder)",
      measure: "tar.gz (gzip -9)",
      unit: "bytes",
      cells: tarGz,
      target: { text: "≤ 150 KiB (153,600 B)", met: (v) => v <= 153_600 },
    },
  ];
}

/** The push archive of each package, built by the real swamp CLI. */
async function archiveRow(pkgs: Package[]): Promise<Row> {
  const cells: Cell[] = [];
  for (const pkg of pkgs) {
    try {
      cells.push({ samples: [await pushArchiveBytes(pkg.dir)] });
    } catch (error) {
      cells.push({ missing: firstLine((error as Error).message) });
    }
  }
  return {
    benchmark: "swamp's push archive (`swamp extension quality`)",
    measure: "bytes",
    unit: "bytes",
    cells,
    target: { text: "≤ 250 KiB (256,000 B)", met: (v) => v <= 256_000 },
  };
}
