/**
 * The fault matrix's setNic and removeNic rows, one builder for both models, with the oracles that
 * decide whether a verdict told the truth: after a success the guest's config holds the NIC asked
 * for (or no longer holds it), and the NIC the summary quotes is the one PVE stores.
 *
 * @module
 */
import type { RunResult } from "../../harness/types.ts";
import type { Env } from "../e2e/env.ts";
import {
  config,
  CT_LOCKED,
  type Endpoint,
  findIt,
  guestPath,
  type GuestType,
  lastWrite,
  readBackDecides,
  type RowSpec,
  type Snapshot,
  status,
  statusObserved,
  version,
  type Where,
  writesOnly,
} from "./methods.ts";

type Rec = Record<string, unknown>;

const NIC = "net1";
const prefixOf = (type: GuestType) => type === "qemu" ? "vm" : "ct";

/** The requests both methods send: find the guest, change its config, read it back. */
function endpoints(
  n: Where,
  type: GuestType,
  vmid: number,
  missed: RegExp,
): Endpoint[] {
  const st = status(n, vmid, "", 0, type);
  return [
    version,
    ...findIt(n, vmid, st),
    st,
    config(n, vmid, "", 0, type),
    {
      id: "PUT config",
      method: "PUT",
      path: guestPath(n, vmid, "/config", type),
      sample: `/nodes/${n}/${type}/${vmid}/config`,
      kind: "mutation",
      pve500: type === "qemu" ? "VM is locked (backup)" : CT_LOCKED,
      privilege: `/vms/${vmid}, VM.Config.Network`,
      expect: readBackDecides(missed),
    },
    {
      id: "GET pending (read back)",
      method: "GET",
      path: guestPath(n, vmid, "/pending", type),
      sample: `/nodes/${n}/${type}/${vmid}/pending`,
      kind: "read",
      pve500: "got timeout",
      privilege: `/vms/${vmid}, VM.Audit`,
    },
  ];
}

/**
 * What every config-changing run may record: only its guest, a status it had, no pending change
 * PVE lacks (also the disk rows' judgement: attachDisk and detachDisk run setConfig's engine).
 */
export function configTruth(type: GuestType, vmid: number) {
  return (env: Env, r: RunResult, before: Snapshot): string[] => {
    const problems = [
      ...writesOnly(r, new RegExp(`^${prefixOf(type)}-${vmid}$`)),
      ...statusObserved(env, r, before, vmid, prefixOf(type)),
    ];
    const pending = lastWrite(r, `${prefixOf(type)}-${vmid}`)?.pending as
      | Rec
      | undefined;
    for (const key of Object.keys(pending ?? {})) {
      if (!(key in (env.sim.guest(vmid)?.pending ?? {}))) {
        problems.push(`records ${key} as pending, PVE holds no such change`);
      }
    }
    return problems;
  };
}

/** setNic of a stopped guest's new net1 on vmbr0, VLAN 20: PVE generates its MAC. */
export function setNicSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const stored = (env: Env) => String(env.sim.guest(vmid)?.config[NIC] ?? "");
  return {
    name: "setNic",
    args: { vmid, nic: NIC, bridge: "vmbr0", tag: 20 },
    endpoints: endpoints(
      n,
      type,
      vmid,
      /`net1` is neither applied nor pending/,
    ),
    names,
    task: false,
    effect: (env) =>
      /(=|hwaddr=)BC:24:11:[0-9A-F:]{8}(,|$)/.test(stored(env)) &&
        /(^|,)bridge=vmbr0(,|$)/.test(stored(env)) &&
        /(^|,)tag=20(,|$)/.test(stored(env))
        ? []
        : [`succeeded but ${NIC} is ${stored(env) || "absent"}`],
    truth: (env, r, before) => {
      const problems = configTruth(type, vmid)(env, r, before);
      // The NIC a success quotes (its MAC above all) is the one PVE stores.
      const quoted = r.logs.some((l) =>
        l.message.includes(`${NIC} reads ${stored(env)}`)
      );
      if (r.status === "succeeded" && !quoted) {
        problems.push(`the summary does not quote ${NIC} as PVE stores it`);
      }
      return problems;
    },
  };
}

/** removeNic of a stopped guest's net1. */
export function removeNicSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  return {
    name: "removeNic",
    args: { vmid, nic: NIC },
    prepare: (env) => {
      const guest = env.sim.guest(vmid);
      if (!guest) return;
      guest.config[NIC] = type === "qemu"
        ? "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0"
        : "name=eth1,bridge=vmbr0,hwaddr=BC:24:11:AA:BB:CC,type=veth";
    },
    endpoints: endpoints(
      n,
      type,
      vmid,
      /`net1 \(delete\)` is neither applied nor pending/,
    ),
    names,
    task: false,
    effect: (env) =>
      env.sim.guest(vmid)?.config[NIC] === undefined
        ? []
        : [`succeeded but ${NIC} is still in the config`],
    truth: configTruth(type, vmid),
  };
}
