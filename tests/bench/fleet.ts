/**
 * What a fleet costs PVE's pvedaemon: 20 stopped guests started together, one definition each
 * (swamp runs steps of different definitions in parallel), every start task taking 5 s. Every
 * request the simulator receives during the run is one pvedaemon serves (`status/current`, the
 * start, the task status are `protected => 1` in qemu-server's `API2/Qemu.pm` and pve-manager's
 * `API2/Tasks.pm`; pvedaemon runs 3 workers by default, `PVE/Service/pvedaemon.pm`).
 *
 * @module
 */
import type { BenchOptions } from "./benchmarks.ts";
import { startBenchEnv } from "./fixture.ts";
import { fleet } from "./guests.ts";
import type { Package } from "./package.ts";
import type { Cell, Row } from "./table.ts";

/** Guests started together. */
export const FLEET_SIZE = 20;
/** How long each start task runs. */
const TASK_MS = 5_000;

/** Load figures of one fleet start. */
interface FleetLoad {
  /** Requests in all, swamp's pre-flight checks included (pvedaemon serves those too). */
  total: number;
  /** The most requests that arrived within one second (a sliding window). */
  peakPerSec: number;
  /** Requests per second over the whole run. */
  meanPerSec: number;
  /** Spawn of the first run to the return of the last, ms. */
  wallMs: number;
}

/** The most entries of sorted `times` (ms) that fall inside any window of `windowMs`. */
export function peakInWindow(times: number[], windowMs: number): number {
  let peak = 0;
  let from = 0;
  for (let to = 0; to < times.length; to++) {
    while (times[to] - times[from] >= windowMs) from++;
    peak = Math.max(peak, to - from + 1);
  }
  return peak;
}

/** The rows, each with the figure of a fleet start it shows. */
const MEASURES: [string, Row["unit"], (l: FleetLoad) => number][] = [
  ["requests to pvedaemon in all", "requests", (l) => l.total],
  ["most requests within one second", "requests", (l) => l.peakPerSec],
  ["requests per second over the run", "requests", (l) => l.meanPerSec],
  ["wall time until every start returned", "ms", (l) => l.wallMs],
];

/** The fleet start's load figures over `opts.reps` runs, or why a run failed. */
async function fleetStart(
  pkg: Package,
  opts: BenchOptions,
): Promise<FleetLoad[] | string> {
  const guests = fleet(FLEET_SIZE).map((g) => ({
    ...g,
    status: "stopped" as const,
  }));
  const env = await startBenchEnv(pkg, undefined, {
    guests,
    taskDurationMs: TASK_MS,
  });
  const samples: FleetLoad[] = [];
  try {
    for (let r = 0; r < opts.reps; r++) {
      for (const g of guests) env.sim.setGuest(g.vmid, { status: "stopped" });
      const from = env.sim.requests.length;
      const started = performance.now();
      const runs = await Promise.all(
        guests.map((g) =>
          env.definition(`guest-${g.vmid}`)(
            "start",
            { vmid: g.vmid },
            opts.timeoutMs,
          )
        ),
      );
      const wallMs = performance.now() - started;
      const failed = runs.find((run) => run.result.status !== "succeeded");
      if (failed) {
        const why = (failed.result.error ?? "").split("\n")[0].slice(0, 80);
        return `a start failed: ${why}`;
      }
      const times = env.sim.requests.slice(from).map((q) => q.at);
      samples.push({
        total: times.length,
        peakPerSec: peakInWindow(times, 1000),
        meanPerSec: times.length / (wallMs / 1000),
        wallMs,
      });
    }
  } finally {
    await env.close();
  }
  return samples;
}

/** The fleet rows: both packages, one column each. */
export async function fleetRows(
  pkgs: Package[],
  opts: BenchOptions,
): Promise<Row[]> {
  const columns: (FleetLoad[] | string)[] = [];
  for (const pkg of pkgs) columns.push(await fleetStart(pkg, opts));
  const cell = (
    loads: FleetLoad[] | string,
    pick: (l: FleetLoad) => number,
  ): Cell =>
    typeof loads === "string"
      ? { missing: loads }
      : { samples: loads.map(pick) };
  return MEASURES.map(([measure, unit, pick]) => ({
    benchmark:
      `${FLEET_SIZE} guests started together (one definition each), 5 s tasks`,
    measure,
    unit,
    cells: columns.map((loads) => cell(loads, pick)),
  }));
}
