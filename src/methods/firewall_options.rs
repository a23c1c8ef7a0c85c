//! `firewallOptions`: a guest's firewall options — `enable`, the in/out policies and log levels,
//! the IP/MAC filters, DHCP, NDP and router advertisements — through the firewall engine
//! (guest/firewall.rs). Only the options given are written, in one `PUT …/firewall/options` of
//! those that differ from what was read (none: nothing is sent), and each must read back as given.

use crate::args::{ArgError, Fields};
use crate::guest::config::not_as_asked;
use crate::guest::firewall::{one_section, FirewallChange, Read, Write};
use crate::guest::reference::GuestRef;
use crate::pve::flex;
use crate::pve::request::{push_param, Verb};
use serde_json::Value;

const POLICIES: &[&str] = &["ACCEPT", "REJECT", "DROP"];
/// PVE's log levels (pve-firewall `PVE/Firewall.pm` $log_level_hash).
pub const LOG_LEVELS: &[&str] = &[
    "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "nolog",
];

/// Each option: its argument, PVE's name, and its values (`None`: a flag).
const OPTIONS: [(&str, &str, Option<&[&str]>); 10] = [
    ("enable", "enable", None),
    ("policyIn", "policy_in", Some(POLICIES)),
    ("policyOut", "policy_out", Some(POLICIES)),
    ("logLevelIn", "log_level_in", Some(LOG_LEVELS)),
    ("logLevelOut", "log_level_out", Some(LOG_LEVELS)),
    ("ipfilter", "ipfilter", None),
    ("macfilter", "macfilter", None),
    ("dhcp", "dhcp", None),
    ("ndp", "ndp", None),
    ("radv", "radv", None),
];

/// The arguments of `firewallOptions`: the guest and PVE's name and value of each option given.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionsArgs {
    pub target: GuestRef,
    pub options: Vec<(String, String)>,
}

impl OptionsArgs {
    /// Always inlined into its one caller, the method's boxed change: the arguments are then
    /// built in their box, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let mut options = Vec::new();
        for &(arg, name, values) in &OPTIONS {
            let value = match values {
                // `1` or `0` by the HA methods' one writer of a flag (issue 32).
                None => fields.flag(arg)?.map(crate::guest::ha::bit),
                Some(values) => fields.optional_one_of(arg, values)?,
            };
            if let Some(value) = value {
                options.push((name.to_string(), value));
            }
        }
        if options.is_empty() {
            let mut rule = String::from("or another option is required: ");
            for (i, &(arg, _, _)) in OPTIONS.iter().enumerate() {
                rule.push_str(if i == 0 { "" } else { ", " });
                rule.push_str(arg);
            }
            return Err(ArgError::new("enable", rule));
        }
        Ok(OptionsArgs { target, options })
    }
}

/// The options whose value `read` does not show as asked, with what it shows: the HA methods'
/// compare (issue 32), each option read as its text.
fn differing<'a>(
    asked: &'a [(String, String)],
    read: Option<&Value>,
) -> Vec<(&'a str, &'a str, String)> {
    let shown =
        |read: &Value, name: &str| read.get(name).and_then(flex::string_of).unwrap_or_default();
    crate::guest::ha::differing(asked, read.unwrap_or(&Value::Null), shown)
}

impl FirewallChange for OptionsArgs {
    fn target(&self) -> &GuestRef {
        &self.target
    }
    fn what(&self) -> String {
        "the firewall options".into()
    }
    fn sections(&self) -> Vec<Vec<String>> {
        one_section("options")
    }
    /// One write of the options that differ from what was read (none: nothing is sent).
    fn plan(&self, read: &Read) -> Result<Vec<Write>, String> {
        let mut params = Vec::new();
        // Borrowed, not consumed: no by-value iterator of the differing triples compiled.
        for (name, want, _) in &differing(&self.options, read[0].as_ref()) {
            push_param(&mut params, name, want);
        }
        let mut writes = Vec::new();
        if !params.is_empty() {
            Write::push(&mut writes, Verb::Set, &["options"], params);
        }
        Ok(writes)
    }
    fn judge(&self, read: &Read) -> Result<String, String> {
        match differing(&self.options, read[0].as_ref()).as_slice() {
            [] => {
                // `key=value, …`, pushed into one text rather than each formatted and joined.
                let mut set = String::new();
                for (key, value) in &self.options {
                    crate::quote::push_item(&mut set, ", ", key);
                    set.push('=');
                    set.push_str(value);
                }
                Ok(format!("{set} read back"))
            }
            wrong => Err(not_as_asked(wrong)),
        }
    }
}

/// `firewallOptions`'s change, from its arguments (run by guest/firewall.rs `change_firewall`).
pub fn change(args: &Value) -> Result<Box<dyn FirewallChange>, ArgError> {
    Ok(Box::new(OptionsArgs::parse(args)?))
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::{json, Value};

    fn ct(before: Value, after: Value) -> ScriptedHost {
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
        host.on(
            "GET /nodes/pve1/lxc/100/firewall/options",
            [
                Answer::Data(before),
                Answer::Data(after.clone()),
                Answer::Data(after),
            ],
        );
        host.data("PUT /nodes/pve1/lxc/100/firewall/options", Value::Null);
        host.data("GET /cluster/firewall/options", json!({"enable": 1}));
        host
    }

    #[test]
    fn only_the_options_that_differ_are_sent_and_each_must_read_back() {
        let host = ct(
            json!({"enable": 0, "policy_in": "DROP"}),
            json!({"enable": 1, "policy_in": "DROP"}),
        );
        let args = json!({"vmid": 100, "enable": true, "policyIn": "DROP"});
        let outcome = run_method(&host, "lxc", "firewallOptions", args);
        assert!(
            summary_of(&outcome).contains("enable=1, policy_in=DROP read back"),
            "{outcome:?}"
        );
        assert_eq!(host.body_of("PUT"), "enable=1");
    }

    #[test]
    fn the_options_read_back_say_whether_the_firewall_is_on_without_a_third_read() {
        let host = ct(json!({}), json!({"enable": 1}));
        let args = json!({"vmid": 100, "enable": true});
        let outcome = run_method(&host, "lxc", "firewallOptions", args);
        assert!(summary_of(&outcome).contains("in effect"), "{outcome:?}");
        let reads = host.routes_called();
        let options = "GET /nodes/pve1/lxc/100/firewall/options";
        assert_eq!(reads.iter().filter(|r| *r == options).count(), 2);
    }

    #[test]
    fn options_of_the_wrong_shape_are_not_read_as_unset() {
        let host = ct(json!("unexpected"), json!({}));
        let args = json!({"vmid": 100, "enable": true});
        let outcome = run_method(&host, "lxc", "firewallOptions", args);
        let message = failure_of(&outcome);
        let quoted = "answered \"unexpected\" where the firewall options were expected";
        assert!(message.contains(quoted), "{message}");
        assert!(!host.routes_called().iter().any(|r| r.starts_with("PUT")));
    }

    #[test]
    fn an_option_that_does_not_read_back_fails_naming_it() {
        let host = ct(json!({}), json!({"policy_out": "ACCEPT"}));
        let args = json!({"vmid": 100, "policyOut": "REJECT"});
        let outcome = run_method(&host, "lxc", "firewallOptions", args);
        assert!(
            failure_of(&outcome).contains("`policy_out` reads \"ACCEPT\", asked REJECT"),
            "{outcome:?}"
        );
    }

    #[test]
    fn bad_or_missing_options_are_refused_naming_the_field() {
        for (args, field) in [
            (json!({"vmid": 100}), "enable"),
            (json!({"vmid": 100, "policyIn": "allow"}), "policyIn"),
            (json!({"vmid": 100, "logLevelOut": "loud"}), "logLevelOut"),
            (json!({"vmid": 100, "ndp": "yes"}), "ndp"),
        ] {
            let host = ScriptedHost::new();
            let outcome = run_method(&host, "lxc", "firewallOptions", args);
            assert!(
                failure_of(&outcome).contains(&format!("`{field}`")),
                "{outcome:?}"
            );
        }
    }
}
