/**
 * The fault matrix's migrate row, one builder for both models: a stopped managed guest moves to
 * the other node (an offline migration: no `online`/`restart` needed), with the oracles that decide
 * whether a verdict told the truth about where the guest is.
 *
 * @module
 */
import {
  findIt,
  guestPath,
  type GuestType,
  lastWrite,
  resources,
  type RowSpec,
  status,
  statusObserved,
  taskStatus,
  version,
  type Where,
  writesOnly,
} from "./methods.ts";

/** The migrate row of one model for the stopped guest `vmid` on node `n`, moving to `target`. */
export function migrateSpec(
  n: string,
  target: string,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const prefix = type === "qemu" ? "vm" : "ct";
  return {
    name: "migrate",
    args: { vmid, targetNode: target },
    endpoints: [
      version,
      // Acting reads only status/current; the cluster listing only when the node says "not there".
      ...findIt(n as Where, vmid, status(n, vmid, " (before)", 0, type)),
      status(n, vmid, " (before)", 0, type),
      {
        id: "GET migrate (preconditions)",
        method: "GET",
        path: guestPath(n, vmid, "/migrate", type),
        sample: `/nodes/${n}/${type}/${vmid}/migrate`,
        kind: "read",
        pve500: "cluster not ready - no quorum?",
        privilege: `/vms/${vmid}, VM.Migrate`,
      },
      {
        id: "POST migrate",
        method: "POST",
        path: guestPath(n, vmid, "/migrate", type),
        sample: `/nodes/${n}/${type}/${vmid}/migrate`,
        kind: "mutation",
        pve500: `${type === "qemu" ? "VM" : "CT"} is locked (backup)`,
        privilege: `/vms/${vmid}, VM.Migrate`,
      },
      taskStatus(n, "migrate"),
      resources(" (arrived?)", n === "pve1" ? 0 : 1),
      {
        ...status(target, vmid, "", 0, type),
        id: `GET status/current (on ${target})`,
      },
    ],
    names,
    task: true,
    leftLock: "migrate",
    effect: (env, r) => {
      const g = env.sim.guest(vmid);
      const rec = lastWrite(r, `${prefix}-${vmid}`);
      return g?.node === target && !g.lock && rec?.node === target ? [] : [
        `succeeded but the guest is on ${g?.node} (lock ${g?.lock}), recorded on ${rec?.node}`,
      ];
    },
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^${prefix}-${vmid}$`)),
        ...statusObserved(env, r, before, vmid, prefix),
      ];
      const rec = lastWrite(r, `${prefix}-${vmid}`);
      if (rec?.node === target && env.sim.guest(vmid)?.node !== target) {
        problems.push(`records the guest on ${target}, where it is not`);
      }
      return problems;
    },
  };
}
