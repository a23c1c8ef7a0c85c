/**
 * What a qemu config change does to the volumes its drives name: a drive removed or replaced
 * leaves its volume as the next free `unusedN` (or frees it with `force`), a volume attached again
 * leaves its `unusedN`, and which drive changes a running VM takes at once.
 *
 * Sources: qemu-server `PVE/API2/Qemu.pm` $update_vm_api (deletes, then sets, through the pending
 * section), `PVE/QemuServer.pm` vmconfig_register_unused_drive, vm_is_volid_owner,
 * try_deallocate_drive, vmconfig_delete_or_detach_drive, vmconfig_hotplug_pending,
 * vmconfig_update_disk, vmconfig_apply_pending, parse_vm_config ("remove 'unusedX' settings if we
 * re-add a volume"); pve-guest-common `PVE/AbstractConfig.pm` add_unused_volume.
 *
 * @module
 */

import { diskBytes, isCdrom, parseDrive } from "./disks.ts";
import { ApiError } from "./http.ts";
import type { GuestState } from "./types.ts";

/** PVE's limit on unusedN keys (`PVE/QemuConfig.pm` __config_max_unused_disks). */
const MAX_UNUSED = 256;

/**
 * Whether the VM's `hotplug` option holds `feature` (qemu-server parse_hotplug_features: unset or
 * `1` is the default `network,disk,usb`, `0` none).
 */
export function hotplugs(g: GuestState, feature: string): boolean {
  const value = String(g.config.hotplug ?? "1");
  const list = value === "1" ? "network,disk,usb" : value === "0" ? "" : value;
  return list.split(",").includes(feature);
}

/**
 * add_unused_volume: the volume goes to the lowest free `unusedN` (a volume already listed keeps
 * its key); its size is remembered, as the storage still has it.
 */
export function addUnused(g: GuestState, volid: string, bytes = 0): string {
  let free: string | undefined;
  for (let n = MAX_UNUSED - 1; n >= 0; n--) {
    const value = g.config[`unused${n}`];
    if (value === volid) return `unused${n}`;
    if (value === undefined) free = `unused${n}`;
  }
  if (!free) {
    throw new ApiError(
      500,
      "Too many unused volumes - please delete them first.",
    );
  }
  g.config[free] = volid;
  if (bytes > 0) (g.volumeSizes ??= {})[volid] = bytes;
  return free;
}

/** The VMID a volume's name says owns it (pve-storage parse_volname; a linked clone's is the last). */
export function volumeOwner(volid: string): number | undefined {
  const all = [...volid.matchAll(/(?:^|[:/])(?:vm|base|subvol)-(\d+)-/g)];
  const last = all.at(-1);
  return last ? Number(last[1]) : undefined;
}

/** Whether a drive's volume is a cloud-init one (`vm-<vmid>-cloudinit`). */
function isCloudinit(file: string): boolean {
  return /[:/]vm-\d+-cloudinit(\.\w+)?$/.test(file);
}

/**
 * vmconfig_register_unused_drive: a cloud-init volume is freed, a CD-ROM (or a path) left, a
 * volume the VM owns becomes its next `unusedN`; another VM's volume just leaves the config.
 */
export function registerUnused(g: GuestState, value: string): void {
  const { file } = parseDrive(value);
  if (isCloudinit(file) || isCdrom(value) || !file.includes(":")) return;
  if (volumeOwner(file) === g.vmid) addUnused(g, file, diskBytes(value));
}

/**
 * vmconfig_delete_or_detach_drive: without `force` the volume becomes unused; with it
 * try_deallocate_drive frees it (the key's removal takes it off its storage).
 */
export function detachDrive(g: GuestState, key: string, force: boolean): void {
  const value = g.config[key];
  if (value !== undefined && !force) registerUnused(g, String(value));
}

/**
 * $update_vm_api refuses to remove a drive or an unused volume of a protected guest
 * (pve-guest-common check_protection: "<message> - protection mode enabled").
 */
export function checkDiskProtection(g: GuestState, key: string): void {
  if (!Number(g.config.protection)) return;
  const what = /^unused\d+$/.test(key)
    ? `unused disk '${parseDrive(String(g.config[key] ?? "")).file}'`
    : `drive '${key}'`;
  throw new ApiError(500, `can't remove ${what} - protection mode enabled`);
}

/** parse_vm_config: an `unusedN` naming a volume a drive uses (now or pending) is dropped. */
export function dropReattached(g: GuestState, isDrive: (k: string) => boolean) {
  const used = new Set(
    [...Object.entries(g.config), ...Object.entries(g.pending)]
      .filter(([k]) => isDrive(k))
      .map(([, v]) => parseDrive(String(v)).file),
  );
  for (const [k, v] of Object.entries(g.config)) {
    if (/^unused\d+$/.test(k) && used.has(String(v))) {
      delete g.config[k];
      delete g.volumeSizes?.[String(v)];
    }
  }
}

/** Options vmconfig_update_disk cannot change on a running drive (they wait for the next start). */
const COLD_OPTIONS = [
  "aio",
  "discard",
  "iothread",
  "queues",
  "product",
  "cache",
  "ssd",
  "vendor",
  "ro",
];

/**
 * Whether a running VM takes drive `key`'s new value (or, with `value` undefined, its removal) at
 * once (vmconfig_hotplug_pending, vmconfig_update_disk): EFI and TPM state never; a CD-ROM's
 * medium changes; the same volume with only throttles changed updates; a new or replaced volume,
 * or a removal, needs `disk` hot-plug and a bus that has it (not IDE or SATA).
 */
export function diskHotplugged(
  g: GuestState,
  key: string,
  value: string | undefined,
): boolean {
  if (key === "efidisk0" || key === "tpmstate0") return false;
  const pluggable = hotplugs(g, "disk") && !/^(ide|sata)\d+$/.test(key);
  const old = g.config[key];
  if (value === undefined || old === undefined) return pluggable;
  const [was, next] = [parseDrive(String(old)), parseDrive(value)];
  if ((was.props.media ?? "disk") !== (next.props.media ?? "disk")) {
    return false;
  }
  if (isCdrom(String(old))) return true;
  if (was.file !== next.file) return pluggable;
  return COLD_OPTIONS.every((o) => was.props[o] === next.props[o]);
}
