//! `migrate`: moves a guest to another node and succeeds only when `/cluster/resources` places it
//! there and the target node's `status/current` reads it — running, if it was — with no lock. PVE's
//! preconditions (`GET …/migrate`: allowed nodes, local disks and devices) are read first and what
//! PVE would refuse is refused before anything is sent, in PVE's words. An HA-managed guest's
//! migrate task only queues a request to the HA manager (`hamigrate`): the move is waited for the
//! same way within taskTimeoutSec. The task is followed on the source node.

use crate::args::{is_storage_id, ArgError, Fields, Kind, Spec};
use crate::client::shaped;
use crate::explain::could_not_args;
use crate::guest::evidence::{cut_short, sight_to_change, Evidence};
use crate::guest::locate::{locate, Found, Located};
use crate::guest::reference::GuestRef;
use crate::guest::settle::{describe, lock_advice, lock_of, naming_lock};
use crate::guest::target::Target;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::poll::{Pacer, Stopped};
use crate::progress::Progress;
use crate::pve::endpoints::{self, GuestKind, MigrateOptions};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::responses::{GuestStatus, MigratePreconditions};
use crate::quote::{push_item, Joined};
use crate::run::Run;
use serde_json::Value;
use std::fmt::Write;

/// The arguments of `migrate`, borrowed from the call's (nothing copied, issue 32).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateArgs<'a> {
    pub target: GuestRef,
    /// The node to move to.
    pub node: &'a str,
    /// As the request sends them: VMs' `online` (live migration of a running VM, which PVE
    /// refuses without it) and `with-local-disks` (copy local disks of a running VM along);
    /// containers' `restart` (stop, move and start a running container) and `timeout` (how long
    /// its shutdown may take); `targetstorage` / `target-storage` (a storage id, `src:dst` pairs,
    /// or `1`: the same ids).
    pub options: MigrateOptions<'a>,
}

/// The fields before the guest, in order (one table walk, issue 32).
const HEAD: [Spec; 2] = [
    Spec::new("targetNode", Kind::Segment),
    Spec::new("targetStorage", Kind::Text).rule(storage_map_fault),
];
/// A VM's fields after the guest: `online`, `withLocalDisks`. A container's model has none of
/// them (nor a VM's the container's), and like zod ignores them: they are not read.
const VM_FIELDS: [Spec; 2] = [
    Spec::new("online", Kind::Flag(false)),
    Spec::new("withLocalDisks", Kind::Flag(false)),
];
/// A container's fields after the guest: `restart`, `timeoutSec`.
const CT_FIELDS: [Spec; 2] = [
    Spec::new("restart", Kind::Flag(false)),
    Spec::new("timeoutSec", Kind::CountIn(1, 86_400)),
];

impl<'a> MigrateArgs<'a> {
    pub fn parse(kind: GuestKind, args: &'a Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let [node, target_storage, ..] = fields.read_table(&HEAD)?;
        let target = GuestRef::parse(&fields)?;
        let qemu = kind == GuestKind::Qemu;
        let [first, second, ..] = fields.read_table(match qemu {
            true => &VM_FIELDS,
            false => &CT_FIELDS,
        })?;
        Ok(MigrateArgs {
            target,
            node: node.text.unwrap_or(""),
            options: MigrateOptions {
                online: qemu && first.int != 0,
                with_local_disks: qemu && second.int != 0,
                restart: !qemu && first.int != 0,
                timeout_sec: match qemu {
                    true => None,
                    false => second.count(),
                },
                target_storage: target_storage.text,
            },
        })
    }
}

/// PVE's `storage-pair-list`: `1`, or comma-separated `<id>` / `<source>:<target>` of
/// `pve-storage-id`s (`^[a-z][a-z0-9\-_.]*[a-z0-9]$`, case-insensitive); the rule broken, if any.
fn storage_map_fault(map: &str) -> Option<&'static str> {
    let ok = map == "1"
        || map.split(',').all(|pair| match pair.split_once(':') {
            Some((from, to)) => is_storage_id(from) && is_storage_id(to),
            None => is_storage_id(pair),
        });
    match ok {
        true => None,
        false => Some(
            "must be 1, a storage id, or comma-separated <source>:<target> storage ids (PVE's storage-pair-list)",
        ),
    }
}

/// Runs `migrate`.
pub async fn migrate<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match MigrateArgs::parse(run.kind, args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, "migrate").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    // The move, in this function's course (an async fn around it would be one more future,
    // issue 32): its verdict, the summary or why it failed.
    let verdict: Result<String, String> = 'moved: {
        if ev.at.node == args.node {
            break 'moved Ok(format!(
                "{} already lives on node {}; no migration was sent",
                ev.label(run),
                args.node
            ));
        }
        // PVE's check_running: a QEMU process, paused or not, is a running VM.
        let was_running = ev.status.status == "running";
        let source = ev.at.node.clone();
        let request =
            endpoints::migrate_preconditions(&ev.at.node, run.kind, ev.at.vmid, args.node);
        let pre = run.pve().call(&request).await;
        let pre = shaped(&request, "migration preconditions", pre);
        if let Err(why) = preconditions(run, &ev, &args, was_running, pre) {
            break 'moved Err(why);
        }
        // The request and its action end with their await: the wait after it need not carry
        // them.
        {
            let request = endpoints::guest_migrate(
                &ev.at.node,
                run.kind,
                ev.at.vmid,
                args.node,
                &args.options,
            );
            if let Err(why) = ev
                .trail
                .run(
                    &run.pve(),
                    &request,
                    format_args!("migrate {} to node {}", ev.label(run), args.node),
                    None,
                    false,
                )
                .await
            {
                break 'moved Err(why);
            }
        }
        // Then waits until the cluster places the guest on the target node and the target node
        // shows it (running, if it was) with no lock.
        let pve = run.pve();
        let kind = run.kind;
        // What the migrate task left of the method's one budget (taskTimeoutSec bounds both).
        let deadline = run.budget.deadline(run.host.now_ms());
        let mut pacer = Pacer::until(deadline, pve.poll_cap_ms);
        let by_vmid = GuestRef {
            vmid: Some(ev.at.vmid),
            name: None,
        };
        let mut progress = Progress::start(run.host.now_ms());
        loop {
            let last = match locate(&pve, kind, &by_vmid).await {
                Ok(Found::Present(at)) => {
                    let request = endpoints::guest_status(&at.node, kind, at.vmid);
                    let read = pve.call_by(&request, deadline).await;
                    let read = shaped::<GuestStatus>(&request, "a guest status", read);
                    match at.node == args.node {
                        true => {
                            match on_target(run, &mut ev, &args, at, read, (was_running, deadline))
                            {
                                Ok(Some(last)) => last,
                                Ok(None) => break,
                                Err(why) => break 'moved Err(why),
                            }
                        }
                        false => elsewhere(run, &mut ev, at, read),
                    }
                }
                Ok(Found::Absent { .. }) => "the cluster lists it on no node".to_string(),
                Err(Failure(why)) => break 'moved Err(format!("after the migrate task, {why}")),
            };
            let arriving = || {
                format!(
                    "{} {} to arrive on node {} — {last}",
                    kind.noun(),
                    ev.at.vmid,
                    args.node
                )
            };
            progress.tick(run.host, arriving);
            if let Err(stop) = pacer.pause(run.host).await {
                let why = match stop {
                    Stopped::OutOfTime => {
                        format!("not within taskTimeoutSec={}s", run.global.task_timeout_sec)
                    }
                    Stopped::Aborted => "the run was aborted while waiting".to_string(),
                };
                break 'moved Err(not_seen(
                    kind,
                    &ev,
                    (&args, was_running),
                    (&source, &last),
                    why,
                ));
            }
        }
        Ok(format!(
            "{} {} moved from node {} to node {} and is {}",
            run.kind.noun(),
            ev.at.vmid,
            source,
            args.node,
            ev.status.status
        ))
    };
    ev.outcome(run, verdict).await
}

/// `GET …/migrate?target=` as answered: refuses what PVE would refuse. A plain function of the
/// answer, not an async fn reading it: each is one more future around its await (issue 32).
// Inlined into its one caller (issue 32).
#[inline(always)]
fn preconditions<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    args: &MigrateArgs<'_>,
    was_running: bool,
    read: Result<MigratePreconditions, PveError>,
) -> Result<(), String> {
    let label = ev.label(run);
    let pre = read.map_err(|e| {
        could_not_args(
            format_args!("read the migration preconditions of {label}"),
            &e,
        )
        .0
    })?;
    let running = pre.running.unwrap_or(was_running);
    match refusal(run.kind, &pre, args, running) {
        Some(why) => Err(format!(
            "{label} cannot be migrated to node {}: {why}",
            args.node
        )),
        None => Ok(()),
    }
}

/// Why PVE would refuse the migration its preconditions describe; `None` when it would not.
fn refusal(
    kind: GuestKind,
    pre: &MigratePreconditions,
    args: &MigrateArgs<'_>,
    running: bool,
) -> Option<String> {
    let options = &args.options;
    match kind {
        GuestKind::Qemu if running && !options.online => {
            return Some("can't migrate running VM without --online (PVE's rule) — set online: true for a live migration, or stop the VM first".into())
        }
        GuestKind::Lxc if running && !options.restart => {
            return Some("can't migrate running container without --online or --restart (PVE's rule; containers cannot migrate live) — set restart: true, or stop it first".into())
        }
        _ => {}
    }
    if let Some(why) = pre.not_allowed(args.node) {
        return Some(format!("PVE does not allow that node: {why}"));
    }
    if !pre.allowed_nodes.iter().any(|n| n == args.node) {
        return Some(format!(
            "it is not among the nodes PVE allows ({}) — check targetNode (is it a cluster node?)",
            match pre.allowed_nodes.is_empty() {
                true => "none".to_string(),
                false => pre.allowed_nodes.joined(", "),
            }
        ));
    }
    if !pre.local_resources.is_empty() {
        return Some(format!(
            "can't migrate VM which uses local devices: {} (PVE's rule) — remove them from the config first",
            pre.local_resources.joined(", ")
        ));
    }
    // A cloud-init drive is regenerated on the target (QemuMigrate scan_local_volumes: `generated`).
    // One walk: the first local cdrom refuses before any attached disk is weighed. The attached
    // ones are written as found, `, ` between: no list of them to join.
    let mut attached = String::new();
    for disk in &pre.local_disks {
        if is_cloudinit(&disk.volid) {
            continue;
        }
        if disk.cdrom == Some(true) {
            return Some(format!(
                "can't migrate local disk '{}': local cdrom image (PVE's rule) — eject it (ide2: none,media=cdrom) first",
                disk.volid
            ));
        }
        if disk.is_unused != Some(true) {
            push_item(&mut attached, ", ", &disk.volid);
        }
    }
    if running && !options.with_local_disks && !attached.is_empty() {
        return Some(format!(
            "can't live migrate attached local disks without with-local-disks option ({attached}; PVE's rule) — set withLocalDisks: true to copy them along"
        ));
    }
    None
}

/// `…vm-<N>-cloudinit…`: the drive PVE generates from the config (QemuMigrate's pattern).
fn is_cloudinit(volid: &str) -> bool {
    volid.split("vm-").skip(1).any(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with("-cloudinit")
    })
}

/// One look at the guest on the target node: `None` once it is there (running, if it was) with no
/// lock, else what was seen; an unreadable state other than the wait's own ends fails the method.
fn on_target<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &MigrateArgs<'_>,
    at: Located,
    read: Result<GuestStatus, PveError>,
    (was_running, deadline): (bool, f64),
) -> Result<Option<String>, String> {
    let kind = run.kind;
    match read {
        Ok(status) => {
            let unlocked = lock_of(&status).is_none();
            let state_ok = !was_running || Target::Running.reached(kind, &status);
            ev.saw(run, at, status);
            if unlocked && state_ok {
                return Ok(None);
            }
            Ok(Some(format!(
                "on node {}: {}",
                args.node,
                describe(&ev.status)
            )))
        }
        // The budget's end cut the read short: not seen there yet, and the wait is over.
        Err(e) if cut_short(run, &e, Some(deadline)) => Ok(Some(format!(
            "on node {}: no answer before the budget ran out",
            args.node
        ))),
        // The config reaches the target with the move: until then the node does not know it.
        Err(e) if e.kind == ErrorKind::GuestNotOnNode => Ok(Some(format!(
            "the cluster places it on node {} but that node does not hold its config yet",
            args.node
        ))),
        Err(e) => Err(could_not_args(
            format_args!(
                "read the state of {} {} on node {} after the migration",
                kind.noun(),
                ev.at.vmid,
                args.node
            ),
            &e,
        )
        .0),
    }
}

/// What a look at the guest still on another node saw; an unreadable state only goes unsaid.
fn elsewhere<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    at: Located,
    read: Result<GuestStatus, PveError>,
) -> String {
    let mut seen = format!("the cluster still places it on node {}", at.node);
    if let Ok(status) = read {
        ev.saw(run, at, status);
        let _ = write!(seen, " ({})", describe(&ev.status));
    }
    seen
}

/// The failure of a wait that ended before the guest was seen where it should be.
fn not_seen(
    kind: GuestKind,
    ev: &Evidence,
    (args, was_running): (&MigrateArgs<'_>, bool),
    (source, last): (&str, &str),
    why: String,
) -> String {
    let why = naming_lock(why, &ev.status);
    let ha = ev
        .status
        .ha
        .as_ref()
        .is_some_and(|ha| ha.managed == Some(true));
    let check = match (lock_of(&ev.status), ha) {
        (Some(_), _) => lock_advice(kind, &ev.at.node),
        (None, true) => "the guest is HA-managed, so its migrate task only queued a request to the HA manager: check `ha-manager status` (quorum, the resource's state, node affinity rules)".to_string(),
        (None, false) => "check the migrate task's log on the source node and the guest's state (run lookup)".to_string(),
    };
    let running = if was_running { " and running" } else { "" };
    format!(
        "the migrate task on node {source} ended successfully, but {} {} was not seen on node {}{running}: {why}; last observed: {last} — {check}",
        kind.noun(),
        ev.at.vmid,
        args.node
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_model_reads_its_own_fields_and_ignores_the_others() {
        let args = json!({"vmid": 100, "targetNode": "pve2", "online": true,
            "withLocalDisks": true, "restart": "x", "timeoutSec": 0, "targetStorage": "local:fast"});
        let vm = MigrateArgs::parse(GuestKind::Qemu, &args).unwrap();
        assert_eq!(vm.node, "pve2");
        let options = &vm.options;
        assert!(options.online && options.with_local_disks && !options.restart);
        assert_eq!(options.timeout_sec, None);
        assert_eq!(options.target_storage, Some("local:fast"));
        let args = json!({"vmid": 100, "targetNode": "pve2", "online": "x", "restart": true,
            "timeoutSec": 5});
        let ct = MigrateArgs::parse(GuestKind::Lxc, &args).unwrap();
        let options = &ct.options;
        assert!(options.restart && !options.online && !options.with_local_disks);
        assert_eq!(
            (options.timeout_sec, options.target_storage),
            (Some(5), None)
        );
    }

    #[test]
    fn the_target_node_and_storage_map_are_judged_before_the_guest() {
        let refused = |args: Value| {
            MigrateArgs::parse(GuestKind::Qemu, &args)
                .unwrap_err()
                .to_string()
        };
        assert!(refused(json!({})).starts_with("invalid argument `targetNode`"));
        assert_eq!(
            refused(json!({"targetNode": "pve2", "targetStorage": "a:"})),
            "invalid argument `targetStorage`: must be 1, a storage id, or comma-separated <source>:<target> storage ids (PVE's storage-pair-list)"
        );
        assert!(refused(json!({"targetNode": "pve2", "targetStorage": "1"})).contains("vmid"));
    }
}
