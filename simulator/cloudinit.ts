/**
 * Cloud-init as qemu-server generates it (PVE/QemuServer/Cloudinit.pm): the user-data, network and
 * meta-data a VM's cloud-init drive carries, computed from the config exactly as
 * `dump_cloudinit_config` does, and which cloud-init properties changed since the drive was last
 * generated (`GET …/cloudinit`).
 *
 * @module
 */

import { currentConfig } from "./config.ts";
import type { ConfigValue, GuestState } from "./types.ts";

/** `$cloudinitoptions` of PVE/API2/Qemu.pm: the options `GET …/cloudinit` lists by value. */
export const CLOUDINIT_OPTIONS = [
  "cicustom",
  "cipassword",
  "citype",
  "ciuser",
  "ciupgrade",
  "nameserver",
  "searchdomain",
  "sshkeys",
];

/** `cloudinit_pending_properties` (PVE/QemuServer.pm): the options whose change the drive must follow. */
export function isCloudinitProperty(key: string): boolean {
  return CLOUDINIT_OPTIONS.includes(key) || key === "name" ||
    /^(ipconfig|net)\d+$/.test(key);
}

/** `drive_is_cloudinit` (PVE/QemuServer/Drive.pm): the disk key of the VM's cloud-init drive. */
export function cloudinitDrive(g: GuestState): string | undefined {
  return Object.entries(g.config).find(([k, v]) =>
    /^(ide|sata|scsi)\d+$/.test(k) &&
    /[:/](vm-\d+-)?cloudinit(\.(raw|qcow2|vmdk))?$/.test(
      String(v).split(",")[0],
    )
  )?.[0];
}

/** The cloud-init properties as the drive was last generated from (kept on the guest). */
export function cloudinitSnapshot(g: GuestState): Record<string, ConfigValue> {
  return Object.fromEntries(
    Object.entries(currentConfig(g)).filter(([k]) => isCloudinitProperty(k)),
  );
}

/**
 * Regenerates the drive (`apply_cloudinit_config`): nothing is pending against it any more.
 * Returns whether the VM has a drive to regenerate.
 */
export function regenerate(g: GuestState): boolean {
  if (!cloudinitDrive(g)) return false;
  g.cloudinitGenerated = cloudinitSnapshot(g);
  return true;
}

/** `PVE::Tools::encrypt_pw`-like: PVE stores cipassword as a crypt(3) SHA-256 hash. */
export function hashedPassword(clear: string): string {
  if (/^\$(5|6|y)\$/.test(clear)) return clear; // already a hash: stored as given
  let h = 0;
  for (const c of clear) h = (h * 31 + c.codePointAt(0)!) >>> 0;
  return `$5$sim$${h.toString(36).padStart(8, "0")}`;
}

/** `GET …/cloudinit` (PVE/API2/Qemu.pm `cloudinit_pending`), cipassword masked. */
export function cloudinitPendingRows(g: GuestState): Record<string, unknown>[] {
  const conf = currentConfig(g);
  const before = g.cloudinitGenerated ?? cloudinitSnapshot(g);
  const mask = (k: string, v: unknown) => k === "cipassword" ? "**********" : v;
  const rows: Record<string, unknown>[] = [];
  const added = Object.keys(conf).filter((k) =>
    isCloudinitProperty(k) && !(k in before)
  );
  for (const key of added) rows.push({ key, pending: mask(key, conf[key]) });
  // As PVE: only $cloudinitoptions are listed by value; a changed ipconfigN/netN/name shows only
  // when it was added or removed.
  for (const key of CLOUDINIT_OPTIONS) {
    if (!conf[key] || added.includes(key)) continue;
    const row: Record<string, unknown> = { key };
    if (key in before && String(before[key]) !== String(conf[key])) {
      row.value = mask(key, before[key]);
      row.pending = mask(key, conf[key]);
    } else row.value = mask(key, conf[key]);
    rows.push(row);
  }
  for (const key of Object.keys(before)) {
    if (!conf[key]) rows.push({ key, delete: 1 });
  }
  return rows;
}

/** `get_cloudinit_format`: citype, else configdrive2 for Windows, else nocloud. */
function format(conf: Record<string, ConfigValue>): string {
  if (conf.citype !== undefined) return String(conf.citype);
  if (
    /^(wxp|w2k|w2k3|w2k8|wvista|win7|win8|win10|win11)$/.test(
      String(conf.ostype ?? ""),
    )
  ) {
    return "configdrive2";
  }
  return "nocloud";
}

/**
 * The simulated node's /etc/resolv.conf, used when the VM sets no nameserver/searchdomain
 * (`get_dns_conf`). A guess: any node has one; this is the simulator's.
 */
const HOST_RESOLV = { search: "pve.lan", dns: ["10.0.0.1"] };

function dnsConf(conf: Record<string, ConfigValue>): [string[], string[]] {
  const search = String(conf.searchdomain ?? HOST_RESOLV.search).split(/\s+/)
    .filter((s) => s !== "");
  const dns = conf.nameserver === undefined
    ? HOST_RESOLV.dns
    : String(conf.nameserver).split(/\s+/).filter((s) => s !== "");
  return [search, dns];
}

/** `cloudinit_userdata`. */
export function userData(g: GuestState, maskPassword = false): string {
  const conf = currentConfig(g);
  let hostname = String(conf.name ?? `VM${g.vmid}`);
  let fqdn = hostname;
  if (hostname.includes(".")) hostname = hostname.replace(/\..*$/, "");
  else if (conf.searchdomain) fqdn = `${hostname}.${conf.searchdomain}`;
  let out =
    `#cloud-config\nhostname: ${hostname}\nmanage_etc_hosts: true\nfqdn: ${fqdn}\n`;
  const user = conf.ciuser === undefined ? undefined : String(conf.ciuser);
  if (user !== undefined) out += `user: ${user}\n`;
  if (user === "root") out += "disable_root: False\n";
  if (conf.cipassword !== undefined) {
    out += `password: ${maskPassword ? "**********" : conf.cipassword}\n`;
  }
  if (conf.sshkeys !== undefined) {
    const keys = decodeURIComponent(String(conf.sshkeys)).split("\n")
      .filter((k) => /\S/.test(k));
    out += "ssh_authorized_keys:\n";
    for (const k of keys) out += `  - ${k}\n`;
  }
  out += "chpasswd:\n  expire: False\n";
  if (user !== "root") out += "users:\n  - default\n";
  if (conf.ciupgrade === undefined || Number(conf.ciupgrade)) {
    out += "package_upgrade: true\n";
  }
  return out;
}

/** `ipconfigN` as `parse_ipconfig` reads it. */
function ipconfig(text: string): Record<string, string> {
  return Object.fromEntries(
    text.split(",").map((p) => p.split("=", 2)).filter((kv) => kv.length === 2),
  );
}

/** `$PVE::Network::ipv4_reverse_mask`: prefix length → dotted netmask. */
function netmask(prefix: number): string {
  const bits = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  return [24, 16, 8, 0].map((s) => (bits >>> s) & 255).join(".");
}

function nets(
  conf: Record<string, ConfigValue>,
): [string, Record<string, string>, string][] {
  return Object.keys(conf).filter((k) => /^net\d+$/.test(k)).sort()
    .map((k) => k.slice(3))
    .filter((id) => conf[`ipconfig${id}`])
    .map((id) => {
      const mac = /=([0-9A-Fa-f:]{17})/.exec(String(conf[`net${id}`]))?.[1] ??
        "";
      return [id, ipconfig(String(conf[`ipconfig${id}`])), mac.toLowerCase()];
    });
}

/** `nocloud_network` (network-config v1). */
function nocloudNetwork(conf: Record<string, ConfigValue>): string {
  let out = "version: 1\nconfig:\n";
  const i = "    ";
  for (const [id, ip, mac] of nets(conf)) {
    out +=
      `${i}- type: physical\n${i}  name: eth${id}\n${i}  mac_address: '${mac}'\n${i}  subnets:\n`;
    const j = `${i}  `;
    if (ip.ip === "dhcp") out += `${j}- type: dhcp4\n`;
    else if (ip.ip) {
      const [addr, prefix] = ip.ip.split("/");
      out += `${j}- type: static\n${j}  address: '${addr}'\n${j}  netmask: '${
        netmask(Number(prefix))
      }'\n`;
      if (ip.gw) out += `${j}  gateway: '${ip.gw}'\n`;
    }
    if (ip.ip6 === "dhcp") out += `${j}- type: dhcp6\n`;
    else if (ip.ip6 === "auto") out += `${j}- type: ipv6_slaac\n`;
    else if (ip.ip6) {
      out += `${j}- type: static6\n${j}  address: '${ip.ip6}'\n`;
      if (ip.gw6) out += `${j}  gateway: '${ip.gw6}'\n`;
    }
  }
  const [search, dns] = dnsConf(conf);
  out += `${i}- type: nameserver\n`;
  if (dns.length > 0) {
    out += `${i}  address:\n` + dns.map((d) => `${i}  - '${d}'\n`).join("");
  }
  if (search.length > 0) {
    out += `${i}  search:\n` + search.map((d) => `${i}  - '${d}'\n`).join("");
  }
  return out;
}

/** `configdrive2_network` (Debian interfaces format). */
function configdrive2Network(conf: Record<string, ConfigValue>): string {
  let out = "auto lo\niface lo inet loopback\n\n";
  const [search, dns] = dnsConf(conf);
  if (dns.length > 0) out += `        dns_nameservers ${dns.join(" ")}\n`;
  if (search.length > 0) out += `        dns_search ${search.join(" ")}\n`;
  for (const [id, ip] of nets(conf)) {
    out += `auto eth${id}\n`;
    if (ip.ip === "dhcp") out += `iface eth${id} inet dhcp\n`;
    else if (ip.ip) {
      const [addr, prefix] = ip.ip.split("/");
      out +=
        `iface eth${id} inet static\n        address ${addr}\n        netmask ${
          netmask(Number(prefix))
        }\n`;
      if (ip.gw) out += `        gateway ${ip.gw}\n`;
    }
    if (ip.ip6 === "auto" || ip.ip6 === "dhcp") {
      out += `iface eth${id} inet6 ${ip.ip6}\n`;
    } else if (ip.ip6) {
      const [addr, mask] = ip.ip6.split("/");
      out +=
        `iface eth${id} inet6 static\n        address ${addr}\n        netmask ${mask}\n`;
      if (ip.gw6) out += `        gateway ${ip.gw6}\n`;
    }
  }
  return out;
}

/** The network config in the VM's format (`dump_cloudinit_config` type=network). */
export function networkData(g: GuestState): string {
  const conf = currentConfig(g);
  return format(conf) === "nocloud"
    ? nocloudNetwork(conf)
    : configdrive2Network(conf);
}

async function sha1Hex(text: string): Promise<string> {
  const hash = await crypto.subtle.digest(
    "SHA-1",
    new TextEncoder().encode(text),
  );
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** `dump_cloudinit_config` type=meta: an id derived from user-data and network (never masked). */
export async function metaData(g: GuestState): Promise<string> {
  const uuid = await sha1Hex(userData(g) + networkData(g));
  return format(currentConfig(g)) === "nocloud"
    ? `instance-id: ${uuid}\n`
    : `{\n     "uuid": "${uuid}",\n     "network_config": { "content_path": "/content/0000" }\n}\n`;
}
