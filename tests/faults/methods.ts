/**
 * The per-method table of the fault matrix: for every method of the qemu model, valid arguments, the
 * requests it sends (in order, with the phase a repeated request is in), and the oracles that decide
 * whether a verdict told the truth — the intended effect holds in the simulator after a success, and
 * no record claims what was not observed.
 *
 * @module
 */
import type { RunResult } from "../../harness/types.ts";
import type { Env } from "../e2e/env.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { ConfigValue, SimGuest } from "../../simulator/types.ts";
import { FAULT_IDS, type FaultId, FAULTS } from "./faults.ts";
import { readsOf } from "./records.ts";
import type { FileScenario, ScenarioPlan } from "./cell.ts";
import { downloadSpec } from "./download_rows.ts";
import { vmCreateSpec } from "./vm_create_rows.ts";
import { backupSpecs } from "./backup_rows.ts";
import { fileSpecs } from "./file_rows.ts";
import { migrateSpec } from "./migrate_rows.ts";
import { preflightSpec } from "./preflight_rows.ts";
import { snapshotSpecs } from "./snapshot_rows.ts";
import { resumeSpec, suspendSpec, waitTaskSpec } from "./power_rows.ts";
import { removeNicSpec, setNicSpec } from "./nic_rows.ts";
import { attachDiskSpec, detachDiskSpec, moveDiskSpec } from "./disk_rows.ts";
import {
  firewallAliasSpec,
  firewallIpsetSpec,
  firewallOptionsSpec,
  firewallRulesSpec,
} from "./firewall_rows.ts";
import {
  haGroupSpec,
  haResourceSpec,
  haRuleSpec,
  haStatusSpec,
} from "./ha_rows.ts";

/** What a verdict may be. */
export type Verdict = "fail" | "ok" | "ok-retried" | "ok-flagged";

/** An endpoint's own expectation for a fault, overriding the default rule. */
export interface Expect {
  verdict: Verdict;
  /** What the failure message must quote instead of the fault's default. */
  happened?: RegExp;
  /** Why (shown in MATRIX.md's notes). */
  note?: string;
  /**
   * PVE's answer is not needed to judge the call (a config write answers null): a read-back
   * decides, so the message reports what it read instead of calling the effect unknown.
   */
  readBack?: boolean;
}

/**
 * How an endpoint may be repeated: `read` (safe, retried by the client), `check` (the pre-flight
 * check's read), `poll` (agent exec-status: a read that consumes its final answer, re-polled by
 * guestExec itself), `mutation` (never re-sent).
 */
export type EndpointKind = "read" | "check" | "poll" | "mutation";

/** One request a method sends. */
export interface Endpoint {
  /** Row label, e.g. `GET status/current (after the task)`. */
  id: string;
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** Matched against the decoded request path. */
  path: string;
  /** An example path (for 501 messages). */
  sample: string;
  /** Matching requests let through before the fault (the phase of a repeated request). */
  skip?: number;
  kind: EndpointKind;
  /** PVE's message when this call fails with HTTP 500. */
  pve500: string;
  /** `<path>, <privilege>` PVE names when this call is refused. */
  privilege: string;
  expect?: Partial<Record<FaultId, Expect>>;
  /**
   * Prepares the fixture for a cell on this endpoint (before the fault is armed; its requests
   * are not counted).
   */
  prepare?(env: Env): void | Promise<void>;
  /** What a failure message names instead of the method's own pattern. */
  names?: RegExp;
  /** Sent repeatedly by a poll loop: a retry shows as two or more requests in a row. */
  polled?: boolean;
  /**
   * A create or clone request: what the `stored≠` fault makes the new guest store instead of the
   * request's values, and what the failure must quote (the key, both values).
   */
  stores?: { config: Record<string, ConfigValue>; happened: RegExp };
}

/** A method of the model, as the matrix drives it. */
export interface MethodSpec {
  /** The model the method belongs to (default qemu). */
  model?: GuestType;
  /** The model's method. */
  name: string;
  /** The matrix row (a method driven two ways gets two rows). */
  row: string;
  args: Record<string, unknown>;
  /** Requests in the order the method sends them. */
  endpoints: Endpoint[];
  /** A failure message names what was being done: this must match. */
  names: RegExp;
  /**
   * The transport of the row's cells (default api): `ssh` for a method only the ssh transport has
   * (a container's guestExec runs `pct exec` on the node); its requests still reach the simulator,
   * through the node's pvesh.
   */
  via?: "api" | "ssh";
  /** The PVE major version the row's simulator serves (default 9). */
  pve?: 8;
  /**
   * The fault columns that reach this row (default all). Over ssh the HTTP faults between the
   * node's pvesh and PVE (a reset, a truncated or non-JSON body, a hang) reach the client as
   * pvesh's own failure: tests/ssh/ covers those; PVE's refusals and wrong shapes pass through.
   */
  faults?: readonly FaultId[];
  /** Fresh arguments for each cell (e.g. a file path of its own), instead of `args`. */
  argsFor?(): Record<string, unknown>;
  /** Prepares the fixture for every cell of this row, before its fault or scenario is armed. */
  prepare?(env: Env): void | Promise<void>;
  /** Whether the method runs a PVE task (it gets the `task✗` scenario). */
  task: boolean;
  /**
   * What the failure must quote when the method's task ends OK without its effect (the `no effect`
   * scenario; rows without it do not get that column).
   */
  noEffect?: RegExp;
  /**
   * Why a config lock does not bar this method (a read, or a command inside the guest OS, which
   * PVE's agent and `pct exec` do not guard by the lock): it succeeds in the lock scenarios (cell.ts
   * `LOCK_SCENARIOS`) and a guest record it writes shows the lock. Without it the method acts on
   * the guest: it must fail naming the lock (PVE refuses it at once) or wait for it, never succeed
   * over it.
   */
  lockFree?: string;
  /**
   * The guest the lock scenarios lock, when it is not the `vmid` argument: a clone's template
   * (qemu-server's clone_vm refuses a locked source before it forks).
   */
  lockedVmid?: number;
  /**
   * The lock a task of this method may leave on the guest of its `vmid` argument as it ends OK
   * (its own, as qemu-server's create_vm keeps `create` until the final config is written, or
   * another operation's): the row gets the `OK+lock` scenarios (cell.ts `LEFT_LOCK_SCENARIOS`).
   */
  leftLock?: string;
  /**
   * The file scenarios this row takes (a method whose task writes a file): each one's plan, and
   * arguments of its own when the scenario is in them (a wrong checksum).
   */
  fileScenarios?: Partial<
    Record<FileScenario, { plan: ScenarioPlan; args?: Record<string, unknown> }>
  >;
  /** After a success: problems if the intended effect does not hold in the simulator. */
  effect(env: Env, r: RunResult): string[];
  /** Whatever the verdict: problems if a record claims what was not observed. */
  truth(env: Env, r: RunResult, before: Snapshot): string[];
}

/** The simulator's guests before a cell ran: status per VMID. */
export type Snapshot = Map<number, string>;

/** Where the matrix's guests live: the API node `pve1`, or `pve2` behind it. */
export type Where = "pve1" | "pve2";

/** The other node of the matrix's two. */
export const other = (n: Where): Where => n === "pve1" ? "pve2" : "pve1";

const uuid = (n: number) =>
  `uuid=00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;

function managed(
  vmid: number,
  node: Where,
  status: "running" | "stopped",
): SimGuest {
  return {
    vmid,
    node,
    type: "qemu",
    name: `m${vmid}`,
    status,
    tags: ["swamp"],
    agent: "running",
    config: {
      smbios1: uuid(vmid),
      memory: 1024,
      scsi0: `local-lvm:vm-${vmid}-disk-0,size=8G`,
      ide2: `local-lvm:vm-${vmid}-cloudinit,media=cdrom`,
      net0: `virtio=BC:24:11:00:01:${vmid % 100},bridge=vmbr0`,
    },
  };
}

function template(vmid: number, node: Where): SimGuest {
  return {
    vmid,
    node,
    type: "qemu",
    name: `tmpl${vmid}`,
    status: "stopped",
    config: {
      template: 1,
      smbios1: uuid(vmid),
      scsi0: `local-lvm:base-${vmid}-disk-0,size=8G`,
    },
  };
}

/**
 * The matrix's cluster: the demo guests, a stopped and a running managed VM and a template on each
 * node (120/122/9000 on pve1, 121/123/9001 on pve2).
 */
export function fleet(): SimGuest[] {
  return [
    ...demoGuests(),
    managed(120, "pve1", "stopped"),
    managed(122, "pve1", "running"),
    template(9000, "pve1"),
    managed(121, "pve2", "stopped"),
    managed(123, "pve2", "running"),
    template(9001, "pve2"),
  ];
}

/** Settings that keep every cell short: a hang costs `requestTimeoutSec`, a wait `taskTimeoutSec`. */
export const GLOBAL_ARGS = {
  taskTimeoutSec: 3,
  pollIntervalSec: 1,
  requestTimeoutSec: 1,
};

// ── endpoint builders ──────────────────────────────────────────────────────

export const QUORUM = "cluster not ready - no quorum?";
const LOCKED = "VM is locked (backup)";
export const CT_LOCKED = "CT is locked (backup)";

/** Why a read is not barred by a config lock ({@link MethodSpec.lockFree}). */
export const READ_LOCK_FREE =
  "a read: PVE serves a locked guest's status and config, and the record shows the lock";
/** Why the guest agent's commands are not ({@link MethodSpec.lockFree}). */
export const AGENT_LOCK_FREE =
  "a command inside the guest OS: qemu-server's agent API (PVE/API2/Qemu/Agent.pm) checks that the agent is available, not the config lock";

export const version: Endpoint = {
  id: "GET /version (pre-flight check)",
  method: "GET",
  path: "^/api2/json/version$",
  sample: "/version",
  kind: "check",
  pve500: "Service Unavailable: pveproxy is restarting",
  privilege: "/, Sys.Audit",
  names:
    /Pre-flight checks failed for "fleet" → \w+:\s+transport-reachable:[\s\S]*on node pve1/,
};

/**
 * The `permissions` check's read of what the token may do on guest `vmid`: a courtesy, so whatever
 * it meets the method runs — one warning says the pre-check could not run, PVE's own checks apply
 * (src/methods/preflight.rs `could_not_run`); a transient fault is retried like any read.
 */
export const permissionsRead = (vmid: number): Endpoint => ({
  id: "GET /access/permissions (pre-flight check)",
  method: "GET",
  path: "^/api2/json/access/permissions$",
  sample: `/access/permissions?path=/vms/${vmid}`,
  kind: "check",
  pve500: "cluster not ready - no quorum?",
  privilege: "/access, Sys.Audit",
  expect: Object.fromEntries(
    FAULT_IDS.map((id) => [id, {
      // A transient fault is retried like any read's; one that persists (reset∞) is given up.
      verdict: FAULTS[id].transient ? "ok-retried" : "ok",
      note:
        "the permission pre-check could not run: the method runs with one warning, PVE checks each request",
    }]),
  ),
});

export const resources = (phase = "", skip = 0): Endpoint => ({
  id: `GET /cluster/resources${phase}`,
  method: "GET",
  path: "^/api2/json/cluster/resources$",
  sample: "/cluster/resources",
  skip,
  kind: "read",
  pve500: QUORUM,
  privilege: "/, Sys.Audit",
});

export const nextid = (phase = ""): Endpoint => ({
  id: `GET /cluster/nextid${phase}`,
  method: "GET",
  path: "^/api2/json/cluster/nextid$",
  sample: "/cluster/nextid",
  kind: "read",
  pve500: QUORUM,
  privilege: "/vms, VM.Allocate",
});

/** The guest type of a model: its requests go to `/nodes/<node>/<type>/<vmid>`. */
export type GuestType = "qemu" | "lxc";

export const guestPath = (
  node: string,
  vmid: number,
  rest: string,
  type: GuestType = "qemu",
) => `^/api2/json/nodes/${node}/${type}/${vmid}${rest}$`;

export const status = (
  node: string,
  vmid: number,
  phase = "",
  skip = 0,
  type: GuestType = "qemu",
): Endpoint => ({
  id: `GET status/current${phase}`,
  method: "GET",
  path: guestPath(node, vmid, "/status/current", type),
  sample: `/nodes/${node}/${type}/${vmid}/status/current`,
  skip,
  kind: "read",
  pve500: type === "qemu"
    ? `VM ${vmid} qmp command 'query-status' failed - unable to connect to VM ${vmid} qmp socket - timeout after 51 retries`
    : `unable to get PID for CT ${vmid} (not running?)`,
  privilege: `/vms/${vmid}, VM.Audit`,
});

export const config = (
  node: string,
  vmid: number,
  phase = "",
  skip = 0,
  type: GuestType = "qemu",
): Endpoint => ({
  id: `GET config${phase}`,
  method: "GET",
  path: guestPath(node, vmid, "/config", type),
  sample: `/nodes/${node}/${type}/${vmid}/config`,
  skip,
  kind: "read",
  pve500: type === "qemu"
    ? `can't lock file '/var/lock/qemu-server/lock-${vmid}.conf' - got timeout`
    : `can't lock file '/run/lock/lxc/pve-config-${vmid}.lock' - got timeout`,
  privilege: `/vms/${vmid}, VM.Audit`,
});

export const taskStatus = (node: string, what: string): Endpoint => ({
  id: `GET tasks/…/status (${what} task)`,
  method: "GET",
  path: `^/api2/json/nodes/${node}/tasks/[^/]+/status$`,
  sample: `/nodes/${node}/tasks/UPID:${node}:…/status`,
  kind: "read",
  polled: true,
  pve500: "unable to read tail (got timeout)",
  privilege: `/nodes/${node}, Sys.Audit`,
});

/**
 * How a method finds a guest on `node`: the configured node (pve1) is asked first; a guest on pve2
 * costs pve1's "not here" answer to the first request, then `/cluster/resources`.
 */
export const findIt = (
  node: Where,
  vmid: number,
  first: Endpoint,
): Endpoint[] =>
  node === "pve1" ? [] : [
    {
      ...first,
      id: `${first.id} (on pve1: not there)`,
      path: first.path.replace("/nodes/pve2/", "/nodes/pve1/"),
      sample: first.sample.replace("/nodes/pve2/", "/nodes/pve1/"),
      names: new RegExp(`${vmid}`),
    },
    resources(" (find it)"),
  ];

export const power = (
  node: string,
  vmid: number,
  action: "start" | "stop" | "shutdown",
  type: GuestType = "qemu",
): Endpoint => ({
  id: `POST status/${action}`,
  method: "POST",
  path: guestPath(node, vmid, `/status/${action}`, type),
  sample: `/nodes/${node}/${type}/${vmid}/status/${action}`,
  kind: "mutation",
  pve500: type === "qemu" ? LOCKED : CT_LOCKED,
  privilege: `/vms/${vmid}, VM.PowerMgmt`,
});

/** A config change refused or lost: the read-back, not the answer, decides. */
export const readBackDecides = (
  happened: RegExp,
): Partial<Record<FaultId, Expect>> => ({
  shape: {
    verdict: "fail",
    happened,
    readBack: true,
    note: "PUT …/config answers null; the read-back shows the change missing",
  },
});

// ── oracles ────────────────────────────────────────────────────────────────

type Rec = Record<string, unknown>;

/** The last record this run wrote under `instance`, if any. */
export function lastWrite(r: RunResult, instance: string): Rec | undefined {
  return r.written.filter((w) => w.instance === instance).at(-1)?.data as
    | Rec
    | undefined;
}

/** A present guest record may only show a status the guest really had during the run. */
export function statusObserved(
  env: Env,
  r: RunResult,
  before: Snapshot,
  vmid: number,
  prefix = "vm",
): string[] {
  const rec = lastWrite(r, `${prefix}-${vmid}`);
  if (!rec || rec.present !== true) return [];
  // Before, every state status/current showed during the run (a reboot's stopped moment is one),
  // and after: a record may hold any of them, never a state PVE did not show.
  const seen = [
    before.get(vmid),
    ...readsOf(`${prefix}-${vmid}`, env.sim.requests).map((q) =>
      (q.answer as { status?: string }).status
    ),
    env.sim.guest(vmid)?.status,
  ].filter((s, i, all) => s !== undefined && all.indexOf(s) === i);
  return seen.includes(String(rec.status)) ? [] : [
    `${prefix}-${vmid} claims status ${rec.status}, but the guest was ${
      seen.join(" then ")
    }`,
  ];
}

/** The record claims the target state: only if status/current answered after the mutation. */
function noUnobservedTarget(
  env: Env,
  r: RunResult,
  vmid: number,
  target: string,
  mutation: RegExp,
  type: GuestType = "qemu",
): string[] {
  const prefix = PREFIX[type];
  const rec = lastWrite(r, `${prefix}-${vmid}`);
  if (r.status !== "failed" || !rec || rec.status !== target) return [];
  const at = env.sim.requests.findIndex((q) => mutation.test(q.path));
  const readAfter = at >= 0 &&
    env.sim.requests.slice(at + 1).some((q) =>
      q.status === 200 && q.path.endsWith(`/${type}/${vmid}/status/current`)
    );
  return readAfter && env.sim.guest(vmid)?.status === target ? [] : [
    `failed run wrote ${prefix}-${vmid} status ${target} without status/current showing it`,
  ];
}

/** `tasklog-<node>-<pid>-<starttime>`: the file holding the log of the task `upid` names. */
function taskLogOf(upid: unknown): string | undefined {
  const [, node, pid, , starttime] = String(upid).split(":");
  return starttime ? `tasklog-${node}-${pid}-${starttime}` : undefined;
}

/**
 * Only these instances may be written — and the file holding a task's log (spec `taskLog`): a
 * record of the run that names the task (`lastTask`, `upid`) must point to it (`lastTaskLog`,
 * `logFile`); a run whose records name no task (a failed create records nothing) may leave it.
 */
export function writesOnly(r: RunResult, allowed: RegExp): string[] {
  const recs = r.written.map((w) => w.data as Rec)
    .filter((rec) => rec !== null && typeof rec === "object");
  const pointed = new Set(
    recs.flatMap((rec) => [rec.lastTaskLog, rec.logFile]),
  );
  const tasks = new Set(
    recs.flatMap((rec) => [rec.lastTask, rec.upid].map(taskLogOf)),
  );
  const taskLog = (w: RunResult["written"][number]) =>
    w.spec === "taskLog" &&
    (pointed.has(w.instance) || !tasks.has(w.instance));
  return r.written.filter((w) => !allowed.test(w.instance) && !taskLog(w))
    .map((w) => `unexpected record ${w.instance}`);
}

export function powerEffect(
  vmid: number,
  target: string,
  type: GuestType = "qemu",
) {
  const prefix = PREFIX[type];
  return (env: Env, r: RunResult): string[] => {
    const problems: string[] = [];
    if (env.sim.guest(vmid)?.status !== target) {
      problems.push(
        `succeeded but guest ${vmid} is ${env.sim.guest(vmid)?.status}`,
      );
    }
    const rec = lastWrite(r, `${prefix}-${vmid}`);
    if (rec?.status !== target) {
      problems.push(`succeeded but ${prefix}-${vmid} says ${rec?.status}`);
    }
    return problems;
  };
}

export function powerTruth(
  vmid: number,
  target: string,
  action: string,
  type: GuestType = "qemu",
) {
  const prefix = PREFIX[type];
  return (env: Env, r: RunResult, before: Snapshot): string[] => [
    ...writesOnly(r, new RegExp(`^${prefix}-${vmid}$`)),
    ...statusObserved(env, r, before, vmid, prefix),
    ...noUnobservedTarget(
      env,
      r,
      vmid,
      target,
      new RegExp(`/${type}/${vmid}/status/${action}$`),
      type,
    ),
  ];
}

/** The record prefix of a guest type: `vm-<vmid>` or `ct-<vmid>`. */
const PREFIX: Record<GuestType, string> = { qemu: "vm", lxc: "ct" };

/** The faults after which a read that only feeds the record leaves it flagged, not failed. */
const NON_TRANSIENT: FaultId[] = [
  "500",
  "403",
  "501",
  "400",
  "reset∞",
  "malformed",
  "truncated",
  "empty",
  "shape",
];

/** Expectations: each non-transient fault on this endpoint ends in a flagged success. */
export const flaggedOn = (note: string): Partial<Record<FaultId, Expect>> =>
  Object.fromEntries(
    NON_TRANSIENT.map((f) => [f, { verdict: "ok-flagged", note }]),
  );

/** A method row before it is placed in a model's table (which sets `row` and `model`). */
export type RowSpec = Omit<MethodSpec, "row" | "model">;

/** The start/stop/shutdown row of either guest type: the task, then status/current proves it. */
export function powerSpec(
  n: string,
  type: GuestType,
  action: "start" | "stop" | "shutdown",
  vmid: number,
  target: string,
  args: Record<string, unknown>,
  names: RegExp,
  taskExpect?: Partial<Record<FaultId, Expect>>,
): RowSpec {
  return {
    name: action,
    args,
    endpoints: [
      version,
      ...findIt(n as Where, vmid, status(n, vmid, " (before)", 0, type)),
      status(n, vmid, " (before)", 0, type),
      power(n, vmid, action, type),
      { ...taskStatus(n, action), expect: taskExpect },
      status(n, vmid, " (after the task)", 1, type),
    ],
    names,
    task: true,
    leftLock: "backup",
    effect: powerEffect(vmid, target, type),
    truth: powerTruth(vmid, target, action, type),
  };
}

/** The delete row of either guest type: the task, then the guest must be gone everywhere. */
export function deleteSpec(
  n: string,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const prefix = PREFIX[type];
  const noun = type === "qemu" ? "VM" : "container";
  return {
    name: "delete",
    args: { vmid },
    endpoints: [
      version,
      permissionsRead(vmid),
      ...findIt(n as Where, vmid, status(n, vmid, "", 0, type)),
      status(n, vmid, "", 0, type),
      {
        id: `DELETE /nodes/…/${type}/<vmid>`,
        method: "DELETE",
        path: `^/api2/json/nodes/${n}/${type}/${vmid}$`,
        sample: `/nodes/${n}/${type}/${vmid}`,
        kind: "mutation",
        pve500: type === "qemu" ? LOCKED : CT_LOCKED,
        privilege: `/vms/${vmid}, VM.Allocate`,
      },
      taskStatus(n, "destroy"),
      nextid(" (confirm gone)"),
    ],
    names,
    task: true,
    effect: (env, r) => {
      const problems: string[] = [];
      if (env.sim.guest(vmid)) {
        problems.push(`succeeded but the ${noun} exists`);
      }
      if (lastWrite(r, `${prefix}-${vmid}`)?.status !== "deleted") {
        problems.push("succeeded without a deleted record");
      }
      return problems;
    },
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^${prefix}-${vmid}$`)),
        ...statusObserved(env, r, before, vmid, prefix),
      ];
      const rec = lastWrite(r, `${prefix}-${vmid}`);
      if (r.status === "failed" && rec?.status === "deleted") {
        problems.push("a failed delete wrote status deleted");
      }
      if (r.status === "failed" && rec?.present === false) {
        problems.push("a failed delete wrote present: false");
      }
      return problems;
    },
  };
}

/**
 * The convertToTemplate row of either guest type: a stopped managed guest; qemu follows the
 * `qmtemplate` task, lxc has none to follow (PVE answers null), then config and listing must both
 * show the template.
 */
export function templateSpec(
  n: string,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const prefix = PREFIX[type];
  const post: Endpoint = {
    id: "POST template",
    method: "POST",
    path: guestPath(n, vmid, "/template", type),
    sample: `/nodes/${n}/${type}/${vmid}/template`,
    kind: "mutation",
    pve500: type === "qemu" ? LOCKED : CT_LOCKED,
    privilege: `/vms/${vmid}, VM.Allocate`,
    // lxc answers null: its answer is not needed, the config read-back decides.
    expect: type === "lxc"
      ? {
        shape: {
          verdict: "fail",
          happened: /do not both show it as a template/,
          readBack: true,
          note: "PVE answers null; the read-back shows no template",
        },
      }
      : undefined,
  };
  return {
    name: "convertToTemplate",
    args: { vmid },
    endpoints: [
      version,
      ...findIt(n as Where, vmid, status(n, vmid, "", 0, type)),
      status(n, vmid, "", 0, type),
      post,
      ...(type === "qemu" ? [taskStatus(n, "template")] : []),
      { ...config(n, vmid, " (template flag)", 0, type), polled: true },
      {
        id: `GET /nodes/<node>/${type} (listed as a template)`,
        method: "GET",
        path: `^/api2/json/nodes/${n}/${type}$`,
        sample: `/nodes/${n}/${type}`,
        kind: "read",
        pve500: "got timeout",
        privilege: `/nodes/${n}, Sys.Audit`,
      },
      status(n, vmid, " (read back)", 1, type),
    ],
    names,
    task: type === "qemu",
    leftLock: "backup",
    effect: (env, r) => {
      const problems: string[] = [];
      if (!env.sim.guest(vmid)?.config.template) {
        problems.push(`succeeded but ${prefix}-${vmid} is no template`);
      }
      if (lastWrite(r, `${prefix}-${vmid}`)?.template !== true) {
        problems.push("succeeded without template: true in the record");
      }
      return problems;
    },
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^${prefix}-${vmid}$`)),
        ...statusObserved(env, r, before, vmid, prefix),
      ];
      const rec = lastWrite(r, `${prefix}-${vmid}`);
      if (rec?.template === true && !env.sim.guest(vmid)?.config.template) {
        problems.push("records a template that is none");
      }
      return problems;
    },
  };
}

/**
 * The reboot row of either guest type: a running managed guest; the task, then status/current must
 * show it running with another pid than before.
 */
export function rebootSpec(
  n: string,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const prefix = PREFIX[type];
  return {
    name: "reboot",
    args: { vmid },
    endpoints: [
      version,
      ...findIt(n as Where, vmid, status(n, vmid, " (before)", 0, type)),
      status(n, vmid, " (before)", 0, type),
      {
        id: "POST status/reboot",
        method: "POST",
        path: guestPath(n, vmid, "/status/reboot", type),
        sample: `/nodes/${n}/${type}/${vmid}/status/reboot`,
        kind: "mutation",
        pve500: type === "qemu" ? LOCKED : CT_LOCKED,
        privilege: `/vms/${vmid}, VM.PowerMgmt`,
      },
      taskStatus(n, "reboot"),
      { ...status(n, vmid, " (after the task)", 1, type), polled: true },
    ],
    names,
    task: true,
    leftLock: "backup",
    effect: (env, r) => {
      const g = env.sim.guest(vmid);
      const problems: string[] = [];
      if (g?.status !== "running") {
        problems.push(`succeeded but ${vmid} is ${g?.status}`);
      }
      // The fixture's guests were described running: any boot since is the reboot's.
      if (!g?.boots) {
        problems.push("succeeded but the guest never booted again");
      }
      if (lastWrite(r, `${prefix}-${vmid}`)?.status !== "running") {
        problems.push("succeeded without a running record");
      }
      return problems;
    },
    truth: (env, r, before) => [
      ...writesOnly(r, new RegExp(`^${prefix}-${vmid}$`)),
      ...statusObserved(env, r, before, vmid, prefix),
    ],
  };
}

/** The cloudInit row (qemu): set, regenerate, then the generated config and the drive decide. */
function cloudInitSpec(n: string, vmid: number, names: RegExp): RowSpec {
  const dump = (part: string, skip: number): Endpoint => ({
    id: `GET cloudinit/dump (${part})`,
    method: "GET",
    path: guestPath(n, vmid, "/cloudinit/dump"),
    sample: `/nodes/${n}/qemu/${vmid}/cloudinit/dump`,
    skip,
    kind: "read",
    pve500: LOCKED_CONF(vmid),
    privilege: `/vms/${vmid}, VM.Audit`,
    expect: {
      shape: {
        verdict: "fail",
        happened: /lacks what was asked/,
        note: "a dump is text: any other text lacks the asked values",
      },
    },
  });
  return {
    name: "cloudInit",
    args: { vmid, ciuser: "ops", ipconfig0: "ip=10.0.0.5/24,gw=10.0.0.1" },
    endpoints: [
      version,
      ...findIt(n as Where, vmid, status(n, vmid)),
      status(n, vmid),
      config(n, vmid, " (the cloud-init drive)"),
      {
        id: "PUT config",
        method: "PUT",
        path: guestPath(n, vmid, "/config"),
        sample: `/nodes/${n}/qemu/${vmid}/config`,
        kind: "mutation",
        pve500: LOCKED,
        privilege: `/vms/${vmid}, VM.Config.Cloudinit`,
        expect: readBackDecides(/neither applied nor pending/),
      },
      {
        id: "GET pending (read back)",
        method: "GET",
        path: guestPath(n, vmid, "/pending"),
        sample: `/nodes/${n}/qemu/${vmid}/pending`,
        kind: "read",
        pve500: LOCKED_CONF(vmid),
        privilege: `/vms/${vmid}, VM.Audit`,
      },
      {
        id: "PUT cloudinit (regenerate)",
        method: "PUT",
        path: guestPath(n, vmid, "/cloudinit"),
        sample: `/nodes/${n}/qemu/${vmid}/cloudinit`,
        kind: "mutation",
        pve500: LOCKED,
        privilege: `/vms/${vmid}, VM.Config.Cloudinit`,
        expect: {
          shape: {
            verdict: "fail",
            happened: /still lists .* as pending/,
            readBack: true,
            note:
              "PUT …/cloudinit answers null; GET …/cloudinit shows the drive not regenerated",
          },
        },
      },
      dump("user", 0),
      dump("network", 1),
      dump("meta", 2),
      {
        id: "GET cloudinit (pending against the drive)",
        method: "GET",
        path: guestPath(n, vmid, "/cloudinit"),
        sample: `/nodes/${n}/qemu/${vmid}/cloudinit`,
        kind: "read",
        pve500: LOCKED_CONF(vmid),
        privilege: `/vms/${vmid}, VM.Audit`,
      },
    ],
    names,
    task: false,
    effect: (env) => {
      const g = env.sim.guest(vmid);
      return g?.config.ciuser === "ops" &&
          g.cloudinitGenerated?.ciuser === "ops"
        ? []
        : ["succeeded but the drive was not generated with ciuser ops"];
    },
    truth: (env, r, before) => [
      ...writesOnly(r, new RegExp(`^vm-${vmid}$`)),
      ...statusObserved(env, r, before, vmid),
    ],
  };
}

/** The waitReady row (qemu): ping, the agent's version (informative), then the interfaces. */
function waitReadySpec(n: string, vmid: number, names: RegExp): RowSpec {
  const agent = (
    what: string,
    verb: "GET" | "POST",
    rest: string,
  ): Endpoint => ({
    id: `${verb} agent/${rest} (${what})`,
    method: verb,
    path: guestPath(n, vmid, `/agent/${rest}`),
    sample: `/nodes/${n}/qemu/${vmid}/agent/${rest}`,
    kind: "read",
    pve500: "QEMU guest agent is not running",
    privilege: `/vms/${vmid}, VM.GuestAgent.Audit`,
  });
  const informative = Object.fromEntries(
    [...NON_TRANSIENT, "html", "hang"].map((f) => [f, {
      verdict: ["reset∞", "html", "hang"].includes(f) ? "ok-retried" : "ok",
      note: "the version only informs the record: unread, it is left out",
    }]),
  ) as Partial<Record<FaultId, Expect>>;
  const waitedFor = (what: string): Partial<Record<FaultId, Expect>> => ({
    500: {
      verdict: "ok-retried",
      note:
        `"QEMU guest agent is not running": an agent not up yet is waited for`,
    },
    shape: {
      verdict: "ok-retried",
      note: `${what} unreadable: asked again within timeoutSec`,
    },
    // Not like a 500 here: an agent not up yet is waited for, a refused token is not.
    echo401: { verdict: "fail" },
  });
  return {
    name: "waitReady",
    args: { vmid, timeoutSec: 2 },
    prepare: (env) => {
      env.sim.setGuest(vmid, { ips: ["10.0.0.22/24"] });
    },
    endpoints: [
      ...findIt(n as Where, vmid, status(n, vmid)),
      status(n, vmid),
      { ...agent("is it up?", "POST", "ping"), expect: waitedFor("the ping") },
      { ...agent("its version", "GET", "info"), expect: informative },
      {
        ...agent("addresses", "GET", "network-get-interfaces"),
        polled: true,
        expect: waitedFor("the interfaces"),
      },
    ],
    names,
    task: false,
    lockFree: AGENT_LOCK_FREE,
    effect: (_env, r) =>
      lastWrite(r, `vm-${vmid}-ready`)?.ipv4 === "10.0.0.22"
        ? []
        : ["succeeded without the address in vm-<vmid>-ready"],
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^vm-${vmid}(-ready)?$`)),
        ...statusObserved(env, r, before, vmid),
      ];
      const rec = lastWrite(r, `vm-${vmid}-ready`);
      if (rec?.ready === true && r.status === "failed") {
        problems.push("a failed run recorded ready: true");
      }
      return problems;
    },
  };
}

const LOCKED_CONF = (vmid: number) =>
  `can't lock file '/var/lock/qemu-server/lock-${vmid}.conf' - got timeout`;

// ── the table ──────────────────────────────────────────────────────────────

/** Every method of the qemu model the matrix knows, with its guests on `where`. */
export function methodSpecs(where: Where = "pve1"): MethodSpec[] {
  const n = where;
  const stopped = where === "pve1" ? 120 : 121;
  const running = where === "pve1" ? 122 : 123;
  const tmpl = where === "pve1" ? 9000 : 9001;
  const execVmid = where === "pve1" ? 100 : 101;
  const newVmid = where === "pve1" ? 300 : 301;
  const label = (vmid: number) => new RegExp(`VM ${vmid}|${vmid}`);

  // On pve2 these two are rows of their own: the placement fallback (pve1 says "not there", then
  // /cluster/resources), with every fault on each of its requests.
  const elsewhere = where === "pve1" ? "" : " (on another node)";
  const lookup: MethodSpec = {
    name: "lookup",
    row: `lookup${elsewhere}`,
    args: { vmid: running },
    endpoints: [
      ...findIt(n, running, status(n, running)),
      status(n, running),
      config(n, running),
    ],
    names: label(running),
    task: false,
    lockFree: READ_LOCK_FREE,
    effect: (env, r) => {
      const rec = lastWrite(r, `vm-${running}`);
      const g = env.sim.guest(running);
      return rec?.status === g?.status && rec?.qmpStatus === "running" &&
          rec?.node === n
        ? []
        : [`vm-${running} ${JSON.stringify(rec)} does not match the guest`];
    },
    truth: (env, r, before) => [
      ...writesOnly(r, new RegExp(`^vm-${running}$`)),
      ...(r.status === "failed" && r.written.length > 0
        ? ["a failed lookup wrote a record"]
        : []),
      ...statusObserved(env, r, before, running),
    ],
  };

  const execStatusLatency = (env: Env) => env.sim.setLatency(300);
  const execPost: Endpoint = {
    id: "POST agent/exec",
    method: "POST",
    path: guestPath(n, execVmid, "/agent/exec"),
    sample: `/nodes/${n}/qemu/${execVmid}/agent/exec`,
    kind: "mutation",
    pve500: "QEMU guest agent is not running",
    privilege: `/vms/${execVmid}, VM.GuestAgent.Unrestricted`,
  };
  const guestExec: MethodSpec = {
    name: "guestExec",
    row: `guestExec${elsewhere}`,
    args: {
      vmid: execVmid,
      command: ["bash", "-c", "echo ok"],
      timeoutSec: 5,
    },
    endpoints: [
      version,
      ...findIt(n, execVmid, execPost),
      execPost,
      {
        id: "GET agent/exec-status (the final answer)",
        method: "GET",
        path: guestPath(n, execVmid, "/agent/exec-status"),
        sample: `/nodes/${n}/qemu/${execVmid}/agent/exec-status`,
        kind: "poll",
        pve500:
          `VM ${execVmid} qmp command 'guest-exec-status' failed - got timeout`,
        privilege: `/vms/${execVmid}, VM.GuestAgent.Unrestricted`,
        // 300 ms per request: the command (echo) has ended by the first poll, so the fault hits
        // the final answer — the one the agent hands out only once.
        prepare: execStatusLatency,
        expect: {
          malformed: {
            verdict: "ok-retried",
            note:
              "re-polled: the simulator never asked the agent, so the final answer is still there",
          },
          truncated: { verdict: "ok-retried" },
          empty: { verdict: "ok-retried" },
          shape: { verdict: "ok-retried" },
          lost: {
            verdict: "fail",
            happened: /Invalid parameter 'pid'.*lost in transit/,
            note:
              "the agent handed out the final answer, which was lost: re-polling finds the pid forgotten",
          },
        },
      },
    ],
    names: new RegExp(`guestExec .* on VM ${execVmid}|VM ${execVmid}`),
    task: false,
    lockFree: AGENT_LOCK_FREE,
    effect: (_env, r) => {
      const rec = lastWrite(r, `vm-${execVmid}-exec`);
      return rec?.exitCode === 0 && rec?.stdout === "ok\n" &&
          rec?.accepted === true
        ? []
        : [`exec record ${JSON.stringify(rec)} is not the command's output`];
    },
    truth: (_env, r) => {
      const problems = writesOnly(r, new RegExp(`^vm-${execVmid}-exec$`));
      const rec = lastWrite(r, `vm-${execVmid}-exec`);
      if (r.status === "failed" && rec) {
        if (rec.accepted !== false) problems.push("failed but accepted");
        if (rec.outcome === "exited" && rec.exitCode === 0) {
          problems.push("failed though the record shows exit 0");
        }
      }
      // Evidence is never lost: whenever the final status was read, its output is recorded.
      if (rec?.outcome === "exited" && rec.stdout !== "ok\n") {
        problems.push(`exited but stdout is ${JSON.stringify(rec.stdout)}`);
      }
      if (r.status === "failed" && rec === undefined) {
        const sent = r.logs.some((l) => /started .* as pid/.test(l.message));
        if (sent) problems.push("the command started but no exec record");
      }
      return problems;
    },
  };

  const row = (spec: RowSpec): MethodSpec => ({ ...spec, row: spec.name });
  const start = row(
    powerSpec(
      n,
      "qemu",
      "start",
      stopped,
      "running",
      { vmid: stopped },
      label(stopped),
    ),
  );
  const stop = row(
    powerSpec(
      n,
      "qemu",
      "stop",
      running,
      "stopped",
      { vmid: running },
      label(running),
    ),
  );
  const shutdown = row(powerSpec(
    n,
    "qemu",
    "shutdown",
    running,
    "stopped",
    { vmid: running, timeoutSec: 2 },
    label(running),
    // The guest's state decides: an unobserved task end leaves timeoutSec to see it stop.
    flaggedOn(
      "the task's end was not observed, but the guest was seen stopped; the record warns that only the state decided",
    ),
  ));

  const del = row(deleteSpec(n, "qemu", stopped, label(stopped)));

  const clone: MethodSpec = {
    name: "clone",
    row: "clone",
    args: {
      templateId: tmpl,
      vmid: newVmid,
      name: "web2",
      storage: "local-lvm",
    },
    endpoints: [
      version,
      {
        ...nextid(" (is the VMID free?)"),
        expect: {
          shape: {
            verdict: "fail",
            happened: /unexpected/,
            note: "nextid must echo the VMID it was asked about",
          },
        },
      },
      ...findIt(n, tmpl, status(n, tmpl, " (the template)")),
      status(n, tmpl, " (the template)"),
      {
        id: "POST clone",
        method: "POST",
        path: guestPath(n, tmpl, "/clone"),
        sample: `/nodes/${n}/qemu/${tmpl}/clone`,
        kind: "mutation",
        pve500:
          `can't lock file '/var/lock/qemu-server/lock-${tmpl}.conf' - got timeout`,
        privilege: `/vms/${tmpl}, VM.Clone`,
        stores: {
          config: { scsi0: `local-zfs:vm-${newVmid}-disk-0,size=8G` },
          happened:
            /not every disk is on the requested storage "local-lvm": scsi0 is "local-zfs:/,
        },
      },
      taskStatus(n, "clone"),
      ...(n === "pve1" ? [] : [
        { ...status("pve1", newVmid, " (the clone, on pve1: not there)") },
        resources(" (find the clone)", 1),
      ]),
      status(n, newVmid, " (the clone)"),
      config(n, newVmid, " (the clone)"),
      {
        id: "PUT config (add the swamp tag)",
        method: "PUT",
        path: guestPath(n, newVmid, "/config"),
        sample: `/nodes/${n}/qemu/${newVmid}/config`,
        kind: "mutation",
        pve500: LOCKED,
        privilege: `/vms/${newVmid}, VM.Config.Options`,
        expect: readBackDecides(/its tags read back as ""/),
      },
      status(n, newVmid, " (tag read back)", 1),
    ],
    names: new RegExp(`VM ${newVmid}|VMID ${newVmid}|VM ${tmpl}`),
    lockedVmid: tmpl,
    task: true,
    leftLock: "clone",
    noEffect: /still locked: clone/,
    effect: (env, r) => {
      const g = env.sim.guest(newVmid);
      const rec = lastWrite(r, `vm-${newVmid}`);
      return g?.name === "web2" && g.tags.includes("swamp") &&
          rec?.present === true && (rec.tags as string[]).includes("swamp")
        ? []
        : [`succeeded but VM ${newVmid} is ${JSON.stringify(g?.tags)}`];
    },
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^vm-${newVmid}$`)),
        ...statusObserved(env, r, before, newVmid),
      ];
      const rec = lastWrite(r, `vm-${newVmid}`);
      if (rec?.present === true && !env.sim.guest(newVmid)) {
        problems.push("records a clone that does not exist");
      }
      if (
        rec && (rec.tags as string[]).includes("swamp") &&
        !env.sim.guest(newVmid)?.tags.includes("swamp")
      ) problems.push("records a swamp tag the clone does not carry");
      return problems;
    },
  };

  const setConfig: MethodSpec = {
    name: "setConfig",
    row: "setConfig",
    args: { vmid: stopped, config: { memory: 2048 } },
    endpoints: [
      version,
      ...findIt(n, stopped, status(n, stopped)),
      status(n, stopped),
      config(n, stopped),
      {
        id: "PUT config",
        method: "PUT",
        path: guestPath(n, stopped, "/config"),
        sample: `/nodes/${n}/qemu/${stopped}/config`,
        kind: "mutation",
        pve500: LOCKED,
        privilege: `/vms/${stopped}, VM.Config.Memory`,
        expect: readBackDecides(/`memory` is neither applied nor pending/),
      },
      {
        id: "GET pending (read back)",
        method: "GET",
        path: guestPath(n, stopped, "/pending"),
        sample: `/nodes/${n}/qemu/${stopped}/pending`,
        kind: "read",
        pve500: "got timeout",
        privilege: `/vms/${stopped}, VM.Audit`,
      },
    ],
    names: label(stopped),
    task: false,
    effect: (env) =>
      String(env.sim.guest(stopped)?.config.memory) === "2048"
        ? []
        : ["succeeded but memory is not 2048"],
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^vm-${stopped}$`)),
        ...statusObserved(env, r, before, stopped),
      ];
      const pending = lastWrite(r, `vm-${stopped}`)?.pending as
        | Rec
        | undefined;
      for (const key of Object.keys(pending ?? {})) {
        if (!(key in (env.sim.guest(stopped)?.pending ?? {}))) {
          problems.push(`records ${key} as pending, PVE holds no such change`);
        }
      }
      return problems;
    },
  };

  const resizeDisk: MethodSpec = {
    name: "resizeDisk",
    row: "resizeDisk",
    args: { vmid: stopped, disk: "scsi0", size: "+1G" },
    endpoints: [
      version,
      ...findIt(n, stopped, status(n, stopped, " (before)")),
      status(n, stopped, " (before)"),
      config(n, stopped, " (identity)"),
      config(n, stopped, " (size before)", 1),
      {
        id: "PUT resize",
        method: "PUT",
        path: guestPath(n, stopped, "/resize"),
        sample: `/nodes/${n}/qemu/${stopped}/resize`,
        kind: "mutation",
        pve500: LOCKED,
        privilege: `/vms/${stopped}, VM.Config.Disk`,
      },
      taskStatus(n, "resize"),
      config(n, stopped, " (size after)", 2),
      {
        ...status(n, stopped, " (record after)", 1),
        // The refresh only feeds the record: a failed read keeps the earlier state, as a warning.
        expect: Object.fromEntries(
          [
            "500",
            "403",
            "501",
            "400",
            "reset∞",
            "malformed",
            "truncated",
            "empty",
            "shape",
          ]
            .map((f) => [f, {
              verdict: "ok-flagged",
              note:
                "the disk reached its size; the record keeps the earlier state with a warning",
            }]),
        ),
      },
    ],
    names: label(stopped),
    task: true,
    leftLock: "backup",
    effect: (env) =>
      /size=9G/.test(String(env.sim.guest(stopped)?.config.scsi0))
        ? []
        : [`succeeded but scsi0 is ${env.sim.guest(stopped)?.config.scsi0}`],
    truth: (env, r, before) => [
      ...writesOnly(r, new RegExp(`^vm-${stopped}$`)),
      ...statusObserved(env, r, before, stopped),
    ],
  };

  const pendingRead: Endpoint = {
    id: "GET pending",
    method: "GET",
    path: guestPath(n, stopped, "/pending"),
    sample: `/nodes/${n}/qemu/${stopped}/pending`,
    kind: "read",
    pve500: "got timeout",
    privilege: `/vms/${stopped}, VM.Audit`,
  };
  const getConfig: MethodSpec = {
    name: "getConfig",
    row: "getConfig",
    args: { vmid: stopped },
    endpoints: [
      ...findIt(n, stopped, pendingRead),
      pendingRead,
    ],
    names: label(stopped),
    task: false,
    lockFree: READ_LOCK_FREE,
    effect: (env, r) => {
      const rec = lastWrite(r, `vm-${stopped}-config`);
      const cfg = rec?.config as Rec | undefined;
      return String(cfg?.memory) ===
          String(env.sim.guest(stopped)?.config.memory)
        ? []
        : [`config record ${JSON.stringify(rec)} does not match`];
    },
    truth: (_env, r) => [
      ...writesOnly(r, new RegExp(`^vm-${stopped}-config$`)),
      ...(r.status === "failed" && r.written.length > 0
        ? ["a failed getConfig wrote a record"]
        : []),
    ],
  };

  const nodeEndpoint = (
    path: string,
    id: string,
    pve500: string,
    expect?: Partial<Record<FaultId, Expect>>,
  ): Endpoint => ({
    id: `GET ${id}`,
    method: "GET",
    path: `^/api2/json/nodes/${n}/${path}$`,
    sample: `/nodes/${n}/${path}`,
    kind: "read",
    pve500,
    privilege: `/nodes/${n}, Sys.Audit`,
    expect,
  });
  const flaggedOn403 = (
    flag: string,
    refused = "without Sys.Audit",
  ): Partial<Record<FaultId, Expect>> => ({
    "403": {
      verdict: "ok-flagged",
      note: `${refused} the record says ${flag}: false and why`,
    },
  });

  const nodeStatus: MethodSpec = {
    name: "nodeStatus",
    row: "nodeStatus",
    args: where === "pve1" ? {} : { node: n },
    endpoints: [
      nodeEndpoint("status", "/nodes/<node>/status", "got timeout"),
      nodeEndpoint(
        "disks/list",
        "/nodes/<node>/disks/list",
        "command '/usr/sbin/smartctl' failed: got timeout",
        flaggedOn403("disksAvailable"),
      ),
      nodeEndpoint(
        "subscription",
        "/nodes/<node>/subscription",
        "got timeout",
        // Any user may read it (Subscription.pm get): a 403 here is a proxy's or a policy's.
        flaggedOn403("subscriptionStatusAvailable", "refused,"),
      ),
      nodeEndpoint(
        "apt/repositories",
        "/nodes/<node>/apt/repositories",
        "got timeout",
        flaggedOn403("repositoriesAvailable"),
      ),
    ],
    names: new RegExp(`node ${n}`),
    task: false,
    effect: (_env, r) => {
      const rec = lastWrite(r, `node-${n}`);
      return rec?.node === n ? [] : ["no node record"];
    },
    truth: (_env, r) => {
      const problems = writesOnly(r, new RegExp(`^node-${n}$`));
      const rec = lastWrite(r, `node-${n}`);
      const facts = [
        ["disksAvailable", "disksUnavailableReason"],
        ["subscriptionStatusAvailable", "subscriptionStatusUnavailableReason"],
        ["repositoriesAvailable", "repositoriesUnavailableReason"],
      ];
      if (
        rec && r.status === "failed" &&
        facts.every(([flag]) => rec[flag] !== false)
      ) {
        problems.push("failed but the record claims every node fact");
      }
      for (const [flag, reason] of facts) {
        if (rec?.[flag] === false && !rec[reason]) {
          problems.push(`${flag} false without a reason`);
        }
      }
      if (
        rec?.subscriptionStatusAvailable === false &&
        "subscriptionActive" in rec
      ) {
        problems.push("a subscription fact without the subscription read");
      }
      if (rec?.repositoriesAvailable === false && "enterpriseRepo" in rec) {
        problems.push(
          "an enterprise repository fact without the repository read",
        );
      }
      return problems;
    },
  };

  const nodeConfig: MethodSpec = {
    name: "nodeConfig",
    row: "nodeConfig",
    args: where === "pve1" ? {} : { node: n },
    endpoints: [
      nodeEndpoint("storage", "/nodes/<node>/storage", "got timeout"),
      nodeEndpoint(
        "network",
        "/nodes/<node>/network",
        "got timeout",
        flaggedOn403("bridgesAvailable"),
      ),
    ],
    names: new RegExp(`node ${n}`),
    task: false,
    effect: (_env, r) => {
      const rec = lastWrite(r, `node-${n}-config`);
      return rec?.node === n ? [] : ["no node config record"];
    },
    truth: (_env, r) => {
      const problems = writesOnly(r, new RegExp(`^node-${n}-config$`));
      const rec = lastWrite(r, `node-${n}-config`);
      if (rec && r.status === "failed" && rec.bridgesAvailable !== false) {
        problems.push("failed but the record claims a bridge list");
      }
      return problems;
    },
  };

  const syncTruth = (env: Env, r: RunResult, before: Snapshot): string[] => {
    const problems: string[] = [];
    for (const w of r.written) {
      const vmid = Number(/^vm-(\d+)$/.exec(w.instance)?.[1]);
      if (!vmid) {
        problems.push(`unexpected record ${w.instance}`);
        continue;
      }
      problems.push(...statusObserved(env, r, before, vmid));
      const rec = w.data as Rec;
      if (rec.present === false && env.sim.guest(vmid)) {
        problems.push(`records VM ${vmid} absent, but it exists`);
      }
    }
    return problems;
  };
  const syncEffect = (nodes: string[]) => (env: Env, r: RunResult) => {
    const problems: string[] = [];
    for (const vmid of [100, 101, 102, 103, 104, 105, 120, 121, 122, 123]) {
      const g = env.sim.guest(vmid);
      if (!g || !nodes.includes(g.node)) continue;
      const rec = lastWrite(r, `vm-${vmid}`);
      if (rec?.status !== g.status) {
        problems.push(`vm-${vmid} is ${rec?.status}, the guest ${g.status}`);
      }
    }
    return problems;
  };
  const identityFlagged: Partial<Record<FaultId, Expect>> = Object.fromEntries(
    [
      "500",
      "403",
      "501",
      "400",
      "reset∞",
      "malformed",
      "truncated",
      "empty",
      "shape",
    ]
      .map((f) => [f, {
        verdict: "ok-flagged",
        note:
          "state read from the list; the guest's record says its identity was not checked",
      }]),
  );
  const sync: MethodSpec = where === "pve1"
    ? {
      name: "sync",
      row: "sync (node)",
      args: { scope: "node" },
      endpoints: [
        nodeEndpoint("qemu", "/nodes/<node>/qemu?full=1", "got timeout"),
        {
          ...config(n, 100, " (identity of a renamed guest)"),
          path: `^/api2/json/nodes/${n}/qemu/\\d+/config$`,
          // sync reads a config only when a cheap signal says the VMID may hold another guest:
          // VM 100 was recorded (with its identity) under another name.
          prepare: async (env) => {
            const r = await env.run("lookup", { vmid: 100 });
            if (r.status !== "succeeded") throw new Error(r.error);
            env.sim.setGuest(100, { name: "web-renamed" });
          },
          expect: identityFlagged,
        },
      ],
      names: new RegExp(`node ${n}`),
      task: false,
      effect: syncEffect([n]),
      truth: syncTruth,
    }
    : {
      name: "sync",
      row: "sync (cluster)",
      args: { scope: "cluster" },
      endpoints: [
        {
          id: "GET /nodes",
          method: "GET",
          path: "^/api2/json/nodes$",
          sample: "/nodes",
          kind: "read",
          pve500: QUORUM,
          privilege: "/, Sys.Audit",
        },
        {
          ...nodeEndpoint("qemu", "/nodes/pve2/qemu?full=1", "got timeout"),
          path: "^/api2/json/nodes/pve2/qemu$",
        },
      ],
      names: /node pve2|nodes/,
      task: false,
      effect: syncEffect(["pve1", "pve2"]),
      truth: syncTruth,
    };

  return [
    lookup,
    guestExec,
    start,
    stop,
    shutdown,
    del,
    clone,
    setConfig,
    row(setNicSpec(n, "qemu", stopped, label(stopped))),
    row(removeNicSpec(n, "qemu", stopped, label(stopped))),
    resizeDisk,
    row(moveDiskSpec(n, "qemu", stopped, label(stopped))),
    row(attachDiskSpec(n, "qemu", stopped, label(stopped))),
    row(detachDiskSpec(n, "qemu", stopped, label(stopped))),
    row(firewallOptionsSpec(n, "qemu", stopped, label(stopped))),
    row(firewallRulesSpec(n, "qemu", stopped, label(stopped))),
    row(firewallIpsetSpec(n, "qemu", stopped, label(stopped))),
    row(firewallAliasSpec(n, "qemu", stopped, label(stopped))),
    row(haResourceSpec(n, "qemu", stopped, label(stopped))),
    row(haStatusSpec(n, "qemu", stopped, label(stopped))),
    row(haRuleSpec(n, "qemu", stopped, label(stopped))),
    {
      ...row(haGroupSpec(n, "qemu", stopped, label(stopped))),
      row: "haRule (PVE 8)",
    },
    sync,
    getConfig,
    nodeStatus,
    nodeConfig,
    ...snapshotSpecs(n, "qemu", stopped, label(stopped)).map(row),
    row(migrateSpec(n, other(n), "qemu", stopped, label(stopped))),
    ...fileSpecs(n, execVmid, label(execVmid)).map(row),
    row(templateSpec(n, "qemu", stopped, label(stopped))),
    row(rebootSpec(n, "qemu", running, label(running))),
    row(suspendSpec(n, "qemu", running, label(running))),
    {
      ...row(suspendSpec(n, "qemu", running, label(running), true)),
      row: "suspend (toDisk)",
    },
    row(resumeSpec(n, "qemu", running, label(running))),
    row(waitTaskSpec(n, "qemu", stopped)),
    row(cloudInitSpec(n, stopped, label(stopped))),
    row(waitReadySpec(n, running, label(running))),
    // A download lands on the node asked (the transport's): no pve2 twin, no node scenarios.
    ...(where === "pve1"
      ? [row(downloadSpec("qemu")), row(vmCreateSpec())]
      : []),
    ...backupSpecs(n, "qemu", stopped, label(stopped)).map(row),
    // What the token may do is the API node's to say: no pve2 twin, no node scenarios.
    ...(where === "pve1" ? [row(preflightSpec("qemu", running))] : []),
  ];
}

/** The methods the brief names, in the matrix's order (a missing one is reported, never skipped). */
export const EXPECTED_METHODS = [
  "lookup",
  "guestExec",
  "start",
  "stop",
  "shutdown",
  "delete",
  "clone",
  "setConfig",
  "setNic",
  "removeNic",
  "resizeDisk",
  "moveDisk",
  "attachDisk",
  "detachDisk",
  "firewallOptions",
  "firewallRules",
  "firewallIpset",
  "firewallAlias",
  "haResource",
  "haStatus",
  "haRule",
  "sync",
  "getConfig",
  "nodeStatus",
  "nodeConfig",
  "snapshot",
  "rollback",
  "deleteSnapshot",
  "listSnapshots",
  "convertToTemplate",
  "reboot",
  "migrate",
  "fileWrite",
  "fileRead",
  "cloudInit",
  "waitReady",
  "downloadUrl",
  "create",
  "backup",
  "listBackups",
  "deleteBackup",
  "restore",
  "preflight",
  "suspend",
  "resume",
  "waitTask",
];
