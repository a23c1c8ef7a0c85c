/**
 * The fault matrix's backup rows, one builder for both models: backup of a stopped managed guest to
 * `local` (on both nodes), and on pve1 listBackups, deleteBackup of an archive seeded before the
 * cell, and restore of such an archive to a new VMID — with the oracles that decide whether a
 * verdict told the truth about the archives and the restored guest. `task✗` is a vzdump, imgdel or
 * restore task that failed; `no effect` one that ended OK without its effect (no archive, the
 * archive still there, the restored guest left locked).
 *
 * @module
 */
import type { RunResult } from "../../harness/types.ts";
import type { Env } from "../e2e/env.ts";
import { backupsOf, writeBackup } from "../../simulator/backups.ts";
import {
  config,
  type Endpoint,
  findIt,
  type GuestType,
  lastWrite,
  nextid,
  QUORUM,
  type RowSpec,
  status,
  statusObserved,
  taskStatus,
  version,
  type Where,
  writesOnly,
} from "./methods.ts";

const NOUN: Record<GuestType, string> = { qemu: "VM", lxc: "CT" };
const PREFIX: Record<GuestType, string> = { qemu: "vm", lxc: "ct" };

/** The archives on `local` of node `n`, as the simulator holds them. */
function archives(env: Env, n: string): string[] {
  const store = env.sim.storage(n, "local");
  return store ? backupsOf(store).map((b) => b.volid) : [];
}

/** When the seeded archive was made: 2026-12-01 10:00:00 UTC, so its volid is known up front. */
const SEEDED_AT = Date.UTC(2026, 11, 1, 10) / 1000;

/** The volid of the archive {@link seed} makes. */
const seeded = (type: GuestType, vmid: number) =>
  `local:backup/vzdump-${type}-${vmid}-2026_12_01-10_00_00.${
    type === "qemu" ? "vma" : "tar"
  }`;

/** Seeds an archive of guest `vmid` on `local` of node `n` (before the cell's fault is armed). */
function seed(env: Env, n: string, vmid: number): void {
  const g = env.sim.guest(vmid);
  const store = env.sim.storage(n, "local");
  if (!g || !store) {
    throw new Error(`the matrix has no guest ${vmid} or storage`);
  }
  writeBackup(store, g, n, { ctime: SEEDED_AT });
}

const read = (
  id: string,
  path: string,
  sample: string,
  privilege: string,
  skip = 0,
): Endpoint => ({
  id,
  method: "GET",
  path,
  sample,
  skip,
  kind: "read",
  pve500: QUORUM,
  privilege,
});

const content = (n: string, storage: string, phase: string, skip = 0) =>
  read(
    `GET storage/${storage}/content${phase}`,
    `^/api2/json/nodes/${n}/storage/${storage}/content$`,
    `/nodes/${n}/storage/${storage}/content`,
    `/storage/${storage}, Datastore.Audit`,
    skip,
  );

/** The backup rows of one model for the stopped guest `vmid` on node `n`. */
export function backupSpecs(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec[] {
  const prefix = PREFIX[type];
  const locked = `${NOUN[type]} is locked (backup)`;
  const record = (r: RunResult) => lastWrite(r, `${prefix}-${vmid}-backup`);
  const backup: RowSpec = {
    name: "backup",
    args: { vmid, storage: "local" },
    endpoints: [
      version,
      ...findIt(n, vmid, status(n, vmid, " (before)", 0, type)),
      status(n, vmid, " (before)", 0, type),
      read(
        "GET storage (does local take backups?)",
        `^/api2/json/nodes/${n}/storage$`,
        `/nodes/${n}/storage`,
        "/storage/local, Datastore.Audit",
      ),
      content(n, "local", " (before)"),
      {
        id: "POST vzdump",
        method: "POST",
        path: `^/api2/json/nodes/${n}/vzdump$`,
        sample: `/nodes/${n}/vzdump`,
        kind: "mutation",
        pve500: QUORUM,
        privilege: `/vms/${vmid}, VM.Backup`,
      },
      taskStatus(n, "backup"),
      status(n, vmid, " (back as before)", 1, type),
      content(n, "local", " (after)", 1),
    ],
    names,
    task: true,
    leftLock: "backup",
    // The worker that "ended OK" never ran: no archive, and its `backup` lock stays.
    noEffect: /lists no new backup|still locked: backup/,
    effect: (env, r) => {
      const volid = record(r)?.volid;
      const g = env.sim.guest(vmid);
      return archives(env, n).includes(String(volid)) && !g?.lock &&
          g?.status === "stopped"
        ? []
        : [
          `succeeded but the storage holds ${
            JSON.stringify(archives(env, n))
          } and the guest is ${g?.status} (lock ${g?.lock})`,
        ];
    },
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^${prefix}-${vmid}(-backup)?$`)),
        ...statusObserved(env, r, before, vmid, prefix),
      ];
      const volid = record(r)?.volid;
      if (volid !== undefined && !archives(env, n).includes(String(volid))) {
        problems.push(`records archive ${volid} the storage does not hold`);
      }
      return problems;
    },
  };
  if (n !== "pve1") return [backup];

  const listed = (r: RunResult) =>
    (lastWrite(r, `${prefix}-${vmid}-backups`)?.backups ?? []) as {
      volid: string;
    }[];
  const prepare = (env: Env) => seed(env, n, vmid);
  const listBackups: RowSpec = {
    name: "listBackups",
    prepare,
    args: { storage: "local", vmid },
    endpoints: [content(n, "local", "")],
    names: /storage local|local/,
    task: false,
    lockFree:
      "a read of the storage's content: it does not touch the guest's config",
    effect: (env, r) =>
      listed(r).map((a) => a.volid).join() === archives(env, n).join() &&
        archives(env, n).length === 1
        ? []
        : [`the record ${JSON.stringify(listed(r))} is not the storage's`],
    truth: (_env, r) => [
      ...writesOnly(r, new RegExp(`^${prefix}-${vmid}-backups$`)),
      ...(r.status === "failed" && r.written.length > 0
        ? ["a failed listBackups wrote a record"]
        : []),
    ],
  };

  const deleteBackup: RowSpec = {
    name: "deleteBackup",
    prepare,
    args: { volid: seeded(type, vmid) },
    endpoints: [
      version,
      content(n, "local", " (before)"),
      {
        id: "DELETE storage/local/content/{volume}",
        method: "DELETE",
        path: `^/api2/json/nodes/${n}/storage/local/content/local:backup/.+$`,
        sample: `/nodes/${n}/storage/local/content/local:backup/…`,
        kind: "mutation",
        pve500: QUORUM,
        privilege: "/storage/local, Datastore.AllocateSpace",
      },
      taskStatus(n, "delete"),
      content(n, "local", " (after)", 1),
    ],
    names: /backup|local/,
    task: true,
    noEffect: /still lists/,
    effect: (env, r) =>
      archives(env, n).length === 0 && listed(r).length === 0 ? [] : [
        `succeeded but the storage holds ${JSON.stringify(archives(env, n))}`,
      ],
    truth: (env, r) => {
      const problems = writesOnly(r, new RegExp(`^${prefix}-${vmid}-backups$`));
      const held = archives(env, n);
      for (const a of listed(r)) {
        if (!held.includes(a.volid)) {
          problems.push(`records archive ${a.volid} the storage does not hold`);
        }
      }
      return problems;
    },
  };

  const target = type === "qemu" ? 130 : 330;
  const restore: RowSpec = {
    name: "restore",
    prepare,
    args: { archive: seeded(type, vmid), vmid: target },
    endpoints: [
      version,
      nextid(` (is ${target} free?)`),
      content(n, "local", " (the archive)"),
      read(
        "GET vzdump/extractconfig",
        `^/api2/json/nodes/${n}/vzdump/extractconfig$`,
        `/nodes/${n}/vzdump/extractconfig`,
        `/vms/${vmid}, VM.Backup`,
      ),
      {
        id: `POST /nodes/${n}/${type} (archive)`,
        method: "POST",
        path: `^/api2/json/nodes/${n}/${type}$`,
        sample: `/nodes/${n}/${type}`,
        kind: "mutation",
        pve500: `unable to restore ${NOUN[type]} ${target} - ${locked}`,
        privilege: `/vms/${target}, VM.Allocate`,
      },
      taskStatus(n, "restore"),
      status(n, target, " (the restored guest)", 0, type),
      config(n, target, " (the restored guest)", 0, type),
      content(n, "local-lvm", " (its disks)"),
    ],
    names: new RegExp(`${target}|restore`),
    task: true,
    leftLock: "create",
    // create_and_lock_config wrote `lock: create` before the task; the lying worker never dropped it.
    noEffect: /still locked: create/,
    effect: (env, r) => {
      const g = env.sim.guest(target);
      const rec = lastWrite(r, `${prefix}-${target}`);
      return g && !g.lock && String(Object.values(g.config).join()).includes(
          `vm-${target}-disk-0`,
        ) &&
          rec?.status === "stopped" && rec?.lock === undefined
        ? []
        : [`succeeded but guest ${target} is ${JSON.stringify(g)}`];
    },
    truth: (env, r) => {
      const problems = writesOnly(r, new RegExp(`^${prefix}-${target}$`));
      const rec = lastWrite(r, `${prefix}-${target}`);
      const g = env.sim.guest(target);
      if (rec?.present === true && !g) {
        problems.push(
          `records ${prefix}-${target} present, but it does not exist`,
        );
      }
      if (rec && rec.lock === undefined && g?.lock) {
        problems.push(
          `records ${prefix}-${target} unlocked, but it is locked (${g.lock})`,
        );
      }
      return problems;
    },
  };
  return [backup, listBackups, deleteBackup, restore];
}
