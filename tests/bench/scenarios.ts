/**
 * The end-to-end scenario list of the side-by-side comparison: each scenario runs one method on a
 * fresh simulator and is judged against the contract (design.md): the verdict, and the record that
 * must (or must not) be written.
 *
 * A scenario a package cannot express — the method is missing, or an argument the scenario needs is
 * not declared — is skipped and says why; arguments that only restate a default are dropped instead.
 *
 * @module
 */
import { z } from "npm:zod@4";
import type { GuestAgent } from "../../simulator/qga.ts";
import type { ModelLike } from "../../harness/types.ts";
import { type BenchEnv, type BenchRun, startBenchEnv } from "./fixture.ts";
import { scenarioGuests } from "./guests.ts";
import { fitArgs, hasMethod, type Package } from "./package.ts";

/** One scenario. */
export interface Scenario {
  id: string;
  title: string;
  method: string;
  args: Record<string, unknown>;
  /** Argument keys without which the scenario means something else. */
  needs?: string[];
  /** Other methods the scenario needs (in its setup). */
  requires?: string[];
  expects: "succeeded" | "failed";
  /** What the contract expects, for the table. */
  contract: string;
  /** Runs before the measured run (e.g. injects a fault). */
  setup?: (env: BenchEnv) => Promise<void>;
  /** Why the written records miss the contract, or null when they meet it. */
  check: (run: BenchRun, env: BenchEnv) => string | null;
  /** Adjusts the model the scenario runs (e.g. adds a delete-kind method). */
  model?: (m: ModelLike) => ModelLike;
}

/** What one package did in one scenario. */
export type ScenarioOutcome =
  | { kind: "skipped"; reason: string }
  | {
    kind: "ran";
    verdict: "succeeded" | "failed";
    /** Instances written by the measured run, in order (`(deleted)` for tombstones). */
    written: string[];
    /** Whether verdict and records meet the contract. */
    asContract: boolean;
    /** What missed the contract, if anything. */
    note: string;
    dropped: string[];
    error?: string;
  };

/** The data of the last record the run wrote under `instance`. */
function rec(run: BenchRun, instance: string): Record<string, unknown> | null {
  const w = run.result.written.filter((v) => v.instance === instance).at(-1);
  return w ? w.data as Record<string, unknown> : null;
}

/** A check that the run wrote `instance` with the given field values. */
function wrote(instance: string, fields: Record<string, unknown> = {}) {
  return (run: BenchRun): string | null => {
    const data = rec(run, instance);
    if (!data) return `no ${instance} record`;
    for (const [k, v] of Object.entries(fields)) {
      if (data[k] !== v) {
        return `${instance}.${k} = ${JSON.stringify(data[k])}, not ${
          JSON.stringify(v)
        }`;
      }
    }
    return null;
  };
}

function wroteNothing(run: BenchRun): string | null {
  return run.result.written.length === 0
    ? null
    : `wrote ${run.result.written.map((w) => w.instance).join(", ")}`;
}

/** The latest stored vm-100 is live: no `deletedAt`, status running. */
function vm100Live(env: BenchEnv): string | null {
  const latest = env.repo.latest("vm-100") as Record<string, unknown> | null;
  if (!latest) return "no vm-100 record";
  if ("deletedAt" in latest) return "vm-100 is still tombstoned (deletedAt)";
  if (latest.status !== "running") {
    return `vm-100.status = ${JSON.stringify(latest.status)}`;
  }
  return null;
}

const exec = (command: string[], extra: Record<string, unknown> = {}) => ({
  vmid: 100,
  command,
  ...extra,
});

/** A delete-kind method that touches nothing: swamp then tombstones every record of the definition. */
function withTombstoner(m: ModelLike): ModelLike {
  return {
    ...m,
    methods: {
      ...m.methods,
      tombstoneAll: {
        description: "a delete-kind method of some other guest (stand-in)",
        kind: "delete",
        arguments: z.object({}),
        execute: () => Promise.resolve({ dataHandles: [] }),
      },
    },
  };
}

/** The scenario list. */
export const SCENARIOS: Scenario[] = [
  {
    id: "exec-exit0",
    title: "guestExec exit 0",
    method: "guestExec",
    args: exec(["bash", "-c", "exit 0"]),
    expects: "succeeded",
    contract: "succeeded; vm-100-exec exitCode 0",
    check: wrote("vm-100-exec", { exitCode: 0 }),
  },
  {
    id: "exec-exit42",
    title: "guestExec exit 42",
    method: "guestExec",
    // allowNonZeroExit: false restates the default: a package without it still expresses the scenario.
    args: exec(["bash", "-c", "exit 42"], { allowNonZeroExit: false }),
    expects: "failed",
    contract: "failed; vm-100-exec exitCode 42",
    check: wrote("vm-100-exec", { exitCode: 42 }),
  },
  {
    id: "exec-signal",
    title: "guestExec killed by signal 9",
    method: "guestExec",
    args: exec(["bash", "-c", "kill -9 $$"]),
    expects: "failed",
    contract: "failed; vm-100-exec signal 9",
    check: wrote("vm-100-exec", { signal: 9 }),
  },
  {
    id: "exec-timeout",
    title: "guestExec past timeoutSec=1",
    method: "guestExec",
    args: exec(["sleep", "5"], { timeoutSec: 1 }),
    needs: ["timeoutSec"],
    expects: "failed",
    contract: "failed; vm-100-exec timedOut true",
    check: wrote("vm-100-exec", { timedOut: true }),
  },
  {
    id: "exec-allow",
    title: "guestExec exit 3 with allowNonZeroExit",
    method: "guestExec",
    args: exec(["bash", "-c", "exit 3"], { allowNonZeroExit: true }),
    needs: ["allowNonZeroExit"],
    expects: "succeeded",
    contract: "succeeded; vm-100-exec exitCode 3",
    check: wrote("vm-100-exec", { exitCode: 3 }),
  },
  {
    id: "exec-agent-down",
    title: "guestExec, agent not running",
    method: "guestExec",
    args: { vmid: 103, command: ["true"] },
    expects: "failed",
    contract: "failed; vm-103-exec written",
    check: wrote("vm-103-exec"),
  },
  {
    id: "lookup-running",
    title: "lookup of a running VM",
    method: "lookup",
    args: { vmid: 100 },
    expects: "succeeded",
    contract: "succeeded; vm-100 status running",
    check: wrote("vm-100", { status: "running" }),
  },
  {
    id: "lookup-absent",
    title: "lookup of an absent VMID",
    method: "lookup",
    args: { vmid: 999 },
    expects: "succeeded",
    contract: "succeeded; vm-999 present false",
    check: wrote("vm-999", { present: false }),
  },
  {
    id: "lookup-other-node",
    title: "lookup of a VM on another node",
    method: "lookup",
    args: { vmid: 101 },
    expects: "succeeded",
    contract: "succeeded; vm-101 node pve2, running",
    check: wrote("vm-101", { node: "pve2", status: "running" }),
  },
  {
    id: "lookup-after-tombstone",
    title: "lookup after a delete-kind tombstone",
    method: "lookup",
    args: { vmid: 100 },
    expects: "succeeded",
    contract: "succeeded; vm-100 live again (no deletedAt)",
    model: withTombstoner,
    setup: async (env) => {
      await env.run("lookup", { vmid: 100 });
      await env.run("tombstoneAll", {});
    },
    check: (_run, env) => vm100Live(env),
  },
  {
    id: "lookup-403",
    title: "lookup, 403 on the status read",
    method: "lookup",
    args: { vmid: 100 },
    expects: "failed",
    contract: "failed; nothing written",
    setup: (env) => {
      env.sim.fault({
        pathRegex: "/qemu/100/status/current$",
        kind: "status",
        status: 403,
        message: "Permission check failed (/vms/100, VM.Audit)",
        times: Infinity,
      });
      return Promise.resolve();
    },
    check: wroteNothing,
  },
  {
    id: "lookup-hidden",
    title: "lookup of a VM the token cannot see",
    method: "lookup",
    args: { vmid: 150 },
    expects: "failed",
    contract: "failed; nothing written",
    check: wroteNothing,
  },
  {
    id: "sync-node",
    title: "sync of node pve1",
    method: "sync",
    args: {},
    expects: "succeeded",
    contract: "succeeded; vm-<vmid> per qemu guest of pve1",
    check: (run) => {
      const missing = [100, 102, 103, 104, 105, 106, 110, 9000].filter((v) =>
        !rec(run, `vm-${v}`)
      );
      return missing.length
        ? `no record for ${missing.map((v) => `vm-${v}`).join(", ")}`
        : null;
    },
  },
  {
    id: "start-stopped",
    title: "start of a stopped VM",
    method: "start",
    args: { vmid: 102 },
    expects: "succeeded",
    contract: "succeeded; vm-102 status running",
    check: wrote("vm-102", { status: "running" }),
  },
  {
    id: "start-task-error",
    title: "start whose task fails",
    method: "start",
    args: { vmid: 102 },
    expects: "failed",
    contract: "failed",
    setup: (env) => {
      env.sim.nextTask({ exitstatus: "start failed: QEMU exited with code 1" });
      return Promise.resolve();
    },
    check: () => null,
  },
  {
    id: "start-ha-queued",
    title: "HA start that only queues",
    method: "start",
    args: { vmid: 106 },
    expects: "failed",
    contract: "failed (state never reached)",
    check: () => null,
  },
  {
    id: "stop-running",
    title: "stop of a running VM",
    method: "stop",
    args: { vmid: 100 },
    expects: "succeeded",
    contract: "succeeded; vm-100 status stopped",
    check: wrote("vm-100", { status: "stopped" }),
  },
  {
    id: "delete-other",
    title: "delete of VM 110 after a lookup of VM 100",
    method: "delete",
    args: { vmid: 110 },
    requires: ["lookup"],
    expects: "succeeded",
    contract: "succeeded; vm-110 status deleted; vm-100 not tombstoned",
    setup: async (env) => {
      await env.run("lookup", { vmid: 100 });
    },
    check: (run, env) =>
      wrote("vm-110", { status: "deleted" })(run) ?? vm100Live(env),
  },
];

/**
 * Why `pkg` cannot run `s`, or null when it can. `isThis`: the package under test, whose missing
 * methods are still being written ("not implemented yet") rather than absent by design.
 */
export function cannotExpress(
  pkg: Package,
  s: Scenario,
  isThis = false,
): string | null {
  for (const m of [s.method, ...(s.requires ?? [])]) {
    if (!hasMethod(pkg, m)) {
      return isThis ? `not implemented yet (no ${m} method)` : `no ${m} method`;
    }
  }
  const { dropped } = fitArgs(pkg.model.methods[s.method].arguments, s.args);
  const missing = (s.needs ?? []).filter((k) => dropped.includes(k));
  return missing.length ? `no ${missing.join(", ")} argument` : null;
}

/** Options of {@link runScenarios}. */
export interface ScenarioOptions {
  /** Scenario ids to run; default all. */
  only?: string[];
  /** Per-run bound; default 60 s. */
  timeoutMs?: number;
}

/**
 * Runs every scenario against every package (each run on a fresh simulator and repository); the
 * first package is the one under test.
 */
export async function runScenarios(
  pkgs: Package[],
  agent: GuestAgent,
  opts: ScenarioOptions = {},
): Promise<Map<string, ScenarioOutcome[]>> {
  const out = new Map<string, ScenarioOutcome[]>();
  const list = opts.only
    ? SCENARIOS.filter((s) => opts.only!.includes(s.id))
    : SCENARIOS;
  for (const s of list) {
    const row: ScenarioOutcome[] = [];
    for (const [i, pkg] of pkgs.entries()) {
      row.push(
        await runScenario(pkg, i === 0, agent, s, opts.timeoutMs ?? 60_000),
      );
    }
    out.set(s.id, row);
  }
  return out;
}

async function runScenario(
  pkg: Package,
  isThis: boolean,
  agent: GuestAgent,
  s: Scenario,
  timeoutMs: number,
): Promise<ScenarioOutcome> {
  const reason = cannotExpress(pkg, s, isThis);
  if (reason) return { kind: "skipped", reason };
  const env = await startBenchEnv(pkg, agent, {
    guests: scenarioGuests(),
    denyVmids: [150],
    globalArgs: { pollIntervalSec: 1 },
    model: s.model?.(pkg.model),
  });
  try {
    await s.setup?.(env);
    const run = await env.run(s.method, s.args, timeoutMs);
    const verdict = run.result.status;
    const problems: string[] = [];
    if (verdict !== s.expects) problems.push(`expected ${s.expects}`);
    const recordProblem = s.check(run, env);
    if (recordProblem) problems.push(recordProblem);
    return {
      kind: "ran",
      verdict,
      written: run.result.written.map((w) =>
        `${w.instance}${w.tombstone ? " (deleted)" : ""}`
      ),
      asContract: problems.length === 0,
      note: problems.join("; "),
      dropped: run.dropped,
      error: run.result.error,
    };
  } finally {
    await env.close();
  }
}

/** A scenario cell: `✓ failed · vm-100-exec`, or `✗ succeeded · web — expected failed`. */
export function scenarioCell(o: ScenarioOutcome): string {
  if (o.kind === "skipped") {
    return o.reason.startsWith("not implemented")
      ? `— ${o.reason}`
      : `— skipped: ${o.reason}`;
  }
  const mark = o.asContract ? "✓" : "✗";
  const written = o.written.length ? o.written.join(", ") : "nothing written";
  const dropped = o.dropped.length ? ` (dropped ${o.dropped.join(", ")})` : "";
  const note = o.note ? ` — ${o.note}` : "";
  return `${mark} ${o.verdict} · ${written}${note}${dropped}`;
}

/** The scenario table (markdown), one column per package. */
export function scenarioTable(
  pkgs: Package[],
  results: Map<string, ScenarioOutcome[]>,
): string {
  const esc = (s: string) => s.replaceAll("|", "\\|");
  const lines = [
    `| scenario | contract expects | ${
      pkgs.map((p) => esc(p.label)).join(" | ")
    } |`,
    `|---|---|${pkgs.map(() => "---").join("|")}|`,
  ];
  for (const s of SCENARIOS) {
    const row = results.get(s.id);
    if (!row) continue;
    lines.push(
      `| ${esc(s.title)} | ${esc(s.contract)} | ${
        row.map((o) => esc(scenarioCell(o))).join(" | ")
      } |`,
    );
  }
  const met = pkgs.map((_, i) => {
    let ran = 0;
    let ok = 0;
    for (const row of results.values()) {
      const o = row[i];
      if (o.kind === "ran") {
        ran++;
        if (o.asContract) ok++;
      }
    }
    return `${ok}/${ran} as the contract requires`;
  });
  lines.push(`| **total** | | ${met.join(" | ")} |`);
  return lines.join("\n");
}
