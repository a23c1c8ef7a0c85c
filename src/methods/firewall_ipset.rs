//! `firewallIpset`: one of a guest's IP sets, declared (its comment and every entry), or deleted,
//! through the firewall engine (guest/firewall.rs). It reads the set list (`…/firewall/ipset`, the
//! sets' comments) and the set (`…/ipset/<name>`; PVE's "no such IPSet" reads as absent), then
//! makes the set (`POST …/ipset`) or its comment (the same with `rename` = its name), deletes
//! the entries not declared (`DELETE …/ipset/<name>/<cidr>`), updates the changed ones (`PUT`:
//! PVE replaces both nomatch and comment) and adds the missing (`POST …/ipset/<name>`); the first
//! entry write carries the set's digest. `delete` removes the set and its entries in one
//! `DELETE …/ipset/<name>` with `force` (pve-firewall `PVE/API2/Firewall/IPSet.pm`).
//! Entries are compared by address and prefix, as PVE stores them normalized (`PVE/Firewall.pm`
//! clean_cidr, parse_ip_or_cidr drop a host's `/32`, `/128`). An entry may name an alias
//! (`web`, `guest/web`, `dc/web`: IPSet.pm create_ip's `IPorCIDRorAlias`), kept as written; PVE
//! refuses one that resolves to no alias (Firewall.pm resolve_alias: the guest's aliases, then the
//! datacenter's, unless the scope names one), so the aliases it may name are read first and an
//! entry to add that names none is refused before anything is sent.

use crate::args::{is_name, ArgError, Fields};
use crate::guest::firewall::{digest, one_section, sign, FirewallChange, Read, Write, DATACENTER};
use crate::guest::reference::GuestRef;
use crate::methods::firewall_rules::{address, cidr, comment_arg, kept_comment};
use crate::pve::flex;
use crate::pve::request::{owned_segments, Verb};
use serde_json::Value;

/// An entry as declared or listed: its address, nomatch, comment.
pub struct Entry {
    pub cidr: String,
    pub nomatch: bool,
    pub comment: Option<String>,
}

/// The arguments of `firewallIpset`; `entries: None` deletes the set.
pub struct IpsetArgs {
    pub target: GuestRef,
    pub name: String,
    pub comment: Option<String>,
    pub entries: Option<Vec<Entry>>,
}

/// Whether two entries are the same to PVE: two alias references alike without case (as
/// resolve_alias looks a name up, under its scope), or two addresses alike in address and prefix
/// ([`address`]). Compared in place, with no key of each made (issue 32).
fn same(a: &str, b: &str) -> bool {
    match (alias_ref(a), alias_ref(b)) {
        (Some(_), Some(_)) => a.eq_ignore_ascii_case(b),
        (None, None) => address(a) == address(b),
        _ => false,
    }
}

/// The entry of `entries` that is the same to PVE as `cidr`.
fn entry_of<'e>(entries: &'e [Entry], cidr: &str) -> Option<&'e Entry> {
    entries.iter().find(|e| same(&e.cidr, cidr))
}

/// The scope (`""`, `guest/`, `dc/`) and name of an alias reference (Firewall.pm
/// `(dc/|guest/)?$ip_alias_pattern`; a name PVE can make is at most 64 characters).
fn alias_ref(text: &str) -> Option<(&str, &str)> {
    let (scope, name) = match text.split_once('/') {
        Some(("dc", name)) => (DATACENTER, name),
        Some(("guest", name)) => ("guest/", name),
        Some(_) => return None,
        None => ("", text),
    };
    is_name(name, 64).then_some((scope, name))
}

/// A name and optional comment of an IP set or alias, checked as pve-firewall's schema does
/// (`ipset-name`, `pve-fw-alias`: the pattern, 2 to 64 characters), and whether it is deleted
/// (then nothing but the name may be given, `others` naming the rest).
pub fn named<'a>(
    fields: &Fields<'a>,
    others: &[&str],
) -> Result<(&'a str, Option<&'a str>, bool), ArgError> {
    let name = fields.line_str("name")?;
    if !is_name(name, 64) {
        let rule = "must be a letter, then letters, digits, - or _ (2 to 64 characters)";
        return Err(ArgError::new("name", rule));
    }
    let comment = comment_arg(fields, "comment")?;
    let delete = fields.flag_or("delete", false)?;
    for key in others {
        if delete && fields.present(key)?.is_some() {
            return Err(ArgError::new(*key, "must not be given with delete: true"));
        }
    }
    Ok((name, comment, delete))
}

impl IpsetArgs {
    /// Always inlined into its one caller, the method's boxed change: the arguments are then
    /// built in their box, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let (name, comment, delete) = named(&fields, &["cidrs", "comment"])?;
        let list = fields.list("cidrs")?;
        let entries = match (delete, list) {
            (true, _) => None,
            (false, None) => return Err(ArgError::new("cidrs", "is required")),
            (false, Some(list)) => Some(entries(list)?),
        };
        Ok(IpsetArgs {
            target,
            // PVE reads `[IPSET Web]` as `web` (`PVE/Firewall.pm` generic_fw_config_parser: lc).
            name: name.to_ascii_lowercase(),
            comment: comment.map(str::to_string),
            entries,
        })
    }
}

/// The declared entries (`cidrs`), each checked as pve-firewall's create_ip would take it.
fn entries(list: &[Value]) -> Result<Vec<Entry>, ArgError> {
    let mut entries = Vec::new();
    for (i, value) in list.iter().enumerate() {
        let at = format!("cidrs[{i}]");
        let item = Fields::of(value, &at)?;
        let text = item.line_str("cidr")?;
        // PVE stores 10.0.0.1/24 as 10.0.0.0/24 (clean_cidr) and refuses a zero prefix.
        let twice = entry_of(&entries, text).is_some();
        let address = || cidr(text).is_some_and(|(_, bits, clear)| clear && bits > 0);
        if twice || !(alias_ref(text).is_some() || address()) {
            let rule = "must be an IP address or network (its host bits clear, its prefix not 0) or an alias ([dc/|guest/]name), declared once";
            return Err(ArgError::new(item.path("cidr"), rule));
        }
        let comment = comment_arg(&item, "comment")?;
        let nomatch = item.flag_or("nomatch", false)?;
        entries.push(Entry {
            cidr: text.to_string(),
            nomatch,
            comment: comment.map(str::to_string),
        });
    }
    Ok(entries)
}

/// The entries PVE lists, in its order (their `errors` are read from `read` by [`judge`]: one
/// entry type, not a pair of it, issue 32), or why they cannot be read.
fn listed(read: &Value) -> Result<Vec<Entry>, String> {
    let list = read.as_array().ok_or("PVE's IP set is not a list")?;
    let text = |v: &Value, k: &str| v.get(k).and_then(flex::string_of);
    let mut entries = Vec::with_capacity(list.len());
    for v in list {
        entries.push(Entry {
            cidr: text(v, "cidr").unwrap_or_default(),
            nomatch: v.get("nomatch").and_then(flex::bool_of) == Some(true),
            comment: text(v, "comment"),
        });
    }
    Ok(entries)
}

/// The item a named list (IP sets, aliases) lists as `name` (PVE's names compared without case),
/// and the list's digest.
pub fn named_in<'a>(read: Option<&'a Value>, name: &str) -> (Option<&'a Value>, Option<String>) {
    let list = read
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let found = list.iter().find(|v| {
        v.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
    });
    (found, digest(list.first()))
}

/// The comment of a listed item.
pub fn comment_of(item: Option<&Value>) -> Option<String> {
    item.and_then(|v| v.get("comment"))
        .and_then(flex::string_of)
}

/// Whether a comment read is the one declared, as PVE keeps it.
pub fn same_comment(want: &Option<String>, have: &Option<String>) -> bool {
    want.as_deref().and_then(kept_comment) == have.as_deref()
}

/// Whether a listed entry differs from the declared one with its address.
fn differs(want: &Entry, have: &Entry) -> bool {
    want.nomatch != have.nomatch || !same_comment(&want.comment, &have.comment)
}

fn plan(args: &IpsetArgs, read: &Read) -> Result<Vec<Write>, String> {
    let name = args.name.as_str();
    let comment = args.comment.as_deref();
    let mut writes = Vec::new();
    let Some(declared) = &args.entries else {
        // The set is deleted when it is listed.
        if read[1].is_some() {
            let force = [("force", Some("1"))];
            Write::push_of(&mut writes, Verb::Delete, &["ipset", name], &force);
        }
        return Ok(writes);
    };
    let seen = match &read[1] {
        None => {
            let made = [("name", Some(name)), ("comment", comment)];
            Write::push_of(&mut writes, Verb::Create, &["ipset"], &made);
            Vec::new()
        }
        Some(set) => {
            let (item, digest) = named_in(read[0].as_ref(), name);
            if !same_comment(&args.comment, &comment_of(item)) {
                // create_ipset with `rename` = `name` sets the comment of the set.
                let p = [
                    ("name", Some(name)),
                    ("rename", Some(name)),
                    ("comment", Some(comment.unwrap_or_default())),
                    ("digest", digest.as_deref()),
                ];
                Write::push_of(&mut writes, Verb::Create, &["ipset"], &p);
            }
            listed(set)?
        }
    };
    let first = writes.len();
    for have in &seen {
        let want = entry_of(declared, &have.cidr);
        if want.is_some_and(|want| !differs(want, have)) {
            continue;
        }
        // An entry not declared is deleted (no parameters), a changed one updated.
        let (verb, p) = match want {
            Some(want) => (Verb::Set, entry_params(want)),
            None => (Verb::Delete, Default::default()),
        };
        Write::push_of(&mut writes, verb, &["ipset", name, &have.cidr], &p[1..]);
    }
    // The first entry write is refused if the set changed since it was read (create_ip takes none).
    let set = read[1].as_ref().and_then(|s| s.get(0));
    sign(writes.get_mut(first), digest(set));
    for (i, want) in declared.iter().enumerate() {
        if entry_of(&seen, &want.cidr).is_none() {
            if let Some((alias, looked)) = unresolved(args, read, &want.cidr) {
                return Err(format!("cidrs[{i}].cidr: PVE has no such alias '{alias}' for it to name (resolve_alias: {looked}); make it first (firewallAlias for the guest's)"));
            }
            Write::push_of(
                &mut writes,
                Verb::Create,
                &["ipset", name],
                &entry_params(want),
            );
        }
    }
    Ok(writes)
}

/// An entry's parameters as create_ip takes them; update_ip takes all but `cidr` (PVE replaces
/// both nomatch and comment).
fn entry_params(entry: &Entry) -> [(&'static str, Option<&str>); 3] {
    [
        ("cidr", Some(&entry.cidr)),
        ("nomatch", entry.nomatch.then_some("1")),
        ("comment", entry.comment.as_deref()),
    ]
}

/// The alias sections an IP set's entries make the method read: the guest's when an entry names
/// an alias without scope or under `guest/`, the datacenter's without scope or under `dc/` (they
/// follow the set list and the set in the sections read).
fn alias_sections(args: &IpsetArgs) -> (bool, bool) {
    let (mut guest, mut dc) = (false, false);
    // A slice, not the Option flattened: no Flatten iterator compiled for it (issue 32).
    for entry in args.entries.as_deref().unwrap_or_default() {
        if let Some((scope, _)) = alias_ref(&entry.cidr) {
            guest |= scope != DATACENTER;
            dc |= scope != "guest/";
        }
    }
    (guest, dc)
}

/// The alias an entry to add names that does not resolve as resolve_alias would, with where it
/// was looked for: an address always resolves; an alias when the guest's aliases (unless under
/// `dc/`) or the datacenter's (unless under `guest/`) list it. One match of the scope gives both
/// the lists and their words (issue 32).
fn unresolved<'e>(
    args: &IpsetArgs,
    read: &Read,
    entry: &'e str,
) -> Option<(&'e str, &'static str)> {
    let (scope, name) = alias_ref(entry)?;
    let (guest, _) = alias_sections(args);
    let guest_list = match guest {
        true => read.get(2).and_then(Option::as_ref),
        false => None,
    };
    let dc_list = read.get(2 + usize::from(guest)).and_then(Option::as_ref);
    let (lists, looked) = match scope {
        "guest/" => ([guest_list, None], "the guest's aliases"),
        DATACENTER => ([dc_list, None], "the datacenter's aliases"),
        _ => (
            [guest_list, dc_list],
            "the guest's aliases, then the datacenter's",
        ),
    };
    let found = lists.iter().any(|list| named_in(*list, name).0.is_some());
    (!found).then_some((name, looked))
}

fn judge(args: &IpsetArgs, read: &Read) -> Result<String, String> {
    let name = &args.name;
    let (Some(declared), Some(set)) = (&args.entries, &read[1]) else {
        return match (&read[1], &args.entries) {
            (None, None) => Ok(format!("IP set {name} is gone")),
            _ => Err(format!("IP set {name} does not read back as declared")),
        };
    };
    let have = comment_of(named_in(read[0].as_ref(), name).0);
    if !same_comment(&args.comment, &have) {
        return Err(format!(
            "IP set {name} has the comment {}",
            crate::debug_text::option(have.as_deref())
        ));
    }
    let seen = listed(set)?;
    for (i, entry) in seen.iter().enumerate() {
        let cidr = &entry.cidr;
        // PVE lists an entry it cannot use with `errors` (`PVE/Firewall.pm` generic_fw_config_parser).
        if let Some(errors) = set
            .get(i)
            .and_then(|v| v.get("errors"))
            .filter(|e| !e.is_null())
        {
            return Err(format!(
                "PVE marks {cidr} with errors {errors}: it is not applied",
                errors = crate::quote::json(errors)
            ));
        }
        let want = entry_of(declared, cidr);
        if want.is_none_or(|want| differs(want, entry)) {
            let (n, c) = (entry.nomatch, &entry.comment);
            return Err(format!(
                "IP set {name} lists {cidr} (nomatch {n}, comment {}), not as declared",
                crate::debug_text::option(c.as_deref())
            ));
        }
    }
    match declared.iter().find(|d| entry_of(&seen, &d.cidr).is_none()) {
        Some(want) => Err(format!("IP set {name} lacks {}", want.cidr)),
        None => Ok(format!(
            "IP set {name} reads back with its {} declared entries",
            declared.len()
        )),
    }
}

impl FirewallChange for IpsetArgs {
    fn target(&self) -> &GuestRef {
        &self.target
    }
    fn what(&self) -> String {
        format!("the firewall IP set {}", self.name)
    }
    fn sections(&self) -> Vec<Vec<String>> {
        let mut sections = one_section("ipset");
        sections.push(owned_segments(&["ipset", &self.name]));
        let (guest, dc) = alias_sections(self);
        if guest {
            sections.push(owned_segments(&["aliases"]));
        }
        if dc {
            sections.push(owned_segments(&[DATACENTER, "aliases"]));
        }
        sections
    }
    fn missing(&self) -> Option<&'static str> {
        Some("no such IPSet")
    }
    fn plan(&self, read: &Read) -> Result<Vec<Write>, String> {
        plan(self, read)
    }
    fn judge(&self, read: &Read) -> Result<String, String> {
        judge(self, read)
    }
}

/// `firewallIpset`'s change, from its arguments (run by guest/firewall.rs `change_firewall`).
pub fn change(args: &Value) -> Result<Box<dyn FirewallChange>, ArgError> {
    Ok(Box::new(IpsetArgs::parse(args)?))
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::{json, Value};

    const BASE: &str = "/nodes/pve1/lxc/100/firewall";

    #[test]
    fn entries_are_the_same_to_pve_by_alias_without_case_or_by_address_and_prefix() {
        use super::same;
        for (a, b) in [
            ("Web", "web"),
            ("dc/LAN", "dc/lan"),
            ("10.0.0.1", "10.0.0.1/32"),
            ("fd00::", "fd00::/128"),
            ("10.0.0.0/8", "10.0.0.0/8"),
        ] {
            assert!(same(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("dc/web", "guest/web"),
            ("web", "dc/web"),
            ("web", "10.0.0.1"),
            ("10.0.0.0/8", "10.0.0.0/16"),
            ("10.0.0.1", "10.0.0.2"),
        ] {
            assert!(!same(a, b), "{a} {b}");
        }
    }

    /// CT 100 whose set list and set `web` read `sets`/`set` before, then `after`; `None`: no set.
    fn ct(sets: Value, set: Option<Value>, after: Option<Value>) -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "lxc", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/lxc/100/status/current",
            json!({"status": "stopped"}),
        );
        host.data("GET /nodes/pve1/lxc/100/config", json!({}));
        host.data(&format!("GET {BASE}/ipset"), sets);
        let answer = |v: Option<Value>| match v {
            Some(v) => Answer::Data(v),
            None => Answer::Error(500, "no such IPSet 'web'".into()),
        };
        host.on(
            &format!("GET {BASE}/ipset/web"),
            [answer(set), answer(after)],
        );
        for route in [
            "POST {B}/ipset",
            "POST {B}/ipset/web",
            "DELETE {B}/ipset/web",
            "PUT {B}/ipset/web/10.0.0.0/8",
            "DELETE {B}/ipset/web/192.0.2.1",
        ] {
            host.data(&route.replace("{B}", BASE), Value::Null);
        }
        host.data(&format!("GET {BASE}/options"), json!({"enable": 1}));
        host.data("GET /cluster/firewall/options", json!({"enable": 1}));
        host
    }

    fn writes(host: &ScriptedHost) -> Vec<String> {
        host.writes_after("/firewall/")
    }

    #[test]
    fn a_missing_set_is_made_with_its_entries_and_must_read_back_equal() {
        let after = json!([{"cidr": "10.0.0.0/8", "nomatch": 1, "digest": "d"}, {"cidr": "fd00::", "digest": "d"}]);
        let host = ct(json!([]), None, Some(after));
        let args = json!({"vmid": 100, "name": "Web", "cidrs": [{"cidr": "10.0.0.0/8", "nomatch": true}, {"cidr": "fd00::/128"}]});
        let outcome = run_method(&host, "lxc", "firewallIpset", args);
        let sent = writes(&host);
        assert!(
            summary_of(&outcome).contains("IP set web reads back"),
            "{outcome:?} {sent:?}"
        );
        assert_eq!(
            sent,
            [
                "POST ipset name=web",
                "POST ipset/web cidr=10.0.0.0%2F8&nomatch=1",
                "POST ipset/web cidr=fd00%3A%3A%2F128"
            ]
        );
    }

    #[test]
    fn extras_are_deleted_changes_put_under_the_digest_and_a_comment_renamed_onto_itself() {
        let set = json!([{"cidr": "10.0.0.0/8", "comment": "old", "digest": "d1"}, {"cidr": "192.0.2.1", "digest": "d1"}]);
        let after = json!([{"cidr": "10.0.0.0/8", "digest": "d2"}]);
        let host = ct(
            json!([{"name": "web", "comment": "x", "digest": "l1"}]),
            Some(set),
            Some(after),
        );
        let args = json!({"vmid": 100, "name": "web", "cidrs": [{"cidr": "10.0.0.0/8"}]});
        let outcome = run_method(&host, "lxc", "firewallIpset", args);
        let sent = writes(&host);
        assert_eq!(
            sent,
            [
                "POST ipset name=web&rename=web&comment=&digest=l1",
                "PUT ipset/10.0.0.0%2F8 digest=d1",
                "DELETE ipset/192.0.2.1 ",
            ]
            .map(|s| s
                .replace("ipset/", "ipset/web/")
                .replace("ipset/web/web", "ipset/web")),
            "{outcome:?}"
        );
        // The list read back still names the comment: the set does not read as declared.
        assert!(
            failure_of(&outcome).contains("has the comment Some(\"x\")"),
            "{outcome:?}"
        );
    }

    #[test]
    fn delete_removes_the_set_with_its_entries_in_one_request() {
        let host = ct(
            json!([{"name": "web", "digest": "l"}]),
            Some(json!([{"cidr": "10.0.0.0/8"}])),
            None,
        );
        let outcome = run_method(
            &host,
            "lxc",
            "firewallIpset",
            json!({"vmid": 100, "name": "web", "delete": true}),
        );
        assert!(
            summary_of(&outcome).contains("IP set web is gone"),
            "{outcome:?}"
        );
        assert_eq!(writes(&host), ["DELETE ipset/web?force=1 "]);
    }

    /// [`ct`] with the guest's aliases and the datacenter's as given.
    fn with_aliases(host: ScriptedHost, guest: Value, dc: Value) -> ScriptedHost {
        host.data(&format!("GET {BASE}/aliases"), guest);
        host.data("GET /cluster/firewall/aliases", dc);
        host
    }

    #[test]
    fn an_entry_naming_an_alias_is_added_as_written_once_the_alias_is_seen() {
        let after = json!([{"cidr": "dc/LAN", "digest": "d"}, {"cidr": "web", "digest": "d"}]);
        let host = with_aliases(
            ct(json!([{"name": "web"}]), Some(json!([])), Some(after)),
            json!([{"name": "web", "cidr": "192.0.2.1"}]),
            json!([{"name": "lan", "cidr": "10.0.0.0/8"}]),
        );
        let args =
            json!({"vmid": 100, "name": "web", "cidrs": [{"cidr": "dc/LAN"}, {"cidr": "web"}]});
        let outcome = run_method(&host, "lxc", "firewallIpset", args);
        assert!(
            summary_of(&outcome).contains("its 2 declared entries"),
            "{outcome:?}"
        );
        assert_eq!(
            writes(&host),
            ["POST ipset/web cidr=dc%2FLAN", "POST ipset/web cidr=web"]
        );
    }

    #[test]
    fn an_entry_naming_an_alias_pve_cannot_resolve_is_refused_before_any_write() {
        // `guest/lan` looks only at the guest's aliases; the datacenter's `lan` does not count.
        let host = with_aliases(
            ct(
                json!([{"name": "web"}]),
                Some(json!([{"cidr": "192.0.2.9"}])),
                None,
            ),
            json!([]),
            json!([{"name": "lan", "cidr": "10.0.0.0/8"}]),
        );
        let args = json!({"vmid": 100, "name": "web", "cidrs": [{"cidr": "10.0.0.0/8"}, {"cidr": "guest/lan"}]});
        let outcome = run_method(&host, "lxc", "firewallIpset", args);
        let message = failure_of(&outcome);
        assert!(
            message.contains("cidrs[1].cidr: PVE has no such alias 'lan'")
                && message.contains("nothing was sent"),
            "{message}"
        );
        assert!(writes(&host).is_empty());
    }

    #[test]
    fn only_the_alias_lists_an_entry_may_name_are_read() {
        let host = with_aliases(
            ct(json!([]), None, Some(json!([{"cidr": "dc/lan"}]))),
            json!([]),
            json!([{"name": "lan", "cidr": "10.0.0.0/8"}]),
        );
        let args = json!({"vmid": 100, "name": "web", "cidrs": [{"cidr": "dc/lan"}]});
        let outcome = run_method(&host, "lxc", "firewallIpset", args);
        summary_of(&outcome);
        let reads = host.requests.borrow();
        assert!(reads
            .iter()
            .any(|r| r.url.ends_with("/cluster/firewall/aliases")));
        assert!(!reads
            .iter()
            .any(|r| r.url.ends_with("/100/firewall/aliases")));
    }

    #[test]
    fn an_entry_pve_lists_with_errors_fails_the_method() {
        let set = json!([{"cidr": "10.0.0.0/8", "nomatch": 1, "errors": {"nomatch": "nomatch not supported by kernel"}}]);
        let host = ct(json!([{"name": "web"}]), Some(set.clone()), Some(set));
        let args =
            json!({"vmid": 100, "name": "web", "cidrs": [{"cidr": "10.0.0.0/8", "nomatch": true}]});
        let outcome = run_method(&host, "lxc", "firewallIpset", args);
        assert!(
            failure_of(&outcome).contains("nomatch not supported by kernel"),
            "{outcome:?}"
        );
        assert!(writes(&host).is_empty());
    }

    #[test]
    fn sets_pve_would_refuse_are_refused_naming_the_field() {
        for (args, field) in [
            (json!({"name": "w"}), "name"),
            (json!({"name": "1web", "cidrs": []}), "name"),
            (json!({"name": "web"}), "cidrs"),
            (
                json!({"name": "web", "cidrs": [{"cidr": "10.0.0.1/8"}]}),
                "cidrs[0].cidr",
            ),
            (
                json!({"name": "web", "cidrs": [{"cidr": "0.0.0.0/0"}]}),
                "cidrs[0].cidr",
            ),
            (
                json!({"name": "web", "cidrs": [{"cidr": "10.0.0.0/"}]}),
                "cidrs[0].cidr",
            ),
            (
                json!({"name": "web", "cidrs": [{"cidr": "lan/web"}]}),
                "cidrs[0].cidr",
            ),
            (
                json!({"name": "web", "cidrs": [{"cidr": "Web"}, {"cidr": "web"}]}),
                "cidrs[1].cidr",
            ),
            (
                json!({"name": "web", "cidrs": [{"cidr": "10.0.0.1"}, {"cidr": "10.0.0.1/32"}]}),
                "cidrs[1].cidr",
            ),
            (
                json!({"name": "web", "cidrs": [{"cidr": "10.0.0.1", "comment": " "}]}),
                "cidrs[0].comment",
            ),
            (json!({"name": "web", "delete": true, "cidrs": []}), "cidrs"),
        ] {
            let mut args = args;
            args["vmid"] = json!(100);
            let host = ScriptedHost::new();
            let outcome = run_method(&host, "lxc", "firewallIpset", args);
            assert!(
                failure_of(&outcome).contains(&format!("`{field}`")),
                "{field}: {outcome:?}"
            );
            assert!(host.requests.borrow().is_empty());
        }
    }
}
