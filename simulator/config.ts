/**
 * A qemu guest's config as the API shows it, and config changes: applied at
 * once, or left pending when the guest runs and the option cannot be hotplugged.
 *
 * @module
 */

import {
  checkDiskProtection,
  detachDrive,
  diskHotplugged,
  dropReattached,
  hotplugs,
  registerUnused,
} from "./disk_config.ts";
import {
  allocateDisk,
  DISK_KEY,
  formatSize,
  parseDrive,
  printDrive,
  type StorageTypeOf,
} from "./disks.ts";
import { ApiError } from "./http.ts";
import { randomMac } from "./macs.ts";
import type { ParamSpec } from "./params.ts";
import type { AgentMode, ConfigValue, GuestState } from "./types.ts";

/**
 * Options a running guest cannot take before its next start (with PVE's default
 * `hotplug: network,disk,usb`): CPU, memory and machine-level hardware.
 */
export const HOTPLUG_IMPOSSIBLE = new Set([
  "cores",
  "sockets",
  "vcpus",
  "memory",
  "cpu",
  "machine",
  "bios",
  "numa",
  "vga",
  "ostype",
  "agent",
  "scsihw",
  "smbios1",
  "args",
  "hugepages",
  "affinity",
]);

/** Splits a tag list as PVE accepts it (`;`, `,` or spaces between tags). */
export function parseTags(text: string): string[] {
  return text.split(/[;, ]+/).filter((t) => t !== "");
}

/** Options PVE types as integers: served as JSON numbers. */
const INTEGER_KEYS = new Set([
  "cores",
  "sockets",
  "vcpus",
  "balloon",
  "onboot",
  "template",
  "protection",
  "numa",
]);

const STRING: ParamSpec = { type: "string", optional: true };
const INTEGER: ParamSpec = { type: "integer", optional: true, minimum: 0 };

/** Which config options PUT/POST config accept (the sim's subset of qemu-server's schema). */
export function configOptionSpec(key: string): ParamSpec | undefined {
  // qemu-server's `urlencoded` format: the keys must arrive URL-encoded.
  if (key === "sshkeys") {
    return {
      type: "string",
      optional: true,
      pattern: /^[-%a-zA-Z0-9_.!~*'()]*$/,
    };
  }
  if (key === "memory") {
    return { type: "string", optional: true, pattern: /^(current=)?\d+$/ };
  }
  if (INTEGER_KEYS.has(key)) return INTEGER;
  if (key === "name") {
    return {
      type: "string",
      optional: true,
      pattern: /^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$/,
    };
  }
  if (
    DISK_KEY.test(key) || /^(net|ipconfig|serial|usb|hostpci)\d+$/.test(key)
  ) return STRING;
  if (
    [
      "tags",
      "description",
      "agent",
      "cpu",
      "machine",
      "bios",
      "vga",
      "ostype",
      "scsihw",
      "smbios1",
      "vmgenid",
      "meta",
      "boot",
      "ciuser",
      "cipassword",
      "citype",
      "nameserver",
      "searchdomain",
      "startup",
      "hotplug",
      "args",
      "hugepages",
      "affinity",
      "cicustom",
    ].includes(key)
  ) return STRING;
  return undefined;
}

/** The config as `GET …/config?current=1` shows it (name/tags/lock/agent merged in). */
export function currentConfig(g: GuestState): Record<string, ConfigValue> {
  const out: Record<string, ConfigValue> = {};
  if (g.name) out.name = g.name;
  for (const [k, v] of Object.entries(g.config)) out[k] = v;
  if (g.agent === "none") delete out.agent;
  else out.agent ??= 1;
  if (g.tags.length > 0) out.tags = g.tags.join(";");
  if (g.lock) out.lock = g.lock;
  return out;
}

/**
 * The config as plain `GET …/config` shows it: PVE's default (`current=0`) is
 * the config WITH pending changes applied; only `current=1` shows what runs.
 */
export function configWithPending(g: GuestState): Record<string, ConfigValue> {
  const out = currentConfig(g);
  for (const [k, v] of Object.entries(g.pending)) out[k] = v;
  for (const k of g.pendingDelete) delete out[k];
  return out;
}

/** One row of `GET …/pending`. */
export interface PendingRow {
  key: string;
  value?: ConfigValue;
  pending?: ConfigValue;
  delete?: number;
}

/** `GET …/pending`: every option with its current value, pending value and/or pending delete. */
export function pendingRows(g: GuestState): PendingRow[] {
  const current = currentConfig(g);
  const keys = new Set([
    ...Object.keys(current),
    ...Object.keys(g.pending),
    ...g.pendingDelete,
  ]);
  return [...keys].sort().map((key) => {
    const row: PendingRow = { key };
    if (key in current) row.value = current[key];
    if (key in g.pending) row.pending = g.pending[key];
    // config_with_pending_array: 2 for a forced delete.
    if (g.pendingDelete.includes(key)) {
      row.delete = g.pendingForce?.includes(key) ? 2 : 1;
    }
    return row;
  });
}

/** A stable digest of the current config (PVE: SHA-1 of the config file). */
export async function configDigest(g: GuestState): Promise<string> {
  const text = JSON.stringify(Object.entries(currentConfig(g)).sort());
  const hash = await crypto.subtle.digest(
    "SHA-1",
    new TextEncoder().encode(text),
  );
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** A config change request: values to set, keys to delete, keys whose pending change to drop. */
export interface ConfigChange {
  set: Record<string, string | number | boolean>;
  delete: string[];
  revert: string[];
  /** The node's storage types, for the volumes a drive value allocates (disks.ts allocateDisk). */
  typeOf?: StorageTypeOf;
  /**
   * The bytes of an existing volume a drive value names (NodeResources.volumeBytes): null when
   * its storage lacks it, undefined when the storage is not the simulator's to judge.
   */
  volumeBytes?: (volid: string) => number | null | undefined;
  /** The request's `force`: a deleted drive's volume is destroyed, not kept as unusedN. */
  force?: boolean;
}

/**
 * Applies a change; on a running guest, what cannot be hot-plugged goes pending instead. Deletes
 * come first, as $update_vm_api makes them; a drive removed or replaced leaves its volume as an
 * `unusedN` (disk_config.ts).
 */
export function applyConfigChange(g: GuestState, change: ConfigChange): void {
  const running = g.status === "running";
  for (const key of change.revert) {
    delete g.pending[key];
    g.pendingDelete = g.pendingDelete.filter((k) => k !== key);
    g.pendingForce = g.pendingForce?.filter((k) => k !== key);
  }
  for (const key of change.delete) {
    const disk = DISK_KEY.test(key);
    if (disk || /^unused\d+$/.test(key)) checkDiskProtection(g, key);
    // $update_vm_api: a drive's pending value dropped by the delete is registered as unused.
    if (disk && g.pending[key] !== undefined) {
      registerUnused(g, String(g.pending[key]));
    }
    if (running && later(g, key, undefined)) {
      delete g.pending[key];
      if (!g.pendingDelete.includes(key)) g.pendingDelete.push(key);
      // add_to_pending_delete keeps the request's force with the key (`!scsi1`).
      g.pendingForce = (g.pendingForce ?? []).filter((k) => k !== key);
      if (disk && change.force) g.pendingForce.push(key);
    } else {
      if (disk) detachDrive(g, key, change.force === true);
      deleteNow(g, key);
    }
  }
  for (const [key, raw] of Object.entries(change.set)) {
    const value = kept(g, key, normalizeValue(g, key, raw, change));
    if (DISK_KEY.test(key) && g.pending[key] !== undefined) {
      registerUnused(g, String(g.pending[key]));
    }
    if (running && later(g, key, value)) {
      g.pending[key] = value;
      g.pendingDelete = g.pendingDelete.filter((k) => k !== key);
      g.pendingForce = g.pendingForce?.filter((k) => k !== key);
    } else {
      if (DISK_KEY.test(key)) replaceDrive(g, key, String(value));
      setNow(g, key, value);
    }
  }
  dropReattached(g, (k) => DISK_KEY.test(k));
}

/** Whether a running guest takes the change of `key` (a removal when `value` is undefined) later. */
function later(g: GuestState, key: string, value: ConfigValue | undefined) {
  if (HOTPLUG_IMPOSSIBLE.has(key)) return true;
  // vmconfig_hotplug_pending: a NIC is (un)plugged only with network hot-plug.
  if (NIC_KEY.test(key)) {
    return value === undefined
      ? !hotplugs(g, "network")
      : !nicHotplugged(g, key, value);
  }
  if (DISK_KEY.test(key)) {
    return !diskHotplugged(g, key, value === undefined ? value : String(value));
  }
  return false;
}

/** vmconfig_update_disk / vmconfig_apply_pending: a drive given another volume leaves the old one unused. */
function replaceDrive(g: GuestState, key: string, value: string): void {
  const old = g.config[key];
  if (
    old !== undefined && parseDrive(String(old)).file !== parseDrive(value).file
  ) {
    registerUnused(g, String(old));
  }
}

/**
 * A value with the properties the guest `keeps` for its key added back when the change left them
 * out (see `SimGuest.keeps`: a guess, no PVE version is known to merge property strings).
 */
function kept(g: GuestState, key: string, value: ConfigValue): ConfigValue {
  const extra = g.keeps?.[key];
  if (extra === undefined || typeof value !== "string") return value;
  const name = extra.split("=")[0];
  const has = value.split(",").some((p) => p.split("=")[0] === name);
  return has ? value : `${value},${extra}`;
}

/** Makes pending changes current (PVE does so when the guest starts). */
export function applyPending(g: GuestState): void {
  const pending = Object.entries(g.pending);
  const deletes = [...g.pendingDelete];
  // vmconfig_apply_pending: deletes first; a drive's volume is detached to unusedN, or freed
  // when the delete was forced.
  for (const k of deletes) {
    if (DISK_KEY.test(k)) {
      detachDrive(g, k, g.pendingForce?.includes(k) === true);
    }
    deleteNow(g, k);
  }
  for (const [k, v] of pending) {
    if (DISK_KEY.test(k)) replaceDrive(g, k, String(v));
    setNow(g, k, v);
  }
  dropReattached(g, (k) => DISK_KEY.test(k));
}

function normalizeValue(
  g: GuestState,
  key: string,
  raw: string | number | boolean,
  change: ConfigChange,
): ConfigValue {
  if (typeof raw === "boolean") return raw ? 1 : 0;
  if (INTEGER_KEYS.has(key)) return Number(raw);
  // update_vm_api: create_disks allocates a new volume and stores every drive as PVE prints it.
  if (DISK_KEY.test(key) && typeof raw === "string") {
    const disks = [...Object.entries(g.config), ...Object.entries(g.pending)]
      .filter(([k]) => DISK_KEY.test(k) || /^unused\d+$/.test(k))
      .map(([, v]) => String(v));
    const value = allocateDisk(
      raw,
      g.vmid,
      disks,
      change.typeOf ?? (() => undefined),
    );
    const file = parseDrive(value).file;
    return file === parseDrive(raw).file ? existingSize(value, change) : value;
  }
  if (key === "tags") return uniqueTags(String(raw));
  if (NIC_KEY.test(key)) return printNic(String(raw));
  return raw;
}

/**
 * create_disks for a drive naming an existing volume of a guest: it must exist ("volume <volid>
 * does not exist") and gets the storage's size for it (volume_size_info). CD-ROMs, cloud-init
 * drives and volumes the simulator's storages do not hold a guest image of are left as they are.
 */
function existingSize(value: string, change: ConfigChange): string {
  const file = parseDrive(value).file;
  if (
    !change.volumeBytes || /media=cdrom/.test(value) ||
    !/^[^:]+:(.*\/)?(vm|base)-\d+-disk-\d+(\.\w+)?$/.test(file)
  ) return value;
  const bytes = change.volumeBytes(file);
  if (bytes === null) throw new ApiError(500, `volume ${file} does not exist`);
  if (!bytes) return value;
  const drive = parseDrive(value);
  drive.props.size = formatSize(bytes);
  return printDrive(drive);
}

/**
 * qemu-server's get_unique_tags with datacenter.cfg's default `tag-style`
 * (ordering alphabetical, case-insensitive): duplicates dropped, sorted, `;`.
 */
function uniqueTags(text: string): string {
  const seen = new Map<string, string>();
  for (const t of parseTags(text)) {
    if (!seen.has(t.toLowerCase())) seen.set(t.toLowerCase(), t);
  }
  return [...seen.entries()].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
    .map(([, t]) => t).join(";");
}

const NIC_KEY = /^net\d+$/;

/** qemu-server's NIC models (`PVE/QemuServer/Network.pm` `$nic_model_list`). */
const NIC_MODELS = new Set([
  "e1000",
  "e1000-82540em",
  "e1000-82544gc",
  "e1000-82545em",
  "e1000e",
  "i82551",
  "i82557b",
  "i82559er",
  "ne2k_isa",
  "ne2k_pci",
  "pcnet",
  "rtl8139",
  "virtio",
  "vmxnet3",
]);

/**
 * A netN value read as qemu-server's parse_net reads it (`PVE/QemuServer/Network.pm`): the model
 * is a bare first word, `model=<m>` or `<m>=<mac>` (the format's keyAlias); a flag given as
 * yes/on/true reads 1 (pve-common parse_property_string → parse_boolean).
 */
export function parseNic(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(",").filter((p) => p !== "")) {
    const eq = part.indexOf("=");
    const [key, value] = eq < 0
      ? ["model", part]
      : [part.slice(0, eq), part.slice(eq + 1)];
    if (NIC_MODELS.has(key)) {
      out.model = key;
      out.macaddr = value;
    } else if (key === "firewall" || key === "link_down") {
      out[key] = /^(1|yes|on|true)$/i.test(value) ? "1" : "0";
    } else out[key] = value;
  }
  return out;
}

/**
 * A NIC as update_vm_api stores it (`PVE/API2/Qemu.pm`: parse_net then print_net): a NIC without
 * a MAC gets a new one — also when it replaces a NIC that had one — and it prints `<model>=<mac>`
 * first, the rest sorted (pve-common print_property_string). A value without a known model passes
 * unchanged (the simulator's subset leaves its refusal to the schema).
 */
function printNic(value: string): string {
  const net = parseNic(value);
  if (!NIC_MODELS.has(net.model ?? "")) return value;
  const rest = Object.keys(net).filter((k) => k !== "model" && k !== "macaddr")
    .sort();
  return [
    `${net.model}=${net.macaddr || randomMac()}`,
    ...rest.map((k) => `${k}=${net[k]}`),
  ].join(",");
}

/**
 * Whether a running VM takes NIC `key`'s new value at once (qemu-server `PVE/QemuServer.pm`
 * vmconfig_update_net): a NIC that keeps its model, MAC, queues and MTU and stays on a bridge is
 * re-plugged on the host (bridge, tag, trunks, firewall, rate, link_down) without hot-plug; a new
 * NIC or any other change needs `network` hot-plug (an unplug and a plug), else it waits pending.
 */
function nicHotplugged(
  g: GuestState,
  key: string,
  value: ConfigValue,
): boolean {
  if (hotplugs(g, "network")) return true;
  if (g.config[key] === undefined) return false;
  const [was, next] = [
    parseNic(String(g.config[key])),
    parseNic(String(value)),
  ];
  const same = ["model", "macaddr", "queues", "mtu"].every((k) =>
    was[k] === next[k]
  );
  return same && Boolean(was.bridge) && Boolean(next.bridge);
}

function setNow(g: GuestState, key: string, value: ConfigValue): void {
  delete g.pending[key];
  g.pendingDelete = g.pendingDelete.filter((k) => k !== key);
  g.pendingForce = g.pendingForce?.filter((k) => k !== key);
  if (key === "name") g.name = String(value);
  else if (key === "tags") g.tags = parseTags(String(value));
  else {
    g.config[key] = value;
    if (key === "agent") g.agent = agentModeAfterConfig(g.agent, String(value));
  }
}

function deleteNow(g: GuestState, key: string): void {
  delete g.pending[key];
  g.pendingDelete = g.pendingDelete.filter((k) => k !== key);
  g.pendingForce = g.pendingForce?.filter((k) => k !== key);
  if (key === "name") g.name = "";
  else if (key === "tags") g.tags = [];
  else {
    delete g.config[key];
    if (key === "agent") g.agent = "none";
  }
}

/**
 * Enabling `agent` on a guest assumes its OS has qemu-ga installed (the common
 * cloud-image case); a test wanting "configured but silent" sets `agent` itself.
 */
function agentModeAfterConfig(mode: AgentMode, value: string): AgentMode {
  const enabled = !/^(0|enabled=0)/.test(value);
  if (!enabled) return "none";
  return mode === "none" ? "running" : mode;
}
