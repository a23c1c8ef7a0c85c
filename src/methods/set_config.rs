//! `setConfig`: changes a guest's config with `PUT …/config` (synchronous), then reads it back with
//! `GET …/pending` — the running config and the pending changes in one snapshot. It succeeds only
//! when every requested key reads back applied (the comparison rule is in `guest::config`) or is
//! pending until the next start; pending keys are recorded (`pending` in the guest record) and
//! logged. A key that is neither fails the method, naming the key, the requested and the observed
//! value. The guest record is written whenever the change was sent.
//!
//! `delete` (a list of keys) is verified too: each key must be gone, or its deletion pending.
//! `sshkeys` is URL-encoded on the way (PVE's format for it) unless it already is.

use crate::args::{ArgError, Fields};
use crate::explain::{hint, outcome_unknown};
use crate::guest::config::{record_value, ssh_keys_param, ConfigSnapshot, Reading, MASKED_KEY};
use crate::guest::evidence::{sight_or_absent, Evidence};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::methods::get_config::read_snapshot;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::run::{write, Run};
use serde_json::Value;

/// Parameters of `PUT …/config` that are not config keys: passing them through `config` would
/// change how PVE applies the change rather than the config.
const NOT_CONFIG_KEYS: [(&str, &str); 6] = [
    ("digest", NOT_A_KEY),
    ("skiplock", NOT_A_KEY),
    ("revert", NOT_A_KEY),
    ("background_delay", NOT_A_KEY),
    ("node", NOT_A_KEY),
    ("vmid", NOT_A_KEY),
];
const NOT_A_KEY: &str = "is a parameter of PVE's config update, not a config key";

/// The arguments of `setConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetConfigArgs {
    pub target: GuestRef,
    /// Key → value as text, in the caller's order.
    pub changes: Vec<(String, String)>,
}

impl SetConfigArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let changes = fields
            .options("config", &NOT_CONFIG_KEYS)?
            .ok_or_else(|| ArgError::new("config", "is required"))?;
        if changes.is_empty() {
            return Err(ArgError::new("config", "must hold at least one key"));
        }
        Ok(SetConfigArgs { target, changes })
    }
}

/// Runs `setConfig`.
pub async fn set_config<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match SetConfigArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let absent = |vmid| {
        let noun = run.kind.noun();
        format!("{noun} {vmid} does not exist on any node: there is no config to change")
    };
    let mut ev = match sight_or_absent(run, &args.target, absent).await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let (verdict, snapshot) = apply(run, &mut ev, &args).await;
    let mut record = ev.record(run).await;
    if let Some(snapshot) = snapshot {
        record.pending = snapshot.pending;
        record.pending_delete = snapshot.pending_delete;
    }
    let writes = vec![write(
        run.guest_spec(),
        run.guest_instance(ev.at.vmid),
        &record,
    )];
    match verdict {
        Ok(summary) => Outcome::succeeded(writes, summary),
        Err(message) => Outcome::failed(writes, message),
    }
}

/// Sends the change and reads it back; the snapshot is what the record shows as pending.
async fn apply<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &SetConfigArgs,
) -> (Result<String, String>, Option<ConfigSnapshot>) {
    let label = ev.label(run);
    let options: Vec<(String, String)> = args
        .changes
        .iter()
        .map(|(key, value)| match key.as_str() {
            "sshkeys" => (key.clone(), ssh_keys_param(value)),
            _ => (key.clone(), value.clone()),
        })
        .collect();
    let request = endpoints::set_guest_config(&ev.at.node, run.kind, ev.at.vmid, &options);
    let pve = run.pve();
    ev.trail.sending();
    let answer = pve.call(&request).await;
    ev.trail.answered(&answer);
    if let Err(e) = answer {
        let message = match e.outcome_unknown() {
            true => {
                let check = "its config (run getConfig)";
                outcome_unknown(&format!("change the config of {label}"), &e, check).0
            }
            false => format!(
                "PVE refused the config change of {label}: {e} — {}",
                hint(e.kind)
            ),
        };
        return (Err(message), None);
    }
    match read_snapshot(run, &ev.at).await {
        Ok(snapshot) => (judge(run, ev, args, &snapshot), Some(snapshot)),
        Err(e) => {
            ev.trail.outcome_unknown = true;
            let message = format!(
                "the config change of {label} was sent, but it could not be read back ({e} — {}): whether it applied is unknown",
                hint(e.kind)
            );
            (Err(message), None)
        }
    }
}

/// Applied, pending or neither, key by key.
fn judge<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &SetConfigArgs,
    snapshot: &ConfigSnapshot,
) -> Result<String, String> {
    let label = ev.label(run);
    let (mut applied, mut pending, mut missed) = (0, Vec::new(), Vec::new());
    for (key, value) in &args.changes {
        let readings: Vec<(String, Reading)> = match key.as_str() {
            "delete" => value
                .split([',', ';', ' '])
                .filter(|k| !k.is_empty())
                .map(|k| (format!("{k} (delete)"), snapshot.deletion(k)))
                .collect(),
            _ => vec![(key.clone(), snapshot.reading(run.kind, key, value))],
        };
        for (name, reading) in readings {
            match reading {
                Reading::Applied => applied += 1,
                Reading::Pending => pending.push(name),
                Reading::NotApplied { current, pending } => {
                    missed.push(not_applied(&name, key, value, current, pending))
                }
            }
        }
    }
    if args.changes.iter().any(|(k, _)| k == MASKED_KEY) {
        run.info(&format!(
            "{label}: PVE never shows cipassword, so only its presence was checked"
        ));
    }
    if !pending.is_empty() {
        ev.warn(
            run,
            format!(
                "{label}: {} pending until a restart (not applied yet): {}",
                pending.len(),
                pending.join(", ")
            ),
        );
    }
    if !missed.is_empty() {
        return Err(format!(
            "config change of {label} did not take effect: {} — check the option's name and format for this PVE version; PVE may have rewritten or ignored it",
            missed.join("; ")
        ));
    }
    Ok(match pending.is_empty() {
        true => format!("{label}: {applied} applied"),
        false => format!(
            "{label}: {applied} applied, {} pending until a restart: {}",
            pending.len(),
            pending.join(", ")
        ),
    })
}

fn not_applied(
    name: &str,
    key: &str,
    requested: &str,
    current: Option<Value>,
    pending: Option<Value>,
) -> String {
    let shown = |value: &Value| match key {
        MASKED_KEY => "(hidden)".to_string(),
        _ => record_value(value).to_string(),
    };
    let requested = match key {
        MASKED_KEY => "(hidden)".to_string(),
        "delete" => "deleted".to_string(),
        _ => Value::String(requested.to_string()).to_string(),
    };
    let observed = current.as_ref().map_or("no value".to_string(), shown);
    let pending = pending
        .as_ref()
        .map_or("no pending change".to_string(), |p| {
            format!("pending {}", shown(p))
        });
    format!("`{name}` is neither applied nor pending: requested {requested}, PVE reports {observed} ({pending})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    fn script(host: &ScriptedHost, rows: Value) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running", "qmpstatus": "running"}),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"smbios1": "uuid=a"}),
        );
        host.data("PUT /nodes/pve1/qemu/100/config", Value::Null);
        host.data("GET /nodes/pve1/qemu/100/pending", rows);
    }

    fn run_set(host: &ScriptedHost, config: Value) -> Outcome {
        let args = api_args(json!({"vmid": 100, "config": config}));
        run_method_of(GuestKind::Qemu, host, "setConfig", &args)
    }

    fn failure(outcome: &Outcome) -> &str {
        match &outcome.verdict {
            Verdict::Failed { message } => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn applied_and_pending_keys_succeed_and_pending_is_recorded() {
        let host = ScriptedHost::new();
        script(
            &host,
            json!([{"key": "cores", "value": 2}, {"key": "memory", "value": 2048, "pending": 4096}]),
        );
        let outcome = run_set(&host, json!({"cores": 2, "memory": "4096"}));
        assert!(outcome.is_success(), "{outcome:?}");
        let data = &outcome.writes[0].data;
        assert_eq!(data["pending"], json!({"memory": 4096}));
        assert_eq!(data["lastOperation"], "setConfig");
        let put = host.requests.borrow()[3].clone();
        assert_eq!(put.method, "PUT");
        assert_eq!(put.body.as_deref(), Some("cores=2&memory=4096"));
    }

    #[test]
    fn a_key_neither_applied_nor_pending_fails_naming_both_values() {
        let host = ScriptedHost::new();
        script(&host, json!([{"key": "description", "value": "old"}]));
        let outcome = run_set(&host, json!({"description": "new"}));
        let message = failure(&outcome);
        assert!(message.contains("`description`"), "{message}");
        assert!(
            message.contains("requested \"new\", PVE reports \"old\""),
            "{message}"
        );
        assert_eq!(
            outcome.writes.len(),
            1,
            "the record is written before the verdict"
        );
    }

    #[test]
    fn a_refused_change_fails_with_pves_message() {
        let host = ScriptedHost::new();
        host.on(
            "PUT /nodes/pve1/qemu/100/config",
            [Answer::Error(500, "VM is locked (backup)".into())],
        );
        script(&host, json!([]));
        let outcome = run_set(&host, json!({"cores": 4}));
        assert!(failure(&outcome).contains("VM is locked (backup)"));
    }

    #[test]
    fn ssh_keys_are_sent_encoded_and_the_password_is_never_echoed() {
        let host = ScriptedHost::new();
        script(
            &host,
            json!([{"key": "sshkeys", "value": "ssh-ed25519%20AAAA%20me"}]),
        );
        let outcome = run_set(
            &host,
            json!({"sshkeys": "ssh-ed25519 AAAA me", "cipassword": "hunter2"}),
        );
        let message = failure(&outcome);
        assert!(message.contains("`cipassword`"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
        let put = host.requests.borrow()[3].clone();
        assert!(put
            .body
            .unwrap()
            .contains("sshkeys=ssh-ed25519%2520AAAA%2520me"));
    }

    #[test]
    fn deletions_must_read_back_gone_or_pending() {
        let host = ScriptedHost::new();
        script(
            &host,
            json!([{"key": "ide2", "value": "none,media=cdrom", "delete": 1}]),
        );
        assert!(run_set(&host, json!({"delete": "ide2,unused0"})).is_success());
    }

    #[test]
    fn argument_rules_name_the_key() {
        let parse = |config: Value| SetConfigArgs::parse(&json!({"vmid": 100, "config": config}));
        assert_eq!(parse(json!({"9x": 1})).unwrap_err().field, "config.9x");
        assert_eq!(
            parse(json!({"digest": "x"})).unwrap_err().field,
            "config.digest"
        );
        assert_eq!(
            parse(json!({"tags": true})).unwrap_err().field,
            "config.tags"
        );
        assert_eq!(parse(json!({})).unwrap_err().field, "config");
        assert!(parse(json!({"memory": 2048, "name": "web"})).is_ok());
    }
}
