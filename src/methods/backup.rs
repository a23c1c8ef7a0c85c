//! `backup`: backs a guest up with vzdump and succeeds only when a new archive of that guest is in
//! the storage's `backup` content with a size above 0 — and, with `protected`, marked protected —
//! and the guest is back in the state it was in before (a `suspend` backup resumes it, a `stop`
//! backup starts it again; pve-manager PVE/VZDump.pm `exec_backup_task` only warns when that
//! fails). A task that ended OK is no proof: the archive is read back from the storage.
//!
//! PVE's own refusals are made before anything is sent: a storage that takes no backups
//! (VZDump.pm `storage_info`), a notes template vzdump would reject (`$verify_notes_template`).
//! `POST /nodes/{node}/vzdump` goes to the node the guest is on; PVE answers a bare `OK` — no task,
//! no backup — for a guest on another node (pve-manager PVE/API2/VZDump.pm `vzdump`, "silent exit
//! if specified VMs run on other nodes"), which fails the method.

use crate::args::{ArgError, Fields, Kind, Read, Spec};
use crate::guest::backups::Archive;
use crate::guest::backups::{check_backup_storage, describe_all, list_archives, stamped_write};
use crate::guest::evidence::{locked_out, settle_evidence};
use crate::guest::evidence::{sight_to_change, Evidence};
use crate::guest::reference::GuestRef;
use crate::guest::settle::describe;
use crate::host::Host;
use crate::outcome::Outcome;
use crate::outcome::RecordWrite;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::request::push_param;
use crate::pve::responses::GuestStatus;
use crate::pve::upid::Upid;
use crate::record_json::put;
use crate::run::Run;
use crate::task::read_log;
use serde_json::Value;

/// vzdump's modes (pve-manager PVE/VZDump/Common.pm `mode`).
const MODES: [&str; 3] = ["snapshot", "suspend", "stop"];
/// vzdump's `compress` values (`0`/`1` as text: PVE's enum holds strings).
const COMPRESSORS: [&str; 5] = ["0", "1", "gzip", "lzo", "zstd"];
/// The variables a notes template may use (VZDump.pm `$verify_notes_template`).
const NOTES_VARIABLES: [&str; 4] = ["cluster", "guestname", "node", "vmid"];

/// The arguments of `backup`, borrowed from the call's (nothing copied, issue 32).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupArgs<'a> {
    pub target: GuestRef,
    pub storage: &'a str,
    pub mode: &'a str,
    pub compress: Option<&'a str>,
    pub notes_template: Option<&'a str>,
    pub protected: bool,
}

/// The fields in the order they are checked (the guest after the first three).
const FIELDS: [Spec; 5] = [
    Spec::new("mode", Kind::Text).rule(mode_fault),
    Spec::new("compress", Kind::Text).rule(compress_fault),
    Spec::new("notesTemplate", Kind::Text).rule(notes_fault),
    Spec::new("storage", Kind::Segment),
    Spec::new("protected", Kind::Flag(false)),
];

fn mode_fault(mode: &str) -> Option<&'static str> {
    (!MODES.contains(&mode)).then_some("must be snapshot, suspend or stop")
}

fn compress_fault(compress: &str) -> Option<&'static str> {
    (!COMPRESSORS.contains(&compress)).then_some("must be one of \"0\", \"1\", gzip, lzo, zstd")
}

impl<'a> BackupArgs<'a> {
    pub fn parse(args: &'a Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        // One table in two walks, the guest read between them as before.
        let mut read = [Read::default(); FIELDS.len()];
        let (first, rest) = FIELDS.split_at(3);
        let (read_first, read_rest) = read.split_at_mut(3);
        fields.read_all(first, read_first)?;
        let target = GuestRef::parse(&fields)?;
        fields.read_all(rest, read_rest)?;
        let [mode, compress, notes, storage, protected] = read;
        Ok(BackupArgs {
            target,
            storage: storage.text.unwrap_or(""),
            mode: mode.text.unwrap_or("snapshot"),
            compress: compress.text,
            notes_template: notes.text,
            protected: protected.int != 0,
        })
    }

    fn params(&self, vmid: u32) -> Vec<(String, String)> {
        let mut params = Vec::new();
        let mut add = |key: &str, value: &str| push_param(&mut params, key, value);
        add("vmid", &vmid.to_string());
        add("storage", self.storage);
        add("mode", self.mode);
        if let Some(compress) = self.compress {
            add("compress", compress);
        }
        if let Some(template) = self.notes_template.filter(|t| !t.is_empty()) {
            add("notes-template", template);
        }
        if self.protected {
            add("protected", "1");
        }
        params
    }
}

/// vzdump's check of a notes template (pve-manager PVE/VZDump.pm `$verify_notes_template`, run by
/// `verify_vzdump_parameters` before the task): one line; `\` only before `n` or `\`; `{{…}}`
/// only around cluster, guestname, node or vmid.
fn notes_fault(template: &str) -> Option<&'static str> {
    if template.contains('\n') {
        return Some("must be one line (PVE: contains a line feed)");
    }
    // No argv can carry a NUL, so it could never reach pvesh over ssh: refused on both transports.
    if template.contains('\0') {
        return Some("must not contain NUL");
    }
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        // Perl's /\\(.)/g: a backslash escapes the next character; a trailing one escapes nothing.
        if c == '\\' {
            if let Some(next) = chars.next() {
                if next != 'n' && next != '\\' {
                    return Some(
                        "may escape only \\n and \\\\ (PVE refuses any other escape sequence)",
                    );
                }
            }
        }
    }
    if names_unknown_variable(template) {
        return Some(
            "may use only the variables {{cluster}}, {{guestname}}, {{node}} and {{vmid}}",
        );
    }
    None
}

/// Whether a name of Perl's `/\{\{([^\s{}]+)\}\}/g` matches, left to right (`\s` as ASCII
/// whitespace), is not among [`NOTES_VARIABLES`]: judged as each is found, not listed first (issue
/// 32).
fn names_unknown_variable(template: &str) -> bool {
    let bytes = template.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'{' && bytes[i + 1] == b'{' {
            let rest = &template[i + 2..];
            let len = rest
                .find(|c: char| c.is_ascii_whitespace() || c == '\x0b' || c == '{' || c == '}')
                .unwrap_or(rest.len());
            if len > 0 && rest[len..].starts_with("}}") {
                if !NOTES_VARIABLES.contains(&&rest[..len]) {
                    return true;
                }
                i += 2 + len + 2;
                continue;
            }
        }
        i += 1;
    }
    false
}

/// Runs `backup`.
pub async fn backup<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match BackupArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return crate::outcome::Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, "back up").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let mut made = None;
    let mut mode = None;
    // The backup itself, a labeled block (`or_break!` its `?`), not an async function of its own:
    // `made` keeps the new archive as listed, and `mode` the mode vzdump reported, for the record,
    // whatever the verdict.
    let ev = &mut *ev;
    let args = &args;
    let verdict = 'verdict: {
        let label = ev.label(run);
        let node = ev.at.node.clone();
        let vmid = ev.at.vmid;
        let stores = endpoints::node_storage(&node);
        let answer = run.pve().call(&stores).await;
        let checked = check_backup_storage(&node, args.storage, &stores, answer);
        or_break!(
            'verdict,
            checked.map_err(|why| format!("cannot back up {label}: {why}; nothing was changed"))
        );
        let of_guest = |why: String| format!("back up {label}: {why}");
        // The guest's backups on the storage before the backup, then after it: one read for
        // both, the loop's second turn ending it (issue 32).
        let mut before = None;
        let mut after = loop {
            let listed = list_archives(run, &node, args.storage, Some(vmid)).await;
            let listed = or_break!('verdict, listed.map_err(of_guest));
            if before.is_some() {
                break listed;
            }
            before = Some(listed);
            // What the guest must be back in: its status (and a VM's QEMU run state), and the
            // state as a failed wait names it, kept rather than the whole status (issue 32).
            let before_state = (ev.status.status.clone(), ev.status.qmpstatus.clone());
            let wanted = format!("its state before the backup ({})", describe(&ev.status));
            let action = format!("back up {label} to storage {}", args.storage);
            let request = endpoints::vzdump(&node, args.params(vmid));
            let pve = run.pve();
            let ran = ev
                .trail
                .run(&pve, &request, format_args!("{action}"), None, true)
                .await;
            or_break!('verdict, ran);
            // The sighting followed no task: the trail's task is vzdump's, if it started one.
            let Some(upid) = ev.trail.last_task.as_deref().and_then(Upid::parse) else {
                break 'verdict Err(skipped_message(&action, run.kind, vmid));
            };
            // vzdump picks the mode itself: a guest that is not running is backed up in `stop`
            // mode, and a snapshot that cannot be taken falls back to `suspend` (pve-manager
            // PVE/VZDump.pm exec_backup_task, which logs `backup mode: <mode>`). An unreadable log
            // leaves it unknown.
            mode = mode_logged(&read_log(&pve, &upid).await);
            let kind = run.kind;
            let back = &|s: &GuestStatus| same_state(kind, &before_state, s);
            let waited = settle_evidence(run, ev, run.wait_budget_ms(), back).await;
            or_break!('verdict, waited.map_err(|why| locked_out(run, ev, &wanted, why)));
        };
        let before = before.unwrap_or_default();
        let Some(at) = made_by_run(&before, &after) else {
            break 'verdict Err(format!(
                "the backup task ended successfully, but storage {} on node {node} lists no new backup of {label} (its backups of it: {}) — check the vzdump task's log",
                args.storage,
                describe_all(&after)
            ));
        };
        // Taken out of the listing, not copied (issue 32).
        let archive = after.swap_remove(at);
        let verdict = judge(run, ev, args, &archive, mode);
        made = Some(archive);
        verdict
    };
    let mut outcome = ev.outcome(run, verdict).await;
    if let Some(archive) = made {
        outcome.writes.push(record(run, ev, args, archive, mode));
    }
    outcome
}

/// The `backup` record (`<vm|ct>-<vmid>-backup`) of the archive this run made, as the storage
/// lists it: the archive made JSON by the serializer the `backups` record uses (the guest's vmid,
/// no subtype, no verification), with the node, the storage, the mode vzdump used as its log
/// reports it (`backup mode: …`; absent when not seen), the task, and when. No serializer of its
/// own (issue 32).
fn record<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    args: &BackupArgs<'_>,
    archive: Archive,
    mode: Option<&str>,
) -> RecordWrite {
    let archive = Archive {
        volid: archive.volid,
        vmid: Some(u64::from(ev.at.vmid)),
        subtype: None,
        size: archive.size,
        ctime: archive.ctime,
        format: archive.format,
        notes: archive.notes,
        protected: archive.protected,
        verification: None,
    };
    let mut record = archive.json();
    put(&mut record, "mode", mode);
    put(&mut record, "task", ev.trail.last_task.as_deref());
    let instance = format!("{}-backup", run.guest_instance(ev.at.vmid));
    stamped_write(run, record, &ev.at.node, args.storage, "backup", instance)
}

/// The failure of a vzdump PVE skipped: a bare `OK` and no task.
fn skipped_message(action: &str, kind: GuestKind, vmid: u32) -> String {
    format!(
        "{action}: PVE answered OK without starting a backup task — vzdump skips, silently, a guest that is not on the node it runs on (pve-manager PVE/API2/VZDump.pm); run lookup to see where {} {vmid} is",
        kind.noun()
    )
}

/// The mode vzdump used as its log reports it (as [`MODES`] names it: nothing of the log is
/// kept); `None` when no line shows one.
fn mode_logged(log: &[String]) -> Option<&'static str> {
    for line in log {
        let Some((_, used)) = line.split_once("backup mode: ") else {
            continue;
        };
        let used = used.trim();
        for mode in MODES {
            if mode == used {
                return Some(mode);
            }
        }
    }
    None
}

/// Where `after` lists the archive this run made: the one `before` did not list. With more than
/// one, another backup of the same guest ended meanwhile: the newest (the last listed of equals)
/// is this run's.
fn made_by_run(before: &[Archive], after: &[Archive]) -> Option<usize> {
    let mut made: Option<(usize, Option<u64>)> = None;
    for (at, archive) in after.iter().enumerate() {
        if before.iter().any(|b| b.volid == archive.volid) {
            continue;
        }
        if made.is_none_or(|(_, ctime)| archive.ctime >= ctime) {
            made = Some((at, archive.ctime));
        }
    }
    made.map(|(at, _)| at)
}

/// A guest is back in its state when its status (and a VM's QEMU run state) is what it was.
fn same_state(kind: GuestKind, before: &(String, Option<String>), now: &GuestStatus) -> bool {
    now.status == before.0 && (kind == GuestKind::Lxc || now.qmpstatus == before.1)
}

/// The verdict on the new archive as listed.
fn judge<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &BackupArgs<'_>,
    archive: &Archive,
    mode: Option<&str>,
) -> Result<String, String> {
    let label = ev.label(run);
    if archive.size.unwrap_or(0) == 0 {
        // Empty: a size of 0, or none listed.
        let size = match archive.size {
            Some(_) => "0",
            None => "not listed",
        };
        return Err(format!(
            "the backup task ended successfully, but its archive {} is empty (size {size}) — check the vzdump task's log and the storage",
            archive.volid
        ));
    }
    if args.protected && !archive.protected {
        return Err(format!(
            "the backup task ended successfully, but archive {} is not protected as requested — check the task log (\"unable to set protected flag\")",
            archive.volid
        ));
    }
    if args.notes_template.is_some_and(|t| !t.is_empty()) && archive.notes.is_none() {
        // vzdump itself only warns when it cannot add notes: so does this run.
        ev.warn(
            run,
            format!("archive {} carries no notes although notesTemplate was given (vzdump warns \"unable to add notes\" in its log)", archive.volid),
        );
    }
    let how = match mode {
        Some(mode) => format!("{mode} backup"),
        None => format!("{} backup asked; its log shows no mode", args.mode),
    };
    Ok(format!(
        "{label} is backed up ({how}) as {}; the guest is back in its state ({})",
        archive.describe(),
        describe(&ev.status)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:vzdump:120:root@pam!t:";
    const ARCHIVE: &str = "local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma.zst";

    /// VM 120 on pve1 in `status`, and the node's storages (only `local` takes backups).
    fn guest(host: &ScriptedHost, status: Value) {
        let storages = json!([
            {"storage": "local", "content": "iso,vztmpl,backup", "enabled": 1, "active": 1},
            {"storage": "local-lvm", "content": "images,rootdir", "enabled": 1, "active": 1}
        ]);
        let found = json!([{"vmid": 120, "type": "qemu", "node": "pve1", "name": "web"}]);
        for (route, answer) in [
            ("GET /cluster/resources", found),
            ("GET /nodes/pve1/qemu/120/status/current", status),
            ("GET /nodes/pve1/storage", storages),
        ] {
            host.data(route, answer);
        }
    }

    /// The vzdump request answers a task that ends OK; `local` lists nothing, then `after`.
    fn backed_up(host: &ScriptedHost, after: Value) {
        host.on(
            "GET /nodes/pve1/storage/local/content",
            [Answer::Data(json!([])), Answer::Data(after)],
        );
        host.data("POST /nodes/pve1/vzdump", json!(UPID));
        let task = json!({"status": "stopped", "exitstatus": "OK"});
        host.data(&format!("GET /nodes/pve1/tasks/{UPID}/status"), task);
    }

    fn listed(size: u64, protected: bool) -> Value {
        json!([{"volid": ARCHIVE, "vmid": 120, "subtype": "qemu", "size": size, "ctime": 1764583200,
                "format": "vma.zst", "protected": if protected { 1 } else { 0 }, "content": "backup"}])
    }

    /// `backup` of VM 120 to `local`, with `extra` arguments.
    fn run(host: &ScriptedHost, extra: Value) -> Outcome {
        let mut args = json!({"vmid": 120, "storage": "local"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        run_method(host, "qemu", "backup", args)
    }

    const RUNNING: fn() -> Value =
        || json!({"status": "running", "qmpstatus": "running", "name": "web"});

    #[test]
    fn a_new_archive_listed_with_a_size_and_the_guest_as_before_is_success() {
        let host = ScriptedHost::new();
        guest(&host, RUNNING());
        backed_up(&host, listed(4096, false));
        let outcome = run(&host, json!({"mode": "snapshot", "compress": "zstd"}));
        assert!(outcome.is_success(), "{outcome:?}");
        let record = outcome
            .writes
            .iter()
            .find(|w| w.instance == "vm-120-backup")
            .unwrap();
        assert_eq!(record.data["volid"], ARCHIVE);
        assert_eq!(record.data["size"], 4096);
        assert_eq!(record.data["task"], UPID);
        let body = host.body_of("POST");
        assert!(
            body.contains("mode=snapshot") && body.contains("compress=zstd"),
            "{body}"
        );
    }

    /// The `vm-120-backup` record of a run.
    fn backup_record(outcome: &Outcome) -> &Value {
        let made = outcome
            .writes
            .iter()
            .find(|w| w.instance == "vm-120-backup");
        &made.expect("a backup record").data
    }

    #[test]
    fn the_record_holds_the_mode_vzdumps_log_reports_not_the_mode_asked() {
        // A stopped guest is backed up in stop mode whatever was asked (VZDump.pm exec_backup_task).
        let host = ScriptedHost::new();
        guest(&host, json!({"status": "stopped", "name": "web"}));
        backed_up(&host, listed(4096, false));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/log"),
            json!([{"n": 1, "t": "INFO: Starting Backup of VM 120 (qemu)"},
                   {"n": 2, "t": "INFO: backup mode: stop"}]),
        );
        let outcome = run(&host, json!({"mode": "snapshot"}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(backup_record(&outcome)["mode"], "stop");
    }

    /// The whole record: the archive as listed (not its subtype), and what the run adds.
    #[test]
    fn the_record_is_the_archive_listed_with_the_node_storage_mode_and_task() {
        let host = ScriptedHost::new();
        guest(&host, RUNNING());
        let after = json!([{"volid": ARCHIVE, "vmid": 120, "subtype": "qemu", "size": 4096,
                            "ctime": 1764583200, "format": "vma.zst", "protected": 1,
                            "notes": "web", "verification": {"state": "ok"}}]);
        backed_up(&host, after);
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/log"),
            json!([{"n": 1, "t": "INFO: backup mode: snapshot"}]),
        );
        let outcome = run(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        let mut data = backup_record(&outcome).clone();
        let at = data.as_object_mut().and_then(|d| d.remove("recordedAt"));
        assert!(at.is_some_and(|at| at.is_string()));
        let want = json!({"vmid": 120, "node": "pve1", "storage": "local", "mode": "snapshot",
                          "volid": ARCHIVE, "size": 4096, "ctime": 1764583200,
                          "format": "vma.zst", "notes": "web", "protected": true,
                          "task": UPID, "lastOperation": "backup"});
        assert_eq!(data, want);
    }

    #[test]
    fn a_mode_the_log_does_not_show_is_not_recorded() {
        let host = ScriptedHost::new();
        guest(&host, RUNNING());
        backed_up(&host, listed(4096, false));
        let outcome = run(&host, json!({"mode": "snapshot"}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(backup_record(&outcome).get("mode").is_none());
    }

    #[test]
    fn a_task_ok_with_no_new_archive_fails_naming_the_storage() {
        let host = ScriptedHost::new();
        guest(&host, RUNNING());
        backed_up(&host, json!([]));
        let outcome = run(&host, json!({}));
        let message = failure_of(&outcome);
        assert!(message.contains("lists no new backup"), "{message}");
        assert!(!outcome.writes.iter().any(|w| w.instance == "vm-120-backup"));
    }

    #[test]
    fn an_empty_archive_is_not_a_backup() {
        let host = ScriptedHost::new();
        guest(&host, RUNNING());
        backed_up(&host, listed(0, false));
        assert!(failure_of(&run(&host, json!({}))).contains("is empty"));
    }

    #[test]
    fn protected_must_read_back_protected() {
        let host = ScriptedHost::new();
        guest(&host, RUNNING());
        backed_up(&host, listed(10, false));
        assert!(failure_of(&run(&host, json!({"protected": true}))).contains("not protected"));
    }

    #[test]
    fn a_guest_not_running_again_after_a_stop_backup_fails_at_the_budget() {
        let host = ScriptedHost::new();
        guest(&host, RUNNING());
        host.on(
            "GET /nodes/pve1/qemu/120/status/current",
            [Answer::Data(json!({"status": "stopped", "name": "web"}))],
        );
        backed_up(&host, listed(10, false));
        let outcome = run(&host, json!({"mode": "stop", "taskTimeoutSec": 5}));
        let message = failure_of(&outcome);
        assert!(message.contains("its state before the backup"), "{message}");
    }

    #[test]
    fn an_ok_without_a_task_is_pve_skipping_the_guest() {
        let host = ScriptedHost::new();
        guest(&host, RUNNING());
        host.data("GET /nodes/pve1/storage/local/content", json!([]));
        host.data("POST /nodes/pve1/vzdump", json!("OK"));
        let message = failure_of(&run(&host, json!({}))).to_string();
        assert!(
            message.contains("without starting a backup task"),
            "{message}"
        );
    }

    #[test]
    fn a_storage_without_backup_content_is_refused_before_anything_is_sent() {
        let host = ScriptedHost::new();
        guest(&host, RUNNING());
        let outcome = run(&host, json!({"storage": "local-lvm"}));
        assert!(failure_of(&outcome).contains("can't use storage 'local-lvm' for backups"));
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn argument_rules() {
        let parse = |v: Value| BackupArgs::parse(&v).map(|_| ());
        assert!(parse(json!({"vmid": 120, "storage": "local"})).is_ok());
        assert_eq!(parse(json!({"vmid": 120})).unwrap_err().field, "storage");
        assert_eq!(
            parse(json!({"vmid": 120, "storage": "local", "mode": "live"}))
                .unwrap_err()
                .field,
            "mode"
        );
        assert_eq!(
            parse(json!({"vmid": 120, "storage": "local", "compress": "xz"}))
                .unwrap_err()
                .field,
            "compress"
        );
        for bad in ["a\nb", "{{name}}", "x\\t"] {
            assert_eq!(
                parse(json!({"vmid": 120, "storage": "local", "notesTemplate": bad}))
                    .unwrap_err()
                    .field,
                "notesTemplate",
                "{bad}"
            );
        }
        assert!(parse(json!({"vmid": 120, "storage": "local", "notesTemplate": "{{guestname}} on {{node}}\\n{{ x }}"})).is_ok());
    }
}
