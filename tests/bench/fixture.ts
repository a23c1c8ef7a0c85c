/**
 * One package in the swamp-faithful harness against its own PVE simulator; the real qemu-ga is shared
 * and owned by the caller. Every run is bounded, counts the simulator requests it caused, and passes
 * only the arguments the package declares.
 *
 * @module
 */
import type { ModelLike, RunResult } from "../../harness/types.ts";
import { SwampRepo } from "../../harness/swamp.ts";
import type { GuestAgent } from "../../simulator/qga.ts";
import { type Simulator, startSimulator } from "../../simulator/simulator.ts";
import type { SimGuest, SimOptions } from "../../simulator/types.ts";
import { fitArgs, type Package } from "./package.ts";
import { PACKAGE_FILES } from "../../harness/project_package.ts";

/** The token every bench simulator accepts. */
export const TOKEN = {
  id: "root@pam!bench",
  secret: "bench-secret-0c1d",
};

/** Options of {@link startBenchEnv}. */
export interface BenchEnvOptions {
  guests: SimGuest[];
  nodes?: string[];
  /** VMIDs the token may not audit. */
  denyVmids?: number[];
  latencyMs?: number;
  taskDurationMs?: SimOptions["taskDurationMs"];
  /** A node of limited capacity (workers × service time), see SimOptions. */
  capacity?: SimOptions["capacity"];
  /** How long the task list shows an ended task as running. */
  taskListLagMs?: number;
  /** Keep client connections open, as pveproxy does. */
  keepAlive?: boolean;
  /** Extra global arguments (e.g. `pollIntervalSec`); undeclared ones are dropped. */
  globalArgs?: Record<string, unknown>;
  /** Run this model instead of the package's (e.g. with an added method). */
  model?: ModelLike;
}

/** One bounded run. */
export interface BenchRun {
  result: RunResult;
  /** Requests the simulator received during the run. */
  requests: number;
  /** Of those, swamp's pre-flight check (`GET /version`, before a mutating method). */
  preflight: number;
  /** Wall time around the harness run, ms. */
  wallMs: number;
  /** Method arguments left out because the package does not declare them. */
  dropped: string[];
}

/** A running bench environment. */
export interface BenchEnv {
  pkg: Package;
  sim: Simulator;
  repo: SwampRepo;
  /** Global arguments left out because the package does not declare them. */
  droppedGlobals: string[];
  run: RunOn;
  /** Runs on another definition of the same model and simulator (swamp locks per definition). */
  definition(name: string): RunOn;
  close(): Promise<void>;
}

/** One bounded run of `method` on a definition. */
export type RunOn = (
  method: string,
  args?: Record<string, unknown>,
  timeoutMs?: number,
) => Promise<BenchRun>;

/** Starts a simulator for `pkg` and a repository holding one definition of its qemu model. */
export async function startBenchEnv(
  pkg: Package,
  agent: GuestAgent | undefined,
  opts: BenchEnvOptions,
): Promise<BenchEnv> {
  const sim = await startSimulator({
    nodes: opts.nodes ?? ["pve1", "pve2"],
    guests: opts.guests,
    tokens: [{
      id: TOKEN.id,
      secret: TOKEN.secret,
      denyVmids: opts.denyVmids ?? [],
    }],
    agent,
    latencyMs: opts.latencyMs ?? 0,
    taskDurationMs: opts.taskDurationMs ?? 50,
    capacity: opts.capacity,
    taskListLagMs: opts.taskListLagMs,
    keepAlive: opts.keepAlive,
  });
  const model = opts.model ?? pkg.model;
  const globals = fitArgs(model.globalArguments, {
    name: "bench",
    transport: {
      kind: "api",
      node: "pve1",
      apiUrl: sim.url,
      tokenId: TOKEN.id,
      tokenSecret: TOKEN.secret,
    },
    ...opts.globalArgs,
  });
  const repoNamed = (name: string) =>
    new SwampRepo(model, { name, globalArgs: globals.args }, {
      vault: true,
      extensionFiles: PACKAGE_FILES,
    });
  let repo: SwampRepo;
  try {
    repo = repoNamed("bench");
  } catch (error) {
    await sim.close();
    throw error;
  }
  const runOn =
    (repo: SwampRepo): RunOn =>
    async (method, args = {}, timeoutMs = 120_000) => {
      const schema = model.methods[method]?.arguments;
      const fitted = fitArgs(schema, args);
      const before = sim.requests.length;
      const started = performance.now();
      const result = await boundedRun(repo, method, fitted.args, timeoutMs);
      const sent = sim.requests.slice(before);
      return {
        result,
        requests: sent.length,
        preflight: sent.filter(isPreflight).length,
        wallMs: performance.now() - started,
        dropped: fitted.dropped,
      };
    };
  return {
    pkg,
    sim,
    repo,
    droppedGlobals: globals.dropped,
    run: runOn(repo),
    definition: (name) => runOn(repoNamed(name)),
    close: () => sim.close(),
  };
}

/** swamp's pre-flight checks' requests (transport-reachable, permissions). */
function isPreflight(q: { path: string }): boolean {
  return q.path === "/api2/json/version" ||
    q.path === "/api2/json/access/permissions";
}

/** A harness run aborted after `timeoutMs`, and given up 5 s later if the method ignores the abort. */
async function boundedRun(
  repo: SwampRepo,
  method: string,
  args: Record<string, unknown>,
  timeoutMs: number,
): Promise<RunResult> {
  const controller = new AbortController();
  let abortTimer: ReturnType<typeof setTimeout> | undefined;
  let giveUpTimer: ReturnType<typeof setTimeout> | undefined;
  const giveUp = new Promise<never>((_, reject) => {
    abortTimer = setTimeout(() => {
      controller.abort();
      giveUpTimer = setTimeout(
        () =>
          reject(
            new Error(`${method} ignored the abort after ${timeoutMs} ms`),
          ),
        5000,
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([
      repo.run(method, args, { signal: controller.signal }),
      giveUp,
    ]);
  } finally {
    clearTimeout(abortTimer);
    clearTimeout(giveUpTimer);
  }
}
