/**
 * The firewall's value checks: addresses, ports, protocols, ICMP types and macro names, as
 * pve-firewall `src/PVE/Firewall.pm` checks them (its registered formats `pve-fw-addr-spec`,
 * `pve-fw-dport-spec`, `pve-fw-sport-spec`, `pve-fw-protocol-spec`, `pve-fw-icmp-type-spec`,
 * `IPorCIDR`, `IPorCIDRorAlias`, and the helpers verify_rule calls). Each check returns PVE's
 * die text (with its trailing newline, as the format layer wants it) or an address's IP version.
 *
 * Net::IP's own error texts (inside "invalid IP address: …") are approximated; the
 * "invalid IP address: " head and which values fail are PVE's.
 *
 * @module
 */

/** Firewall.pm `$ipset_name_pattern`, `$ip_alias_pattern`, `$security_group_name_pattern`. */
export const NAME_PATTERN = "[A-Za-z][A-Za-z0-9\\-\\_]+";
/** An alias reference, optionally scoped (Firewall.pm parse_address_list). */
export const ALIAS_REF = new RegExp(`^(dc/|guest/)?(${NAME_PATTERN})$`);
/** Firewall.pm `$max_alias_name_length`, `$max_ipset_name_length`. */
const MAX_NAME = 64;

const OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const V4 = new RegExp(`^(?:${OCTET}\\.){3}${OCTET}$`);

/** Whether `ip` is an IPv6 address (the WHATWG host parser accepts exactly RFC 4291's forms). */
function isV6(ip: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(ip) || !ip.includes(":")) return false;
  try {
    new URL(`http://[${ip}]/`);
    return true;
  } catch {
    return false;
  }
}

/** The address's version, or undefined. */
export function ipVersion(ip: string): 4 | 6 | undefined {
  return V4.test(ip) ? 4 : isV6(ip) ? 6 : undefined;
}

/** The 32 or 128 bits of an address, as a BigInt. */
function bits(ip: string, v: 4 | 6): bigint {
  if (v === 4) {
    return ip.split(".").reduce((n, o) => (n << 8n) | BigInt(o), 0n);
  }
  const host = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const [head, tail] = host.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = [...h, ...Array(8 - h.length - t.length).fill("0"), ...t];
  return groups.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/** The address `n` written back: dotted quad, or IPv6 compressed (Net::IP ip_compress_address). */
function unbits(n: bigint, v: 4 | 6): string {
  if (v === 4) {
    return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join(".");
  }
  const groups = [...Array(8).keys()].map((i) =>
    ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)
  );
  return new URL(`http://[${groups.join(":")}]/`).hostname.slice(1, -1);
}

/**
 * One element of an address list as Net::IP->new takes it (an address, `addr/len` with no host
 * bits set, or a range `a-b`): its version, or Net::IP's complaint.
 */
function netIp(elem: string): { v: 4 | 6 } | { error: string } {
  const range = elem.split("-");
  if (range.length === 2) {
    const [a, b] = range.map((x) => ipVersion(x.trim()));
    if (!a || a !== b) return { error: `Invalid IP address ${elem}` };
    return { v: a };
  }
  const [ip, len, more] = elem.split("/");
  const v = ipVersion(ip);
  if (!v || more !== undefined) {
    return { error: `Cannot determine IP version for ${elem}` };
  }
  if (len === undefined) return { v };
  const max = v === 4 ? 32 : 128;
  if (!/^\d+$/.test(len) || Number(len) > max) {
    return { error: `Invalid prefix length /${len}` };
  }
  const host = (1n << BigInt(max - Number(len))) - 1n;
  if ((bits(ip, v) & host) !== 0n) {
    return { error: `Invalid prefix ${ip}/${len}` };
  }
  return { v };
}

/**
 * Firewall.pm parse_address_list: an ipset reference (`+name`), an alias, or a list of
 * addresses, networks or one range, all of one IP version. Returns that version (undefined for a
 * reference); throws PVE's die text.
 */
export function parseAddressList(str: string): 4 | 6 | undefined {
  if (/^\+\S+$/.test(str)) {
    if (str.length > MAX_NAME + 1) throw "ipset name too long\n";
    return undefined;
  }
  if (ALIAS_REF.test(str)) {
    if (str.length > MAX_NAME) throw "alias name too long\n";
    return undefined;
  }
  const elements = str.split(",");
  // Perl's split drops trailing empty fields: a trailing comma does not survive the join.
  if (/,$/.test(str)) throw "extraneous commas in list\n";
  let version: 4 | 6 | undefined;
  let range = false;
  for (const elem of elements) {
    const ip = netIp(elem);
    if ("error" in ip) throw `invalid IP address: ${ip.error}\n`;
    if (elem.includes("-")) range = true;
    if (version && ip.v !== version) {
      throw `detected mixed ipv4/ipv6 addresses in address list '${str}'\n`;
    }
    version = ip.v;
  }
  if (range && elements.length > 1) throw "you can't use a range in a list\n";
  return version;
}

/**
 * Firewall.pm pve_verify_ip_or_cidr (format `IPorCIDR`): an address or a network whose masked
 * part may be non-zero (clean_cidr clears it before Net::IP sees it).
 */
export function checkIpOrCidr(cidr: string): string | undefined {
  const [ip, len, more] = cidr.split("/");
  const v = ipVersion(ip);
  if (!v || more !== undefined || (len !== undefined && !/^\d+$/.test(len))) {
    return "value does not look like a valid IP address or CIDR network\n";
  }
  if (len !== undefined && Number(len) > (v === 4 ? 32 : 128)) {
    return `Invalid prefix length /${len}\n`;
  }
  return undefined;
}

/** Firewall.pm clean_cidr: the network with its host bits cleared (an address is kept as is). */
export function cleanCidr(cidr: string): string {
  const [ip, len] = cidr.split("/");
  // Perl's `return $cidr if !$len`: no length, or "0".
  if (!len || len === "0") return cidr;
  const v = ipVersion(ip)!;
  const max = v === 4 ? 32 : 128;
  const mask = ((1n << BigInt(max)) - 1n) ^
    ((1n << BigInt(max - Number(len))) - 1n);
  return `${unbits(bits(ip, v) & mask, v)}/${len}`;
}

/** Firewall.pm parse_ip_or_cidr: a host's `/32` or `/128` dropped, and the version. */
export function parseIpOrCidr(cidr: string): { cidr: string; v: 4 | 6 } {
  const v = ipVersion(cidr.split("/")[0]);
  if (!v) throw "value does not look like a valid IP address or CIDR network\n";
  return { cidr: cidr.replace(v === 4 ? /\/32$/ : /\/128$/, ""), v };
}

/** Service names of a PVE node's /etc/services (netbase) that rules commonly name. */
const SERVICES = new Set(
  ("ftp-data ftp ssh telnet smtp time whois tacacs domain bootps bootpc tftp gopher finger " +
    "http kerberos pop3 sunrpc auth nntp ntp netbios-ns netbios-dgm netbios-ssn imap2 imap " +
    "snmp snmp-trap bgp irc ldap https microsoft-ds submissions isakmp syslog printer " +
    "submission ldaps rsync imaps pop3s openvpn mysql postgresql sip sip-tls xmpp-client " +
    "amqp x11 git svn rtsp ms-sql-s rdp ms-wbt-server kerberos-adm nfs radius radius-acct " +
    "zabbix-agent zabbix-trapper iscsi-target mdns webmin http-alt").split(" "),
);

/** Firewall.pm `$icmp_type_names`. */
export const ICMP_TYPES = new Set(
  ("any echo-reply destination-unreachable network-unreachable host-unreachable " +
    "protocol-unreachable port-unreachable fragmentation-needed source-route-failed " +
    "network-unknown host-unknown network-prohibited host-prohibited communication-prohibited " +
    "host-precedence-violation precedence-cutoff source-quench redirect network-redirect " +
    "host-redirect echo-request router-advertisement router-solicitation time-exceeded " +
    "ttl-zero-during-transit ttl-zero-during-reassembly parameter-problem ip-header-bad " +
    "required-option-missing timestamp-request timestamp-reply address-mask-request " +
    "address-mask-reply").split(" "),
);

/** Firewall.pm `$icmpv6_type_names`. */
export const ICMPV6_TYPES = new Set(
  ("destination-unreachable no-route communication-prohibited beyond-scope address-unreachable " +
    "port-unreachable failed-policy reject-route packet-too-big time-exceeded " +
    "ttl-zero-during-transit ttl-zero-during-reassembly parameter-problem bad-header " +
    "unknown-header-type unknown-option echo-request echo-reply router-solicitation " +
    "router-advertisement neighbor-solicitation neighbour-solicitation neighbor-advertisement " +
    "neighbour-advertisement redirect").split(" "),
);

/**
 * Firewall.pm parse_port_name_number_or_range: ports, `a:b` ranges and service names, at most 15
 * numbers; a dport of an ICMP rule may name ICMP types instead. Throws PVE's die text.
 */
export function parsePorts(str: string, dport: boolean): void {
  if (/,$/.test(str)) throw "extraneous commas in list\n";
  let count = 0;
  let icmp = false;
  for (const item of str.split(",")) {
    const range = /^(\d+):(\d+)$/.exec(item);
    if (range) {
      count += 2;
      const [a, b] = [Number(range[1]), Number(range[2])];
      if (a > 65535) throw `invalid port '${range[1]}'\n`;
      if (b > 65535) throw `invalid port '${range[2]}'\n`;
      if (a > b) {
        throw `backwards range '${a}:${b}' not allowed, did you mean '${b}:${a}'?\n`;
      }
    } else if (/^\d+$/.test(item)) {
      count += 1;
      if (Number(item) > 65535) throw `invalid port '${item}'\n`;
    } else if (dport && (ICMP_TYPES.has(item) || ICMPV6_TYPES.has(item))) {
      icmp = true;
    } else if (!SERVICES.has(item)) {
      throw `invalid port '${item}'\n`;
    }
  }
  if (icmp && count > 0) throw "ICMP ports not allowed in port range\n";
  if (count > 15) throw "too many entries in port list (> 15 numbers)\n";
}

/** A PVE node's /etc/protocols (netbase), plus the `icmpv6` get_etc_protocols adds. */
const PROTOCOLS: Record<string, number> = Object.fromEntries(
  ("ip:0 hopopt:0 icmp:1 igmp:2 ggp:3 ipencap:4 st:5 tcp:6 egp:8 igp:9 pup:12 udp:17 hmp:20 " +
    "xns-idp:22 rdp:27 iso-tp4:29 dccp:33 xtp:36 ddp:37 idpr-cmtp:38 ipv6:41 ipv6-route:43 " +
    "ipv6-frag:44 idrp:45 rsvp:46 gre:47 esp:50 ah:51 skip:57 ipv6-icmp:58 ipv6-nonxt:59 " +
    "ipv6-opts:60 rspf:73 vmtp:81 eigrp:88 ospf:89 ax.25:93 ipip:94 etherip:97 encap:98 " +
    "pim:103 ipcomp:108 vrrp:112 l2tp:115 isis:124 sctp:132 fc:133 mobility-header:135 " +
    "udplite:136 mpls-in-ip:137 manet:138 hip:139 shim6:140 wesp:141 rohc:142 ethernet:143 " +
    "mptcp:262").split(" ").map((p) => {
      const [name, id] = p.split(":");
      return [name, Number(id)];
    }),
);
const PROTOCOL_IDS = new Set(Object.values(PROTOCOLS).map(String));

/** Firewall.pm pve_fw_verify_protocol_spec: a name or number of /etc/protocols, or `icmpv6`. */
export function checkProtocol(proto: string): string | undefined {
  return proto === "icmpv6" || proto in PROTOCOLS || PROTOCOL_IDS.has(proto)
    ? undefined
    : `unknown protocol '${proto}'\n`;
}

/** Firewall.pm `$PROTOCOLS_WITH_PORTS`. */
export const PROTOCOLS_WITH_PORTS = new Set(
  ["udp", "17", "udplite", "136", "tcp", "6", "dccp", "33", "sctp", "132"],
);

/** Firewall.pm `$proto_is_icmp`. */
export function isIcmp(proto: string): boolean {
  return proto === "icmp" || proto === "icmpv6" || proto === "ipv6-icmp";
}

/** Firewall.pm `$pve_fw_macros`' names: verify_rule takes any casing and keeps this one. */
const MACROS = (
  "Amanda Auth BGP BitTorrent BitTorrent32 Ceph CVS Citrix DAAP DCC DHCPfwd DNS Distcc FTP " +
  "Finger GNUnet GRE Git HKP HTTP HTTPS ICPV2 ICQ IMAP IMAPS IPIP IPsec IPsecah IPsecnat IRC " +
  "Jetdirect L2TP LDAP LDAPS MSNP MSSQL Mail MDNS Munin MySQL NNTP NNTPS NTP OSPF OpenVPN PCA " +
  "PMG POP3 POP3S PPtP Ping PostgreSQL Printer RDP RIP RNDC Razor Rdate Rsync SANE SMB SMBswat " +
  "SMTP SMTPS SNMP SPAMD SSH SVN SixXS SPICEproxy Squid Submission Syslog TFTP Telnet Telnets " +
  "Time Trcrt VNC VNCL Web Webcache Webmin Whois"
).split(" ");

/** Firewall.pm `$pve_fw_preferred_macro_names`: the macro's own spelling, by lower case. */
export function preferredMacro(name: string): string | undefined {
  return MACROS.find((m) => m.toLowerCase() === name.toLowerCase());
}

/** The firewall's registered formats (Firewall.pm register_format), for the schema layer. */
export const FIREWALL_FORMATS: Record<
  string,
  (v: string) => string | undefined
> = {
  "pve-fw-addr-spec": (v) => caught(() => parseAddressList(v)),
  "pve-fw-dport-spec": (v) => caught(() => parsePorts(v, true)),
  "pve-fw-sport-spec": (v) => caught(() => parsePorts(v, false)),
  "pve-fw-protocol-spec": (v) => v === "" ? undefined : checkProtocol(v),
  // pve_fw_verify_icmp_type_spec: a known name of either family, or empty.
  "pve-fw-icmp-type-spec": (v) =>
    v === "" || ICMP_TYPES.has(v) || ICMPV6_TYPES.has(v)
      ? undefined
      : `invalid icmp-type value '${v}'\n`,
  IPorCIDR: checkIpOrCidr,
  // pve_verify_ip_or_cidr_or_alias: an alias name passes the format.
  IPorCIDRorAlias: (v) => ALIAS_REF.test(v) ? undefined : checkIpOrCidr(v),
};

/** A check's die text, or undefined when it passed. */
function caught(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    return String(err);
  }
}
