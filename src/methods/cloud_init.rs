//! `cloudInit` (qemu): configures cloud-init so that it really applies. Sets the requested options
//! (read back like `setConfig`), regenerates the cloud-init drive (`PUT …/cloudinit`), then proves
//! from the config PVE generates (`GET …/cloudinit/dump?type=user|network|meta`) that every asked
//! value is in it, and that `GET …/cloudinit` lists none of them as still pending against the
//! drive. Without a cloud-init drive it fails before changing anything, saying how to add one.
//!
//! A running VM reads its cloud-init drive at boot: unless `applyPending: "reboot"` (a verified
//! reboot, then nothing may be pending), it applies the new config at its next boot, and the
//! summary says so. `cipassword` is never echoed: PVE dumps only its hash, checked by presence.

use crate::args::{ArgError, Fields, Kind, Read, Spec};
use crate::client::shaped;
use crate::explain::{could_not_args, mutation_failed};
use crate::guest::config::ConfigSnapshot;
use crate::guest::evidence::Evidence;
use crate::guest::reboot::ApplyPending;
use crate::guest::reference::GuestRef;
use crate::guest::target::Target;
use crate::host::Host;
use crate::methods::set_config::{
    apply, pending_read_after_reboot, reboot_then_pending, SetConfigArgs,
};
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::quote::push_item;
use crate::quote::Joined;
use crate::run::Run;
use serde_json::{Map, Value};

/// PVE's network devices per VM (`$MAX_NETS`): ipconfig0 … ipconfig31.
pub const MAX_NETS: usize = 32;

/// The cloud-init formats PVE generates (`citype`).
const CITYPES: [&str; 3] = ["configdrive2", "nocloud", "opennebula"];

/// The arguments of `cloudInit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudInitArgs {
    /// The target and the cloud-init options to set (`changes`, as PVE names them, in a fixed
    /// order), set as `setConfig` sets them, leaving what is pending for later; one value, not a
    /// copy made to set them (issue 32).
    pub set: SetConfigArgs,
    pub apply_pending: ApplyPending,
    /// The shutdown half of a reboot (applyPending: "reboot").
    pub timeout_sec: u64,
}

/// The options read first, in order: each given one is set, as PVE names it.
const FIRST: usize = 6;
/// The fields in the order they are checked: [`FIRST`] options, then (after the ipconfigs) the
/// rest.
const FIELDS: [Spec; FIRST + 4] = [
    Spec::new("ciuser", Kind::OptionalLine),
    Spec::new("nameserver", Kind::OptionalLine),
    Spec::new("searchdomain", Kind::OptionalLine),
    Spec::new("cicustom", Kind::OptionalLine),
    Spec::new("cipassword", Kind::Text).rule(password_fault),
    // Checked by `check_ssh_keys`, whose rule names the line.
    Spec::new("sshkeys", Kind::Text),
    Spec::new("citype", Kind::Text).rule(citype_fault),
    Spec::new("ciupgrade", Kind::OptionalFlag),
    Spec::new("applyPending", Kind::Text).rule(apply_fault),
    Spec::new("timeoutSec", Kind::IntOr(1, 86_400, 120)),
];

fn password_fault(password: &str) -> Option<&'static str> {
    let bad = password.is_empty() || password.contains(['\n', '\r', '\0']);
    bad.then_some("must be non-empty and single-line")
}

fn citype_fault(citype: &str) -> Option<&'static str> {
    (!CITYPES.contains(&citype)).then_some("must be one of configdrive2, nocloud, opennebula")
}

/// [`ApplyPending::parse`]'s rule.
fn apply_fault(apply: &str) -> Option<&'static str> {
    (!matches!(apply, "none" | "reboot")).then_some("must be \"none\" or \"reboot\"")
}

impl CloudInitArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        // One table in two walks, borrowed and checked; the ipconfigs (numbered keys) between them.
        let mut read = [Read::default(); FIELDS.len()];
        let (first, rest) = FIELDS.split_at(FIRST);
        let (read_first, read_rest) = read.split_at_mut(FIRST);
        fields.read_all(first, read_first)?;
        if let Some(keys) = read_first.last().and_then(|sshkeys| sshkeys.text) {
            check_ssh_keys(keys)?;
        }
        let mut options = Vec::new();
        for (spec, read) in first.iter().zip(read_first.iter()) {
            if let Some(value) = read.text {
                options.push((spec.key.to_string(), value.to_string()));
            }
        }
        for n in 0..MAX_NETS {
            let key = format!("ipconfig{n}");
            if let Some(value) = fields.optional_line_str(&key)? {
                options.push((key, value.to_string()));
            }
        }
        fields.read_all(rest, read_rest)?;
        let [.., citype, upgrade, apply, timeout] = read;
        if let Some(citype) = citype.text {
            options.push(("citype".into(), citype.to_string()));
        }
        if let Some(upgrade) = upgrade.flag() {
            options.push(("ciupgrade".into(), if upgrade { "1" } else { "0" }.into()));
        }
        Ok(CloudInitArgs {
            set: SetConfigArgs {
                target,
                changes: options,
                apply_pending: ApplyPending::Later,
            },
            apply_pending: match apply.text {
                Some("reboot") => ApplyPending::Reboot,
                _ => ApplyPending::Later,
            },
            timeout_sec: timeout.int as u64,
        })
    }

    fn value(&self, key: &str) -> Option<&str> {
        for (k, v) in &self.set.changes {
            if k == key {
                return Some(v);
            }
        }
        None
    }
}

/// What PVE accepts as an ssh public key line (`PVE::Tools::validate_ssh_public_keys` runs
/// `ssh-keygen -l` on it): a key type, base64 key data, an optional comment.
fn check_ssh_keys(keys: &str) -> Result<(), ArgError> {
    const TYPES: [&str; 8] = [
        "ssh-rsa",
        "ssh-dss",
        "ssh-ed25519",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    ];
    if keys.contains('\0') {
        return Err(ArgError::new("sshkeys", "must not contain NUL"));
    }
    for (i, line) in keys.split('\n').enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.splitn(3, ' ');
        let kind = words.next().unwrap_or_default();
        let data = words.next().unwrap_or_default();
        let body = data.trim_end_matches('=');
        let base64 = !body.is_empty()
            && data.len() - body.len() <= 3
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
        if !TYPES.contains(&kind) || !base64 {
            return Err(ArgError::new(
                "sshkeys",
                format!("line {} is not an ssh public key (`<type> <base64> [comment]`, as PVE validates keys)", i + 1),
            ));
        }
    }
    Ok(())
}

/// A request of `cloudInit`'s course, in [`STEPS`]' order.
#[derive(Clone, Copy)]
enum Step {
    /// The config the VM runs with: it must hold a cloud-init drive.
    Config,
    /// `PUT …/cloudinit`, once the options are set.
    Regenerate,
    /// `GET …/cloudinit/dump?type=<part>`.
    Dump(&'static str),
    /// `GET …/cloudinit`: what is pending against the drive.
    Pending,
}

const STEPS: [Step; 6] = [
    Step::Config,
    Step::Regenerate,
    Step::Dump("user"),
    Step::Dump("network"),
    Step::Dump("meta"),
    Step::Pending,
];

/// `cloudInit`'s course, once the guest is found (`change_course::guest_change`): the module
/// doc's steps; the verdict, and what the record shows pending.
pub async fn course<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &CloudInitArgs,
) -> (Result<String, String>, Map<String, Value>) {
    let mut pending = Map::new();
    // gate (a cloud-init drive) → set the options → regenerate the drive → read back what PVE
    // generates from it and what it lists pending against it → apply at boot (at the next one, see
    // `without_reboot`; else a verified reboot, then nothing may be pending). Each answer is judged
    // by a plain function below; a labeled block, not a nested async fn (issue 32).
    let verdict = 'configure: {
        let (label, vmid) = (ev.label(run), ev.at.vmid);
        let pve = run.pve();
        let (mut missing, mut summary) = (Vec::new(), String::new());
        // Its requests in order, sent from one await (issue 32): the config, `PUT …/cloudinit`,
        // the three dumps, `GET …/cloudinit`.
        for step in STEPS {
            let request = match step {
                Step::Config => endpoints::guest_config_current(&ev.at.node, run.kind, vmid),
                Step::Regenerate => {
                    ev.trail.sending();
                    endpoints::cloudinit_regenerate(&ev.at.node, vmid)
                }
                Step::Dump(part) => endpoints::cloudinit_dump(&ev.at.node, vmid, part),
                Step::Pending if !missing.is_empty() => break 'configure Err(format!(
                    "the cloud-init config PVE generates for {label} lacks what was asked: {} — check the options' format (and cicustom, whose files replace the generated parts)",
                    missing.joined("; ")
                )),
                Step::Pending => endpoints::cloudinit_pending(&ev.at.node, vmid),
            };
            let answer = pve.call(&request).await;
            match step {
                Step::Config => {
                    let config = ev.config_read(run, &request, answer);
                    or_break!('configure, require_drive(&label, vmid, config));
                    if !args.set.changes.is_empty() {
                        let (applied, snapshot) = apply(run, ev, &args.set.changes).await;
                        if let Some(snapshot) = snapshot {
                            pending = snapshot.pending;
                        }
                        or_break!('configure, applied);
                    }
                }
                Step::Regenerate => {
                    ev.trail.answered(&answer);
                    or_break!('configure, answer.map_err(|e| {
                        mutation_failed(format_args!("regenerate the cloud-init drive of {label}"), &e, "GET …/cloudinit (run cloudInit again)").0
                    }));
                }
                Step::Dump(part) => {
                    let text: String = or_break!('configure, shaped(&request, "a cloud-init config", answer).map_err(|e| {
                        could_not_args(format_args!("read the generated cloud-init {part} config of {label}"), &e).0
                    }));
                    missing.append(&mut lacks(part, &text, args));
                }
                Step::Pending => {
                    let rows = shaped(&request, "a cloud-init pending list", answer);
                    summary = or_break!('configure, drive_current(&label, args, rows));
                }
            }
        }
        if let Some(verdict) = without_reboot(run, ev, args, &summary) {
            break 'configure Ok(verdict);
        }
        let (rebooted, after) = reboot_then_pending(run, ev, args.timeout_sec).await;
        match rebooted {
            Ok(rebooted) => after_reboot(&label, &summary, &rebooted, after, &mut pending),
            Err(why) => {
                let after = pending_read_after_reboot(run, ev, after);
                pending = after.map(|a| a.pending).unwrap_or_default();
                Err(why)
            }
        }
    };
    (verdict, pending)
}

/// A running VM takes its cloud-init config at boot: the summary when no reboot applies it now (a
/// VM not running reads it at its next start; a running one is left to its next boot, with a
/// warning, unless `applyPending: "reboot"`), `None` when the VM is to be rebooted.
fn without_reboot<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &CloudInitArgs,
    summary: &str,
) -> Option<String> {
    if !Target::Running.reached(run.kind, &ev.status) {
        return Some(format!("{summary}; the VM reads it at its next start"));
    }
    if args.apply_pending == ApplyPending::Reboot {
        return None;
    }
    let note = format!(
        "{} is running: the guest applies the new cloud-init config at its next boot (applyPending: \"reboot\" reboots it now)",
        ev.label(run)
    );
    ev.warn(run, note);
    Some(summary.to_string())
}

/// After a verified reboot nothing may be pending; `pending` becomes what is.
fn after_reboot(
    label: &str,
    summary: &str,
    rebooted: &str,
    after: Result<ConfigSnapshot, PveError>,
    pending: &mut Map<String, Value>,
) -> Result<String, String> {
    let after = after.map_err(|e| {
        pending.clear();
        could_not_args(
            format_args!("read the pending changes of {label} after the reboot"),
            &e,
        )
        .0
    })?;
    let mut keys = String::new();
    for key in after.pending.keys().chain(&after.pending_delete) {
        push_item(&mut keys, ", ", key);
    }
    *pending = after.pending;
    match keys.is_empty() {
        true => Ok(format!("{summary}; {rebooted}; nothing is pending")),
        false => Err(format!(
            "{summary}; {rebooted}, but changes are still pending after the reboot: {keys}"
        )),
    }
}

/// The config must hold a cloud-init drive; without one PVE generates nothing.
fn require_drive(
    label: &str,
    vmid: u32,
    config: Result<Map<String, Value>, String>,
) -> Result<(), String> {
    let config = config?;
    let own = format!("vm-{vmid}-cloudinit");
    for (key, value) in &config {
        if is_cloudinit_drive(&own, key, value.as_str().unwrap_or_default()) {
            return Ok(());
        }
    }
    Err(format!(
        "{label} has no cloud-init drive, so PVE would generate nothing: add one first, e.g. setConfig with {{\"ide2\": \"<storage>:cloudinit\"}} (a storage with images content), then run cloudInit again; nothing was changed"
    ))
}

/// Whether `key: value` is a cloud-init drive (qemu-server `drive_is_cloudinit`): an ide, sata or
/// scsi disk (a VM's disk bus but virtio) whose volume is named `own` (`vm-<vmid>-cloudinit`) or
/// `cloudinit`, any extension.
fn is_cloudinit_drive(own: &str, key: &str, value: &str) -> bool {
    let disk = GuestKind::Qemu.is_disk(key) && !key.starts_with("virtio");
    let volume = value.split(',').next().unwrap_or_default();
    let base = volume.rsplit([':', '/']).next().unwrap_or_default();
    let stem = base.split('.').next().unwrap_or_default();
    disk && volume.contains(':') && (stem == "cloudinit" || stem == own)
}

/// What `part` of the generated config lacks of the asked values (cipassword by presence only).
/// Each expectation is met by any one of its needles (nocloud and configdrive2 word it apart).
fn lacks(part: &str, text: &str, args: &CloudInitArgs) -> Vec<String> {
    let mut lacking = Vec::new();
    // `what` in pieces: one copy of the code that words every expectation.
    let mut want = |needles: &[&str], what: &[&str]| {
        let mut met = false;
        for needle in needles {
            met |= text.contains(needle);
        }
        if !met {
            let mut line = format!("{part} config has no ");
            for piece in what {
                line.push_str(piece);
            }
            lacking.push(line);
        }
    };
    match part {
        "user" => {
            if let Some(user) = args.value("ciuser") {
                want(&[&format!("\nuser: {user}\n")], &["`user: ", user, "`"]);
            }
            if args.value("cipassword").is_some() {
                want(&["\npassword: "], &["password"]);
            }
            for key in args.value("sshkeys").unwrap_or_default().split('\n') {
                let key = key.trim();
                if !key.is_empty() {
                    let end = key.char_indices().nth(32).map_or(key.len(), |(at, _)| at);
                    let shown = &key[..end];
                    want(&[&format!("  - {key}\n")], &["ssh key ", shown, "…"]);
                }
            }
        }
        "network" => {
            for (key, value) in &args.set.changes {
                if !key.starts_with("ipconfig") {
                    continue;
                }
                for setting in value.split(',') {
                    let Some((name, setting)) = setting.split_once('=') else {
                        continue;
                    };
                    let needles: &[&str] = match (name, setting) {
                        ("ip", "dhcp") => &["dhcp4", "inet dhcp"],
                        ("ip6", "dhcp") => &["dhcp6", "inet6 dhcp"],
                        ("ip6", "auto") => &["ipv6_slaac", "inet6 auto"],
                        ("ip" | "ip6", address) => &[address.split('/').next().unwrap_or_default()],
                        ("gw" | "gw6", gateway) => &[gateway],
                        _ => continue,
                    };
                    want(needles, &[key, "'s ", name, "=", setting]);
                }
            }
            for option in ["nameserver", "searchdomain"] {
                for item in args.value(option).unwrap_or_default().split_whitespace() {
                    want(&[item], &[option, " ", item]);
                }
            }
        }
        _ => want(&["instance-id: ", "\"uuid\""], &["instance id"]),
    }
    lacking
}

/// The summary, once `GET …/cloudinit` lists none of the asked options pending against the
/// regenerated drive (a row with a `pending` value or a `delete`); other pending keys are named.
fn drive_current(
    label: &str,
    args: &CloudInitArgs,
    rows: Result<Vec<Map<String, Value>>, PveError>,
) -> Result<String, String> {
    let rows = rows.map_err(|e| {
        could_not_args(
            format_args!("read what is pending against the cloud-init drive of {label}"),
            &e,
        )
        .0
    })?;
    let (mut stale, mut asked) = (String::new(), String::new());
    for row in &rows {
        let key = row.get("key").and_then(Value::as_str);
        let Some(key) = key.filter(|_| row.contains_key("pending") || row.contains_key("delete"))
        else {
            continue;
        };
        push_item(&mut stale, ", ", key);
        if args.value(key).is_some() {
            push_item(&mut asked, ", ", key);
        }
    }
    if !asked.is_empty() {
        return Err(format!(
            "the cloud-init drive of {label} was regenerated, but GET …/cloudinit still lists {asked} as pending against it — check the drive's storage and the task log"
        ));
    }
    let mut summary = format!(
        "{label}: cloud-init drive regenerated; user, network and meta config carry {}",
        described(args)
    );
    if !stale.is_empty() {
        summary.push_str("; pending against the drive (not asked here): ");
        summary.push_str(&stale);
    }
    Ok(summary)
}

fn described(args: &CloudInitArgs) -> String {
    match args.set.changes.is_empty() {
        true => "the VM's current cloud-init options".to_string(),
        false => {
            let mut keys = String::new();
            for (key, _) in &args.set.changes {
                push_item(&mut keys, ", ", key);
            }
            keys
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<CloudInitArgs, ArgError> {
        CloudInitArgs::parse(&v)
    }

    #[test]
    fn ssh_keys_are_validated_line_by_line() {
        assert!(parse(
            json!({"vmid": 100, "sshkeys": "ssh-ed25519 AAAAC3Nza me@x\n\nssh-rsa AAAA== y"})
        )
        .is_ok());
        let e =
            parse(json!({"vmid": 100, "sshkeys": "ssh-ed25519 AAAA me\nnot a key"})).unwrap_err();
        assert_eq!(e.field, "sshkeys");
        assert!(e.rule.starts_with("line 2 "), "{}", e.rule);
    }

    #[test]
    fn citype_and_apply_pending_are_enums() {
        assert_eq!(
            parse(json!({"vmid": 100, "citype": "nocloud2"}))
                .unwrap_err()
                .field,
            "citype"
        );
        assert_eq!(
            parse(json!({"vmid": 100, "applyPending": "now"}))
                .unwrap_err()
                .field,
            "applyPending"
        );
    }

    #[test]
    fn a_dump_without_the_asked_user_or_address_is_named() {
        let args =
            parse(json!({"vmid": 100, "ciuser": "ops", "ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1"}))
                .unwrap();
        assert!(lacks("user", "#cloud-config\nuser: ops\n", &args).is_empty());
        assert_eq!(
            lacks("user", "#cloud-config\n", &args),
            vec!["user config has no `user: ops`"]
        );
        let network =
            "      - type: static\n        address: '10.0.0.5'\n        gateway: '10.0.0.1'\n";
        assert!(lacks("network", network, &args).is_empty());
        assert_eq!(lacks("network", "version: 1\n", &args).len(), 2);
        assert_eq!(
            lacks("meta", "", &args),
            vec!["meta config has no instance id"]
        );
        assert!(lacks("meta", "instance-id: 5e1f\n", &args).is_empty());
    }
}
