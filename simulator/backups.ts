/**
 * Backup archives: what vzdump writes onto a storage's `backup` content, and what a restore reads
 * back. The archive's format is the simulator's (the guest's config, name and tags, and each disk's
 * size, kept in memory); the API shows only what PVE shows of it — volid, size, ctime, format,
 * subtype, vmid, notes, protected — and, through `vzdump/extractconfig`, the config it holds.
 *
 * Sources: pve-manager PVE/VZDump.pm (`exec_backup_task`: the archive name
 * `vzdump-<type>-<vmid>-<%Y_%m_%d-%H_%M_%S>.<vma|tar>[.<ext>]`, `$verify_notes_template`,
 * `$generate_notes`, `compressor_info`), pve-storage PVE/Storage/Plugin.pm (`list_volumes` for
 * backups, `free_image`'s refusal of a protected volume), PVE/Storage.pm (`extract_vzdump_config`).
 *
 * @module
 */

import {
  DISK_KEY,
  diskBytes,
  formatSize,
  isCdrom,
  volumeName,
  withDiskOption,
} from "./disks.ts";
import { ApiError } from "./http.ts";
import { randomMac } from "./macs.ts";
import type { StorageState } from "./storage_state.ts";
import type { ConfigValue, GuestState, GuestType } from "./types.ts";

/** One archive on a storage. */
export interface SimBackup {
  volid: string;
  file: string;
  vmid: number;
  type: GuestType;
  /** Seconds since the epoch (the backup's start). */
  ctime: number;
  size: number;
  /** `vma.zst`, `tar.gz`, … as PVE's content list shows it. */
  format: string;
  notes?: string;
  protected: boolean;
  /** What the archive holds: the guest as it was backed up. */
  name: string;
  tags: string[];
  config: Record<string, ConfigValue>;
  /** The guest's agent as it was (a restored guest's agent is the archive's). */
  agent: GuestState["agent"];
  /** A real guest's disk (real_guests.ts `archiveDisk`): a restore boots a copy of it. */
  disk?: string;
  /** Whether the guest was a real QEMU VM: its restore is one too. */
  real?: boolean;
}

/** The archives of every storage (a storage local to a node has its own per node). */
const archives = new WeakMap<StorageState, SimBackup[]>();

/** The live list of archives on `store`. */
export function backupsOf(store: StorageState): SimBackup[] {
  let list = archives.get(store);
  if (!list) {
    list = [];
    archives.set(store, list);
  }
  return list;
}

/** The archive `volid` on `store`, if it is there. */
export function findBackup(
  store: StorageState,
  volid: string,
): SimBackup | undefined {
  return backupsOf(store).find((b) => b.volid === volid);
}

/** `GET …/content` entries of the archives on `store` (of `vmid` only, when given). */
export function backupEntries(
  store: StorageState,
  vmid?: number,
): Record<string, unknown>[] {
  return backupsOf(store)
    .filter((b) => vmid === undefined || b.vmid === vmid)
    .map((b) => {
      const entry: Record<string, unknown> = {
        volid: b.volid,
        format: b.format,
        size: b.size,
        ctime: b.ctime,
        content: "backup",
        vmid: b.vmid,
        subtype: b.type,
      };
      if (b.notes !== undefined) entry.notes = b.notes.split("\n")[0];
      if (b.protected) entry.protected = 1;
      return entry;
    });
}

/** Bytes the archives on `store` use. */
export function backupBytes(store: StorageState): number {
  return backupsOf(store).reduce((n, b) => n + b.size, 0);
}

/** compressor_info: the file extension of each `compress` value. */
const COMPRESS_EXT: Record<string, string | undefined> = {
  "0": undefined,
  "1": "lzo",
  lzo: "lzo",
  gzip: "gz",
  zstd: "zst",
};

/** `%Y_%m_%d-%H_%M_%S` of `seconds` (the node's local time; the simulator's nodes run on UTC). */
function stamp(seconds: number): string {
  const d = new Date(seconds * 1000);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}_${two(d.getUTCMonth() + 1)}_${
    two(d.getUTCDate())
  }-${two(d.getUTCHours())}_${two(d.getUTCMinutes())}_${
    two(d.getUTCSeconds())
  }`;
}

/**
 * `$verify_notes_template` (run by `verify_vzdump_parameters` before the task): PVE's words for
 * the first problem found, or undefined.
 */
export function notesTemplateProblem(template: string): string | undefined {
  if (template.includes("\n")) return "contains a line feed";
  const problems: string[] = [];
  for (const m of template.matchAll(/\\(.)/g)) {
    if (!/^[n\\]$/.test(m[1])) {
      problems.push(`escape sequence '\\${m[1]}' at char ${m.index}`);
    }
  }
  for (const m of template.matchAll(/\{\{([^ \t\n\r\f\v{}]+)\}\}/g)) {
    if (!/^(cluster|guestname|node|vmid)$/.test(m[1])) {
      problems.push(`variable '${m[1]}' at char ${m.index + 2}`);
    }
  }
  return problems.length > 0
    ? `found unknown: ${problems.join(", ")}`
    : undefined;
}

/** `$generate_notes`: the template with its escapes and variables filled in. */
function notesOf(template: string, g: GuestState, node: string): string {
  const info: Record<string, string> = {
    cluster: "standalone node",
    guestname: g.type === "lxc" ? g.name : g.name || `VM ${g.vmid}`,
    node,
    vmid: String(g.vmid),
  };
  return template
    .replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c))
    .replace(/\{\{(cluster|guestname|node|vmid)\}\}/g, (_, v) => info[v]);
}

/** The volumes of a guest config that a backup copies (disks, mount points; no CD-ROM). */
export function backedUpVolumes(
  type: GuestType,
  config: Record<string, ConfigValue>,
): [string, string][] {
  return Object.entries(config)
    .map(([k, v]) => [k, String(v)] as [string, string])
    .filter(([key, value]) => {
      const volume = value.split(",")[0];
      if (!volume.includes(":") || volume.startsWith("/")) return false;
      return type === "lxc"
        ? key === "rootfs" || /^mp\d+$/.test(key)
        : DISK_KEY.test(key) && !isCdrom(value) && volume !== "none";
    });
}

/**
 * Writes the archive of `g` onto `store` (the end of `exec_backup_task`): name, size, notes, the
 * protected flag. Returns it.
 */
export function writeBackup(
  store: StorageState,
  g: GuestState,
  node: string,
  opts: {
    compress?: string;
    notesTemplate?: string;
    protected?: boolean;
    /** The backup's time (seconds); default now. */
    ctime?: number;
  },
): SimBackup {
  const list = backupsOf(store);
  const ext = COMPRESS_EXT[opts.compress ?? "0"];
  const format = `${g.type === "qemu" ? "vma" : "tar"}${ext ? `.${ext}` : ""}`;
  let ctime = opts.ctime ?? Math.floor(Date.now() / 1000);
  const fileAt = (t: number) =>
    `vzdump-${g.type}-${g.vmid}-${stamp(t)}.${format}`;
  // Two backups of one guest within a second would share a name: the simulator takes the next second.
  while (list.some((b) => b.file === fileAt(ctime))) ctime++;
  const file = fileAt(ctime);
  const { lock: _lock, ...config } = g.config;
  const disks = backedUpVolumes(g.type, config)
    .reduce((n, [, v]) => n + diskBytes(v), 0);
  const backup: SimBackup = {
    volid: `${store.storage}:backup/${file}`,
    file,
    vmid: g.vmid,
    type: g.type,
    ctime,
    // The simulator's archive: a twentieth of the disks it holds, at least 4 KiB of header.
    size: Math.max(4096, Math.round(disks / 20)),
    format,
    notes: opts.notesTemplate
      ? notesOf(opts.notesTemplate, g, node)
      : undefined,
    protected: opts.protected === true,
    name: g.name,
    tags: [...g.tags],
    config: structuredClone(config),
    agent: g.agent,
    real: g.real,
  };
  list.push(backup);
  return backup;
}

/** Path of an archive on `store` (for log lines and PVE's messages). */
export function dumpPath(store: StorageState, file: string): string {
  const base = store.storage === "local"
    ? "/var/lib/vz"
    : `/mnt/pve/${store.storage}`;
  return `${base}/dump/${file}`;
}

/** The config file text an archive holds (extractconfig's answer), keys sorted as PVE writes them. */
export function configText(b: SimBackup): string {
  const entries: [string, ConfigValue][] = [
    ...Object.entries(b.config),
    [b.type === "lxc" ? "hostname" : "name", b.name],
  ];
  if (b.tags.length > 0) entries.push(["tags", b.tags.join(";")]);
  return entries
    .filter(([, v]) => v !== "")
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}: ${v}\n`)
    .join("");
}

/** A NIC with a new MAC (restore's `unique`): `virtio=<mac>` for VMs, `hwaddr=<mac>` for containers. */
function withUniqueMac(type: GuestType, net: string): string {
  const mac = randomMac();
  if (type === "lxc") {
    return net.replace(/hwaddr=[0-9A-Fa-f:]{17}/, `hwaddr=${mac}`);
  }
  return net.replace(/=([0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5})/, `=${mac}`);
}

/**
 * The config a restore of `b` as `vmid` writes: every volume allocated anew as
 * `<storage>:vm-<vmid>-disk-N` (a container's on `storage`, PVE's "storage only mode"; a VM's on
 * `storage` when given, else where it was), with the archive's size and options; `unique` gives
 * each NIC a new MAC. Throws the task's error for a storage that cannot take the volume.
 */
export function restoredConfig(
  b: SimBackup,
  vmid: number,
  storage: string | undefined,
  unique: boolean,
  usable: (storage: string) => StorageState,
): Record<string, ConfigValue> {
  const config: Record<string, ConfigValue> = structuredClone(b.config);
  const content = b.type === "lxc" ? "rootdir" : "images";
  let n = 0;
  for (const [key, value] of backedUpVolumes(b.type, b.config)) {
    const [volume, ...opts] = value.split(",");
    const target = storage ?? volume.split(":")[0];
    const store = usable(target);
    if (!store.content.includes(content)) {
      throw new ApiError(
        500,
        `storage '${target}' does not support ${
          b.type === "lxc" ? "container directories" : "vm images"
        }`,
      );
    }
    const prefix = store.type === "zfspool" && b.type === "lxc"
      ? "subvol"
      : "vm";
    const name = volumeName(
      store.type,
      vmid,
      `${prefix}-${vmid}-disk-${n}`,
      "raw",
    );
    n++;
    const size = diskBytes(value);
    const restored = [
      `${target}:${name}`,
      ...opts.filter((o) => !o.startsWith("size=")),
    ].join(",");
    config[key] = size > 0
      ? withDiskOption(restored, "size", formatSize(size))
      : restored;
  }
  for (const key of Object.keys(config)) {
    if (unique && /^net\d+$/.test(key)) {
      config[key] = withUniqueMac(b.type, String(config[key]));
    }
    // Snapshots are not restored; neither is the parent they name.
    if (key === "parent" || /^unused\d+$/.test(key)) delete config[key];
  }
  return config;
}
