//! `firewallRules`: a guest's whole ordered rule set, declared. Through the firewall engine
//! (guest/firewall.rs) the method reads PVE's list, keeps each rule that already reads as declared
//! at its position, updates the others in place (`PUT …/rules/<pos>`, with `delete` for the fields
//! the declaration leaves out), appends what is missing (`POST …/rules`, which puts a rule first,
//! then `moveto` the end), deletes the
//! rest from the end (`DELETE …/rules/<pos>`), then reads the list back: it must equal the
//! declaration, rule by rule. The first write carries the list's digest, so a list another client
//! changed meanwhile is refused by PVE rather than overwritten (pve-firewall
//! `PVE/API2/Firewall/Rules.pm`, `PVE/Firewall.pm` verify_rule for what PVE refuses).

use crate::args::{digit, every_byte, is_name, name_byte, starts_alphabetic, ArgError, Fields};
use crate::guest::firewall::{digest, one_section, sign, FirewallChange, Read, Write};
use crate::guest::reference::GuestRef;
use crate::methods::firewall_options::LOG_LEVELS;
use crate::pve::flex;
use crate::pve::request::{push_param, Verb};
use crate::quote::Joined;
use serde_json::Value;

/// A rule's fields in PVE's names, in the order they are compared and sent. Each argument is
/// named as PVE names the field, but `icmpType` ([`arg_of`]).
const FIELDS: [&str; 13] = [
    "type",
    "action",
    "enable",
    "source",
    "dest",
    "proto",
    "dport",
    "sport",
    "iface",
    "macro",
    "log",
    "comment",
    "icmp-type",
];

/// The argument naming PVE's field `name`: `icmpType` is PVE's `icmp-type`, the others are PVE's
/// names (no table of pairs, issue 32).
fn arg_of(name: &str) -> &str {
    match name {
        "icmp-type" => "icmpType",
        _ => name,
    }
}
/// Protocols whose rules may name ports (pve-firewall `PVE/Firewall.pm` $PROTOCOLS_WITH_PORTS;
/// verify_rule: "protocol … does not support ports" otherwise).
const PORT_PROTOCOLS: [&str; 10] = [
    "tcp", "6", "udp", "17", "udplite", "136", "dccp", "33", "sctp", "132",
];
/// Protocols whose rules take an ICMP type, in `icmpType` or (legacy) `dport` ($proto_is_icmp).
const ICMP_PROTOCOLS: [&str; 3] = ["icmp", "icmpv6", "ipv6-icmp"];
/// The fields PVE writes for a group rule: its group, iface, comment and whether it is enabled
/// (`PVE/Firewall.pm` $format_rules drops the rest, so they would never read back).
const GROUP_FIELDS: [&str; 5] = ["type", "action", "enable", "iface", "comment"];

/// A port list as pve-firewall parses it (parse_port_name_number_or_range): ports 0…65535, ranges
/// `a:b` with a ≤ b, service names; at most 15 ports, a range counting two (iptables multiport).
fn is_port_list(text: &str) -> bool {
    let port = |p: &str| {
        (!p.is_empty() && every_byte(p, digit) && p.parse::<u16>().is_ok())
            || (starts_alphabetic(p) && every_byte(p, name_byte))
    };
    let mut count = 0;
    let items = text.split(',').all(|item| match item.split_once(':') {
        Some((a, b)) => {
            count += 2;
            let numbers = (a.parse::<u16>(), b.parse::<u16>());
            port(a) && port(b) && !matches!(numbers, (Ok(a), Ok(b)) if a > b)
        }
        None => {
            count += 1;
            port(item)
        }
    });
    items && count <= 15
}

/// One declared rule: PVE's value of each field it sets, in [`FIELDS`] order.
pub type Rule = Vec<(&'static str, String)>;

/// The arguments of `firewallRules`.
#[derive(Debug, Clone, PartialEq)]
pub struct RulesArgs {
    pub target: GuestRef,
    pub rules: Vec<Rule>,
}

/// One rule's arguments (`at`: its path, `rules[3]`), checked as pve-firewall's verify_rule would.
fn rule(value: &Value, at: &str) -> Result<Rule, ArgError> {
    let fields = Fields::of(value, at)?;
    let mut rule = Rule::new();
    for &name in &FIELDS {
        let arg = arg_of(name);
        // Borrowed and checked first, copied once it is known good.
        let text = match arg {
            "enable" => Some(if fields.flag_or("enable", true)? {
                "1"
            } else {
                "0"
            }),
            _ => fields.optional_line_str(arg)?,
        };
        if let Some(text) = text {
            rule.push((name, text.to_string()));
        }
    }
    // The argument naming the field refused (`icmp-type` is `icmpType`).
    verify(&rule).map_err(|(name, why)| ArgError::new(fields.path(arg_of(name)), why))?;
    Ok(rule)
}

/// PVE's value of a rule's field `name`, if it is set.
fn get<'r>(rule: &'r Rule, name: &str) -> Option<&'r str> {
    rule.iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.as_str())
}

/// The rule checked as pve-firewall's verify_rule would: the field (PVE's name) and rule it
/// breaks first.
fn verify(rule: &Rule) -> Result<(), (&'static str, &'static str)> {
    let get = |name| get(rule, name);
    match (get("type"), get("action")) {
        (Some("in" | "out"), Some("ACCEPT" | "DROP" | "REJECT")) => {}
        (Some("in" | "out"), _) => return Err(("action", "must be ACCEPT, DROP or REJECT")),
        (Some("group"), Some(group)) if is_name(group, 20) => {}
        (Some("group"), _) => {
            return Err((
                "action",
                "must name a security group ([A-Za-z][A-Za-z0-9-_]+, 2 to 20)",
            ))
        }
        _ => return Err(("type", "must be in, out or group")),
    }
    if get("type") == Some("group") {
        if let Some((name, _)) = rule.iter().find(|(k, _)| !GROUP_FIELDS.contains(k)) {
            return Err((name, "is not kept for a group rule: PVE writes only its group, iface, comment and enable"));
        }
    }
    let proto = get("proto");
    if proto.is_some_and(|p| !every_byte(p, |b| !b.is_ascii_uppercase())) {
        return Err((
            "proto",
            "must be lower case, as /etc/protocols names it (PVE refuses TCP)",
        ));
    }
    let icmp = proto.is_some_and(|p| ICMP_PROTOCOLS.contains(&p));
    let ports_ok =
        proto.is_some_and(|p| PORT_PROTOCOLS.contains(&p)) || (icmp && get("sport").is_none());
    if get("dport").or(get("sport")).is_some() && !ports_ok {
        return Err((
            "proto",
            "must take ports (tcp, udp, udplite, dccp, sctp or their numbers; icmp: dport only) when a port is given",
        ));
    }
    if get("icmp-type").is_some() && !icmp {
        return Err(("proto", "must be icmp or icmpv6 when icmpType is given"));
    }
    for &name in &["dport", "sport"] {
        if !icmp && get(name).is_some_and(|p| !is_port_list(p)) {
            return Err((name, "must be ports 0…65535, ranges a:b with a ≤ b or service names, at most 15 ports (a range counts two)"));
        }
    }
    if get("comment").is_some_and(|c| kept_comment(c).is_none()) {
        return Err(("comment", UNKEPT_COMMENT));
    }
    if get("log").is_some_and(|l| !LOG_LEVELS.contains(&l)) {
        return Err(("log", "must be a log level (emerg … debug, nolog)"));
    }
    let iface_ok = |i: &str| {
        i.strip_prefix("net").is_some_and(|n| {
            every_byte(n, digit)
                && (n == "0" || !n.starts_with('0'))
                && n.parse::<u8>().is_ok_and(|n| n < 32)
        })
    };
    if get("iface").is_some_and(|i| !iface_ok(i)) {
        return Err((
            "iface",
            "must be one of the guest's interfaces, net0 … net31",
        ));
    }
    for &name in &["source", "dest"] {
        if get(name).is_some_and(|v| !is_address_list(v)) {
            return Err((name, "must be an IP set (+name), an alias, or IPs, CIDRs with the host bits clear (10.0.0.0/24) and ranges of one IP version"));
        }
    }
    // A loop over the characters, not `contains(char::is_whitespace)`: no searcher compiled for
    // this one check (issue 32).
    let word = |v: &str| {
        let mut spaced = false;
        for c in v.chars() {
            spaced |= c.is_whitespace();
        }
        !v.is_empty() && !spaced
    };
    for &name in &[
        "source",
        "dest",
        "proto",
        "dport",
        "sport",
        "macro",
        "icmp-type",
    ] {
        if get(name).is_some_and(|v| !word(v) || v.len() > 512) {
            return Err((
                name,
                "must be one word without spaces, at most 512 characters",
            ));
        }
    }
    Ok(())
}

/// The comment PVE reads back of `text`, or `None` if it keeps none or not this text. PVE writes
/// no blank comment (`$format_rules`, `$format_aliases`, `$format_ipsets`: Unicode `\s`) and reads
/// the file's bytes (generic_fw_config_parser, parse_fw_rule, parse_alias): the line's trailing
/// `\h` (space, tab, byte 0xA0: `à` loses half of itself), then `#\s*(.*?)\s*$` (ASCII white
/// space: `\t`…`\r`, space); a comment `0` is false to Perl and dropped. A byte 0xA0 before
/// trailing `\x0B`, `\x0C` would survive: refused all the same.
pub fn kept_comment(text: &str) -> Option<&str> {
    // Trimmed by bytes: the white space trimmed is ASCII, so the cuts fall between characters,
    // and no char-pattern trimming is compiled for it (issue 32).
    let space = |b: &u8| matches!(b, b'\t'..=b'\r' | b' ');
    let bytes = text.as_bytes();
    let end = bytes
        .iter()
        .rposition(|b| !space(b))
        .map_or(0, |last| last + 1);
    let start = bytes.iter().position(|b| !space(b)).unwrap_or(end);
    let kept = text.get(start..end).unwrap_or_default();
    let cut = kept.as_bytes().last() == Some(&0xA0);
    (!cut && !text.trim().is_empty() && !matches!(kept, "-" | "0")).then_some(kept)
}

/// Why a comment is refused that PVE would not keep as given ([`kept_comment`]).
const UNKEPT_COMMENT: &str =
    "must be text PVE keeps: not blank, - or 0, not ending in a byte 0xA0 (à, no-break space)";

/// An optional comment (the field `key`) PVE keeps as given: one line with text. Borrowed: the
/// caller copies it once every field is checked (issue 32).
pub fn comment_arg<'a>(fields: &Fields<'a>, key: &str) -> Result<Option<&'a str>, ArgError> {
    let comment = fields.optional_line_str(key)?;
    if comment.is_some_and(|c| kept_comment(c).is_none()) {
        return Err(ArgError::new(fields.path(key), UNKEPT_COMMENT));
    }
    Ok(comment)
}

/// An IP or CIDR as pve-firewall's `IPorCIDR` format reads it (`PVE/Firewall.pm`
/// pve_verify_ip_or_cidr: `^(?:$IPV6RE|$IPV4RE)(?:/\d+)?$`, then Net::IP): the address, its prefix
/// length (the address's full length when none is given) and whether the host bits are clear.
/// firewallRules, firewallIpset and firewallAlias share it.
pub fn cidr(item: &str) -> Option<(std::net::IpAddr, u32, bool)> {
    use std::net::IpAddr;
    let (ip, bits) = match item.split_once('/') {
        Some((ip, bits)) => (ip, Some(bits)),
        None => (item, None),
    };
    let ip: IpAddr = ip.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let bits: u32 = match bits {
        None => max,
        Some(b) if !b.is_empty() && every_byte(b, digit) => b.parse().ok().filter(|b| *b <= max)?,
        _ => return None,
    };
    let (v4, v6);
    let octets: &[u8] = match ip {
        IpAddr::V4(ip) => {
            v4 = ip.octets();
            &v4
        }
        IpAddr::V6(ip) => {
            v6 = ip.octets();
            &v6
        }
    };
    // The host bits (the last `max - bits`) are clear when the address ends in as many zero
    // bits, counted from its last octet (no 128-bit number made of it, issue 32).
    let mut zeros = 0;
    for &octet in octets.iter().rev() {
        zeros += octet.trailing_zeros();
        if octet != 0 {
            break;
        }
    }
    Some((ip, bits, zeros >= max - bits))
}

/// An IP or CIDR ([`cidr`]) as PVE compares it: its address and prefix length, so `10.0.0.1` and
/// `10.0.0.1/32` are the same. firewallIpset and firewallAlias share it.
pub fn address(item: &str) -> Option<(std::net::IpAddr, u32)> {
    cidr(item).map(|(ip, bits, _)| (ip, bits))
}

/// An address list as pve-firewall parses it (`PVE/Firewall.pm` parse_address_list): an IP set
/// (`+name`) or alias (a name) alone, or addresses, CIDRs (host bits clear: PVE refuses
/// `10.0.0.1/24`) and ranges of one IP version. References are left to PVE, which knows them.
fn is_address_list(text: &str) -> bool {
    use std::net::IpAddr;
    if text.starts_with('+') || starts_alphabetic(text) && !text.contains(':') {
        return !text.contains(',');
    }
    let item = |item: &str| match item.split_once('-') {
        Some((a, b)) => Some((a.parse::<IpAddr>().ok()?, b.parse::<IpAddr>().ok()?))
            .filter(|(a, b)| a.is_ipv4() == b.is_ipv4())
            .map(|(a, _)| a),
        None => cidr(item).filter(|c| c.2).map(|c| c.0),
    };
    // "you can't use a range in a list"
    if text.contains(',') && text.contains('-') {
        return false;
    }
    let mut version = None;
    for text in text.split(',') {
        let Some(ip) = item(text) else { return false };
        if *version.get_or_insert(ip.is_ipv4()) != ip.is_ipv4() {
            return false;
        }
    }
    true
}

impl RulesArgs {
    /// Always inlined into its one caller, the method's boxed change: the arguments are then
    /// built in their box, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let list = fields.required_list("rules")?;
        let mut rules = Vec::with_capacity(list.len());
        for (i, r) in list.iter().enumerate() {
            rules.push(rule(r, &format!("rules[{i}]"))?);
        }
        Ok(RulesArgs { target, rules })
    }
}

/// PVE's listed rules, in position order.
fn listed(read: Option<&Value>) -> Result<Vec<&Value>, String> {
    let list = read
        .and_then(Value::as_array)
        .ok_or_else(|| "PVE's rule list is not a list".to_string())?;
    let pos = |i: usize| {
        let pos = list.get(i).and_then(|r| r.get("pos"));
        pos.and_then(flex::u64_of).unwrap_or(u64::MAX)
    };
    let mut rules = Vec::with_capacity(list.len());
    for &i in &crate::order::positions(list.len(), &|a, b| pos(a).cmp(&pos(b))) {
        if let Some(rule) = list.get(i) {
            rules.push(rule);
        }
    }
    Ok(rules)
}

/// The fields `seen` (a listed rule) differs in from `rule`: those to set and those to delete.
fn difference(rule: &Rule, seen: &Value) -> (Vec<(String, String)>, Vec<&'static str>) {
    let value = |name: &str| seen.get(name).and_then(flex::string_of);
    let mut set = Vec::new();
    let mut clear = Vec::new();
    for &name in &FIELDS {
        let want = get(rule, name);
        let read = value(name);
        let have = match (name, read.as_deref()) {
            // A rule PVE lists without `enable` is disabled.
            ("enable", None) => Some("0"),
            (_, have) => have,
        };
        // PVE spells a macro its own way (`ssh` reads `SSH`) and trims a comment.
        let same = |w: &str, h: &str| match name {
            "macro" => w.eq_ignore_ascii_case(h),
            "comment" => kept_comment(w) == Some(h),
            _ => w == h,
        };
        match (want, have) {
            (Some(w), Some(h)) if same(w, h) => {}
            (Some(w), _) => push_param(&mut set, name, w),
            (None, Some(_)) => clear.push(name),
            (None, None) => {}
        }
    }
    (set, clear)
}

/// The writes that make `read` the declared list.
fn plan(rules: &[Rule], read: Option<&Value>) -> Result<Vec<Write>, String> {
    let seen = listed(read)?;
    let mut writes = Vec::new();
    for (pos, rule) in rules.iter().enumerate() {
        let at = pos.to_string();
        match seen.get(pos) {
            Some(old) => {
                let (mut params, clear) = difference(rule, old);
                if params.is_empty() && clear.is_empty() {
                    continue;
                }
                if !clear.is_empty() {
                    params.push(("delete".into(), clear.joined(",")));
                }
                Write::push(&mut writes, Verb::Set, &["rules", &at], params);
            }
            // PVE inserts a new rule at the top whatever `pos` says (pve-firewall
            // `PVE/API2/Firewall/Rules.pm` create_rule): it is moved to the end after.
            None => {
                let mut params = Vec::with_capacity(rule.len());
                for (key, value) in rule {
                    push_param(&mut params, key, value);
                }
                Write::push(&mut writes, Verb::Create, &["rules"], params);
                let last = (pos + 1).to_string();
                let moveto = [("moveto", Some(last.as_str()))];
                Write::push_of(&mut writes, Verb::Set, &["rules", "0"], &moveto);
            }
        }
    }
    for pos in (rules.len()..seen.len()).rev() {
        Write::push(
            &mut writes,
            Verb::Delete,
            &["rules", &pos.to_string()],
            Vec::new(),
        );
    }
    // The first write is refused if the list changed since it was read.
    sign(writes.first_mut(), digest(seen.first().copied()));
    Ok(writes)
}

/// The list read back against the declaration, rule by rule.
fn judge(rules: &[Rule], read: Option<&Value>) -> Result<String, String> {
    let seen = listed(read)?;
    if seen.len() != rules.len() {
        return Err(format!(
            "PVE lists {} rules where {} were declared",
            seen.len(),
            rules.len()
        ));
    }
    // As many as declared (checked above); indexed by `get`, not zipped (issue 32).
    for (pos, rule) in rules.iter().enumerate() {
        let Some(old) = seen.get(pos) else { break };
        // PVE lists a rule that no longer verifies (an alias or IP set gone) with `errors`, and
        // compiles none of it (pve-firewall `PVE/Firewall.pm` parse_fw_rule, ruleset_generate_rule).
        if let Some(errors) = old.get("errors").filter(|e| !e.is_null()) {
            return Err(format!(
                "rule {pos} reads back, but PVE marks it with errors {errors}: it is not applied",
                errors = crate::quote::json(errors)
            ));
        }
        // What is wrong is said first, and returned once both lists are dropped.
        let (set, clear) = difference(rule, old);
        let wrong = match (set.first(), clear.first()) {
            (Some((name, want)), _) => {
                let have = old
                    .get(name.as_str())
                    .map_or("nothing".into(), crate::quote::json);
                format!("rule {pos} reads {name} {have} where {want:?} was declared")
            }
            (None, Some(name)) => format!("rule {pos} has {name}, which was not declared"),
            (None, None) => continue,
        };
        return Err(wrong);
    }
    Ok(format!(
        "{} rules read back in the declared order",
        rules.len()
    ))
}

impl FirewallChange for RulesArgs {
    fn target(&self) -> &GuestRef {
        &self.target
    }
    fn what(&self) -> String {
        "the firewall rules".into()
    }
    fn sections(&self) -> Vec<Vec<String>> {
        one_section("rules")
    }
    fn plan(&self, read: &Read) -> Result<Vec<Write>, String> {
        plan(&self.rules, read[0].as_ref())
    }
    fn judge(&self, read: &Read) -> Result<String, String> {
        judge(&self.rules, read[0].as_ref())
    }
}

/// `firewallRules`'s change, from its arguments (run by guest/firewall.rs `change_firewall`).
pub fn change(args: &Value) -> Result<Box<dyn FirewallChange>, ArgError> {
    Ok(Box::new(RulesArgs::parse(args)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::json;

    const BASE: &str = "/nodes/pve1/qemu/100/firewall";

    /// VM 100 on pve1 whose rule list reads `before`, then `after`; guest and cluster firewall on.
    fn vm(before: Value, after: Value) -> ScriptedHost {
        vm_with(before, after, true)
    }

    /// [`vm`] with the cluster firewall and net0's `firewall=1` both on or both off.
    fn vm_with(before: Value, after: Value, on: bool) -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running"}),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"net0": format!("virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall={}", u8::from(on))}),
        );
        host.on(
            &format!("GET {BASE}/rules"),
            [Answer::Data(before), Answer::Data(after)],
        );
        for route in [
            "PUT {BASE}/rules/1",
            "POST {BASE}/rules",
            "DELETE {BASE}/rules/2",
            "PUT {BASE}/rules/0",
        ] {
            host.data(&route.replace("{BASE}", BASE), Value::Null);
        }
        host.data(&format!("GET {BASE}/options"), json!({"enable": 1}));
        host.data(
            "GET /cluster/firewall/options",
            json!({"enable": u8::from(on)}),
        );
        host
    }

    fn ssh(pos: u64) -> Value {
        json!({"pos": pos, "type": "in", "action": "ACCEPT", "enable": 1, "proto": "tcp", "dport": "22", "digest": "d1"})
    }

    fn writes(host: &ScriptedHost) -> Vec<String> {
        host.requests
            .borrow()
            .iter()
            .filter(|r| r.method != "GET")
            .map(|r| {
                format!(
                    "{} {} {}",
                    r.method,
                    r.url,
                    r.body.clone().unwrap_or_default()
                )
            })
            .collect()
    }

    #[test]
    fn a_declared_list_is_made_by_updating_in_place_appending_and_deleting_from_the_end() {
        let web = json!({"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "443"});
        let drop = json!({"pos": 1, "type": "in", "action": "DROP", "enable": 1, "source": "10.0.0.0/8", "digest": "d1"});
        let after = json!([ssh(0), {"pos": 1, "type": "in", "action": "ACCEPT", "enable": 1, "proto": "tcp", "dport": "443"}]);
        let host = vm(json!([ssh(0), drop, ssh(2)]), after);
        let args = json!({"vmid": 100, "rules": [{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "22"}, web]});
        let outcome = run_method(&host, "qemu", "firewallRules", args);
        assert!(
            summary_of(&outcome).contains("2 rules read back in the declared order"),
            "{outcome:?}"
        );
        let sent = writes(&host);
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert!(
            sent[0].starts_with("PUT") && sent[0].contains(&format!("{BASE}/rules/1 ")),
            "{sent:?}"
        );
        assert!(
            sent[0].contains("action=ACCEPT")
                && sent[0].contains("delete=source")
                && sent[0].contains("digest=d1"),
            "{sent:?}"
        );
        assert!(
            sent[1].starts_with("DELETE") && sent[1].contains(&format!("{BASE}/rules/2")),
            "{sent:?}"
        );
    }

    #[test]
    fn a_list_that_reads_back_otherwise_fails_naming_the_rule() {
        let host = vm(
            json!([]),
            json!([{"pos": 0, "type": "in", "action": "ACCEPT", "enable": 1, "proto": "tcp", "dport": "2222"}]),
        );
        let args = json!({"vmid": 100, "rules": [{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "22"}]});
        let outcome = run_method(&host, "qemu", "firewallRules", args);
        assert!(
            failure_of(&outcome).contains("rule 0 reads dport \"2222\""),
            "{outcome:?}"
        );
        let sent = writes(&host);
        assert!(
            sent[0].starts_with("POST") && sent[0].contains("enable=1"),
            "{sent:?}"
        );
        assert!(sent[1].contains("/rules/0 moveto=1"), "{sent:?}");
    }

    #[test]
    fn a_list_already_as_declared_sends_nothing() {
        let host = vm(json!([ssh(0)]), json!([ssh(0)]));
        let args = json!({"vmid": 100, "rules": [{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "22"}]});
        let outcome = run_method(&host, "qemu", "firewallRules", args);
        assert!(
            summary_of(&outcome).contains("(0 writes sent)"),
            "{outcome:?}"
        );
        assert!(summary_of(&outcome).contains("in effect"), "{outcome:?}");
        assert!(writes(&host).is_empty());
    }

    #[test]
    fn what_keeps_the_rules_from_applying_is_reported() {
        let host = vm_with(json!([ssh(0)]), json!([ssh(0)]), false);
        let args = json!({"vmid": 100, "rules": [{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "22"}]});
        let summary = summary_of(&run_method(&host, "qemu", "firewallRules", args)).to_string();
        assert!(
            summary.contains(
                "not in effect: the cluster's firewall is disabled, net0 has no firewall=1"
            ),
            "{summary}"
        );
    }

    #[test]
    fn a_rule_pve_lists_with_errors_fails_the_method() {
        let broken = json!({"pos": 0, "type": "in", "action": "ACCEPT", "enable": 1, "source": "gw", "errors": {"source": "no such alias 'gw'"}});
        let host = vm(json!([broken.clone()]), json!([broken]));
        let args =
            json!({"vmid": 100, "rules": [{"type": "in", "action": "ACCEPT", "source": "gw"}]});
        let outcome = run_method(&host, "qemu", "firewallRules", args);
        assert!(
            failure_of(&outcome).contains("no such alias 'gw'"),
            "{outcome:?}"
        );
    }

    #[test]
    fn comments_are_trimmed_of_ascii_white_space_as_pve_reads_them() {
        let cases = [
            ("  a b \t", Some("a b")),
            ("\x0Bx\x0C\r\n", Some("x")),
            ("\u{3000}x", Some("\u{3000}x")),
            ("é", Some("é")),
            (" - ", None),
            ("0", None),
            ("x\u{a0}", None),
            (" \u{3000} ", None),
            ("", None),
            ("   ", None),
        ];
        for (text, kept) in cases {
            assert_eq!(kept_comment(text), kept, "{text:?}");
        }
        assert!(is_name("web-1_a", 20) && !is_name("1web", 20) && !is_name("w", 20));
    }

    #[test]
    fn a_cidr_has_its_host_bits_clear_when_they_are_all_zero() {
        let clear = |item| cidr(item).map(|c| c.2);
        for (item, want) in [
            ("10.0.0.0/8", Some(true)),
            ("10.0.0.1/24", Some(false)),
            ("10.0.0.1", Some(true)),
            ("10.0.0.1/32", Some(true)),
            ("0.0.0.0/0", Some(true)),
            ("128.0.0.0/0", Some(false)),
            ("10.0.0.128/25", Some(true)),
            ("10.0.0.64/25", Some(false)),
            ("fd00::/8", Some(true)),
            ("fd00::1/127", Some(false)),
            ("::/0", Some(true)),
            ("8000::/0", Some(false)),
            ("fd00::1", Some(true)),
            ("10.0.0.0/33", None),
            ("fd00::/129", None),
        ] {
            assert_eq!(clear(item), want, "{item}");
        }
    }

    #[test]
    fn ports_are_read_as_pve_parses_them() {
        for ok in ["22", "80,443", "1000:2000", "ssh", "0", "65535"] {
            assert!(is_port_list(ok), "{ok}");
        }
        for bad in [
            "70000",
            "22:21",
            "",
            "2 2",
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16",
            "1:2,3:4,5:6,7:8,9:10,11:12,13:14,15:16",
        ] {
            assert!(!is_port_list(bad), "{bad}");
        }
    }

    #[test]
    fn addresses_are_read_as_pve_parses_them() {
        for ok in [
            "10.0.0.0/8",
            "10.0.0.1",
            "10.0.0.1-10.0.0.9",
            "10.0.0.0/24,192.0.2.1",
            "+trusted",
            "gateway",
            "fd00::/8",
            "0.0.0.0/0",
            "2001:db8::1",
        ] {
            assert!(is_address_list(ok), "{ok}");
        }
        for bad in [
            "10.0.0.1/24",
            "10.0.0.0/33",
            "10.0.0.0/+8",
            "10.0.0.1,fd00::1",
            "10.0.0.256",
            "+a,+b",
            "10.0.0.1-fd00::1",
            "",
        ] {
            assert!(!is_address_list(bad), "{bad}");
        }
    }

    #[test]
    fn rules_pve_would_refuse_are_refused_naming_the_field() {
        let cases = [
            (json!({"type": "in", "action": "ALLOW"}), "rules[0].action"),
            (
                json!({"type": "forward", "action": "ACCEPT"}),
                "rules[0].type",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "dport": "22"}),
                "rules[0].proto",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "proto": "icmp", "sport": "22"}),
                "rules[0].proto",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "icmpType": "echo-request"}),
                "rules[0].proto",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "iface": "eth0"}),
                "rules[0].iface",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "log": "loud"}),
                "rules[0].log",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "source": "10.0.0.1 10.0.0.2"}),
                "rules[0].source",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "comment": "a\nb"}),
                "rules[0].comment",
            ),
            (json!({"type": "group", "action": "x"}), "rules[0].action"),
            (
                json!({"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "70000"}),
                "rules[0].dport",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "proto": "tcp", "sport": "22:21"}),
                "rules[0].sport",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "proto": "TCP"}),
                "rules[0].proto",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "proto": "1", "icmpType": "echo-request"}),
                "rules[0].proto",
            ),
            (
                json!({"type": "group", "action": "web", "source": "10.0.0.0/8"}),
                "rules[0].source",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "comment": "  "}),
                "rules[0].comment",
            ),
            (
                json!({"type": "in", "action": "ACCEPT", "source": "10.0.0.1-10.0.0.9,10.0.1.1"}),
                "rules[0].source",
            ),
        ];
        for (bad, field) in cases {
            let host = ScriptedHost::new();
            let args = json!({"vmid": 100, "rules": [bad]});
            let outcome = run_method(&host, "qemu", "firewallRules", args);
            assert!(
                failure_of(&outcome).contains(&format!("`{field}`")),
                "{field}: {outcome:?}"
            );
            assert!(host.requests.borrow().is_empty());
        }
    }
}
