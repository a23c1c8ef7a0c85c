/**
 * A container's config and status as pve-container shows them, and config
 * changes with LXC's own hotplug rules (not qemu's):
 *
 * - stopped: every change applies at once;
 * - running: "fastplug" options apply at once (hostname, tags, cores, onboot,
 *   description…), memory/swap/cpulimit/cpuunits and netN are hotplugged (a netN
 *   on a missing bridge fails: 400, nothing written), a NEW mpN is hotplugged;
 *   everything else (features, nameserver, ostype, an existing mpN…) stays pending
 *   until the next start.
 *
 * Sources: pve-container src/PVE/LXC/Config.pm (confdesc, update_pct_config,
 * $LXC_FASTPLUG_OPTIONS, vmconfig_hotplug_pending, vmconfig_apply_pending),
 * src/PVE/LXC.pm (vmstatus), src/PVE/API2/LXC/Config.pm (update_vm).
 *
 * @module
 */

import { randomMac } from "./macs.ts";
import { parseTags, type PendingRow } from "./config.ts";
import { addUnused } from "./disk_config.ts";
import { diskBytes, formatSize, withDiskOption } from "./disks.ts";
import { ApiError, paramError } from "./http.ts";
import type { ParamSpec } from "./params.ts";
import type { NodeResources } from "./storage.ts";
import type { ConfigValue, GuestState } from "./types.ts";
import { metricsOf } from "./views.ts";

const STRING: ParamSpec = { type: "string", optional: true };
const BOOLEAN: ParamSpec = { type: "boolean", optional: true };

/** PVE's dns-name format. */
export const DNS_NAME =
  /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*$/;

/** Integer options with their bounds (confdesc). */
const INTEGER_OPTIONS: Record<string, [number, number?]> = {
  cores: [1, 8192],
  memory: [16],
  swap: [0],
  cpuunits: [0, 500000],
  tty: [0, 6],
};

/** Boolean options (served as 0/1). */
const BOOLEAN_OPTIONS = new Set([
  "onboot",
  "protection",
  "template",
  "unprivileged",
  "console",
  "debug",
]);

const ENUM_OPTIONS: Record<string, readonly string[]> = {
  arch: ["amd64", "i386", "arm64", "armhf", "riscv32", "riscv64"],
  ostype: [
    "debian",
    "devuan",
    "ubuntu",
    "centos",
    "fedora",
    "opensuse",
    "archlinux",
    "alpine",
    "gentoo",
    "nixos",
    "unmanaged",
  ],
  cmode: ["shell", "console", "tty"],
  lock: [
    "backup",
    "create",
    "destroyed",
    "disk",
    "fstrim",
    "migrate",
    "mounted",
    "rollback",
    "snapshot",
    "snapshot-delete",
  ],
};

const STRING_OPTIONS = new Set([
  "description",
  "features",
  "nameserver",
  "searchdomain",
  "startup",
  "tags",
  "timezone",
  "hookscript",
  "rootfs",
  "entrypoint",
  "env",
]);

/** Options applied at once even on a running container ($LXC_FASTPLUG_OPTIONS). */
const FASTPLUG = new Set([
  "description",
  "onboot",
  "startup",
  "protection",
  "hostname",
  "hookscript",
  "cores",
  "tags",
  "lock",
]);

/** Options the running container takes live through its cgroup. */
const CGROUP_HOTPLUG = new Set(["memory", "swap", "cpulimit", "cpuunits"]);

/** Options that may not be deleted. */
const REQUIRED = new Set(["memory", "rootfs", "ostype"]);

/** Whether `key` names a container option (pve-container's confdesc). */
export function isCtOption(key: string): boolean {
  return ctOptionSpec(key) !== undefined;
}

/** The parameter spec of container option `key` (PUT config and create), or undefined. */
export function ctOptionSpec(key: string): ParamSpec | undefined {
  const int = INTEGER_OPTIONS[key];
  if (int) {
    return {
      type: "integer",
      optional: true,
      minimum: int[0],
      maximum: int[1],
    };
  }
  if (BOOLEAN_OPTIONS.has(key)) return BOOLEAN;
  const choices = ENUM_OPTIONS[key];
  if (choices) return { type: "string", optional: true, enum: choices };
  if (key === "cpulimit") {
    return { type: "string", optional: true, pattern: /^\d+(\.\d+)?$/ };
  }
  if (key === "hostname") {
    return {
      type: "string",
      optional: true,
      pattern: DNS_NAME,
      maxLength: 255,
    };
  }
  if (STRING_OPTIONS.has(key)) return STRING;
  const indexed = /^(net|mp|dev|unused)(\d+)$/.exec(key);
  if (indexed) {
    const max = indexed[1] === "net" ? 31 : 255;
    return Number(indexed[2]) <= max ? STRING : undefined;
  }
  return undefined;
}

/** A value as PVE stores it: integers and booleans as numbers, the rest as strings. */
export function ctValue(
  key: string,
  raw: string | number | boolean,
): ConfigValue {
  if (typeof raw === "boolean") return raw ? 1 : 0;
  if (INTEGER_OPTIONS[key] || BOOLEAN_OPTIONS.has(key)) return Number(raw);
  if (key === "cpulimit") return Number(raw);
  return raw;
}

/** The config as `GET …/config?current=1` shows it (hostname, tags and lock merged in). */
export function currentCtConfig(g: GuestState): Record<string, ConfigValue> {
  const out: Record<string, ConfigValue> = {};
  if (g.name) out.hostname = g.name;
  for (const [k, v] of Object.entries(g.config)) out[k] = v;
  if (g.tags.length > 0) out.tags = g.tags.join(";");
  if (g.lock) out.lock = g.lock;
  return out;
}

/** The config as plain `GET …/config` shows it: pending changes applied (PVE's default). */
export function ctConfigWithPending(
  g: GuestState,
): Record<string, ConfigValue> {
  const out = currentCtConfig(g);
  for (const [k, v] of Object.entries(g.pending)) out[k] = v;
  for (const k of g.pendingDelete) delete out[k];
  return out;
}

/** `GET …/pending` rows: key, current value, pending value, pending delete. */
export function ctPendingRows(g: GuestState): PendingRow[] {
  const current = currentCtConfig(g);
  const keys = new Set([
    ...Object.keys(current),
    ...Object.keys(g.pending),
    ...g.pendingDelete,
  ]);
  return [...keys].sort().map((key) => {
    const row: PendingRow = { key };
    if (key in current) row.value = current[key];
    if (key in g.pending) row.pending = g.pending[key];
    if (g.pendingDelete.includes(key)) row.delete = 1;
    return row;
  });
}

/** A stable digest of the container's config file (PVE: SHA-1 of the file). */
export async function ctDigest(g: GuestState): Promise<string> {
  const text = JSON.stringify([
    Object.entries(currentCtConfig(g)).sort(),
    Object.entries(g.pending).sort(),
    g.pendingDelete,
  ]);
  const hash = await crypto.subtle.digest(
    "SHA-1",
    new TextEncoder().encode(text),
  );
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** `GET …/lxc/{vmid}/status/current` (`ha` included) or one `GET …/lxc` entry (without). */
export function ctStatus(
  g: GuestState,
  withHa: boolean,
): Record<string, unknown> {
  const m = metricsOf(g);
  const running = g.status === "running";
  const out: Record<string, unknown> = {
    vmid: g.vmid,
    type: "lxc",
    name: g.name || `CT${g.vmid}`,
    status: g.status,
    cpu: m.cpu,
    cpus: m.cpus,
    mem: m.mem,
    maxmem: m.maxmem,
    swap: 0,
    maxswap: Number(g.config.swap ?? 0) * 2 ** 20,
    // Unlike qemu, PVE sees a running container's filesystem usage.
    disk: running ? g.metrics.disk ?? Math.floor(m.maxdisk * 0.12) : 0,
    maxdisk: m.maxdisk,
    netin: m.netin,
    netout: m.netout,
    diskread: 0,
    diskwrite: 0,
    uptime: m.uptime,
  };
  if (g.tags.length > 0) out.tags = g.tags.join(";");
  if (g.lock) out.lock = g.lock;
  if (g.config.template) out.template = 1;
  if (running) out.pid = g.pid;
  if (withHa) {
    out.ha = g.ha?.managed ? { managed: 1, state: g.ha.state } : { managed: 0 };
  }
  return out;
}

/** The keys of a netN property string. */
export interface NetConfig {
  name?: string;
  bridge?: string;
  hwaddr?: string;
  ip?: string;
  gw?: string;
  [key: string]: string | undefined;
}

const NET_KEYS = new Set([
  "name",
  "bridge",
  "hwaddr",
  "ip",
  "gw",
  "ip6",
  "gw6",
  "firewall",
  "link_down",
  "mtu",
  "rate",
  "tag",
  "trunks",
  "type",
  "host-managed",
]);

/** A parsed netN value, or why it does not parse. */
export type NetResult = { net: NetConfig; error?: undefined } | {
  net?: undefined;
  error: string;
};

/** Parses a netN value (a malformed one is PVE's 400 "invalid format"; texts inferred). */
export function parseNet(value: string): NetResult {
  const out: NetConfig = {};
  for (const part of value.split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) {
      return {
        error:
          "invalid format - value without key, but schema does not define a default key",
      };
    }
    const key = part.slice(0, eq);
    if (!NET_KEYS.has(key)) {
      return {
        error:
          `invalid format - property is not defined in schema and the schema does not allow additional properties (${key})`,
      };
    }
    out[key] = part.slice(eq + 1);
  }
  if (!out.name) {
    return {
      error:
        "invalid format - property is missing and it is not optional (name)",
    };
  }
  const ipOk = (ip: string | undefined, v6: boolean) =>
    ip === undefined || ip === "manual" || ip === "dhcp" ||
    (v6 && ip === "auto") ||
    (v6
      ? /^[0-9a-fA-F:]+\/\d{1,3}$/.test(ip)
      : /^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/.test(ip));
  if (!ipOk(out.ip, false)) {
    return {
      error: `invalid format - unable to parse ipv4 address/mask (${out.ip})`,
    };
  }
  if (!ipOk(out.ip6, true)) {
    return {
      error: `invalid format - unable to parse ipv6 address/mask (${out.ip6})`,
    };
  }
  return { net: out };
}

/** A netN string as PVE prints it: `name` first, the rest sorted, `type=veth` added, a MAC assigned. */
export function printNet(net: NetConfig): string {
  const full: NetConfig = { ...net, type: "veth" };
  full.hwaddr ??= randomMac();
  const rest = Object.keys(full).filter((k) =>
    k !== "name" && full[k] !== undefined
  )
    .sort();
  return [`name=${full.name}`, ...rest.map((k) => `${k}=${full[k]}`)].join(",");
}

/** What a config change asks for (the PUT config parameters). */
export interface CtChange {
  set: Record<string, string | number | boolean>;
  delete: string[];
  revert: string[];
}

/** The parts of a container a config change touches (to undo a failed change). */
function snapshot(g: GuestState) {
  return {
    name: g.name,
    tags: [...g.tags],
    lock: g.lock,
    config: { ...g.config },
    pending: { ...g.pending },
    pendingDelete: [...g.pendingDelete],
  };
}

/**
 * Applies a config change the way update_vm does, all or nothing: synchronous
 * refusals throw 500 (die), hotplug failures throw 400 with one error per option
 * (raise_param_exc) and leave the config unchanged.
 */
export function applyCtChange(
  g: GuestState,
  change: CtChange,
  resources: NodeResources,
): void {
  const before = snapshot(g);
  try {
    applyOrThrow(g, change, resources);
  } catch (err) {
    Object.assign(g, before);
    throw err;
  }
}

function applyOrThrow(
  g: GuestState,
  change: CtChange,
  resources: NodeResources,
): void {
  const running = g.status === "running";
  const protectedCt = Boolean(g.config.protection);
  for (const key of change.revert) {
    delete g.pending[key];
    g.pendingDelete = g.pendingDelete.filter((k) => k !== key);
  }
  const deletes: string[] = [];
  for (const key of change.delete) {
    const isSet = key in currentCtConfig(g) || key in g.pending;
    if (!isSet) continue; // PVE only warns: "cannot delete '<key>' - not set in current configuration!"
    if (REQUIRED.has(key)) {
      throw new ApiError(500, `unable to delete required option '${key}'`);
    }
    if (/^(mp|unused)\d+$/.test(key) && protectedCt) {
      throw new ApiError(
        500,
        `can't remove CT ${g.vmid} drive '${key}' - protection mode enabled`,
      );
    }
    if (key === "unprivileged") {
      throw new ApiError(500, `unable to delete read-only option: '${key}'`);
    }
    deletes.push(key);
  }
  const sets: [string, ConfigValue][] = [];
  for (const [key, raw] of Object.entries(change.set).sort()) {
    let value = ctValue(key, raw);
    if (key === "unprivileged") {
      throw new ApiError(500, `unable to modify read-only option: '${key}'`);
    }
    if (key === "rootfs" || /^mp\d+$/.test(key)) {
      if (protectedCt) {
        throw new ApiError(
          500,
          `can't update CT ${g.vmid} drive '${key}' - protection mode enabled`,
        );
      }
      value = checkMountpoint(g, String(value), resources);
    }
    if (/^net\d+$/.test(key)) {
      const { net, error } = parseNet(String(value));
      if (error !== undefined) throw paramError({ [key]: error });
      // parse_lxc_network gives an interface without hwaddr a new MAC, also one that replaces
      // an interface that had one (pve-container `PVE/LXC/Config.pm`, applied by
      // vmconfig_hotplug_pending and vmconfig_apply_pending).
      value = printNet(net);
    }
    sets.push([key, value]);
  }

  const errors: Record<string, string> = {};
  for (const key of deletes) {
    // vmconfig_hotplug_pending unplugs `^net(\d)$` only: net10 … net31 wait for the next start.
    const live = !running || FASTPLUG.has(key) || key === "swap" ||
      key === "cpulimit" || key === "cpuunits" ||
      /^(unused\d+|net\d)$/.test(key);
    if (live) deleteNow(g, key);
    else {
      delete g.pending[key];
      if (!g.pendingDelete.includes(key)) g.pendingDelete.push(key);
    }
  }
  for (const [key, value] of sets) {
    if (!running || FASTPLUG.has(key) || CGROUP_HOTPLUG.has(key)) {
      setNow(g, key, value);
      continue;
    }
    if (/^net\d+$/.test(key)) {
      const bridge = parseNet(String(value)).net?.bridge;
      if (bridge && !resources.activeBridge(g.node, bridge)) {
        // update_net → PVE::Network: the veth cannot be plugged.
        errors[key] =
          `unable to hotplug ${key}: bridge '${bridge}' does not exist`;
        continue;
      }
      setNow(g, key, value);
      continue;
    }
    if (/^(mp|dev)\d+$/.test(key) && g.config[key] === undefined) {
      setNow(g, key, value); // a new mount point or device is hotplugged
      continue;
    }
    g.pending[key] = value;
    g.pendingDelete = g.pendingDelete.filter((k) => k !== key);
  }
  if (Object.keys(errors).length > 0) throw paramError(errors);
}

/**
 * A rootfs/mpN value checked (storage must allow `rootdir`) and, for PVE's
 * allocation syntax `<storage>:<GiB>`, turned into the new volume.
 */
function checkMountpoint(
  g: GuestState,
  value: string,
  resources: NodeResources,
): string {
  const [volume] = value.split(",");
  if (volume.startsWith("/")) return value; // bind mount or device
  const m = /^([^:\s]+):(.+)$/.exec(volume);
  if (!m) throw new ApiError(500, `unable to parse volume ID '${volume}'`);
  const store = resources.config(m[1]);
  if (!store) throw new ApiError(500, `storage '${m[1]}' does not exist`);
  if (!store.content.includes("rootdir")) {
    throw new ApiError(
      500,
      `storage '${m[1]}' does not allow content type 'rootdir' (Container)`,
    );
  }
  const size = /^\d+(\.\d+)?$/.exec(m[2]);
  if (!size) {
    // update_pct_config's $rescan_volume: an existing volume gets the storage's size for it (a
    // volume it cannot size is only warned about).
    const bytes = resources.volumeBytes(g.node, volume);
    return bytes ? withDiskOption(value, "size", formatSize(bytes)) : value;
  }
  const here = resources.usable(g.node, m[1]);
  const name = resources.nextVolname(g.node, here, g.vmid);
  const rest = value.slice(volume.length);
  return withDiskOption(
    `${m[1]}:${name}${rest}`,
    "size",
    formatSize(Math.floor(Number(m[2]) * 2 ** 30)),
  );
}

function setNow(g: GuestState, key: string, value: ConfigValue): void {
  delete g.pending[key];
  g.pendingDelete = g.pendingDelete.filter((k) => k !== key);
  if (key === "hostname") g.name = String(value);
  else if (key === "tags") g.tags = parseTags(String(value));
  else if (key === "lock") g.lock = String(value);
  else {
    const old = g.config[key];
    g.config[key] = value;
    if (/^(rootfs|mp\d+)$/.test(key)) remountVolumes(g, old);
  }
}

/**
 * After a mount point changed (pve-container `PVE/LXC/Config.pm` vmconfig_apply_pending and
 * write_pct_config): the volume it held before is kept as unusedN unless still mounted, and an
 * unusedN naming a volume a mount point now uses is dropped.
 */
function remountVolumes(g: GuestState, old: ConfigValue | undefined): void {
  const mounted = new Set(
    Object.entries(g.config).filter(([k]) => /^(rootfs|mp\d+)$/.test(k))
      .map(([, v]) => String(v).split(",")[0]),
  );
  const was = old === undefined ? "" : String(old).split(",")[0];
  if (was && !was.startsWith("/") && !mounted.has(was)) {
    addUnused(g, was, diskBytes(String(old)));
  }
  for (const [k, v] of Object.entries(g.config)) {
    if (/^unused\d+$/.test(k) && mounted.has(String(v))) delete g.config[k];
  }
}

function deleteNow(g: GuestState, key: string): void {
  delete g.pending[key];
  g.pendingDelete = g.pendingDelete.filter((k) => k !== key);
  if (key === "hostname") g.name = "";
  else if (key === "tags") g.tags = [];
  else if (key === "lock") g.lock = undefined;
  else {
    const old = g.config[key];
    delete g.config[key];
    // A removed mount point's volume is kept as unusedN (add_unused_volume).
    if (/^mp\d+$/.test(key) && old !== undefined) {
      const volid = String(old).split(",")[0];
      if (!volid.startsWith("/")) addUnused(g, volid, diskBytes(String(old)));
    }
  }
}
