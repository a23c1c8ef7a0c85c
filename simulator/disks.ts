/**
 * Disk strings of a qemu config (`local-zfs:vm-100-disk-0,size=32G`): sizes, resize arithmetic,
 * the volumes a storage allocates, and their renaming on clone and template, as qemu-server prints
 * them.
 *
 * qemu-server `PVE/QemuServer/Drive.pm`: `parse_drive` reads a drive through the schema (booleans
 * become 1/0 by pve-common `PVE/JSONSchema.pm` parse_property_string's parse_boolean, an alias
 * becomes its target), `print_drive` writes it back (print_property_string: the volume first, then
 * every other property in sorted order). `PVE/API2/Qemu.pm` create_disks allocates a new volume for
 * `<storage>:<GiB>`, sets `size` and drops `format` (the volume's name carries it) and
 * `import-from`. pve-storage names the volume: a storage with a path (`PVE/Storage/Plugin.pm`
 * alloc_image, clone_image, create_base) `<vmid>/vm-<vmid>-disk-<n>.<format>`, a block storage
 * (`LvmThinPlugin.pm`, `ZFSPoolPlugin.pm`, …) `vm-<vmid>-disk-<n>`, raw only.
 *
 * @module
 */

import { ApiError } from "./http.ts";

const UNITS: Record<string, number> = {
  "": 1,
  K: 2 ** 10,
  M: 2 ** 20,
  G: 2 ** 30,
  T: 2 ** 40,
};

/** Config keys that hold a disk. */
export const DISK_KEY =
  /^(ide[0-3]|sata[0-5]|scsi([0-9]|[1-2][0-9]|30)|virtio([0-9]|1[0-5])|efidisk0|tpmstate0)$/;

/** The `size` argument of PUT resize: `+20G` (grow by) or `50G` (grow to). */
export const RESIZE_SIZE = /^(\+)?(\d+(\.\d+)?)([KMGT])?$/;

/** Bytes of a size like `32G`, `512M`, `1073741824`; undefined if malformed. */
export function parseSize(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([KMGT]?)$/.exec(text);
  return m ? Math.floor(Number(m[1]) * UNITS[m[2]]) : undefined;
}

/** qemu-server's format_size: the largest unit that divides the size exactly. */
export function formatSize(bytes: number): string {
  let value = bytes;
  for (const unit of ["", "K", "M", "G"]) {
    if (value % 1024 !== 0) return `${value}${unit}`;
    value /= 1024;
  }
  return `${value}T`;
}

/** The option value of `key` (e.g. `size`) in a disk string, or undefined. */
export function diskOption(disk: string, key: string): string | undefined {
  for (const part of disk.split(",").slice(1)) {
    const [k, ...rest] = part.split("=");
    if (k === key) return rest.join("=");
  }
  return undefined;
}

/** Sets option `key` in a disk string, appending it when absent. */
export function withDiskOption(
  disk: string,
  key: string,
  value: string,
): string {
  const [volume, ...opts] = disk.split(",");
  const kept = opts.filter((o) => !o.startsWith(`${key}=`));
  const at = opts.findIndex((o) => o.startsWith(`${key}=`));
  kept.splice(at < 0 ? kept.length : at, 0, `${key}=${value}`);
  return [volume, ...kept].join(",");
}

/** Whether a disk string is a CD-ROM (`media=cdrom`), which cannot be resized. */
export function isCdrom(disk: string): boolean {
  return diskOption(disk, "media") === "cdrom";
}

/** Bytes of a disk string's `size=`, 0 when unknown. */
export function diskBytes(disk: string): number {
  const size = diskOption(disk, "size");
  return size ? parseSize(size) ?? 0 : 0;
}

/**
 * New size for a resize request, or an error text as qemu-server gives it.
 * `+N` grows by N; `N` sets the size; smaller than now is refused.
 */
export function resizedBytes(
  current: number,
  size: string,
): number | { error: string } {
  const m = RESIZE_SIZE.exec(size);
  if (!m) return { error: "invalid size" };
  let bytes = Math.floor(Number(m[2]) * UNITS[m[4] ?? ""]);
  if (m[1]) bytes += current;
  if (bytes < current) return { error: "shrinking disks is not supported" };
  return bytes;
}

/** Storage types whose volumes are block devices, not files: their volumes carry no format. */
export const BLOCK_TYPES = [
  "lvm",
  "lvmthin",
  "rbd",
  "zfspool",
  "zfs",
  "iscsidirect",
];

/** A storage's type by its id (undefined for a storage storage.cfg lacks). */
export type StorageTypeOf = (storage: string) => string | undefined;

/** A drive as parse_drive reads it: its volume (`file`) and every other property by name. */
export interface Drive {
  file: string;
  props: Record<string, string>;
}

/** Drive.pm's boolean properties. */
const DRIVE_BOOLEANS = new Set([
  "backup",
  "detect_zeroes",
  "iothread",
  "pre-enrolled-keys",
  "replicate",
  "ro",
  "scsiblock",
  "shared",
  "snapshot",
  "ssd",
]);

/** Drive.pm's aliases (`volume`, the legacy burst lengths) and what they stand for. */
const DRIVE_ALIASES: Record<string, string> = {
  volume: "file",
  bps_rd_length: "bps_rd_max_length",
  bps_wr_length: "bps_wr_max_length",
  iops_rd_length: "iops_rd_max_length",
  iops_wr_length: "iops_wr_max_length",
};

/** pve-common `PVE/JSONSchema.pm` parse_boolean. */
function parseBoolean(text: string): string | undefined {
  if (/^(1|on|yes|true)$/i.test(text)) return "1";
  if (/^(0|off|no|false)$/i.test(text)) return "0";
  return undefined;
}

/** A drive string read as qemu-server's parse_drive reads it. */
export function parseDrive(text: string): Drive {
  const drive: Drive = { file: "", props: {} };
  for (const part of text.split(",")) {
    if (part.trim() === "") continue;
    const eq = part.indexOf("=");
    if (eq < 0) {
      drive.file = part;
      continue;
    }
    const key = DRIVE_ALIASES[part.slice(0, eq)] ?? part.slice(0, eq);
    let value = part.slice(eq + 1);
    if (DRIVE_BOOLEANS.has(key)) value = parseBoolean(value) ?? value;
    if (key === "file") drive.file = value;
    else drive.props[key] = value;
  }
  // parse_drive turns a byte rate into MB/s, but assigns `defined(delete …)` — 1 — as the rate, so
  // any `bps=` is stored as `mbps=0.000` (`PVE/QemuServer/Drive.pm` parse_drive, as written).
  for (const rate of ["bps", "bps_rd", "bps_wr"]) {
    if (drive.props[rate] === undefined) continue;
    delete drive.props[rate];
    drive.props[`m${rate}`] = (1 / (1024 * 1024)).toFixed(3);
  }
  // The size is kept in bytes and printed by format_size.
  const bytes = drive.props.size === undefined
    ? undefined
    : parseSize(drive.props.size);
  if (bytes !== undefined) drive.props.size = formatSize(bytes);
  return drive;
}

/** print_drive: the volume, then the other properties sorted by name. */
export function printDrive(drive: Drive): string {
  const props = Object.keys(drive.props).sort().map((k) =>
    `${k}=${drive.props[k]}`
  );
  return [drive.file, ...props].join(",");
}

/** The name a storage of `type` gives volume `name` of `vmid` in `format`. */
export function volumeName(
  type: string | undefined,
  vmid: number,
  name: string,
  format: string,
): string {
  return BLOCK_TYPES.includes(type ?? "") ? name : `${vmid}/${name}.${format}`;
}

/** Where a volume's name says its format (`…disk-0.qcow2`); block volumes are raw. */
export function volumeFormat(volid: string): string {
  return /\.(qcow2|raw|vmdk)$/.exec(volid)?.[1] ?? "raw";
}

/**
 * pve-storage volume_has_feature(`snapshot`) for a volume (not a base) on a storage of `type`:
 * a storage with a path snapshots qcow2 only (`PVE/Storage/Plugin.pm`), LVM-thin, ZFS, RBD and
 * BTRFS any volume, thick LVM and iSCSI none. A storage storage.cfg lacks is not judged (a test's
 * guest may name one it did not configure).
 */
export function canSnapshot(type: string | undefined, volid: string): boolean {
  if (type === undefined) return true;
  if (["lvmthin", "zfspool", "zfs", "rbd", "btrfs"].includes(type)) return true;
  if (["lvm", "iscsi", "iscsidirect"].includes(type)) return false;
  return volumeFormat(volid) === "qcow2";
}

/**
 * vdisk_alloc's refusal of a format the storage cannot hold (a block storage holds raw only):
 * the plugin's die, with Perl's location as PVE 9 reports it.
 */
function refuseFormat(type: string | undefined, format: string): void {
  const plugin = type === "lvmthin"
    ? "LvmThinPlugin.pm line 102"
    : type === "zfspool"
    ? "ZFSPoolPlugin.pm line 292"
    : undefined;
  if (plugin && format !== "raw") {
    throw new ApiError(
      500,
      `unsupported format '${format}' at /usr/share/perl5/PVE/Storage/${plugin}.`,
    );
  }
}

/** The lowest `n` with no `vm-<vmid>-disk-<n>` among the `taken` volumes (find_free_diskname). */
function freeDisk(vmid: number, taken: string[]): number {
  let n = 0;
  const used = (n: number) =>
    taken.some((d) => new RegExp(`-${vmid}-disk-${n}(\\.|,|$)`).test(d));
  while (used(n)) n++;
  return n;
}

/**
 * The drive create_disks stores for a requested one: `<storage>:<GiB>` becomes a new volume there
 * (named by the storage's type, in `format=` or `defaultFormat`, with its `size`),
 * `<storage>:cloudinit` a cloud-init volume (`media=cdrom`; qcow2 where the storage has a path);
 * `format=` goes either way. Any other drive is stored as PVE prints it. Throws PVE's refusal of a
 * format the storage cannot hold.
 */
export function allocateDisk(
  value: string,
  vmid: number,
  taken: string[],
  typeOf: StorageTypeOf,
  defaultFormat = "raw",
): string {
  const drive = parseDrive(value);
  const m = /^([^/:\s]+):(\d+(?:\.\d+)?|cloudinit)$/.exec(drive.file);
  if (!m) return printDrive(drive);
  const [, store, amount] = m;
  const type = typeOf(store);
  const block = BLOCK_TYPES.includes(type ?? "");
  const cloudinit = amount === "cloudinit";
  const format = drive.props.format ??
    (cloudinit && !block ? "qcow2" : block ? "raw" : defaultFormat);
  delete drive.props.format;
  delete drive.props["import-from"];
  refuseFormat(type, format);
  const name = cloudinit
    ? `vm-${vmid}-cloudinit`
    : `vm-${vmid}-disk-${freeDisk(vmid, taken)}`;
  drive.file = `${store}:${volumeName(type, vmid, name, format)}`;
  if (cloudinit) drive.props.media = "cdrom";
  else drive.props.size = formatSize(Math.floor(Number(amount) * UNITS.G));
  return printDrive(drive);
}

/** Whether a drive is a cloud-init volume (`…vm-<vmid>-cloudinit[.qcow2]`). */
function isCloudinit(file: string): boolean {
  return /[:/](vm-\d+-)?cloudinit(\.\w+)?$/.test(file);
}

/**
 * Volume for a clone (qemu-server clone_vm → clone_disk): a full clone copies the volume to a new
 * `vm-<new>-disk-N` (on `storage` when given; in its format where the target has a path, raw on a
 * block storage); a linked clone of a template disk is the storage's clone_image of the base
 * (`<src>/base-<src>-disk-N.<fmt>/<new>/vm-<new>-disk-N.qcow2` on a path,
 * `base-<src>-disk-N/vm-<new>-disk-N` on a block storage). A cloud-init drive is always made anew.
 */
export function cloneDisk(
  disk: string,
  fromVmid: number,
  toVmid: number,
  full: boolean,
  typeOf: StorageTypeOf,
  storage?: string,
): string {
  const drive = parseDrive(disk);
  const split = drive.file.indexOf(":");
  if (split < 0) return disk;
  const store = drive.file.slice(0, split);
  const target = full ? storage ?? store : store;
  const type = typeOf(target);
  // A cloud-init drive is no CD-ROM to clone_vm (`drive_is_cdrom($drive, 1)` excludes it): it is
  // always copied, as the new VM's own cloud-init volume.
  if (isCloudinit(drive.file)) {
    const name = `vm-${toVmid}-cloudinit`;
    const format = BLOCK_TYPES.includes(type ?? "") ? "raw" : "qcow2";
    drive.file = `${target}:${volumeName(type, toVmid, name, format)}`;
    return printDrive(drive);
  }
  if (isCdrom(disk)) return disk;
  const base = drive.file.slice(split + 1).split("/").pop() ?? "";
  const n = /-disk-(\d+)/.exec(base)?.[1] ?? "0";
  const name = `vm-${toVmid}-disk-${n}`;
  if (!full && base.startsWith(`base-${fromVmid}-`)) {
    drive.file = BLOCK_TYPES.includes(type ?? "")
      ? `${store}:${base}/${name}`
      : `${store}:${fromVmid}/${base}/${toVmid}/${name}.qcow2`;
  } else {
    const format = BLOCK_TYPES.includes(type ?? "")
      ? "raw"
      : volumeFormat(base);
    drive.file = `${target}:${volumeName(type, toVmid, name, format)}`;
  }
  return printDrive(drive);
}

/**
 * vdisk_create_base for a template: the volume's own name `vm-<vmid>-…` becomes `base-<vmid>-…`
 * (a path storage keeps a linked clone's base in the name, `Plugin.pm` create_base; LVM-thin names
 * the volume by itself, `LvmThinPlugin.pm` create_base). CD-ROMs and cloud-init drives stay.
 */
export function baseVolume(
  disk: string,
  vmid: number,
  typeOf: StorageTypeOf,
): string {
  if (isCdrom(disk)) return disk;
  const drive = parseDrive(disk);
  const m = new RegExp(`^([^:]+):(.*?)vm-${vmid}-([^/]*)$`).exec(drive.file);
  if (!m) return disk;
  const [, store, parent, rest] = m;
  const prefix = typeOf(store) === "lvmthin" ? "" : parent;
  drive.file = `${store}:${prefix}base-${vmid}-${rest}`;
  return printDrive(drive);
}
