/**
 * PVE's named string formats: the schema names them (`format: "pve-vmid"`),
 * their rules live in Perl. Each check returns PVE's die text (with its
 * trailing newline), or undefined when the value passes.
 *
 * Sources: pve-common src/PVE/JSONSchema.pm (the pve_verify_* subs and
 * parse_id), pve-storage PVE/Storage.pm (parse_volume_id), qemu-server
 * src/PVE/QemuServer.pm (verify_volume_id_or_qm_path) and
 * src/PVE/QemuServer/Network.pm ($ipconfig_fmt).
 *
 * @module
 */

import type { PropSchema } from "./facts.ts";
import { FIREWALL_FORMATS } from "./fw_formats.ts";

/** A named format's check: PVE's message, or undefined when valid. */
type FormatCheck = (value: string) => string | undefined;

const IPV4_OCTET = "(?:25[0-5]|(?:[1-9]|1[0-9]|2[0-4])?[0-9])";
const IPV4 = `(?:${IPV4_OCTET}\\.){3}${IPV4_OCTET}`;
const H16 = "[0-9a-fA-F]{1,4}";
const LS32 = `(?:${H16}:${H16}|${IPV4})`;
/** pve-common's $IPV6RE (RFC 3986 IPv6address). */
const IPV6 = [
  `(?:(?:${H16}:){6}${LS32})`,
  `(?:::(?:${H16}:){5}${LS32})`,
  `(?:(?:${H16})?::(?:${H16}:){4}${LS32})`,
  `(?:(?:(?:${H16}:){0,1}${H16})?::(?:${H16}:){3}${LS32})`,
  `(?:(?:(?:${H16}:){0,2}${H16})?::(?:${H16}:){2}${LS32})`,
  `(?:(?:(?:${H16}:){0,3}${H16})?::${H16}:${LS32})`,
  `(?:(?:(?:${H16}:){0,4}${H16})?::${LS32})`,
  `(?:(?:(?:${H16}:){0,5}${H16})?::${H16})`,
  `(?:(?:(?:${H16}:){0,6}${H16})?::)`,
].join("|");
const DNS_LABEL = "[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?";

const whole = (re: string, flags = "") => new RegExp(`^(?:${re})$`, flags);
const IPV4_RE = whole(IPV4);
const IPV6_RE = whole(IPV6);
const DNS_RE = whole(`(${DNS_LABEL}\\.)*${DNS_LABEL}`);
const VOLUME_ID_RE = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$/i;

function test(re: RegExp, message: string): FormatCheck {
  return (value) => re.test(value) ? undefined : message;
}

/** pve-common parse_id: storage IDs and the like. */
function parseId(kind: string): FormatCheck {
  return (id) => {
    if (id.length < 2) {
      return `${kind} ID '${id}' cannot be shorter than 2 characters\n`;
    }
    if (!/^[a-z][a-z0-9\-_.]*[a-z0-9]$/i.test(id)) {
      return `${kind} ID '${id}' contains illegal characters\n`;
    }
    return undefined;
  };
}

function cidr(
  ip: RegExp,
  min: number,
  max: number,
  message: string,
): FormatCheck {
  return (value) => {
    const slash = value.lastIndexOf("/");
    const bits = Number(value.slice(slash + 1));
    return slash > 0 && ip.test(value.slice(0, slash)) &&
        /^\d+$/.test(value.slice(slash + 1)) && bits > min && bits <= max
      ? undefined
      : message;
  };
}

const cidrv4 = cidr(
  IPV4_RE,
  7,
  32,
  "value does not look like a valid IPv4 CIDR network\n",
);
const cidrv6 = cidr(
  IPV6_RE,
  7,
  128,
  "value does not look like a valid IPv6 CIDR network\n",
);

/** pve-common parse_size: `<number>[KMGT](iB)?`. */
export function parseSize(value: string): number | undefined {
  const m = /^(\d+(\.\d+)?)([KMGT](?:iB)?)?$/.exec(value);
  if (!m) return undefined;
  const shift = { K: 10, M: 20, G: 30, T: 40 }[m[3]?.[0] ?? ""] ?? 0;
  return Number(m[1]) * 2 ** shift;
}

function volumeId(value: string): string | undefined {
  // pve-storage PVE/Storage.pm parse_volume_id
  return VOLUME_ID_RE.test(value)
    ? undefined
    : `unable to parse volume ID '${value}'\n`;
}

const FORMATS: Record<string, FormatCheck> = {
  ...FIREWALL_FORMATS,
  "pve-node": test(
    whole(DNS_LABEL),
    "value does not look like a valid node name\n",
  ),
  "pve-vmid": test(
    /^[1-9][0-9]{2,8}$/,
    "value does not look like a valid VM ID\n",
  ),
  // pve-ha-manager src/PVE/HA/Tools.pm pve_verify_ha_resource_or_vm_id.
  "pve-ha-resource-or-vm-id": test(
    /^([a-z]+:\S+|\d+)$/,
    "value does not look like a valid ha resource id\n",
  ),
  // pve-ha-manager src/PVE/HA/Tools.pm pve_verify_ha_resource_id and pve_verify_ha_node.
  "pve-ha-resource-id": test(
    /^[a-z]+:\S+$/,
    "value does not look like a valid ha resource id\n",
  ),
  "pve-ha-node": test(
    /^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)(:\d+)?$/,
    "value does not look like a valid ha node\n",
  ),
  "pve-configid": (id) =>
    /^[a-z][a-z0-9_-]+$/i.test(id)
      ? undefined
      : `invalid configuration ID '${id}'\n`,
  "pve-storage-id": parseId("storage"),
  "pve-poolid": (id) =>
    // A guess at pve-access-control's verify_poolname (not looked up); the package sends no pool.
    /^[A-Za-z0-9_\-.]+(?:\/[A-Za-z0-9_\-.]+){0,2}$/.test(id)
      ? undefined
      : `invalid pool name '${id}'\n`,
  "pve-bridge-id": (id) =>
    /^[-_.\w\d]+$/.test(id) ? undefined : `invalid bridge ID '${id}'\n`,
  "pve-iface": (id) =>
    /^[a-z][a-z0-9_]{1,20}([:.]\d+)?$/i.test(id)
      ? undefined
      : `invalid network interface name '${id}'\n`,
  "dns-name": test(DNS_RE, "value does not look like a valid DNS name\n"),
  "disk-size": (size) =>
    parseSize(size) === undefined
      ? `value does not look like a valid disk size: ${size}\n`
      : undefined,
  urlencoded: (text) =>
    /^[-%a-zA-Z0-9_.!~*'()]*$/.test(text)
      ? undefined
      : `invalid urlencoded string: ${text}\n`,
  "mac-addr": test(
    /^[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$/i,
    "value does not look like a valid unicast MAC address\n",
  ),
  ipv4: test(IPV4_RE, "value does not look like a valid IPv4 address\n"),
  ipv6: test(IPV6_RE, "value does not look like a valid IPv6 address\n"),
  ip: (ip) =>
    IPV4_RE.test(ip) || IPV6_RE.test(ip)
      ? undefined
      : "value does not look like a valid IP address\n",
  CIDRv4: cidrv4,
  CIDRv6: cidrv6,
  CIDR: (value) =>
    cidrv4(value) === undefined || cidrv6(value) === undefined
      ? undefined
      : "value does not look like a valid CIDR network\n",
  "pve-ipv4-config": (value) =>
    /^(?:dhcp|manual)$/.test(value) || cidrv4(value) === undefined
      ? undefined
      : "value does not look like a valid ipv4 network configuration\n",
  "pve-ipv6-config": (value) =>
    /^(?:auto|dhcp|manual)$/.test(value) || cidrv6(value) === undefined
      ? undefined
      : "value does not look like a valid ipv6 network configuration\n",
  address: (addr) =>
    IPV4_RE.test(addr) || IPV6_RE.test(addr) || DNS_RE.test(addr)
      ? undefined
      : `value does not look like a valid address: ${addr}\n`,
  "pve-tag": test(
    /^[a-z0-9_][a-z0-9_\-+.]*$/i,
    "invalid characters in tag\n",
  ),
  "pve-startup-order": (value) =>
    value.split(",").every((p) =>
        /^\s*$/.test(p) || /^(order=)?\d+$/.test(p) || /^(up|down)=\d+$/.test(p)
      )
      ? undefined
      : "unable to parse startup options\n",
  "pve-volume-id": volumeId,
  "pve-volume-id-or-absolute-path": (v) =>
    v.startsWith("/") ? undefined : volumeId(v),
  "pve-volume-id-or-qm-path": (v) =>
    v === "none" || v === "cdrom" || v.startsWith("/")
      ? undefined
      : volumeId(v),
};

/** Hash formats PVE registers by name in its Perl (the schema names them, never spells them out). */
export const NAMED_HASH_FORMATS: Record<string, Record<string, PropSchema>> = {
  // qemu-server src/PVE/QemuServer/Network.pm $ipconfig_fmt
  "pve-qm-ipconfig": {
    ip: { type: "string", format: "pve-ipv4-config", optional: 1 },
    gw: { type: "string", format: "ipv4", optional: 1, requires: "ip" },
    ip6: { type: "string", format: "pve-ipv6-config", optional: 1 },
    gw6: { type: "string", format: "ipv6", optional: 1, requires: "ip6" },
  },
};

/** Format names seen without a check here: accepted, and reported by the conformance layer. */
export const uncheckedFormats = new Set<string>();

/** pve-common PVE::Tools::split_list: items separated by `,`, `;`, NUL or whitespace. */
export function splitList(text: string): string[] {
  return text.split(/[,;\0\s]+/).filter((item) => item !== "");
}

/**
 * Checks `value` against named format `format` (with the `-list`/`-opt`
 * suffixes of pve-common check_format). Returns PVE's message or undefined.
 * Hash formats are handled by the caller.
 */
export function checkNamedFormat(
  format: string,
  value: string,
): string | undefined {
  const [, name, suffix] = /^(.*?)(?:-(list|opt))?$/.exec(format)!;
  const check = FORMATS[name] ?? FORMATS[format];
  if (!check) {
    uncheckedFormats.add(format);
    return undefined;
  }
  if (FORMATS[format]) return check(value);
  if (suffix === "list") {
    for (const item of splitList(value)) {
      const error = check(item);
      if (error) return error;
    }
    return undefined;
  }
  if (suffix === "opt") return value === "" ? undefined : check(value);
  return check(value);
}
