/**
 * The fault matrix's moveDisk, attachDisk and detachDisk rows, one builder each for both models,
 * with the oracles that decide whether a verdict told the truth: after a success the guest's
 * config holds the volume where the method put it (on the target storage, in its slot, kept as
 * `unusedN`), and no record claims what PVE did not show.
 *
 * @module
 */
import type { Env } from "../e2e/env.ts";
import {
  config,
  CT_LOCKED,
  type Endpoint,
  findIt,
  flaggedOn,
  guestPath,
  type GuestType,
  readBackDecides,
  type RowSpec,
  status,
  statusObserved,
  taskStatus,
  version,
  type Where,
  writesOnly,
} from "./methods.ts";
import { configTruth } from "./nic_rows.ts";

const prefixOf = (type: GuestType) => type === "qemu" ? "vm" : "ct";
const locked = (type: GuestType) =>
  type === "qemu" ? "VM is locked (backup)" : CT_LOCKED;
/** The guest's second volume: attached (qemu scsi1, lxc mp0) or unused. */
const second = (vmid: number) => `local-lvm:vm-${vmid}-disk-1`;
const slotOf = (type: GuestType) => type === "qemu" ? "scsi1" : "mp0";

/** The config key and value of `vmid` in the simulator (`""` when absent). */
const stored = (env: Env, vmid: number, key: string) =>
  String(env.sim.guest(vmid)?.config[key] ?? "");

/**
 * moveDisk of a stopped guest's first volume (scsi0, a container's rootfs) from local-lvm to
 * local-zfs with `delete`: the task, then the config and the source storage's list decide.
 */
export function moveDiskSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const disk = type === "qemu" ? "scsi0" : "rootfs";
  const old = `local-lvm:vm-${vmid}-disk-0`;
  const post = type === "qemu" ? "move_disk" : "move_volume";
  return {
    name: "moveDisk",
    args: { vmid, disk, storage: "local-zfs", delete: true },
    endpoints: [
      version,
      ...findIt(n, vmid, status(n, vmid, " (before)", 0, type)),
      status(n, vmid, " (before)", 0, type),
      config(n, vmid, " (identity)", 0, type),
      {
        id: "GET storage (does local-zfs take the volume?)",
        method: "GET",
        path: `^/api2/json/nodes/${n}/storage$`,
        sample: `/nodes/${n}/storage`,
        kind: "read",
        pve500: "got timeout",
        privilege: "/storage/local-zfs, Datastore.Audit",
      },
      {
        id: "GET snapshot (does a snapshot use the source?)",
        method: "GET",
        path: guestPath(n, vmid, "/snapshot", type),
        sample: `/nodes/${n}/${type}/${vmid}/snapshot`,
        kind: "read",
        pve500: "got timeout",
        privilege: `/vms/${vmid}, VM.Audit`,
      },
      {
        id: `POST ${post}`,
        method: "POST",
        path: guestPath(n, vmid, `/${post}`, type),
        sample: `/nodes/${n}/${type}/${vmid}/${post}`,
        kind: "mutation",
        pve500: locked(type),
        privilege: `/vms/${vmid}, VM.Config.Disk`,
      },
      taskStatus(n, type === "qemu" ? "qmmove" : "move_volume"),
      {
        ...status(n, vmid, " (record after)", 1, type),
        // The refresh only feeds the record: the config read back decides the move.
        expect: flaggedOn(
          "the disk reached the target storage; the record keeps the earlier state with a warning",
        ),
      },
      config(n, vmid, " (read back)", 1, type),
      {
        id: "GET storage/local-lvm/content (source gone)",
        method: "GET",
        path: `^/api2/json/nodes/${n}/storage/local-lvm/content$`,
        sample: `/nodes/${n}/storage/local-lvm/content?vmid=${vmid}`,
        kind: "read",
        pve500: "got timeout",
        privilege: "/storage/local-lvm, Datastore.Audit",
      },
    ],
    names,
    task: true,
    leftLock: "backup",
    effect: (env) => {
      const problems: string[] = [];
      if (!stored(env, vmid, disk).startsWith("local-zfs:")) {
        problems.push(`succeeded but ${disk} is ${stored(env, vmid, disk)}`);
      }
      const cfg = env.sim.guest(vmid)?.config ?? {};
      const holding = Object.keys(cfg).filter((k) =>
        String(cfg[k]).split(",")[0] === old
      );
      if (holding.length > 0) {
        problems.push(`succeeded but ${holding.join(", ")} still names ${old}`);
      }
      return problems;
    },
    truth: (env, r, before) => [
      ...writesOnly(r, new RegExp(`^${prefixOf(type)}-${vmid}$`)),
      ...statusObserved(env, r, before, vmid, prefixOf(type)),
    ],
  };
}

/** The requests attachDisk and detachDisk send: setConfig's engine, the pending read-back. */
function configEndpoints(
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
      pve500: locked(type),
      privilege: `/vms/${vmid}, VM.Config.Disk`,
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

/** attachDisk of the stopped guest's unused0 into its first free slot (qemu scsi1, lxc mp0). */
export function attachDiskSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const slot = slotOf(type);
  return {
    name: "attachDisk",
    args: type === "qemu"
      ? { vmid, volume: second(vmid) }
      : { vmid, volume: second(vmid), mp: "/data" },
    prepare: (env) => {
      const guest = env.sim.guest(vmid);
      if (guest) guest.config.unused0 = second(vmid);
    },
    endpoints: configEndpoints(
      n,
      type,
      vmid,
      new RegExp(`\`${slot}\` is neither applied nor pending`),
    ),
    names,
    task: false,
    effect: (env) => {
      const problems: string[] = [];
      if (stored(env, vmid, slot).split(",")[0] !== second(vmid)) {
        problems.push(
          `succeeded but ${slot} is ${stored(env, vmid, slot) || "absent"}`,
        );
      }
      if (stored(env, vmid, "unused0")) {
        problems.push(`succeeded but unused0 still holds the volume`);
      }
      return problems;
    },
    truth: configTruth(type, vmid),
  };
}

/** detachDisk of the stopped guest's second volume (qemu scsi1, lxc mp0), kept as unused0. */
export function detachDiskSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const slot = slotOf(type);
  return {
    name: "detachDisk",
    args: { vmid, disk: slot },
    prepare: (env) => {
      const guest = env.sim.guest(vmid);
      if (!guest) return;
      guest.config[slot] = type === "qemu"
        ? `${second(vmid)},size=4G`
        : `${second(vmid)},mp=/data,size=4G`;
    },
    endpoints: configEndpoints(
      n,
      type,
      vmid,
      new RegExp(`\`${slot} \\(delete\\)\` is neither applied nor pending`),
    ),
    names,
    task: false,
    effect: (env) => {
      const problems: string[] = [];
      if (stored(env, vmid, slot)) {
        problems.push(`succeeded but ${slot} is ${stored(env, vmid, slot)}`);
      }
      const cfg = env.sim.guest(vmid)?.config ?? {};
      const kept = Object.keys(cfg).some((k) =>
        /^unused\d+$/.test(k) && String(cfg[k]) === second(vmid)
      );
      if (!kept) {
        problems.push(`succeeded but no unusedN holds ${second(vmid)}`);
      }
      return problems;
    },
    truth: configTruth(type, vmid),
  };
}
