/**
 * firewallOptions, firewallRules, firewallIpset and firewallAlias, both models: a guest's firewall
 * options set and read back, its whole ordered rule set, one IP set or one alias declared and made
 * so. The core applies the same argument rules (src/methods/firewall_options.rs, firewall_rules.rs,
 * firewall_ipset.rs, firewall_alias.rs); tests/properties/argument_agreement_test.ts proves they
 * agree.
 *
 * @module
 */
import { z } from "npm:zod@4";
import { type MethodContext, type ModelName, runOnCore } from "./core.ts";
import { field, guestRef, requireGuest } from "./schemas.ts";

const LOG_LEVELS = [
  "emerg",
  "alert",
  "crit",
  "err",
  "warning",
  "notice",
  "info",
  "debug",
  "nolog",
] as const;
const optionalPolicy = z.enum(["ACCEPT", "REJECT", "DROP"]).optional();
const optionalLogLevel = z.enum(LOG_LEVELS).optional();
const FLAGS = ["enable", "ipfilter", "macfilter", "dhcp", "ndp", "radv"];
const CHOICES = ["policyIn", "policyOut", "logLevelIn", "logLevelOut"];

const OptionsArgs = z.object({
  ...guestRef,
  enable: field.optionalBoolean,
  policyIn: optionalPolicy,
  policyOut: optionalPolicy,
  logLevelIn: optionalLogLevel,
  logLevelOut: optionalLogLevel,
  ipfilter: field.optionalBoolean,
  macfilter: field.optionalBoolean,
  dhcp: field.optionalBoolean,
  ndp: field.optionalBoolean,
  radv: field.optionalBoolean,
}).check(
  requireGuest,
  z.refine(
    (a) =>
      [...FLAGS, ...CHOICES].some((k) =>
        (a as Record<string, unknown>)[k] !== undefined
      ),
    { message: "give at least one option", path: ["enable"] },
  ),
);

/** A line: no newline, carriage return or NUL, not empty. */
const line = field.string.regex(/^[^\n\r\0]+$/, "must be one line, not empty");
/** Only white space (Rust's char::is_whitespace: PVE writes no such comment). */
const BLANK =
  /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;
/**
 * A comment PVE reads back as given (the core's kept_comment): not blank, not `-` or `0` once
 * trimmed of ASCII white space (PVE's parser on the file's bytes), and not ending in a character
 * whose UTF-8 ends in byte 0xA0 (`à`, a no-break space), which the parser's `\h` cuts.
 */
function keptComment(c: string): boolean {
  const kept = c.replace(/^[\t-\r ]+|[\t-\r ]+$/g, "");
  const last = [...kept].pop()?.codePointAt(0) ?? 0;
  return !BLANK.test(c) && kept !== "-" && kept !== "0" &&
    !(last >= 0x80 && (last & 0x3f) === 0x20);
}
/** One word without spaces, at most 512 characters. */
const word = field.string.regex(/^\S{1,512}$/, "must be one word, at most 512");
const optionalWord = word.optional();

/** pve-firewall's $PROTOCOLS_WITH_PORTS and $proto_is_icmp. */
const PORT_PROTOCOLS = [
  "tcp",
  "6",
  "udp",
  "17",
  "udplite",
  "136",
  "dccp",
  "33",
  "sctp",
  "132",
];
const ICMP_PROTOCOLS = ["icmp", "icmpv6", "ipv6-icmp"];
/** What PVE writes of a group rule ($format_rules drops the rest). */
const GROUP_FIELDS = ["type", "action", "enable", "iface", "comment"];

/** Ports 0…65535, ranges a:b with a ≤ b, service names; at most 15 ports (a range counts two). */
function isPortList(text: string): boolean {
  const port = (p: string) =>
    (/^[0-9]+$/.test(p) && Number(p) <= 65535) ||
    /^[A-Za-z][A-Za-z0-9\-_]*$/.test(p);
  let count = 0;
  const ok = text.split(",").every((item) => {
    const range = item.split(":");
    if (range.length === 1) {
      count += 1;
      return port(item);
    }
    count += 2;
    const [a, b] = range;
    const numbers = /^[0-9]+$/.test(a) && /^[0-9]+$/.test(b);
    return range.length === 2 && port(a) && port(b) &&
      !(numbers && Number(a) > Number(b));
  });
  return ok && count <= 15;
}

/** zod's address checks, built on the first check of an address (the import needs none). */
let addressFormats: { v4: z.ZodIPv4; v6: z.ZodIPv6 } | undefined;

/**
 * An IP address's version (4 or 6; 0 for none), by zod's address checks. They agree with
 * node:net's isIP except that an IPv6 zone (`%eth0`) is no address (nor to the core, nor to PVE's
 * $IPV6RE); importing node:net cost 32 ms of every cold start (issue 32).
 */
function ipVersion(text: string): 0 | 4 | 6 {
  addressFormats ??= { v4: z.ipv4(), v6: z.ipv6() };
  if (addressFormats.v4.safeParse(text).success) return 4;
  return addressFormats.v6.safeParse(text).success ? 6 : 0;
}

/** An IP address as a number (IPv4 in the low 32 bits), or undefined. */
function ipValue(text: string): bigint | undefined {
  const version = ipVersion(text);
  if (version === 4) {
    return text.split(".").reduce((n, o) => (n << 8n) + BigInt(o), 0n);
  }
  // A zone (`%eth0`) is no address to PVE's $IPV6RE, nor to Rust; a trailing IPv4 is two groups.
  if (version !== 6 || text.includes("%")) return undefined;
  const v4 = /[0-9.]+$/.exec(text);
  if (v4?.[0].includes(".")) {
    const n = ipValue(v4[0]);
    if (n === undefined) return undefined;
    const hex = (g: bigint) => g.toString(16);
    text = `${text.slice(0, v4.index)}${hex(n >> 16n)}:${hex(n & 0xffffn)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, ""];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = [
    ...left,
    ...Array(8 - left.length - right.length).fill("0"),
    ...right,
  ];
  return groups.reduce((n, g) => (n << 16n) + BigInt(`0x${g}`), 0n);
}

/**
 * An IP or CIDR as pve-firewall's `IPorCIDR` reads it (pve_verify_ip_or_cidr): its version,
 * prefix (the full length when none is given), value and whether the host bits are clear.
 */
function cidrOf(
  item: string,
):
  | { version: number; bits: number; value: bigint; clear: boolean }
  | undefined {
  const [ip, bits, extra] = item.split("/");
  const version = ipVersion(ip);
  const max = version === 4 ? 32 : 128;
  const value = ipValue(ip);
  if (version === 0 || extra !== undefined || value === undefined) return;
  if (bits !== undefined && (!/^[0-9]+$/.test(bits) || Number(bits) > max)) {
    return;
  }
  const length = bits === undefined ? max : Number(bits);
  const mask = (1n << BigInt(max - length)) - 1n;
  return { version, bits: length, value, clear: (value & mask) === 0n };
}

/**
 * An address list as pve-firewall parses it (parse_address_list): an IP set (`+name`) or alias
 * alone, or IPs, CIDRs with the host bits clear and ranges of one IP version (as the core checks).
 */
function isAddressList(text: string): boolean {
  if (/^\+/.test(text) || (/^[A-Za-z]/.test(text) && !text.includes(":"))) {
    return !text.includes(",");
  }
  // "you can't use a range in a list"
  if (text.includes(",") && text.includes("-")) return false;
  const versions = text.split(",").map((item) => {
    const range = item.split("-");
    if (range.length === 2) {
      const [a, b] = range.map((r) => ipVersion(r));
      return a !== 0 && a === b ? a : 0;
    }
    const c = cidrOf(item);
    return c?.clear ? c.version : 0;
  });
  return versions.every((v) => v !== 0 && v === versions[0]);
}

/** An address list (a rule's `source`, `dest`), one word. */
const optionalAddresses = field.string.refine(isAddressList, {
  message:
    "must be an IP set (+name), an alias, or IPs, CIDRs with the host bits clear and ranges of one IP version",
}).pipe(word).optional();

/** One rule, checked as pve-firewall's verify_rule would. */
const Rule = z.object({
  type: z.enum(["in", "out", "group"]),
  /** ACCEPT, DROP or REJECT; for a group rule, the security group's name. */
  action: line,
  enable: field.trueByDefault,
  source: optionalAddresses,
  dest: optionalAddresses,
  proto: optionalWord,
  dport: optionalWord,
  sport: optionalWord,
  iface: field.string.regex(
    /^net([0-9]|[12][0-9]|3[01])$/,
    "iface must be net0 … net31",
  ).optional(),
  macro: optionalWord,
  log: optionalLogLevel,
  comment: line.optional(),
  icmpType: optionalWord,
}).check(
  z.refine(
    (r) =>
      r.type === "group"
        ? /^[A-Za-z][A-Za-z0-9\-_]{1,19}$/.test(r.action)
        : ["ACCEPT", "DROP", "REJECT"].includes(r.action),
    {
      message: "action must be ACCEPT, DROP or REJECT (a group's name)",
    },
  ),
  z.refine((r) =>
    r.type !== "group" ||
    Object.keys(r).every((k) =>
      GROUP_FIELDS.includes(k) ||
      (r as Record<string, unknown>)[k] === undefined
    ), {
    message: "a group rule keeps only its group, iface, comment and enable",
  }),
  z.refine((r) => !/[A-Z]/.test(r.proto ?? ""), {
    message: "proto must be lower case",
  }),
  z.refine((r) =>
    (r.dport === undefined && r.sport === undefined) ||
    PORT_PROTOCOLS.includes(r.proto ?? "") ||
    (ICMP_PROTOCOLS.includes(r.proto ?? "") && r.sport === undefined), {
    message: "proto must take ports when a port is given",
  }),
  z.refine(
    (r) => r.icmpType === undefined || ICMP_PROTOCOLS.includes(r.proto ?? ""),
    { message: "proto must be icmp or icmpv6 with icmpType" },
  ),
  z.refine((r) =>
    ICMP_PROTOCOLS.includes(r.proto ?? "") ||
    [r.dport, r.sport].every((p) => p === undefined || isPortList(p)), {
    message: "ports must be 0…65535, ranges a:b with a ≤ b, at most 15",
  }),
  z.refine((r) => keptComment(r.comment ?? "x"), {
    message: "comment must hold text PVE keeps as given",
  }),
);

const RulesArgs = z.object({
  ...guestRef,
  /** The whole ordered list: PVE's is made equal to it (an empty list removes every rule). */
  rules: z.array(Rule),
}).check(requireGuest);

/** An IP set or alias name: pve-firewall's `ipset-name`, `pve-fw-alias` (2 to 64). */
const fwName = field.string.regex(
  /^[A-Za-z][A-Za-z0-9\-_]{1,63}$/,
  "must be a letter, then letters, digits, - or _ (2 to 64 characters)",
);
/** A comment PVE keeps as given: one line with text (every comment field is optional). */
const optionalComment = line.refine(keptComment, {
  message: "comment must hold text PVE keeps as given",
}).optional();
/** Nothing but the name with `delete: true`; `what` is required without it. */
const declaredOrDeleted =
  (what: string) => (a: Record<string, unknown>, ctx: z.RefinementCtx) => {
    for (const key of [what, "comment"]) {
      if (a.delete === true && a[key] !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: "must not be given with delete: true",
        });
      }
    }
    if (a.delete !== true && a[what] === undefined) {
      ctx.addIssue({ code: "custom", path: [what], message: "is required" });
    }
  };

/** An alias an IP set entry names (pve-firewall `(dc/|guest/)?$ip_alias_pattern`), kept as written. */
const ALIAS_REF = /^(dc\/|guest\/)?[A-Za-z][A-Za-z0-9\-_]{1,63}$/;

/** One IP set entry: an address or network (host bits clear, no zero prefix), or an alias. */
const IpsetEntry = z.object({
  cidr: line.refine((c) => {
    if (ALIAS_REF.test(c)) return true;
    const parsed = cidrOf(c);
    return parsed !== undefined && parsed.clear && parsed.bits > 0;
  }, {
    message:
      "cidr must be an IP or CIDR network with the host bits clear, not a zero prefix, or an alias ([dc/|guest/]name)",
  }),
  nomatch: field.optionalBoolean,
  comment: optionalComment,
});

/** An entry as PVE compares it: an address with its prefix, an alias by name without case. */
const entryKey = (cidr: string) => {
  if (ALIAS_REF.test(cidr)) return cidr.toLowerCase();
  const c = cidrOf(cidr);
  return `${c?.version}/${c?.value}/${c?.bits}`;
};

const IpsetArgs = z.object({
  ...guestRef,
  /** PVE keeps IP set names lower-cased: `Web` is the set `web`. */
  name: fwName,
  comment: optionalComment,
  /** Every entry of the set: PVE's is made equal to it. */
  cidrs: z.array(IpsetEntry).refine(
    (list) => new Set(list.map((e) => entryKey(e.cidr))).size === list.length,
    { message: "an address is declared twice" },
  ).optional(),
  /** Remove the set and its entries. */
  delete: field.optionalBoolean,
}).check(requireGuest, z.superRefine(declaredOrDeleted("cidrs")));

const AliasArgs = z.object({
  ...guestRef,
  name: fwName,
  /** The address or network the alias names (PVE keeps host bits as given). */
  cidr: line.refine((c) => cidrOf(c) !== undefined, {
    message: "cidr must be an IPv4 or IPv6 address or CIDR network",
  }).optional(),
  comment: optionalComment,
  /** Remove the alias. */
  delete: field.optionalBoolean,
}).check(requireGuest, z.superRefine(declaredOrDeleted("cidr")));

/** The firewall methods of `model`. */
export function firewallMethods(model: ModelName) {
  return {
    firewallOptions: {
      description:
        "Set the guest's firewall options given (enable, policyIn/policyOut, logLevelIn/logLevelOut, ipfilter, macfilter, dhcp, ndp, radv); only those that differ are sent; succeeds when each reads back as given. The summary says whether the firewall is in effect (the guest's enable, the cluster's firewall, firewall=1 on each NIC)",
      kind: "action" as const,
      arguments: OptionsArgs,
      execute: (args: z.infer<typeof OptionsArgs>, ctx: MethodContext) =>
        runOnCore(model, "firewallOptions", args, ctx),
    },
    firewallRules: {
      description:
        "Declare the guest's whole ordered firewall rule set: rules already as declared are kept, others updated in place, missing ones appended, extra ones deleted (the first write carries the list's digest, so a concurrent change is refused, not overwritten); succeeds when PVE's list reads back equal to the declaration, rule by rule. The summary says whether the rules are in effect",
      kind: "action" as const,
      arguments: RulesArgs,
      execute: (args: z.infer<typeof RulesArgs>, ctx: MethodContext) =>
        runOnCore(model, "firewallRules", args, ctx),
    },
    firewallIpset: {
      description:
        "Declare one of the guest's firewall IP sets by name: its comment and every entry (cidr, nomatch, comment). The set is made if missing, entries not declared deleted, changed ones updated (under the set's digest), missing ones added; delete: true removes the set with its entries. Succeeds when the set reads back equal to the declaration (or gone). The summary says whether the firewall is in effect",
      kind: "action" as const,
      arguments: IpsetArgs,
      execute: (args: z.infer<typeof IpsetArgs>, ctx: MethodContext) =>
        runOnCore(model, "firewallIpset", args, ctx),
    },
    firewallAlias: {
      description:
        "Declare one of the guest's firewall aliases (name, cidr, comment): created if missing, updated if it differs (under the list's digest); delete: true removes it. Succeeds when PVE lists it as declared (or no longer). The summary says whether the firewall is in effect",
      kind: "action" as const,
      arguments: AliasArgs,
      execute: (args: z.infer<typeof AliasArgs>, ctx: MethodContext) =>
        runOnCore(model, "firewallAlias", args, ctx),
    },
  };
}
