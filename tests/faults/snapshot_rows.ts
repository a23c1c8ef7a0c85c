/**
 * The fault matrix's snapshot rows, one builder for both models: snapshot, rollback,
 * deleteSnapshot and listSnapshots of a stopped managed guest that already holds snapshot `base`
 * (seeded by {@link seedBaseSnapshot} before every cell), with the oracles that decide whether a verdict told the
 * truth about the snapshot tree.
 *
 * @module
 */
import type { RunResult } from "../../harness/types.ts";
import type { Env } from "../e2e/env.ts";
import {
  type Endpoint,
  findIt,
  guestPath,
  type GuestType,
  lastWrite,
  READ_LOCK_FREE,
  type RowSpec,
  type Snapshot,
  status,
  statusObserved,
  taskStatus,
  version,
  type Where,
  writesOnly,
} from "./methods.ts";

/** The memory the `base` snapshot holds (the guest's current config holds another value). */
export const BASE_MEMORY = 256;

/**
 * Gives guest `vmid` snapshot `base` (no RAM) of its config with {@link BASE_MEMORY}, and makes it
 * descend from it: every cell of a snapshot row starts from this tree.
 */
export function seedBaseSnapshot(env: Env, vmid: number): void {
  const g = env.sim.guest(vmid);
  if (!g) throw new Error(`the matrix has no guest ${vmid}`);
  g.snapshots.base = {
    name: g.name,
    tags: [...g.tags],
    config: { ...g.config, memory: BASE_MEMORY },
    snaptime: 1_700_000_000,
    description: "before the change",
    vmstate: false,
  };
  g.config.parent = "base";
}

type Tree = { currentParent?: string; snapshots?: { name: string }[] };

/** The snapshot rows of one model for the stopped guest `vmid` on node `n`. */
export function snapshotSpecs(
  n: string,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec[] {
  const prefix = type === "qemu" ? "vm" : "ct";
  const locked = `${type === "qemu" ? "VM" : "CT"} is locked (backup)`;
  const tree = (r: RunResult) =>
    lastWrite(r, `${prefix}-${vmid}-snapshots`) as Tree | undefined;
  const listed = (r: RunResult, name: string) =>
    tree(r)?.snapshots?.some((s) => s.name === name) ?? false;
  const list = (phase: string, skip = 0): Endpoint => ({
    id: `GET snapshot${phase}`,
    method: "GET",
    path: guestPath(n, vmid, "/snapshot", type),
    sample: `/nodes/${n}/${type}/${vmid}/snapshot`,
    skip,
    kind: "read",
    pve500:
      `can't lock file '/var/lock/qemu-server/lock-${vmid}.conf' - got timeout`,
    privilege: `/vms/${vmid}, VM.Audit`,
  });
  const mutation = (
    id: string,
    method: "POST" | "DELETE",
    rest: string,
  ): Endpoint => ({
    id,
    method,
    path: guestPath(n, vmid, rest, type),
    sample: `/nodes/${n}/${type}/${vmid}${rest}`,
    kind: "mutation",
    pve500: locked,
    privilege: `/vms/${vmid}, VM.Snapshot`,
  });
  /** The requests of a snapshot mutation: find and read the guest, the tree, the task, both again. */
  const before = status(n, vmid, " (before)", 0, type);
  const around = (change: Endpoint, task: string): Endpoint[] => [
    version,
    ...findIt(n as Where, vmid, before),
    before,
    list(" (before)"),
    change,
    taskStatus(n, task),
    status(n, vmid, " (lock released)", 1, type),
    list(" (after)", 1),
  ];
  const prepare = (env: Env) => seedBaseSnapshot(env, vmid);
  const records = new RegExp(`^${prefix}-${vmid}(-snapshots)?$`);
  /** Records only what was observed: the guest's status, and a tree the simulator had. */
  const truth =
    (name: string, gone: boolean) =>
    (env: Env, r: RunResult, before: Snapshot): string[] => {
      const problems = [
        ...writesOnly(r, records),
        ...statusObserved(env, r, before, vmid, prefix),
      ];
      const has = env.sim.guest(vmid)?.snapshots[name] !== undefined;
      if (listed(r, name) && !has && !gone) {
        problems.push(`records snapshot ${name} the guest does not hold`);
      }
      if (r.status === "succeeded" && listed(r, name) === gone) {
        problems.push(`the recorded tree contradicts the success`);
      }
      return problems;
    };

  const snapshot: RowSpec = {
    name: "snapshot",
    prepare,
    args: { vmid, name: "fresh" },
    endpoints: around(
      mutation("POST snapshot", "POST", "/snapshot"),
      "snapshot",
    ),
    names,
    task: true,
    leftLock: "snapshot",
    effect: (env, r) => {
      const g = env.sim.guest(vmid);
      const snap = g?.snapshots.fresh;
      return snap && !snap.snapstate && g.config.parent === "fresh" &&
          !g.lock && listed(r, "fresh") && tree(r)?.currentParent === "fresh"
        ? []
        : [`succeeded but the guest holds ${JSON.stringify(g?.snapshots)}`];
    },
    truth: truth("fresh", false),
  };

  const rollback: RowSpec = {
    name: "rollback",
    prepare,
    args: { vmid, name: "base" },
    endpoints: around(
      mutation(
        "POST snapshot/base/rollback",
        "POST",
        "/snapshot/base/rollback",
      ),
      "rollback",
    ),
    names,
    task: true,
    leftLock: "rollback",
    effect: (env, r) => {
      const g = env.sim.guest(vmid);
      return g && Number(g.config.memory) === BASE_MEMORY && !g.lock &&
          g.config.parent === "base" && tree(r)?.currentParent === "base" &&
          lastWrite(r, `${prefix}-${vmid}`)?.status === "stopped"
        ? []
        : [`succeeded but memory is ${g?.config.memory}, lock ${g?.lock}`];
    },
    truth: (env, r, before) => [
      ...writesOnly(r, records),
      ...statusObserved(env, r, before, vmid, prefix),
    ],
  };

  const deleteSnapshot: RowSpec = {
    name: "deleteSnapshot",
    prepare,
    args: { vmid, name: "base" },
    endpoints: around(
      mutation("DELETE snapshot/base", "DELETE", "/snapshot/base"),
      "delete snapshot",
    ),
    names,
    task: true,
    leftLock: "snapshot-delete",
    effect: (env, r) => {
      const g = env.sim.guest(vmid);
      return g && !g.snapshots.base && !g.lock && !listed(r, "base")
        ? []
        : [`succeeded but the guest holds ${JSON.stringify(g?.snapshots)}`];
    },
    truth: truth("base", true),
  };

  const listSnapshots: RowSpec = {
    name: "listSnapshots",
    prepare,
    args: { vmid },
    endpoints: [...findIt(n as Where, vmid, list("")), list("")],
    names,
    task: false,
    lockFree: READ_LOCK_FREE,
    effect: (_env, r) =>
      listed(r, "base") && tree(r)?.currentParent === "base"
        ? []
        : [`the record ${JSON.stringify(tree(r))} is not the guest's tree`],
    truth: (_env, r) => [
      ...writesOnly(r, new RegExp(`^${prefix}-${vmid}-snapshots$`)),
      ...(r.status === "failed" && r.written.length > 0
        ? ["a failed listSnapshots wrote a record"]
        : []),
    ],
  };

  return [snapshot, rollback, deleteSnapshot, listSnapshots];
}
