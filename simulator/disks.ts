/**
 * Disk strings of a qemu config (`local-zfs:vm-100-disk-0,size=32G`): sizes,
 * resize arithmetic and volume renaming on clone, as qemu-server prints them.
 *
 * @module
 */

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

/**
 * Volume for a clone: a full clone copies `vm-<src>-disk-N` / `base-<src>-disk-N`
 * to `vm-<new>-disk-N` (on `storage` when given); a linked clone of a template
 * disk becomes `base-<src>-disk-N/vm-<new>-disk-N`, as qemu-server names them.
 */
export function cloneDisk(
  disk: string,
  fromVmid: number,
  toVmid: number,
  full: boolean,
  storage?: string,
): string {
  const [volume, ...opts] = disk.split(",");
  // A cloud-init drive is no CD-ROM to clone_vm (`drive_is_cdrom($drive, 1)` excludes it): it is
  // always copied, as the new VM's own `vm-<new>-cloudinit`.
  const cloudinit = /[:/](vm-\d+-)?cloudinit(\.\w+)?$/.test(volume);
  if (cloudinit) {
    const store = volume.split(":", 1)[0];
    return [
      `${full ? storage ?? store : store}:vm-${toVmid}-cloudinit`,
      ...opts,
    ]
      .join(",");
  }
  if (isCdrom(disk) || !volume.includes(":")) return disk;
  const [store, name] = volume.split(":", 2);
  const base = name.split("/").pop() ?? name;
  const renamed = base.replace(
    new RegExp(`^(vm|base)-${fromVmid}-`),
    `vm-${toVmid}-`,
  );
  const linked = !full && base.startsWith(`base-${fromVmid}-`);
  return [
    `${full ? storage ?? store : store}:${
      linked ? `${base}/${renamed}` : renamed
    }`,
    ...opts,
  ].join(",");
}

/**
 * Turns PVE's allocation syntax `local-zfs:10` (a new 10 GiB disk) into the
 * volume PVE would create; other values pass through.
 */
export function allocateDisk(
  value: string,
  vmid: number,
  taken: string[],
): string {
  const m = /^([\w.-]+):(\d+(?:\.\d+)?)(,.*)?$/.exec(value);
  if (!m) return value;
  let n = 0;
  while (taken.some((d) => d.includes(`vm-${vmid}-disk-${n}`))) n++;
  const bytes = Math.floor(Number(m[2]) * UNITS.G);
  return withDiskOption(
    `${m[1]}:vm-${vmid}-disk-${n}${m[3] ?? ""}`,
    "size",
    formatSize(bytes),
  );
}
