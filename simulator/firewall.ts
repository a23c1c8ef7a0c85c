/**
 * A guest's firewall config (`/etc/pve/firewall/<vmid>.fw`) as PVE keeps it: options, aliases,
 * IP sets and rules, each written to the file and read back (pve-firewall `src/PVE/Firewall.pm`
 * save_vmfw_conf and generic_fw_config_parser), so what a GET shows is what the parser makes of
 * what the writer wrote — names lower-cased, rules re-verified, IP set entries sorted.
 *
 * The rule check is verify_rule's; digests are copy_opject_with_digest's and
 * copy_list_with_digest's (SHA-1 of `key:value\n` over the sorted keys), so they equal a real
 * node's for the same config.
 *
 * @module
 */

import { ApiError } from "./http.ts";
import {
  ALIAS_REF,
  checkProtocol,
  ICMP_TYPES,
  ICMPV6_TYPES,
  isIcmp,
  NAME_PATTERN,
  parseAddressList,
  parseIpOrCidr,
  parsePorts,
  preferredMacro,
  PROTOCOLS_WITH_PORTS,
} from "./schema/fw_formats.ts";

/** A value of the firewall config (ints for flags, strings otherwise). */
export type FwValue = string | number;
/** One rule, or one IP set entry, or one alias: field → value. */
export type FwEntry = Record<string, FwValue>;

/** One guest's firewall config. */
export interface GuestFirewall {
  /** `[OPTIONS]`: the vm options set (absent = PVE's default). */
  options: FwEntry;
  /** `[RULES]`, in order. */
  rules: FwEntry[];
  /** `[ALIASES]`, by lower-cased name: name, cidr, ipversion, comment. */
  aliases: Record<string, FwEntry>;
  /** `[IPSET name]` sections, by (lower-cased) name: entries cidr, nomatch, comment. */
  ipsets: Record<string, FwEntry[]>;
  /** IP set comments, by name. */
  ipsetComments: Record<string, string>;
}

/** An empty firewall config (no file). */
export function emptyFirewall(): GuestFirewall {
  return { options: {}, rules: [], aliases: {}, ipsets: {}, ipsetComments: {} };
}

/** Firewall.pm `$vm_option_properties`: the flags (stored 0/1) and the rest. */
export const VM_FLAG_OPTIONS = [
  "enable",
  "macfilter",
  "dhcp",
  "ndp",
  "radv",
  "ipfilter",
];
export const VM_OPTIONS = [
  ...VM_FLAG_OPTIONS,
  "policy_in",
  "policy_out",
  "log_level_in",
  "log_level_out",
];

/** The fields a rule is written with and read back (Firewall.pm `$format_rules`, parse_fw_rule). */
const RULE_FIELDS = [
  "source",
  "dest",
  "proto",
  "dport",
  "sport",
  "log",
  "icmp-type",
];
/** Firewall.pm `$rule_properties`: what a rule request may set or `delete`. */
export const RULE_PROPERTIES = [
  "pos",
  "digest",
  "type",
  "action",
  "macro",
  "iface",
  "source",
  "dest",
  "proto",
  "enable",
  "log",
  "sport",
  "dport",
  "comment",
  "icmp-type",
];

/** SHA-1 hex of `key:value\n` over each entry's sorted keys, in order. */
async function sha1(entries: FwEntry[]): Promise<string> {
  const text = entries.map((e) =>
    Object.keys(e).sort().map((k) => `${k}:${e[k]}\n`).join("")
  ).join("");
  const hash = await crypto.subtle.digest(
    "SHA-1",
    new TextEncoder().encode(text),
  );
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** Firewall.pm copy_opject_with_digest: the object with its `digest`, and the digest. */
export async function withDigest(
  object: FwEntry,
): Promise<{ data: FwEntry; digest: string }> {
  const digest = await sha1([object]);
  return { data: { ...object, digest }, digest };
}

/** Firewall.pm copy_list_with_digest: each entry with the list's `digest`, and the digest. */
export async function listWithDigest(
  list: FwEntry[],
): Promise<{ data: FwEntry[]; digest: string }> {
  const digest = await sha1(list);
  return { data: list.map((e) => ({ ...e, digest })), digest };
}

/** PVE::Tools::assert_if_modified: a given digest must be the current one. */
export function assertDigest(current: string, given: unknown): void {
  if (given !== undefined && given !== current) {
    throw new ApiError(
      500,
      "detected modified configuration - file changed by other user? Try again.",
    );
  }
}

/** raise_param_exc: PVE's 400 naming one parameter. */
export function paramError(field: string, message: string): ApiError {
  return new ApiError(400, "Parameter verification failed.", {
    [field]: message,
  });
}

/** Which rule types a guest's rules may have (Firewall.pm `$rule_env_direction_lookup`). */
const GUEST_TYPES = ["in", "out", "group"];

/**
 * Firewall.pm verify_rule for a guest's rule (`rule_env` `vm` or `ct`): the first error raised
 * as PVE raises it (a 400 naming the parameter), unless `noerr` (the parser's pass, which only
 * notes the IP version). Normalizes the macro name and sets `ipversion` where the rule's
 * protocol or addresses decide it. Not modelled: the macro's own fields (apply_macro's "already
 * define in macro"), cluster-level aliases and IP sets (the simulator has none).
 */
export function verifyRule(
  rule: FwEntry,
  fw: GuestFirewall,
  env: "vm" | "ct",
  noerr = false,
): void {
  const fail = (field: string, msg: string) => {
    if (!noerr) throw paramError(field, msg.replace(/\n$/, ""));
  };
  let ipversion: number | undefined;
  const setVersion = (v: number | undefined, field?: string) => {
    if (!v) return;
    if (ipversion && v !== ipversion) {
      const msg = "detected mixed ipv4/ipv6 addresses in rule";
      // Inside the address checks' eval it names the field; from an alias it is a plain die.
      if (field) return fail(field, msg);
      if (!noerr) throw new ApiError(500, msg);
    }
    ipversion = v;
  };
  const type = rule.type as string | undefined;
  const action = rule.action as string | undefined;
  if (!type) fail("type", "missing property");
  if (!action) fail("action", "missing property");
  if (type) {
    if (!GUEST_TYPES.includes(type)) {
      fail("type", `invalid rule type '${type}' for rule_env '${env}'`);
    }
    if (
      (type === "in" || type === "out") && action &&
      !/^(ACCEPT|DROP|REJECT)$/.test(action)
    ) {
      fail("action", `unknown action '${action}'`);
    }
    if (
      type === "group" && action &&
      !new RegExp(`^${NAME_PATTERN}$`).test(action)
    ) {
      fail("action", "invalid characters in security group name");
    }
  }
  const iface = rule.iface as string | undefined;
  if (iface && !/^net(\d+)$/.test(iface)) {
    fail("iface", "value does not match the regex pattern 'net\\d+'");
  }
  if (rule.macro) {
    const preferred = preferredMacro(String(rule.macro));
    if (preferred) rule.macro = preferred;
    else fail("macro", `unknown macro '${rule.macro}'`);
  }
  const proto = rule.proto as string | undefined;
  let icmp = false;
  if (proto) {
    const bad = checkProtocol(proto);
    if (bad) fail("proto", bad);
    if (proto === "icmp") setVersion(4);
    if (proto === "icmpv6" || proto === "ipv6-icmp") setVersion(6);
    icmp = isIcmp(proto);
  }
  const ports = (field: "dport" | "sport") => {
    const value = rule[field];
    if (!value) return;
    try {
      parsePorts(String(value), field === "dport" && icmp);
    } catch (err) {
      fail(field, String(err));
    }
    if (!proto) {
      fail("proto", `missing property - '${field}' requires this property`);
    } else if (
      !PROTOCOLS_WITH_PORTS.has(proto) && (field === "sport" || !icmp)
    ) {
      fail(field, `protocol '${proto}' does not support ports`);
    }
  };
  ports("dport");
  const icmpType = rule["icmp-type"] as string | undefined;
  if (icmpType) {
    if (!icmp) {
      fail("proto", "missing property - 'icmp-type' requires this property");
    }
    if (rule.dport) {
      fail(
        "icmp-type",
        "'icmp-type' cannot be specified together with 'dport'",
      );
    }
    if (proto === "icmp" && !ICMP_TYPES.has(icmpType)) {
      fail("icmp-type", `invalid icmp-type '${icmpType}' for proto 'icmp'`);
    } else if (
      (proto === "icmpv6" || proto === "ipv6-icmp") &&
      !ICMPV6_TYPES.has(icmpType)
    ) {
      fail("icmp-type", `invalid icmp-type '${icmpType}' for proto '${proto}'`);
    }
  }
  ports("sport");
  for (const field of ["source", "dest"]) {
    const value = rule[field] as string | undefined;
    if (!value) continue;
    try {
      setVersion(parseAddressList(value), field);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      fail(field, String(err));
    }
    setVersion(referenceVersion(field, value, fw, fail));
  }
  if (ipversion) rule.ipversion = ipversion;
}

/**
 * verify_rule's `$check_ipset_or_alias_property`: a `+set` must exist, an alias too; an alias
 * lends the rule its IP version.
 */
function referenceVersion(
  field: string,
  value: string,
  fw: GuestFirewall,
  fail: (field: string, msg: string) => void,
): number | undefined {
  if (value.startsWith("+")) {
    const m = new RegExp(`^\\+(guest/|dc/|sdn/)?(${NAME_PATTERN})$`).exec(
      value,
    );
    if (!m) fail(field, `invalid ipset name '${value}'`);
    else if (!fw.ipsets[m[2]]) fail(field, `no such ipset '${m[2]}'`);
    return undefined;
  }
  const m = ALIAS_REF.exec(value);
  if (!m) return undefined;
  const alias = fw.aliases[m[2].toLowerCase()];
  if (!alias) fail(field, `no such alias '${value}'`);
  return m[1] === "dc/" ? undefined : alias?.ipversion as number | undefined;
}

/**
 * A rule as save_vmfw_conf writes it and parse_fw_rule reads it back: `enable` 0 only when given
 * and false, the type in lower case, only the fields the line holds (a group rule keeps only its
 * interface), its comment as the parser reads it back, then verified again (without raising) for `ipversion`.
 */
function reread(rule: FwEntry, fw: GuestFirewall, env: "vm" | "ct"): FwEntry {
  const out: FwEntry = {
    type: String(rule.type).toLowerCase(),
    action: rule.action,
    enable: rule.enable !== undefined && !Number(rule.enable) ? 0 : 1,
  };
  if (rule.macro && out.type !== "group") out.macro = rule.macro;
  if (rule.iface) out.iface = rule.iface;
  if (out.type !== "group") {
    for (const k of RULE_FIELDS) if (rule[k]) out[k] = rule[k];
  }
  const comment = rereadComment(rule.comment, false, true);
  if (comment !== undefined) out.comment = comment;
  verifyRule(out, fw, env, true);
  return out;
}

/** Perl's `\s` on a decoded string: Unicode White_Space. */
const PERL_BLANK =
  /^[\t-\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;

/**
 * A comment as save_vmfw_conf writes it and the parser reads it back: written when Perl-true and,
 * but for an IP set's (`header`), not blank (`$format_rules`, `$format_aliases`,
 * `$format_ipsets`); read from the file's bytes (generic_fw_config_parser, parse_alias,
 * parse_fw_rule): the line's trailing `\h` (space, tab, byte 0xA0 — `à` is C3 A0 and reads back
 * as U+FFFD), then `#\s*(.*?)\s*$` (ASCII white space), decoded; a false `0` is dropped but by
 * parse_fw_rule (`rule`).
 */
export function rereadComment(
  c: unknown,
  header = false,
  rule = false,
): string | undefined {
  const text = c === undefined || c === null ? "" : String(c);
  if (!text || text === "0" || (!header && PERL_BLANK.test(text))) return;
  const b = new TextEncoder().encode(text);
  const ascii = (x: number) => x === 0x20 || (x >= 0x09 && x <= 0x0d);
  let end = b.length;
  while (end > 0 && [0x20, 0x09, 0xa0].includes(b[end - 1])) end--;
  while (end > 0 && ascii(b[end - 1])) end--;
  let start = 0;
  while (start < end && ascii(b[start])) start++;
  const read = new TextDecoder().decode(b.subarray(start, end));
  return read && (rule || read !== "0") ? read : undefined;
}

/** An IP set entry or alias cidr as the parser reads it: a host's `/32`, `/128` dropped. */
function rereadCidr(cidr: string): string {
  return ALIAS_REF.test(cidr) ? cidr : parseIpOrCidr(cidr).cidr;
}

/**
 * The config after save_vmfw_conf and load_vmfw_conf: aliases keyed by lower-cased name (with
 * their IP version), IP set names lower-cased (a later section of the same name replaces an
 * earlier one), entries sorted by cidr without duplicates, rules re-read.
 */
export function persist(fw: GuestFirewall, env: "vm" | "ct"): GuestFirewall {
  const out = emptyFirewall();
  for (const [k, v] of Object.entries(fw.options)) {
    out.options[k] = VM_FLAG_OPTIONS.includes(k) ? (Number(v) ? 1 : 0) : v;
  }
  for (const key of Object.keys(fw.aliases).sort()) {
    const a = fw.aliases[key];
    const { cidr, v } = parseIpOrCidr(String(a.cidr));
    const entry: FwEntry = { name: a.name, cidr, ipversion: v };
    const comment = rereadComment(a.comment);
    if (comment !== undefined) entry.comment = comment;
    out.aliases[String(a.name).toLowerCase()] = entry;
  }
  for (const name of Object.keys(fw.ipsets).sort()) {
    const lc = name.toLowerCase();
    const byCidr = new Map<string, FwEntry>();
    for (const e of fw.ipsets[name]) {
      if (!byCidr.has(String(e.cidr))) byCidr.set(String(e.cidr), e);
    }
    out.ipsets[lc] = [...byCidr.keys()].sort().map((cidr) => {
      const e = byCidr.get(cidr)!;
      const entry: FwEntry = { cidr: rereadCidr(cidr) };
      if (e.nomatch) entry.nomatch = 1;
      const comment = rereadComment(e.comment);
      if (comment !== undefined) entry.comment = comment;
      return entry;
    });
    // The parser notes a section's comment only when it has one.
    const comment = rereadComment(fw.ipsetComments[name], true);
    if (comment !== undefined) out.ipsetComments[lc] = comment;
  }
  out.rules = fw.rules.map((r) => reread(r, out, env));
  return out;
}
