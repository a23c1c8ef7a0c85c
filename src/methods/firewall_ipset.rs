//! `firewallIpset`: one of a guest's IP sets, declared (its comment and every entry), or deleted,
//! through the firewall engine (guest/firewall.rs). It reads the set list (`…/firewall/ipset`, the
//! sets' comments) and the set (`…/ipset/<name>`; PVE's "no such IPSet" reads as absent), then
//! makes the set (`POST …/ipset`) or its comment (the same with `rename` = its name), deletes
//! the entries not declared (`DELETE …/ipset/<name>/<cidr>`), updates the changed ones (`PUT`:
//! PVE replaces both nomatch and comment) and adds the missing (`POST …/ipset/<name>`); the first
//! entry write carries the set's digest. `delete` removes the set and its entries in one
//! `DELETE …/ipset/<name>` with `force` (pve-firewall `PVE/API2/Firewall/IPSet.pm`).
//! Entries are compared by address and prefix, as PVE stores them normalized (`PVE/Firewall.pm`
//! clean_cidr, parse_ip_or_cidr drop a host's `/32`, `/128`).

use crate::args::{ArgError, Fields};
use crate::guest::firewall::{change_firewall, FirewallChange, Read, Write};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::methods::firewall_rules::{check_comment, cidr, is_name};
use crate::outcome::{Failure, Outcome};
use crate::pve::flex;
use crate::pve::request::Verb;
use crate::run::Run;
use serde_json::Value;
use std::net::IpAddr;

/// An entry as declared or listed: its address and prefix, nomatch, comment.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub cidr: String,
    pub nomatch: bool,
    pub comment: Option<String>,
}

/// The arguments of `firewallIpset`; `entries: None` deletes the set.
#[derive(Debug, Clone, PartialEq)]
pub struct IpsetArgs {
    pub target: GuestRef,
    pub name: String,
    pub comment: Option<String>,
    pub entries: Option<Vec<Entry>>,
}

/// An address as PVE compares it.
fn key(text: &str) -> Option<(IpAddr, u32)> {
    cidr(text).map(|(ip, bits, _)| (ip, bits))
}

/// A name and optional comment of an IP set or alias, checked as pve-firewall's schema does
/// (`ipset-name`, `pve-fw-alias`: the pattern, 2 to 64 characters), and whether it is deleted
/// (then nothing but the name may be given, `others` naming the rest).
pub fn named(fields: &Fields, others: &[&str]) -> Result<(String, Option<String>, bool), ArgError> {
    let name: String = fields.line("name")?;
    if !is_name(&name, 64) {
        let rule = "must be a letter, then letters, digits, - or _ (2 to 64 characters)";
        return Err(ArgError::new("name", rule));
    }
    let comment = fields.optional::<String>("comment")?;
    if let Some(c) = &comment {
        check_comment("comment", c)?;
    }
    let delete = fields.or("delete", false)?;
    for key in others {
        if delete && fields.optional::<Value>(key)?.is_some() {
            return Err(ArgError::new(*key, "must not be given with delete: true"));
        }
    }
    Ok((name, comment, delete))
}

impl IpsetArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let (name, comment, delete) = named(&fields, &["cidrs", "comment"])?;
        // PVE reads `[IPSET Web]` as `web` (`PVE/Firewall.pm` generic_fw_config_parser: lc).
        let name = name.to_ascii_lowercase();
        if delete {
            return Ok(IpsetArgs {
                target,
                name,
                comment,
                entries: None,
            });
        }
        let list: Vec<Value> = fields.required("cidrs")?;
        let mut entries: Vec<Entry> = Vec::new();
        for (i, value) in list.iter().enumerate() {
            let item = Fields::of(value, &format!("cidrs[{i}]"))?;
            let text: String = item.line("cidr")?;
            let refuse = |why: &str| Err(ArgError::new(item.path("cidr"), why));
            match cidr(&text) {
                None => return refuse("must be an IPv4 or IPv6 address or CIDR network"),
                Some((_, _, false)) => {
                    return refuse(
                        "must have its host bits clear (PVE stores 10.0.0.1/24 as 10.0.0.0/24)",
                    )
                }
                Some((_, 0, _)) => {
                    return refuse("must not have a zero prefix: PVE refuses it in IP sets")
                }
                Some(_) => {}
            }
            if entries.iter().any(|e| key(&e.cidr) == key(&text)) {
                return refuse("is declared twice: PVE keeps one entry per address");
            }
            let comment = item.optional::<String>("comment")?;
            if let Some(c) = &comment {
                check_comment(&item.path("comment"), c)?;
            }
            let nomatch = item.or("nomatch", false)?;
            entries.push(Entry {
                cidr: text,
                nomatch,
                comment,
            });
        }
        Ok(IpsetArgs {
            target,
            name,
            comment,
            entries: Some(entries),
        })
    }
}

/// The entries PVE lists (with their `errors`, if any), or why they cannot be read.
fn listed(read: &Value) -> Result<Vec<(Entry, Option<&Value>)>, String> {
    let list = read.as_array().ok_or("PVE's IP set is not a list")?;
    let text = |v: &Value, k: &str| v.get(k).and_then(flex::string_of);
    Ok(list
        .iter()
        .map(|v| {
            let entry = Entry {
                cidr: text(v, "cidr").unwrap_or_default(),
                nomatch: v.get("nomatch").and_then(flex::bool_of) == Some(true),
                comment: text(v, "comment"),
            };
            (entry, v.get("errors").filter(|e| !e.is_null()))
        })
        .collect())
}

/// The comment a comment-bearing list (`name`, `comment`) gives `name`, and the list's digest.
pub fn comment_in(read: Option<&Value>, name: &str) -> (Option<String>, Option<String>) {
    let list = read
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let text = |v: &Value, k: &str| v.get(k).and_then(flex::string_of);
    let found = list
        .iter()
        .find(|v| text(v, "name").is_some_and(|n| n.eq_ignore_ascii_case(name)));
    let digest = list.first().and_then(|v| text(v, "digest"));
    (found.and_then(|v| text(v, "comment")), digest)
}

/// Whether a comment read is the one declared (PVE trims it).
pub fn same_comment(want: &Option<String>, have: &Option<String>) -> bool {
    want.as_deref().map(str::trim) == have.as_deref()
}

fn same(want: &Entry, have: &Entry) -> bool {
    want.nomatch == have.nomatch && same_comment(&want.comment, &have.comment)
}

/// The entry's parameters for a create or an update.
fn params(entry: &Entry, cidr: bool) -> Vec<(String, String)> {
    let mut p = Vec::new();
    if cidr {
        p.push(("cidr".to_string(), entry.cidr.clone()));
    }
    if entry.nomatch {
        p.push(("nomatch".to_string(), "1".to_string()));
    }
    p.extend(
        entry
            .comment
            .iter()
            .map(|c| ("comment".to_string(), c.clone())),
    );
    p
}

fn plan(args: &IpsetArgs, read: &Read) -> Result<Vec<Write>, String> {
    let name = args.name.as_str();
    let force = || vec![("force".to_string(), "1".to_string())];
    let Some(declared) = &args.entries else {
        return Ok(match &read[1] {
            Some(_) => vec![Write::new(Verb::Delete, &["ipset", name], force())],
            None => Vec::new(),
        });
    };
    let mut writes = Vec::new();
    let mut comment = Vec::new();
    comment.extend(
        args.comment
            .iter()
            .map(|c| ("comment".to_string(), c.clone())),
    );
    let seen = match &read[1] {
        None => {
            comment.insert(0, ("name".into(), name.into()));
            writes.push(Write::new(Verb::Create, &["ipset"], comment));
            Vec::new()
        }
        Some(set) => {
            let (have, digest) = comment_in(read[0].as_ref(), name);
            if !same_comment(&args.comment, &have) {
                let mut p = vec![("name".into(), name.into()), ("rename".into(), name.into())];
                p.push(("comment".into(), args.comment.clone().unwrap_or_default()));
                p.extend(digest.map(|d| ("digest".to_string(), d)));
                writes.push(Write::new(Verb::Create, &["ipset"], p));
            }
            listed(set)?
        }
    };
    let first = writes.len();
    let find = |e: &Entry| declared.iter().find(|d| key(&d.cidr) == key(&e.cidr));
    for (have, _) in &seen {
        if find(have).is_none() {
            writes.push(Write::new(
                Verb::Delete,
                &["ipset", name, &have.cidr],
                Vec::new(),
            ));
        }
    }
    for (have, _) in &seen {
        match find(have) {
            Some(want) if !same(want, have) => {
                writes.push(Write::new(
                    Verb::Set,
                    &["ipset", name, &have.cidr],
                    params(want, false),
                ));
            }
            _ => {}
        }
    }
    for want in declared {
        if !seen
            .iter()
            .any(|(have, _)| key(&have.cidr) == key(&want.cidr))
        {
            writes.push(Write::new(
                Verb::Create,
                &["ipset", name],
                params(want, true),
            ));
        }
    }
    // The first entry write is refused if the set changed since it was read (create_ip takes none).
    let digest = read[1]
        .as_ref()
        .and_then(|s| s.get(0))
        .and_then(|e| e.get("digest"));
    if let (Some(w), Some(d)) = (writes.get_mut(first), digest.and_then(flex::string_of)) {
        if w.verb != Verb::Create {
            w.params.push(("digest".into(), d));
        }
    }
    Ok(writes)
}

fn judge(args: &IpsetArgs, read: &Read) -> Result<String, String> {
    let name = &args.name;
    let (Some(declared), Some(set)) = (&args.entries, &read[1]) else {
        return match read[1] {
            None if args.entries.is_none() => Ok(format!("IP set {name} is gone")),
            None => Err(format!("PVE has no IP set {name}")),
            Some(_) => Err(format!("PVE still has IP set {name}")),
        };
    };
    let (have, _) = comment_in(read[0].as_ref(), name);
    if !same_comment(&args.comment, &have) {
        return Err(format!(
            "IP set {name} has the comment {have:?}, declared {:?}",
            args.comment
        ));
    }
    let seen = listed(set)?;
    for (entry, errors) in &seen {
        if let Some(errors) = errors {
            return Err(format!(
                "PVE marks entry {} with errors {errors}: it is not applied",
                entry.cidr
            ));
        }
        match declared.iter().find(|d| key(&d.cidr) == key(&entry.cidr)) {
            None => {
                return Err(format!(
                    "IP set {name} holds {}, which was not declared",
                    entry.cidr
                ))
            }
            Some(want) if !same(want, entry) => {
                let (n, c) = (entry.nomatch, &entry.comment);
                let (wn, wc) = (want.nomatch, &want.comment);
                return Err(format!(
                    "entry {} reads nomatch {n}, comment {c:?} where nomatch {wn}, comment {wc:?} was declared",
                    entry.cidr
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(want) = declared
        .iter()
        .find(|d| !seen.iter().any(|(e, _)| key(&e.cidr) == key(&d.cidr)))
    {
        return Err(format!("IP set {name} lacks {}", want.cidr));
    }
    Ok(format!(
        "IP set {name} reads back with its {} declared entries",
        declared.len()
    ))
}

/// Runs `firewallIpset`.
pub async fn firewall_ipset<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match IpsetArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let change = FirewallChange {
        what: format!("the firewall IP set {}", args.name),
        sections: vec![
            vec!["ipset".into()],
            vec!["ipset".into(), args.name.clone()],
        ],
        missing: Some("no such IPSet"),
        plan: &|read| plan(&args, read),
        judge: &|read| judge(&args, read),
    };
    change_firewall(run, &args.target, &change).await
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::{json, Value};

    const BASE: &str = "/nodes/pve1/lxc/100/firewall";

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
        let requests = host.requests.borrow();
        let sent = requests.iter().filter(|r| r.method != "GET");
        sent.map(|r| {
            format!(
                "{} {} {}",
                r.method,
                r.url.rsplit("/firewall/").next().unwrap_or_default(),
                r.body.clone().unwrap_or_default()
            )
        })
        .collect()
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
                "DELETE ipset/192.0.2.1?digest=d1 ",
                "PUT ipset/10.0.0.0%2F8 ",
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
