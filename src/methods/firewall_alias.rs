//! `firewallAlias`: one of a guest's aliases (a name for an address or network that rules and IP
//! sets use), declared or deleted, through the firewall engine (guest/firewall.rs). It reads the
//! alias list (`…/firewall/aliases`), then creates the alias (`POST …/aliases`), updates it
//! (`PUT …/aliases/<name>`: PVE replaces its cidr and comment, and keeps the name's case as
//! given) or deletes it (`DELETE …/aliases/<name>`), the update and delete carrying the list's
//! digest. PVE finds an alias by its lower-cased name (pve-firewall `PVE/API2/Firewall/Aliases.pm`,
//! `PVE/Firewall.pm` generic_fw_config_parser keys `[ALIASES]` by lc name); its cidr is checked
//! as `IPorCIDR` (pve_verify_ip_or_cidr: host bits may be set, and are kept) and read back with a
//! host's `/32`, `/128` dropped (parse_alias, parse_ip_or_cidr), so it is compared by address.

use crate::args::{ArgError, Fields};
use crate::guest::firewall::{one_section, FirewallChange, Read, Write};
use crate::guest::reference::GuestRef;
use crate::methods::firewall_ipset::{comment_of, named, named_in, same_comment};
use crate::methods::firewall_rules::{address, cidr};
use crate::pve::request::Verb;
use serde_json::Value;

/// The arguments of `firewallAlias`; `cidr: None` deletes the alias.
pub struct AliasArgs {
    pub target: GuestRef,
    pub name: String,
    pub cidr: Option<String>,
    pub comment: Option<String>,
}

impl AliasArgs {
    /// Always inlined into its one caller, the method's boxed change: the arguments are then
    /// built in their box, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let (name, comment, delete) = named(&fields, &["cidr", "comment"])?;
        let cidr = match delete {
            true => None,
            false => Some(fields.line_str("cidr")?),
        };
        if cidr.is_some_and(|c| self::cidr(c).is_none()) {
            let rule = "must be an IPv4 or IPv6 address or CIDR network";
            return Err(ArgError::new("cidr", rule));
        }
        Ok(AliasArgs {
            target,
            name: name.to_string(),
            cidr: cidr.map(str::to_string),
            comment: comment.map(str::to_string),
        })
    }
}

/// What of the alias listed differs from the declaration (nothing: `None`).
fn differs(args: &AliasArgs, alias: &Value) -> Option<String> {
    let name = alias.get("name").and_then(Value::as_str);
    let have = alias.get("cidr").and_then(Value::as_str);
    let want = args.cidr.as_deref().unwrap_or_default();
    let comment = comment_of(Some(alias));
    let same = name == Some(&args.name)
        && have.and_then(address) == address(want)
        && same_comment(&args.comment, &comment);
    (!same).then(|| {
        format!(
            "reads name {}, cidr {}, comment {}",
            crate::debug_text::option(name),
            crate::debug_text::option(have),
            crate::debug_text::option(comment.as_deref())
        )
    })
}

fn plan(args: &AliasArgs, read: &Read) -> Result<Vec<Write>, String> {
    let name = args.name.as_str();
    let (found, digest) = named_in(read[0].as_ref(), name);
    let (cidr, comment, digest) = (
        args.cidr.as_deref(),
        args.comment.as_deref(),
        digest.as_deref(),
    );
    // One list for the three writes: a new alias takes the first three, an update the last three,
    // a removal the digest alone.
    let p = [
        ("name", Some(name)),
        ("cidr", cidr),
        ("comment", comment),
        ("digest", digest),
    ];
    let alias = ["aliases", name];
    let (verb, at, params) = match (cidr, found) {
        (None, Some(_)) => (Verb::Delete, &alias[..], &p[3..]),
        (Some(_), None) => (Verb::Create, &alias[..1], &p[..3]),
        (Some(_), Some(listed)) if differs(args, listed).is_some() => {
            (Verb::Set, &alias[..], &p[1..])
        }
        _ => return Ok(Vec::new()),
    };
    let mut writes = Vec::new();
    Write::push_of(&mut writes, verb, at, params);
    Ok(writes)
}

fn judge(args: &AliasArgs, read: &Read) -> Result<String, String> {
    let name = &args.name;
    let why = match (&args.cidr, named_in(read[0].as_ref(), name).0) {
        (None, None) => return Ok(format!("alias {name} is gone")),
        (None, Some(_)) => "is still listed".to_string(),
        (Some(_), None) => "is not listed".to_string(),
        (Some(cidr), Some(alias)) => match differs(args, alias) {
            None => return Ok(format!("alias {name} reads back as {cidr}")),
            Some(why) => why,
        },
    };
    Err(format!("alias {name} {why}"))
}

impl FirewallChange for AliasArgs {
    fn target(&self) -> &GuestRef {
        &self.target
    }
    fn what(&self) -> String {
        format!("the firewall alias {}", self.name)
    }
    fn sections(&self) -> Vec<Vec<String>> {
        one_section("aliases")
    }
    fn plan(&self, read: &Read) -> Result<Vec<Write>, String> {
        plan(self, read)
    }
    fn judge(&self, read: &Read) -> Result<String, String> {
        judge(self, read)
    }
}

/// `firewallAlias`'s change, from its arguments (run by guest/firewall.rs `change_firewall`).
pub fn change(args: &Value) -> Result<Box<dyn FirewallChange>, ArgError> {
    Ok(Box::new(AliasArgs::parse(args)?))
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::{json, Value};

    const BASE: &str = "/nodes/pve1/qemu/100/firewall";

    fn vm(before: Value, after: Value) -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running"}),
        );
        host.data("GET /nodes/pve1/qemu/100/config", json!({}));
        host.on(
            &format!("GET {BASE}/aliases"),
            [Answer::Data(before), Answer::Data(after)],
        );
        for route in [
            "POST {B}/aliases",
            "PUT {B}/aliases/Gw",
            "DELETE {B}/aliases/Gw",
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
    fn a_missing_alias_is_made_and_a_host_reads_back_without_its_prefix() {
        let host = vm(
            json!([]),
            json!([{"name": "Gw", "cidr": "10.0.0.1", "digest": "d"}]),
        );
        let args = json!({"vmid": 100, "name": "Gw", "cidr": "10.0.0.1/32"});
        let outcome = run_method(&host, "qemu", "firewallAlias", args);
        assert!(
            summary_of(&outcome).contains("alias Gw reads back as 10.0.0.1/32"),
            "{outcome:?}"
        );
        assert_eq!(writes(&host), ["POST aliases name=Gw&cidr=10.0.0.1%2F32"]);
    }

    #[test]
    fn a_differing_alias_found_without_case_is_updated_under_the_digest() {
        let host = vm(
            json!([{"name": "gw", "cidr": "10.0.0.1", "digest": "d1"}]),
            json!([{"name": "gw", "cidr": "10.0.0.2", "digest": "d2"}]),
        );
        let args = json!({"vmid": 100, "name": "Gw", "cidr": "10.0.0.2", "comment": "router"});
        let outcome = run_method(&host, "qemu", "firewallAlias", args);
        assert_eq!(
            writes(&host),
            ["PUT aliases/Gw cidr=10.0.0.2&comment=router&digest=d1"]
        );
        assert!(
            failure_of(&outcome).contains("alias Gw reads name Some(\"gw\")"),
            "{outcome:?}"
        );
    }

    #[test]
    fn delete_removes_it_and_an_alias_as_declared_sends_nothing() {
        let gw = json!([{"name": "Gw", "cidr": "10.0.0.1", "digest": "d1"}]);
        let host = vm(gw.clone(), json!([]));
        let outcome = run_method(
            &host,
            "qemu",
            "firewallAlias",
            json!({"vmid": 100, "name": "Gw", "delete": true}),
        );
        assert!(
            summary_of(&outcome).contains("alias Gw is gone"),
            "{outcome:?}"
        );
        assert_eq!(writes(&host), ["DELETE aliases/Gw?digest=d1 "]);
        let host = vm(gw.clone(), gw);
        let outcome = run_method(
            &host,
            "qemu",
            "firewallAlias",
            json!({"vmid": 100, "name": "Gw", "cidr": "10.0.0.1"}),
        );
        assert!(
            summary_of(&outcome).contains("(0 writes sent)"),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_comment_is_compared_as_pve_reads_it_back_trimmed_of_ascii_space_only() {
        let gw = json!([{"name": "gw", "cidr": "10.0.0.1", "comment": "a\u{3000}", "digest": "d"}]);
        let host = vm(gw.clone(), gw);
        let args =
            json!({"vmid": 100, "name": "gw", "cidr": "10.0.0.1", "comment": " a\u{3000}\t"});
        let outcome = run_method(&host, "qemu", "firewallAlias", args);
        assert!(
            summary_of(&outcome).contains("(0 writes sent)"),
            "{outcome:?}"
        );
    }

    #[test]
    fn aliases_pve_would_refuse_are_refused_naming_the_field() {
        for (args, field) in [
            (json!({"name": "g", "cidr": "10.0.0.1"}), "name"),
            (json!({"name": "gw"}), "cidr"),
            (json!({"name": "gw", "cidr": "10.0.0.0/33"}), "cidr"),
            (json!({"name": "gw", "cidr": "gw2"}), "cidr"),
            (
                json!({"name": "gw", "delete": true, "cidr": "10.0.0.1"}),
                "cidr",
            ),
            // PVE drops a comment `0` (false to Perl) and reads `voilà` back as `voil\u{fffd}`:
            // its parser trims the line's `\h`, byte 0xA0 included (perl on pve-firewall's regexes).
            (
                json!({"name": "gw", "cidr": "10.0.0.1", "comment": "0"}),
                "comment",
            ),
            (
                json!({"name": "gw", "cidr": "10.0.0.1", "comment": "voil\u{e0} "}),
                "comment",
            ),
            (
                json!({"name": "gw", "cidr": "10.0.0.1", "comment": "x\u{a0}"}),
                "comment",
            ),
        ] {
            let mut args = args;
            args["vmid"] = json!(100);
            let host = ScriptedHost::new();
            let outcome = run_method(&host, "qemu", "firewallAlias", args);
            assert!(
                failure_of(&outcome).contains(&format!("`{field}`")),
                "{field}: {outcome:?}"
            );
            assert!(host.requests.borrow().is_empty());
        }
    }
}
