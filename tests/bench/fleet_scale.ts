/**
 * A fleet on a node of PVE's real capacity: N stopped guests started at once (one definition each,
 * as docs/recipes.md's fleet recipe runs them), start tasks of 2.5–3.5 s spread so that no poll period
 * lines up with every end, a node that serves 3 requests at a time at 10 ms each (pvedaemon's 3
 * workers, pve-manager `PVE/Service/pvedaemon.pm`), keep-alive connections as pveproxy keeps
 * them, a task list that shows an ended task for 50 ms more (the daemon's reaping), and another
 * user asking `GET /version` every 100 ms meanwhile.
 *
 * Measured per package: how late the fleet returns after the last task ended (the simulator's own
 * end times), the requests the node served, the bystander's 95th-percentile wait, and the
 * connections the node accepted.
 *
 * @module
 */
import type { BenchOptions } from "./benchmarks.ts";
import { startBenchEnv, TOKEN } from "./fixture.ts";
import { fleet } from "./guests.ts";
import type { Package } from "./package.ts";
import type { Cell, Row } from "./table.ts";

/** The fleet sizes measured. */
export const SCALE_SIZES = [40, 200];
/** The node: workers serving at once, and each request's service time. */
const WORKERS = 3;
const SERVICE_MS = 10;
/** The bystander's pace. */
const BYSTANDER_EVERY_MS = 100;

/** A start task's length for guest `id`: spread over 2.5–3.5 s by the golden ratio. */
export function taskLength(id: string): number {
  const n = Number(id) || 0;
  return 2_500 + Math.round(((n * 0.6180339887) % 1) * 1_000);
}

/** The 95th percentile of `xs` (nearest rank). */
export function p95(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.95 * s.length) - 1)];
}

/** One fleet start's figures. */
interface ScaleLoad {
  lateMs: number;
  admissionMs: number;
  requests: number;
  bystanderP95Ms: number;
  connections: number;
}

/** Asks `GET /version` every 100 ms until stopped; resolves with each answer's wait, ms. */
function bystander(url: string): { stop(): Promise<number[]> } {
  const waits: number[] = [];
  let running = true;
  const client = Deno.createHttpClient({});
  const loop = (async () => {
    while (running) {
      const asked = performance.now();
      try {
        const res = await fetch(`${url}/api2/json/version`, {
          headers: {
            Authorization: `PVEAPIToken=${TOKEN.id}=${TOKEN.secret}`,
          },
          client,
        });
        await res.body?.cancel();
        waits.push(performance.now() - asked);
      } catch {
        waits.push(performance.now() - asked);
      }
      const spent = performance.now() - asked;
      await new Promise((r) =>
        setTimeout(r, Math.max(0, BYSTANDER_EVERY_MS - spent))
      );
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      client.close();
      return waits;
    },
  };
}

async function scaleStart(
  pkg: Package,
  n: number,
  opts: BenchOptions,
): Promise<ScaleLoad[] | string> {
  const guests = fleet(n).map((g) => ({ ...g, status: "stopped" as const }));
  const env = await startBenchEnv(pkg, undefined, {
    guests,
    nodes: ["pve1"],
    taskDurationMs: (task) => taskLength(task.id),
    capacity: { workers: WORKERS, serviceMs: SERVICE_MS },
    taskListLagMs: 50,
    keepAlive: true,
  });
  const samples: ScaleLoad[] = [];
  try {
    for (let r = 0; r < opts.reps; r++) {
      for (const g of guests) env.sim.setGuest(g.vmid, { status: "stopped" });
      const from = env.sim.requests.length;
      const tasksBefore = env.sim.tasks().length;
      const connectionsBefore = env.sim.connections();
      const other = bystander(env.sim.url);
      const launched = Date.now();
      const runs = await Promise.all(
        guests.map((g) =>
          env.definition(`guest-${g.vmid}`)(
            "start",
            { vmid: g.vmid },
            opts.timeoutMs,
          )
        ),
      );
      const returned = Date.now();
      const waits = await other.stop();
      const failed = runs.find((run) => run.result.status !== "succeeded");
      if (failed) {
        const why = (failed.result.error ?? "").split("\n")[0].slice(0, 80);
        return `a start failed: ${why}`;
      }
      const starts = env.sim.tasks().slice(tasksBefore)
        .filter((t) => t.type === "qmstart");
      const ends = starts.map((t) => t.endedAt ?? NaN);
      const longest = Math.max(...starts.map((t) => taskLength(t.id)));
      const bystanderRequests = waits.length;
      samples.push({
        lateMs: returned - Math.max(...ends),
        admissionMs: returned - launched - longest,
        requests: env.sim.requests.length - from - bystanderRequests,
        bystanderP95Ms: p95(waits),
        connections: env.sim.connections() - connectionsBefore -
          1, /* the bystander's own */
      });
    }
  } finally {
    await env.close();
  }
  return samples;
}

/** The measures of one fleet size, each with its target against the baseline where the issue sets one. */
function measures(n: number): {
  measure: string;
  unit: Row["unit"];
  pick: (l: ScaleLoad) => number;
  target?: Row["target"];
}[] {
  const accept = (n * SERVICE_MS) / WORKERS;
  return [
    {
      measure: "from launch: wall − longest task",
      unit: "ms",
      pick: (l) => l.admissionMs,
      target: () => ({
        text: `≤ ${n >= 200 ? 1_000 : 500}`,
        met: (v) => v <= (n >= 200 ? 1_000 : 500),
      }),
    },
    {
      measure: "late after the last task ended",
      unit: "ms",
      pick: (l) => l.lateMs,
      target: (base) =>
        base === undefined ? undefined : {
          text: `≤ min(${Math.round(base / 2)}, ${Math.round(350 + accept)})`,
          met: (v) => v <= base / 2 && v <= 350 + accept,
        },
    },
    {
      measure: "requests the node served",
      unit: "requests",
      pick: (l) => l.requests,
      target: (base) =>
        base === undefined
          ? undefined
          : { text: `≤ ${base}`, met: (v) => v <= base },
    },
    {
      measure: "the bystander's p95 wait",
      unit: "ms",
      pick: (l) => l.bystanderP95Ms,
      target: (base) =>
        base === undefined ? undefined : {
          text: `≤ ${Math.round(base + 10)}`,
          met: (v) => v <= base + 10,
        },
    },
    {
      measure: "connections the node accepted",
      unit: "requests",
      pick: (l) => l.connections,
    },
  ];
}

/** The rows of every fleet size: both packages, one column each. */
export async function fleetScaleRows(
  pkgs: Package[],
  opts: BenchOptions,
): Promise<Row[]> {
  const rows: Row[] = [];
  for (const n of SCALE_SIZES) {
    opts.progress?.(`fleet: ${n} guests started at once on 3 workers × 10 ms`);
    const columns: (ScaleLoad[] | string)[] = [];
    for (const pkg of pkgs) columns.push(await scaleStart(pkg, n, opts));
    for (const m of measures(n)) {
      rows.push({
        benchmark:
          `${n} guests started at once, tasks 2.5–3.5 s, node of 3 workers × 10 ms, a bystander every 100 ms`,
        measure: m.measure,
        unit: m.unit,
        target: m.target,
        cells: columns.map((c): Cell =>
          typeof c === "string" ? { missing: c } : { samples: c.map(m.pick) }
        ),
      });
    }
  }
  return rows;
}
