//! `setConfig`: changes a guest's config with `PUT …/config` (synchronous), then reads it back with
//! `GET …/pending` — the running config and the pending changes in one snapshot. It succeeds only
//! when every requested key reads back applied (the comparison rule is in `guest::config`) or
//! pending. PVE applies a change to a stopped guest at once. On a running guest it applies at once
//! what it can hot-plug (qemu: the kinds the VM's `hotplug` option allows — network, disk, usb, cpu,
//! memory; lxc: e.g. network interfaces and mount points) and leaves the rest pending until the
//! guest is restarted: a stop and start, or a reboot (qemu-server's and pve-container's reboot is a
//! shutdown and a fresh start, which applies them). `applyPending: "reboot"` does that reboot,
//! verified, after which nothing may be pending. Pending keys are reported everywhere: the summary
//! ("… pending until a restart: net0"), a warning log line and the record (`pending` in the guest
//! record), never counted as applied. A key that is neither applied nor pending fails the method,
//! naming the key, the requested and the observed value. The guest record is written whenever the
//! change was sent.
//!
//! `delete` (a list of keys) is verified too: each key must be gone, or its deletion pending.
//! `sshkeys` is URL-encoded on the way (PVE's format for it) unless it already is.

use crate::args::{ArgError, Fields};
use crate::client::shaped;
use crate::explain::could_not_args;
use crate::explain::{hint, outcome_unknown};
use crate::guest::config::{
    record_value, ssh_keys_param, wire_options, ConfigSnapshot, Reading, MASKED_KEY,
};
use crate::guest::evidence::Evidence;
use crate::guest::reboot::{reboot_verified, ApplyPending};
use crate::guest::record::GuestRecord;
use crate::guest::reference::GuestRef;
use crate::guest::root_only::{ct_refusal, qemu_refusal, Caller, CtState};
use crate::guest::target::Target;
use crate::guest::volumes::{listed_on_storage, listed_request, storage_of};
use crate::host::Host;
use crate::methods::get_config::snapshot_of;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::quote::Joined;
use crate::record_json::list;
use crate::run::Run;
use serde_json::{Map, Value};

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
    /// `applyPending: "reboot"`: reboot when something is pending, then nothing may be.
    pub apply_pending: ApplyPending,
}

impl SetConfigArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        SetConfigArgs::read(&Fields::of(args, "")?, true)
    }

    /// The guest and `applyPending`, as each method built on `setConfig` but `setConfig` itself
    /// reads them, its changes still to fill: one reader for them all (issue 32).
    pub fn of_guest(fields: &Fields) -> Result<Self, ArgError> {
        SetConfigArgs::read(fields, false)
    }

    /// The guest, then (`config`: `setConfig`'s own) the options given, then `applyPending`: one
    /// copy of the reading for `setConfig` and the methods built on it (issue 32).
    fn read(fields: &Fields, config: bool) -> Result<Self, ArgError> {
        let target = GuestRef::parse(fields)?;
        let mut changes = Vec::new();
        if config {
            changes = fields
                .options("config", &NOT_CONFIG_KEYS)?
                .ok_or_else(|| ArgError::new("config", "is required"))?;
            if changes.is_empty() {
                return Err(ArgError::new("config", "must hold at least one key"));
            }
        }
        Ok(SetConfigArgs {
            target,
            changes,
            apply_pending: ApplyPending::parse(fields)?,
        })
    }
}

/// `setConfig`'s change, from its arguments: the options as given, in PVE's wire form.
pub fn set_config(kind: GuestKind, args: &Value) -> Result<SetConfigArgs, ArgError> {
    let mut args = SetConfigArgs::parse(args)?;
    wire_options(kind, "config", &mut args.changes)?;
    Ok(args)
}

/// `setConfig` changes only the keys it is given: nothing to complete, nothing more to read back.
impl ConfigChange for SetConfigArgs {
    fn base(&self) -> &SetConfigArgs {
        self
    }
}

/// One method built on `setConfig` (setConfig, setNic, removeNic, attachDisk, detachDisk) as
/// data and two plain functions, so that one course ([`course`]) is compiled for all of them
/// (issue 32: a wrapper future per method cost its own state machine).
pub trait ConfigChange {
    /// The guest, the changes given and what to do with pending ones.
    fn base(&self) -> &SetConfigArgs;
    /// Completes a change's options (`changes`) from the guest's kind and id and the config the
    /// sighting read, or says why the change cannot be made (nothing is sent then).
    fn fill(
        &self,
        _kind: GuestKind,
        _vmid: u32,
        _config: &Map<String, Value>,
        _changes: &mut Vec<(String, String)>,
    ) -> Result<(), String> {
        Ok(())
    }
    /// What a change's read-back shows beyond its keys, given the config the sighting read and
    /// the snapshot after the change: words written onto the `summary` (grown where it lies, no
    /// text of their own to join: issue 32) and a volume the change freed, which its storage must
    /// no longer list (borrowed from the config the sighting read: no copy, issue 32) — or why
    /// the change did not do what it was for.
    fn shown<'c>(
        &self,
        _vmid: u32,
        _config: &'c Map<String, Value>,
        _after: &ConfigSnapshot,
        _summary: &mut String,
    ) -> Result<Option<&'c str>, String> {
        Ok(None)
    }
}

/// The course of a method built on `setConfig`, once the guest is found ([`guest_change`]): let
/// the change complete its options from the config the sighting read (a NIC keeps its MAC),
/// apply and judge them, reboot when asked, judge what the change reads from the result. The
/// verdict, and the snapshot the record shows as pending ([`with_pending`]).
pub async fn course<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    method: &dyn ConfigChange,
) -> (Result<String, String>, Option<ConfigSnapshot>) {
    // The changes given, completed: the guest and `applyPending` are read where they are. They
    // end with their apply: the reboot and the reads after it do not carry them (issue 32).
    let base = method.base();
    let (mut verdict, mut snapshot) = {
        let mut changes = base.changes.clone();
        let filled = method.fill(run.kind, ev.at.vmid, &ev.config, &mut changes);
        match filled {
            Ok(()) => apply(run, ev, &changes).await,
            Err(refusal) => (Err(format!("{refusal}; nothing was changed")), None),
        }
    };
    // `applyPending: "reboot"` with changes pending: a verified reboot (the guest must run), then
    // the pending set must be empty. The reboot and the read after it are awaited here, each
    // answer judged by a plain function (issue 32).
    if let (Ok(summary), Some(taken)) = (&verdict, &snapshot) {
        if base.apply_pending == ApplyPending::Reboot && taken.has_pending() {
            let summary = summary.clone();
            // What was pending before a reboot is no observation of after it.
            (verdict, snapshot) = match not_running(run, ev, &summary) {
                Some(message) => (Err(message), None),
                None => {
                    let (rebooted, after) = reboot_then_pending(run, ev, REBOOT_SHUTDOWN_SEC).await;
                    rebooted_judged(run, ev, &summary, rebooted, after)
                }
            };
        }
    }
    // The summary with what the read-back shows, once a freed volume is seen gone from its
    // storage.
    if let (Ok(summary), Some(taken)) = (&mut verdict, &snapshot) {
        let said = summary.len();
        let judged = match method.shown(ev.at.vmid, &ev.config, taken, summary) {
            Ok(Some(volid)) => {
                let request = listed_request(&ev.at.node, ev.at.vmid, volid);
                let answer = run.pve().call(&request).await;
                freed_judged(volid, listed_on_storage(&ev.at.node, volid, answer))
            }
            judged => judged.map(drop),
        };
        if let Err(why) = judged {
            // The summary as it was before the read-back's words, and why not.
            summary.truncate(said);
            summary.push_str(", but ");
            summary.push_str(&why);
            verdict = Err(std::mem::take(summary));
        }
    }
    (verdict, snapshot)
}

/// The record of a change: what the snapshot after it shows pending, when one was read.
pub fn with_pending(record: &mut GuestRecord, snapshot: &mut Option<ConfigSnapshot>) {
    if let Some(snapshot) = snapshot.take() {
        record.put_pending(snapshot.pending);
        list(
            &mut record.fields,
            "pendingDelete",
            &snapshot.pending_delete,
        );
    }
}

/// A read-back's freed volume `volid` against its storage's list (`listed`): gone, or why not.
fn freed_judged(volid: &str, listed: Result<bool, String>) -> Result<(), String> {
    match listed? {
        false => Ok(()),
        true => Err(format!(
            "storage {} still lists {volid}: it was not destroyed",
            storage_of(volid)
        )),
    }
}

/// `applyPending: "reboot"` needs a running guest: why not, when it is not.
fn not_running<H: Host>(run: &Run<'_, H>, ev: &Evidence, summary: &str) -> Option<String> {
    match Target::Running.reached(run.kind, &ev.status) {
        true => None,
        false => Some(format!(
            "{summary}, but applyPending: \"reboot\" needs a running guest and {} is {} — it applies them at its next start",
            ev.label(run),
            ev.status.status
        )),
    }
}

/// An `applyPending` reboot (`rebooted`) and the config read after it (`after`): the verdict
/// (nothing may be pending) and the snapshot the record shows.
fn rebooted_judged<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    summary: &str,
    rebooted: Result<String, String>,
    after: Result<ConfigSnapshot, PveError>,
) -> (Result<String, String>, Option<ConfigSnapshot>) {
    let rebooted = match rebooted {
        Ok(rebooted) => rebooted,
        Err(why) => {
            // A reboot may have applied them: the read after it is what is pending.
            let after = pending_read_after_reboot(run, ev, after);
            return (Err(format!("{summary}; applyPending: {why}")), after);
        }
    };
    let label = ev.label(run);
    match after {
        Ok(after) if after.has_pending() => {
            let mut keys = Vec::new();
            for key in after.pending.keys().chain(&after.pending_delete) {
                keys.push(key.as_str());
            }
            let message = format!(
                "{summary}; {rebooted}, but {} still pending after the reboot: {}",
                match keys.len() {
                    1 => "is",
                    _ => "are",
                },
                keys.joined(", ")
            );
            (Err(message), Some(after))
        }
        Ok(after) => (
            Ok(format!(
                "{label}: config applied; {rebooted}; nothing is pending"
            )),
            Some(after),
        ),
        Err(e) => (
            Err(format!(
                "{summary}; {rebooted}, but the pending changes could not be read back ({e} — {})",
                hint(e.kind)
            )),
            None,
        ),
    }
}

/// The pending changes after a reboot attempt that failed (a reboot may have applied them), read
/// once more: the snapshot, or (unreadable) none and a warning in the record saying why.
pub fn pending_read_after_reboot<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    read: Result<ConfigSnapshot, PveError>,
) -> Option<ConfigSnapshot> {
    match read {
        Ok(after) => Some(after),
        Err(e) => {
            let why = format!(
                "the pending changes could not be read after the reboot ({e}): they are not recorded"
            );
            ev.warn(run, why);
            None
        }
    }
}

/// A verified reboot (`applyPending: "reboot"`; its shutdown half may take `timeout_sec`), then the
/// pending changes read again either way (what was pending before a reboot is no observation of
/// after it): one future for `setConfig` and `cloudInit` (issue 32).
pub async fn reboot_then_pending<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    timeout_sec: u64,
) -> (Result<String, String>, Result<ConfigSnapshot, PveError>) {
    let rebooted = reboot_verified(run, ev, timeout_sec).await;
    let request = endpoints::guest_pending(&ev.at.node, run.kind, ev.at.vmid);
    let answer = run.pve().call(&request).await;
    (
        rebooted,
        answer.and_then(|data| snapshot_of(&request, data)),
    )
}

/// The shutdown half of an `applyPending` reboot may take this long.
const REBOOT_SHUTDOWN_SEC: u64 = 120;

/// Sends the changes (key → value as text, in the caller's order) and reads them back; the
/// snapshot is what the record shows as pending. (Also `cloudInit`'s first step.)
pub async fn apply<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    changes: &[(String, String)],
) -> (Result<String, String>, Option<ConfigSnapshot>) {
    let label = ev.label(run);
    let mut options = changes.to_vec();
    for (key, value) in &mut options {
        if key == "sshkeys" {
            *value = ssh_keys_param(value);
        }
    }
    let caller = Caller::of(&run.global.transport);
    let pve = run.pve();
    // A container's `features` rule depends on its current config, which is then read first.
    let reads_features = caller != Caller::RootPam
        && run.kind == GuestKind::Lxc
        && options.iter().any(|(key, value)| {
            key == "features"
                || key == "delete" && value.split([',', ';', ' ']).any(|k| k == "features")
        });
    let mut step = match reads_features {
        true => Step::Features,
        false => Step::Set,
    };
    let mut config = Map::new();
    // Its requests in order, sent from one await (issue 32): the config (when the features rule
    // needs it), the change, the read-back; each answer judged in plain code.
    loop {
        let request = match step {
            Step::Features => endpoints::guest_config(&ev.at.node, run.kind, ev.at.vmid),
            Step::Set => {
                if let Some(refusal) = identity_refusal(run.kind, caller, &options, &config) {
                    let message = format!(
                        "cannot change the config of {label}: {refusal}; nothing was changed"
                    );
                    return (Err(message), None);
                }
                ev.trail.sending();
                endpoints::set_guest_config(&ev.at.node, run.kind, ev.at.vmid, &options)
            }
            Step::ReadBack => endpoints::guest_pending(&ev.at.node, run.kind, ev.at.vmid),
        };
        let answer = pve.call(&request).await;
        step = match step {
            Step::Features => match shaped(&request, "a guest config", answer) {
                Ok(read) => {
                    config = read;
                    Step::Set
                }
                Err(e) => {
                    return (
                        Err(could_not_args(
                            format_args!("read the config of {label} to check its features"),
                            &e,
                        )
                        .0),
                        None,
                    );
                }
            },
            Step::Set => {
                ev.trail.answered(&answer);
                if let Err(e) = answer {
                    return (Err(refused(&label, &e)), None);
                }
                Step::ReadBack
            }
            Step::ReadBack => {
                let snapshot = answer.and_then(|data| snapshot_of(&request, data));
                return read_back(run, ev, &label, changes, snapshot);
            }
        };
    }
}

/// A request of [`apply`], in order.
#[derive(Clone, Copy)]
enum Step {
    /// A container's config, for its `features` rule.
    Features,
    /// The change.
    Set,
    /// `GET …/pending`.
    ReadBack,
}

/// Why the config change PVE answered `e` failed: its outcome unknown, or PVE refused it.
fn refused(label: &str, e: &PveError) -> String {
    match e.outcome_unknown() {
        true => {
            let check = "its config (run getConfig)";
            outcome_unknown(format_args!("change the config of {label}"), e, check).0
        }
        false => format!(
            "PVE refused the config change of {label}: {e} — {}",
            hint(e.kind)
        ),
    }
}

/// The snapshot read back after the change: judged key by key, or why it could not be read.
fn read_back<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    label: &str,
    changes: &[(String, String)],
    read: Result<ConfigSnapshot, PveError>,
) -> (Result<String, String>, Option<ConfigSnapshot>) {
    match read {
        Ok(snapshot) => (judge(run, ev, changes, &snapshot), Some(snapshot)),
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

/// What PVE would refuse this caller (an API token) in the change (guest/root_only.rs); a
/// container's `features` rule judged by its current `config` (empty when not read).
fn identity_refusal(
    kind: GuestKind,
    caller: Caller,
    options: &[(String, String)],
    config: &Map<String, Value>,
) -> Option<String> {
    if caller == Caller::RootPam {
        return None;
    }
    // The keys set, then those deleted: borrowed, not a copy of the options (issue 32).
    let (mut deleted, mut keys) = (Vec::new(), Vec::new());
    for (key, value) in options {
        match key.as_str() {
            "delete" => deleted.extend(value.split([',', ';', ' ']).filter(|k| !k.is_empty())),
            _ => keys.push(key.as_str()),
        }
    }
    match kind {
        GuestKind::Qemu => {
            keys.extend(deleted.iter().copied());
            qemu_refusal(caller, &keys)
        }
        GuestKind::Lxc => {
            let state = CtState {
                unprivileged: config.get("unprivileged").and_then(flex::bool_of) == Some(true),
                features: config.get("features").and_then(Value::as_str),
            };
            // `delete` is no key ct_refusal flags (guest/root_only.rs): the options go whole.
            ct_refusal(caller, options, &deleted, state)
        }
    }
}

/// Applied, pending or neither, key by key.
fn judge<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    changes: &[(String, String)],
    snapshot: &ConfigSnapshot,
) -> Result<String, String> {
    let label = ev.label(run);
    let (mut applied, mut pending, mut missed) = (0, Vec::new(), Vec::new());
    // Each reading counted as it is made: no list of them per key (issue 32).
    let mut tally = |name: String, key: &str, value: &str, reading: Reading| match reading {
        Reading::Applied => applied += 1,
        Reading::Pending => pending.push(name),
        Reading::NotApplied { current, pending } => {
            missed.push(not_applied(&name, key, value, current, pending))
        }
    };
    for (key, value) in changes {
        match key.as_str() {
            // A request flag (destroy the deleted disks' volumes), not a key.
            "force" => {}
            "delete" => {
                for deleted in value.split([',', ';', ' ']) {
                    if !deleted.is_empty() {
                        let reading = snapshot.deletion(deleted);
                        tally(format!("{deleted} (delete)"), key, value, reading);
                    }
                }
            }
            _ => tally(
                key.clone(),
                key,
                value,
                snapshot.reading(run.kind, key, value),
            ),
        }
    }
    if changes.iter().any(|(k, _)| k == MASKED_KEY) {
        run.info_args(format_args!(
            "{label}: PVE never shows cipassword, so only its presence was checked"
        ));
    }
    // The pending keys listed once, for the warning and the summary.
    let listed = pending.joined(", ");
    if !pending.is_empty() {
        ev.warn(
            run,
            format!(
                "{label}: {} pending until a restart (not applied yet): {listed}",
                pending.len()
            ),
        );
    }
    if !missed.is_empty() {
        return Err(format!(
            "config change of {label} did not take effect: {} — check the option's name and format for this PVE version; PVE may have rewritten or ignored it",
            missed.joined("; ")
        ));
    }
    Ok(match pending.is_empty() {
        true => format!("{label}: {applied} applied"),
        false => format!(
            "{label}: {applied} applied, {} pending until a restart: {listed}",
            pending.len()
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
        _ => crate::quote::json(&record_value(value)),
    };
    let requested = match key {
        MASKED_KEY => "(hidden)".to_string(),
        "delete" => "deleted".to_string(),
        _ => crate::quote::json(&Value::String(requested.to_string())),
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
    use crate::outcome::Outcome;
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

    fn put_request(host: &ScriptedHost) -> crate::host::HttpRequest {
        let requests = host.requests.borrow();
        let puts: Vec<_> = requests.iter().filter(|r| r.method == "PUT").collect();
        assert_eq!(puts.len(), 1, "one config write");
        puts[0].clone()
    }

    fn failure(outcome: &Outcome) -> &str {
        match &outcome.verdict {
            Verdict::Failed { message } => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_vm_suspended_to_disk_is_refused_naming_its_lock_before_anything_is_sent() {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "stopped", "qmpstatus": "stopped", "lock": "suspended"}),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"smbios1": "uuid=a", "lock": "suspended"}),
        );
        let outcome = run_set(&host, json!({"cores": 2}));
        let message = failure(&outcome);
        assert!(message.contains("is locked (suspended)"), "{message}");
        assert!(
            message.contains(
                "suspended to disk: resume it (resume, or start with resume: true) first"
            ),
            "{message}"
        );
        let requests = host.requests.borrow();
        assert!(requests.iter().all(|r| r.method == "GET"), "nothing sent");
        assert!(host.elapsed_ms() < 1_000.0, "the lock is not waited out");
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
        let put = put_request(&host);
        assert_eq!(put.body.as_deref(), Some("cores=2&memory=4096"));
    }

    #[test]
    fn a_failed_reboot_to_apply_records_what_is_pending_after_it_not_before() {
        const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmreboot:100:root@pam!t:";
        let host = ScriptedHost::new();
        let pending = json!([{"key": "memory", "value": 2048, "pending": 4096}]);
        host.on(
            "GET /nodes/pve1/qemu/100/pending",
            [
                Answer::Data(pending),
                Answer::Data(json!([{"key": "memory", "value": 4096}])),
            ],
        );
        script(&host, json!([{"key": "memory", "value": 4096}]));
        host.data("POST /nodes/pve1/qemu/100/status/reboot", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "reboot failed"}),
        );
        let mut args = api_args(json!({"vmid": 100, "config": {"memory": "4096"}}));
        args["applyPending"] = json!("reboot");
        let outcome = run_method_of(GuestKind::Qemu, &host, "setConfig", &args);
        assert!(failure(&outcome).contains("reboot failed"), "{outcome:?}");
        assert_eq!(outcome.writes[0].data.get("pending"), None, "{outcome:?}");
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
        let put = put_request(&host);
        assert!(put
            .body
            .unwrap()
            .contains("sshkeys=ssh-ed25519%2520AAAA%2520me"));
    }

    #[test]
    fn every_boolean_goes_out_as_1_or_0_whatever_the_caller_wrote() {
        let host = ScriptedHost::new();
        script(
            &host,
            json!([
                {"key": "onboot", "value": 1},
                {"key": "acpi", "value": 1},
                {"key": "allow-ksm", "value": 0},
                {"key": "description", "value": "yes"}
            ]),
        );
        let outcome = run_set(
            &host,
            json!({"onboot": "yes", "acpi": true, "allow-ksm": "Off", "description": "yes"}),
        );
        assert!(outcome.is_success(), "{outcome:?}");
        let body = put_request(&host).body.unwrap();
        assert_eq!(body, "acpi=1&allow-ksm=0&description=yes&onboot=1");
    }

    #[test]
    fn a_value_no_boolean_for_a_boolean_key_is_refused_before_anything_is_sent() {
        let host = ScriptedHost::new();
        script(&host, json!([]));
        let outcome = run_set(&host, json!({"cores": 2, "onboot": "maybe"}));
        let message = failure(&outcome);
        assert!(message.contains("`config.onboot`"), "{message}");
        assert!(message.contains("boolean"), "{message}");
        assert!(host.requests.borrow().is_empty(), "nothing was sent");
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
            parse(json!({"tags": [1]})).unwrap_err().field,
            "config.tags"
        );
        assert_eq!(parse(json!({})).unwrap_err().field, "config");
        assert!(parse(json!({"memory": 2048, "name": "web"})).is_ok());
    }
}
