/**
 * The fault matrix's suspend, resume and waitTask rows, one builder for both models, with the
 * oracles that decide whether a verdict told the truth: a VM suspended to RAM shows
 * `qmpstatus: paused`, to disk `status: stopped` with `lock: suspended` (and its state volume); a
 * container's suspend leaves it stopped with a checkpoint; a resume leaves the guest running; a
 * waited task's record holds what PVE's task status and log said.
 *
 * @module
 */
import type { RunResult } from "../../harness/types.ts";
import type { RequestRecord } from "../../simulator/types.ts";
import type { Env } from "../e2e/env.ts";
import { api, tokenHeader } from "../../simulator/sim_client.ts";
import { TOKEN_ID, TOKEN_SECRET } from "../e2e/env.ts";
import {
  type Endpoint,
  findIt,
  guestPath,
  type GuestType,
  lastWrite,
  type RowSpec,
  type Snapshot,
  status,
  statusObserved,
  taskStatus,
  version,
  type Where,
  writesOnly,
} from "./methods.ts";

type Rec = Record<string, unknown>;

const prefixOf = (type: GuestType) => type === "qemu" ? "vm" : "ct";
const lockedText = (type: GuestType) =>
  `${type === "qemu" ? "VM" : "CT"} is locked (backup)`;

/** The suspend or resume request. */
function post(
  n: string,
  vmid: number,
  action: "suspend" | "resume",
  type: GuestType,
): Endpoint {
  return {
    id: `POST status/${action}`,
    method: "POST",
    path: guestPath(n, vmid, `/status/${action}`, type),
    sample: `/nodes/${n}/${type}/${vmid}/status/${action}`,
    kind: "mutation",
    pve500: lockedText(type),
    privilege: `/vms/${vmid}, VM.PowerMgmt`,
  };
}

/**
 * A record may state `field: value` of the guest only when a status/current answered after the
 * run's request (`action`) showed it.
 */
function shownAfter(
  env: Env,
  r: RunResult,
  type: GuestType,
  vmid: number,
  action: string,
  field: "qmpstatus" | "lock",
  value: string,
): string[] {
  const rec = lastWrite(r, `${prefixOf(type)}-${vmid}`);
  const recorded = field === "lock" ? rec?.lock : rec?.qmpStatus;
  if (recorded !== value) return [];
  const log = env.sim.requests;
  const at = log.findIndex((q) =>
    q.method === "POST" &&
    q.path.endsWith(`/${type}/${vmid}/status/${action}`)
  );
  const reads = log.slice(at + 1).filter((q: RequestRecord) =>
    q.status === 200 && q.path.endsWith(`/${type}/${vmid}/status/current`)
  );
  const shown = reads.some((q) =>
    (q.answer as Rec | undefined)?.[field] === value
  );
  return at >= 0 && shown ? [] : [
    `${
      prefixOf(type)
    }-${vmid} records ${field} ${value}, but no status/current after the ${action} showed it`,
  ];
}

/** The common endpoints: find the guest, its state before, the request, its task, the state after. */
function powerEndpoints(
  n: string,
  vmid: number,
  action: "suspend" | "resume",
  type: GuestType,
): Endpoint[] {
  return [
    version,
    ...findIt(n as Where, vmid, status(n, vmid, " (before)", 0, type)),
    status(n, vmid, " (before)", 0, type),
    post(n, vmid, action, type),
    taskStatus(n, action),
    { ...status(n, vmid, " (after the task)", 1, type), polled: true },
  ];
}

/**
 * The suspend row of a running managed guest `vmid`: a VM to RAM or (`toDisk`) to disk; a
 * container's checkpoint.
 */
export function suspendSpec(
  n: string,
  type: GuestType,
  vmid: number,
  names: RegExp,
  toDisk = false,
): RowSpec {
  const prefix = prefixOf(type);
  const qemu = type === "qemu";
  return {
    name: "suspend",
    args: toDisk ? { vmid, toDisk: true } : { vmid },
    endpoints: powerEndpoints(n, vmid, "suspend", type),
    names,
    task: true,
    noEffect: !qemu
      ? /did not reach status stopped/
      : toDisk
      ? /did not reach status stopped with lock suspended[\s\S]*still locked: suspending/
      : /did not reach status running with qmpstatus paused/,
    // A suspend to disk ends in its own lock, `suspended`: a lock left over it would hide it.
    leftLock: toDisk ? undefined : "backup",
    effect: (env, r) => {
      const g = env.sim.guest(vmid);
      const rec = lastWrite(r, `${prefix}-${vmid}`);
      const problems: string[] = [];
      if (!qemu) {
        if (g?.status !== "stopped" || !g.checkpointed) {
          problems.push(
            `succeeded but CT ${vmid} is ${g?.status}, not checkpointed`,
          );
        }
        if (rec?.status !== "stopped") {
          problems.push(`ct-${vmid} says ${rec?.status}`);
        }
      } else if (toDisk) {
        if (
          g?.status !== "stopped" || g.lock !== "suspended" || !g.config.vmstate
        ) {
          problems.push(
            `succeeded but VM ${vmid} is ${g?.status}, lock ${g?.lock}, vmstate ${g?.config.vmstate}`,
          );
        }
        if (rec?.status !== "stopped" || rec?.lock !== "suspended") {
          problems.push(`vm-${vmid} says ${rec?.status}, lock ${rec?.lock}`);
        }
      } else {
        if (g?.status !== "running" || g.qmpstatus !== "paused") {
          problems.push(
            `succeeded but VM ${vmid} is ${g?.status}/${g?.qmpstatus}`,
          );
        }
        if (rec?.qmpStatus !== "paused") {
          problems.push(`vm-${vmid} says qmpStatus ${rec?.qmpStatus}`);
        }
      }
      return problems;
    },
    truth: (env, r, before: Snapshot) => [
      ...writesOnly(r, new RegExp(`^${prefix}-${vmid}$`)),
      ...statusObserved(env, r, before, vmid, prefix),
      ...(qemu
        ? toDisk
          ? shownAfter(env, r, type, vmid, "suspend", "lock", "suspended")
          : shownAfter(env, r, type, vmid, "suspend", "qmpstatus", "paused")
        : []),
    ],
  };
}

/**
 * The resume row of guest `vmid` (running in the fleet): before each cell a VM is paused, a
 * container suspended (stopped, its checkpoint left).
 */
export function resumeSpec(
  n: string,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const prefix = prefixOf(type);
  return {
    name: "resume",
    args: { vmid },
    prepare: (env) => {
      if (type === "qemu") {
        env.sim.setGuest(vmid, { qmpstatus: "paused" });
        return;
      }
      env.sim.setGuest(vmid, { status: "stopped" });
      env.sim.guest(vmid)!.checkpointed = true;
    },
    endpoints: powerEndpoints(n, vmid, "resume", type),
    names,
    task: true,
    noEffect: type === "qemu"
      ? /did not reach status running with qmpstatus running/
      : /did not reach status running/,
    leftLock: "backup",
    effect: (env, r) => {
      const g = env.sim.guest(vmid);
      const rec = lastWrite(r, `${prefix}-${vmid}`);
      const runs = g?.status === "running" &&
        (g.qmpstatus ?? "running") === "running";
      return [
        ...(runs
          ? []
          : [`succeeded but ${vmid} is ${g?.status}/${g?.qmpstatus}`]),
        ...(rec?.status === "running"
          ? []
          : [`${prefix}-${vmid} says ${rec?.status}`]),
      ];
    },
    truth: (env, r, before) => [
      ...writesOnly(r, new RegExp(`^${prefix}-${vmid}$`)),
      ...statusObserved(env, r, before, vmid, prefix),
      ...(type === "qemu"
        ? shownAfter(env, r, type, vmid, "resume", "qmpstatus", "running")
        : []),
    ],
  };
}

/** The task another client starts before each waitTask cell: a start of guest `vmid` on `n`. */
async function startElsewhere(
  env: Env,
  n: string,
  type: GuestType,
  vmid: number,
) {
  env.sim.nextTask({ durationMs: 400 });
  const r = await api(
    env.sim.url,
    "POST",
    `/nodes/${n}/${type}/${vmid}/status/start`,
    {},
    { auth: tokenHeader(TOKEN_ID, TOKEN_SECRET) },
  );
  if (r.status !== 200) {
    throw new Error(`the other client's start: ${r.status}`);
  }
}

/**
 * The waitTask row: another client starts the stopped guest `vmid` on `n`; waitTask finds that task
 * by a filter (type and guest) on its node and follows it to its end.
 */
export function waitTaskSpec(
  n: string,
  type: GuestType,
  vmid: number,
): RowSpec {
  const taskType = type === "qemu" ? "qmstart" : "vzstart";
  return {
    name: "waitTask",
    // No vmid: a lock on the guest would fail the other client's task, not concern waitTask.
    args: { node: n, type: taskType },
    prepare: (env) => startElsewhere(env, n, type, vmid),
    endpoints: [
      {
        id: "GET /nodes/<node>/tasks (the filter)",
        method: "GET",
        path: `^/api2/json/nodes/${n}/tasks$`,
        sample: `/nodes/${n}/tasks`,
        kind: "read",
        pve500: "unable to read task index",
        privilege: `/nodes/${n}, Sys.Audit`,
      },
      { ...taskStatus(n, "waited"), names: /task|node/ },
    ],
    names: new RegExp(`node ${n}|${taskType}`),
    // The method starts no task of its own: the task it waits for is the other client's.
    task: false,
    effect: (env, r) => {
      const rec = r.written.at(-1)?.data as Rec | undefined;
      const task = rec && env.sim.task(String(rec.upid));
      return task?.status === "stopped" &&
          rec?.exitStatus === task.exitstatus &&
          rec?.ended === true
        ? []
        : [`task record ${JSON.stringify(rec)} does not match the task`];
    },
    truth: (env, r) => {
      const problems = writesOnly(r, /^task-/);
      for (const w of r.written) {
        const rec = w.data as Rec;
        const task = env.sim.task(String(rec.upid));
        if (!task) {
          problems.push(`records task ${rec.upid}, which PVE never ran`);
          continue;
        }
        if (rec.ended === true && task.status !== "stopped") {
          problems.push("records a task as ended that runs");
        }
        if (
          rec.exitStatus !== undefined && rec.exitStatus !== task.exitstatus
        ) {
          problems.push(
            `records exit status ${rec.exitStatus}, PVE's is ${task.exitstatus}`,
          );
        }
        for (const line of (rec.logTail ?? []) as string[]) {
          const text = line.replace(/^…/, "");
          if (!task.log.some((l) => l.endsWith(text))) {
            problems.push(`records log line ${line}, not in the task's log`);
          }
        }
      }
      return problems;
    },
  };
}
