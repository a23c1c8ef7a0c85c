/**
 * One cell of the fault matrix: a fresh fixture (real qemu-ga, PVE simulator, swamp-like harness),
 * one fault, one run of one method — and the judgement: the verdict is the one the contract demands,
 * a failure says what was expected, what happened and what to check, a success's effect holds in
 * the simulator, no record claims what was not observed, and mutations were never re-sent.
 *
 * @module
 */
import { type Env, startEnv } from "../e2e/env.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { lxcFleet } from "./lxc_methods.ts";
import type { RunResult } from "../../harness/types.ts";
import type { SimFault } from "../../simulator/types.ts";
import { type FaultId, FAULTS } from "./faults.ts";
import { checkClaims, checkRecords } from "./records.ts";
import {
  type Endpoint,
  fleet,
  GLOBAL_ARGS,
  type GuestType,
  lastWrite,
  type MethodSpec,
  type Snapshot,
  type Verdict,
} from "./methods.ts";

/** How many times the core's client re-sends a safe read after a transient fault (client.rs). */
export const READ_RETRIES = 2;

/** A column that is not a fault of one endpoint but a situation of the whole run. */
export const SCENARIO_IDS = [
  "none",
  "task✗",
  "no effect",
  "node↓",
  "node↓refused",
  "node blip",
  "agent✗",
  "pid✗",
  "lock cleared",
  "lock held",
  "OK+lock",
  "OK+lock∞",
  "no file",
  "short file",
  "checksum✗",
] as const;

/** The scenarios of a file a task writes (a download, an import): rows opt in (`fileScenarios`). */
export const FILE_SCENARIOS = ["no file", "short file", "checksum✗"] as const;

/** One of {@link FILE_SCENARIOS}. */
export type FileScenario = (typeof FILE_SCENARIOS)[number];

/** The scenarios of a guest locked when the method starts (matrix.ts `lockPlan`). */
export const LOCK_SCENARIOS = ["lock cleared", "lock held"] as const;

/** One of {@link LOCK_SCENARIOS}. */
export type LockScenario = (typeof LOCK_SCENARIOS)[number];

/** The scenarios of a lock left on the guest as the method's task ends OK (matrix.ts `leftLockPlan`). */
export const LEFT_LOCK_SCENARIOS = ["OK+lock", "OK+lock∞"] as const;

/** One of {@link LEFT_LOCK_SCENARIOS}. */
export type LeftLockScenario = (typeof LEFT_LOCK_SCENARIOS)[number];

/** When the `lock cleared` scenario clears the lock: well inside the 3 s budget (`taskTimeoutSec`). */
export const LOCK_CLEARS_MS = 1000;

/** One of {@link SCENARIO_IDS}. */
export type ScenarioId = (typeof SCENARIO_IDS)[number];

/** Legends of the scenario columns. */
export const SCENARIO_LEGEND: Record<ScenarioId, string> = {
  none:
    "no fault: the row's baseline — the method succeeds and its effect holds in the simulator",
  "task✗":
    "the method's task ends `unexpected status` (what PVE reports after a node crash)",
  "no effect":
    "the method's task ends OK, but its effect never happens (the worker lied; rows that opt in): a vzdump that leaves no archive (and its lock), an imgdel that leaves the archive, a create, clone or restore that leaves the guest under its `create`/`clone` lock — the method must fail naming what it did not see",
  "node↓":
    "the guest's node is offline: every `/nodes/pve2/…` request answers 595 `no route to host` (methods on pve2 guests, sync of the cluster, node reads of pve2)",
  "node↓refused":
    "the same with PVE's other proxy text, 595 `Connection refused`",
  "node blip":
    "one 595 `no route to host` on the first `/nodes/pve2/…` request: a read retries it, a mutation is not re-sent",
  "agent✗":
    "guestExec of `sleep 5`: the guest agent is killed (SIGKILL) while the command runs",
  "pid✗":
    "guestExec: the guest reboots while the command runs, so exec-status answers `Agent error: Invalid parameter 'pid'`",
  "lock cleared":
    "the guest's config carries `lock: backup` when the method starts and the lock clears 1 s later, inside the 3 s budget: a method that acts on the guest waits the lock out (PVE would refuse it meanwhile, `VM is locked (backup)`), then acts and succeeds with a record free of the lock; a read, or a command inside the guest, succeeds and records the lock",
  "lock held":
    "the same lock never clears: an acting method fails naming it when its budget runs out, having sent nothing; a read or a command inside the guest succeeds and records the lock",
  "OK+lock":
    "the method's task ends OK with its effect, but leaves the guest locked (the row's lock: `create`, `clone`, `migrate`, `snapshot`…, or `backup` taken by another operation), and the lock clears 1 s later, inside the 3 s budget: the lock is not a result — the method waits it out and succeeds with a record free of it",
  "OK+lock∞":
    "the same lock left after the task never clears: the method fails naming it (`still locked: <lock>`) when its budget runs out, its record showing it",
  "no file":
    "the task that writes a file (a download, a disk imported from an image) ends OK but the file is not there: the worker's lie, caught only by reading the storage's content back",
  "short file":
    "the same task ends OK having written only 1,000 bytes: the storage lists the file smaller than the URL's (the disk smaller than its image)",
  "checksum✗":
    "the checksum given is not the file's: PVE's download_file_from_url refuses it (`checksum mismatch: got … != expect …`) and keeps nothing",
};

/** What one cell observed and whether it was right. */
export interface CellResult {
  row: string;
  /** Endpoint row label; undefined for a scenario. */
  endpoint?: string;
  column: FaultId | ScenarioId;
  expected: Verdict;
  actual: Verdict;
  /** Empty when the cell behaved as the contract demands. */
  problems: string[];
  /** The failure message, if the run failed. */
  message?: string;
  note?: string;
  ms: number;
  /** Whether the record check judged the cell (it failed, or an outcome is unknown: records.ts). */
  recordsJudged?: boolean;
  /** How many records the record check looked at. */
  recordsChecked?: number;
}

/** The verdict the contract demands for a fault on an endpoint, and what the message must quote. */
export function expectation(
  endpoint: Endpoint,
  id: FaultId,
): { verdict: Verdict; happened: RegExp; note?: string } {
  const fault = FAULTS[id];
  const own = endpoint.expect?.[id];
  // A column that shares another's code path shares its verdicts; what happened is its own.
  const alike = fault.like ? endpoint.expect?.[fault.like] : undefined;
  const absorbed = endpoint.kind !== "mutation" && fault.transient &&
    id !== "reset∞";
  return {
    verdict: own?.verdict ?? alike?.verdict ??
      (absorbed ? "ok-retried" : "fail"),
    happened: own?.happened ?? fault.happened(endpoint),
    note: own?.note ?? alike?.note,
  };
}

const ADVICE =
  / — |check |grant |run lookup|set \w+|give |choose |remove |is apiUrl|see PVE's message/;

/** Requests of the run (from index `from` of the request log) that match the endpoint. */
function matches(env: Env, e: Endpoint, from: number): number {
  const re = new RegExp(e.path);
  return env.sim.requests.slice(from).filter((q) =>
    q.method === e.method && re.test(q.path)
  ).length;
}

function snapshot(env: Env): Snapshot {
  const map: Snapshot = new Map();
  for (let vmid = 100; vmid < 10000; vmid++) {
    const g = env.sim.guest(vmid);
    if (g) map.set(vmid, g.status);
  }
  return map;
}

function classify(r: RunResult, retried: boolean): Verdict {
  if (r.status === "failed") return "fail";
  const flagged = r.written.some((w) => {
    const d = w.data as Record<string, unknown>;
    // A fact the token may not read is flagged `<fact>Available: false` (disks, bridges, the
    // subscription status, the repositories).
    return (Array.isArray(d.warnings) && d.warnings.length > 0) ||
      Object.entries(d).some(([k, v]) =>
        k.endsWith("Available") && v === false
      );
  });
  if (flagged) return "ok-flagged";
  return retried ? "ok-retried" : "ok";
}

/**
 * How many times in a row the first faulted request was sent (same verb, path and query, nothing
 * in between): 1 when it was not retried. The client retries a read back to back.
 */
function attempts(env: Env, e: Endpoint, from: number): number {
  const re = new RegExp(e.path);
  const same = (q: (typeof env.sim.requests)[number]) =>
    q.method === e.method && re.test(q.path);
  const all = env.sim.requests.slice(from);
  let seen = 0;
  const first = all.findIndex((q) => same(q) && seen++ === (e.skip ?? 0));
  if (first < 0) return 0;
  const key = (q: (typeof all)[number]) =>
    `${q.method} ${q.path} ${JSON.stringify(q.query)}`;
  let n = 1;
  while (first + n < all.length && key(all[first + n]) === key(all[first])) n++;
  return n;
}

/** Starts the matrix's fixture: the qemu model and its fleet, or the lxc model and its containers. */
export function matrixEnv(
  type: GuestType = "qemu",
  via: "api" | "ssh" = "api",
  pve?: 8,
): Promise<Env> {
  return startEnv({
    guests: type === "qemu" ? fleet() : lxcFleet(),
    globalArgs: GLOBAL_ARGS,
    sim: { taskDurationMs: 20, ...(pve ? { pveVersion: pve } : {}) },
    via,
    ...(type === "lxc" ? { model: lxcModel } : {}),
  });
}

/** Checks shared by every cell: the verdict, the message, the effect, the records. */
function judge(
  env: Env,
  spec: MethodSpec,
  r: RunResult,
  before: Snapshot,
  expected: Verdict,
  actual: Verdict,
  happened: RegExp,
  names: RegExp = spec.names,
): string[] {
  const problems: string[] = [];
  if (actual !== expected) {
    problems.push(
      `expected ${expected}, got ${actual}: ${r.error ?? "(no error)"}`,
    );
  }
  if (r.status === "succeeded") {
    problems.push(...spec.effect(env, r).map((p) => `false success: ${p}`));
  } else {
    const message = r.error ?? "";
    if (!happened.test(message)) {
      problems.push(
        `message does not say what happened (${happened}): ${message}`,
      );
    }
    if (!names.test(message)) {
      problems.push(
        `message does not name what was being done (${names}): ${message}`,
      );
    }
    if (!ADVICE.test(message)) {
      problems.push(`message does not say what to check: ${message}`);
    }
  }
  problems.push(...spec.truth(env, r, before).map((p) => `record: ${p}`));
  return problems;
}

/** Runs one fault on one endpoint of one method. */
export async function faultCell(
  spec: MethodSpec,
  endpoint: Endpoint,
  id: FaultId,
): Promise<CellResult> {
  const started = performance.now();
  const { verdict: expected, happened, note } = expectation(endpoint, id);
  const fault = FAULTS[id];
  const env = await matrixEnv(spec.model, spec.via, spec.pve);
  try {
    await spec.prepare?.(env);
    await endpoint.prepare?.(env);
    const from = env.sim.requests.length;
    const before = snapshot(env);
    env.sim.fault({
      method: endpoint.method,
      pathRegex: endpoint.path,
      skip: endpoint.skip,
      ...fault.fault(endpoint),
    } as SimFault);
    const r = await env.run(spec.name, spec.argsFor?.() ?? spec.args);
    const hits = matches(env, endpoint, from);
    const skip = endpoint.skip ?? 0;
    const tries = attempts(env, endpoint, from);
    const actual = classify(r, tries > 1);
    const problems = judge(
      env,
      spec,
      r,
      before,
      expected,
      actual,
      happened,
      endpoint.names,
    );
    if (hits < skip + 1) {
      problems.push(`the fault never fired: ${hits} matching requests`);
    }
    const records = checkRecords(env, r, from);
    problems.push(...records.problems, ...checkClaims(env, r, from));
    const message = r.error ?? "";
    const like = FAULTS[id].like;
    const readBack = (endpoint.expect?.[id] ??
      (like ? endpoint.expect?.[like] : undefined))?.readBack === true;
    if (endpoint.kind === "mutation") {
      // Retry discipline: a mutation is sent once, whatever happened to its answer.
      if (hits !== 1) problems.push(`${endpoint.id} was sent ${hits} times`);
      if (fault.leavesEffectUnknown && !readBack && r.status === "failed") {
        const unknown = endpoint.id.startsWith("POST agent/exec")
          ? /may have run in the guest; it was not sent again/
          : /is unknown — it was not sent again/;
        if (!unknown.test(message)) {
          problems.push(
            `a lost answer must leave the effect unknown: ${message}`,
          );
        }
      }
      if (!fault.leavesEffectUnknown && /unknown|may have run/.test(message)) {
        problems.push(
          `PVE refused it, yet the message calls the effect unknown: ${message}`,
        );
      }
    } else if (endpoint.kind !== "poll" && fault.transient) {
      // A safe read retries a transient fault, a bounded number of times.
      const want = id === "reset∞" ? 1 + READ_RETRIES : 2;
      const ok = endpoint.polled && id !== "reset∞"
        ? tries >= want
        : tries === want;
      if (!ok) {
        problems.push(
          `${endpoint.id} was sent ${tries} times in a row, expected ${want}`,
        );
      }
    }
    return {
      row: spec.row,
      endpoint: endpoint.id,
      column: id,
      expected,
      actual,
      problems,
      message: r.error,
      note,
      ms: performance.now() - started,
      recordsJudged: records.judged,
      recordsChecked: records.records,
    };
  } finally {
    await env.close();
  }
}

/** A scenario's setup and expectation for one method. */
export interface ScenarioPlan {
  expected: Verdict;
  happened: RegExp;
  /** Before the run. */
  arm?(env: Env): void;
  /** While the run is in flight. */
  during?(env: Env, run: Promise<RunResult>): Promise<void>;
  /** Extra judgement. */
  check?(env: Env, r: RunResult): string[];
}

/** Runs one scenario for one method. */
export async function scenarioCell(
  spec: MethodSpec,
  id: ScenarioId,
  plan: ScenarioPlan,
  args?: Record<string, unknown>,
): Promise<CellResult> {
  const started = performance.now();
  const env = await matrixEnv(spec.model, spec.via, spec.pve);
  try {
    await spec.prepare?.(env);
    const before = snapshot(env);
    plan.arm?.(env);
    const from = env.sim.requests.length;
    const run = env.run(spec.name, args ?? spec.argsFor?.() ?? spec.args);
    await plan.during?.(env, run);
    const r = await run;
    const actual = classify(r, id === "node blip");
    const records = checkRecords(env, r, from);
    const problems = [
      ...judge(env, spec, r, before, plan.expected, actual, plan.happened),
      ...(plan.check?.(env, r) ?? []),
      ...records.problems,
      ...checkClaims(env, r, from),
    ];
    return {
      row: spec.row,
      column: id,
      expected: plan.expected,
      actual,
      problems,
      message: r.error,
      ms: performance.now() - started,
      recordsJudged: records.judged,
      recordsChecked: records.records,
    };
  } finally {
    await env.close();
  }
}

/** Resolves once a request matching `method` and `path` got an answer with this status. */
export async function answered(
  env: Env,
  method: string,
  path: RegExp,
  status = 200,
): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (
      env.sim.requests.some((q) =>
        q.method === method && path.test(q.path) && q.status === status
      )
    ) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`no ${method} ${path} answered ${status} within 10 s`);
}

/** The exec record a guestExec run wrote for `vmid`. */
export function execRecord(r: RunResult, vmid: number) {
  return lastWrite(r, `vm-${vmid}-exec`);
}
