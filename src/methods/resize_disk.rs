//! `resizeDisk` (qemu) and `resize` (lxc): grows a disk — a VM's `scsi0`…, a container's `rootfs` or
//! `mpN` (which keys count is [`GuestKind::is_disk`]) — and succeeds only when the disk's `size=` in
//! the config reached the target.
//!
//! The target is computed before the call from the disk's current `size=` (`+N` grows by N, `N`
//! grows to N). PVE 8+ answers a UPID, followed with the task mechanism; older PVE resizes
//! synchronously and answers null, so verification follows at once. Storages round a new size up to
//! their allocation unit, so success is `size ≥ target`, with the guest then seen unlocked (a lock
//! left after the task is "not yet"). PVE refuses to shrink: its message is the failure. The guest
//! record is written on every path once the guest was found.

use crate::args::{ArgError, Fields};
use crate::explain::{hint, outcome_unknown};
use crate::guest::evidence::{cut_at_the_end, settled_after, Evidence};
use crate::guest::reference::GuestRef;
use crate::guest::settle::seconds;
use crate::host::Host;
use crate::poll::Pacer;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::property::size_of;
use crate::pve::request::PveRequest;
use crate::run::Run;
use crate::task::{follow_task, upid_of};
use serde_json::{Map, Value};

/// How long the config may lag behind a finished resize before the method gives up.
const SETTLE_MS: u64 = 10_000;
const UNITS: [(char, u64); 4] = [
    ('K', 1 << 10),
    ('M', 1 << 20),
    ('G', 1 << 30),
    ('T', 1 << 40),
];

/// The arguments of `resizeDisk`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResizeArgs {
    pub target: GuestRef,
    pub disk: String,
    /// As given (`+20G`, `50G`): PVE gets exactly this.
    pub size: String,
    pub grow_by: bool,
    /// The size (or growth) in bytes.
    pub bytes: u64,
}

impl ResizeArgs {
    /// Reads the arguments of `kind`'s resize: its disk keys, its default disk.
    /// Always inlined into its one caller, the method's change (`change_course`): the arguments
    /// are then built in their place, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let disk = fields.text("disk")?.unwrap_or(kind.default_disk());
        if !kind.is_disk(disk) {
            return Err(ArgError::new(
                "disk",
                format!("must match {}", kind.disk_rule()),
            ));
        }
        let size = fields.required_text("size")?;
        let grow_by = size.starts_with('+');
        let bytes = amount(size.strip_prefix('+').unwrap_or(size)).ok_or_else(|| {
            ArgError::new(
                "size",
                "must match ^\\+?\\d+(\\.\\d+)?[KMGT]?$ (e.g. +20G or 50G)",
            )
        })?;
        Ok(ResizeArgs {
            target,
            disk: disk.to_string(),
            size: size.to_string(),
            grow_by,
            bytes,
        })
    }
}

/// `\d+(\.\d+)?[KMGT]?` in bytes, rounded down like PVE.
fn amount(text: &str) -> Option<u64> {
    let (number, factor) = match UNITS.iter().find(|(u, _)| text.ends_with(*u)) {
        Some((u, factor)) => (text.strip_suffix(*u)?, *factor),
        None => (text, 1),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return None;
    }
    // `as` saturates: an absurd size still reaches PVE, which refuses it in its own words.
    Some((crate::pve::flex::number_in(number)? * factor as f64).floor() as u64)
}

/// The resize course, once the guest is found ([`guest_change`]).
pub async fn course<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &ResizeArgs,
) -> Result<String, String> {
    // The record shows the state after the resize (maxDiskBytes): the course reads it once the size
    // is reached, `outcome` after a failure (guest/evidence.rs `reread_after_failure`). The course
    // is a labeled block (`or_break!` its `?`).
    'verdict: {
        let label = format!("disk {} of {}", args.disk, ev.label(run));
        let pve = run.pve();
        let read_config = endpoints::guest_config_current(&ev.at.node, run.kind, ev.at.vmid);
        let read = pve.call_within(&read_config, None).await;
        let before = or_break!('verdict, disk_size(run, ev, &args.disk, &read_config, read, None));
        let target = match (args.grow_by, before) {
            (false, _) => args.bytes,
            (true, Some(now)) => now.saturating_add(args.bytes),
            (true, None) => {
                break 'verdict Err(format!(
                    "{label} has no size= in its config, so the target of {} cannot be computed: give an absolute size",
                    args.size
                ))
            }
        };
        let request =
            endpoints::guest_resize(&ev.at.node, run.kind, ev.at.vmid, &args.disk, &args.size);
        ev.trail.sending();
        let answer = pve.call(&request).await;
        ev.trail.answered(&answer);
        // Never re-sent: a second `+N` would grow the disk twice.
        let unknown = |e: &PveError| {
            let check = format!(
                "the disk's size (run getConfig) and the task list of node {}",
                ev.at.node
            );
            outcome_unknown(format_args!("resize {label} to {}", args.size), e, &check).0
        };
        let answer = or_break!('verdict, answer.map_err(|e| match e.outcome_unknown() {
            true => unknown(&e),
            false => format!(
                "PVE refused to resize {label} to {}: {e} — {}",
                args.size,
                hint(e.kind)
            ),
        }));
        // PVE before 8.0 resizes synchronously and answers null.
        if !answer.is_null() {
            let upid = match upid_of(&answer, &request.label()) {
                Ok(upid) => upid,
                Err(unread) => {
                    ev.trail.outcome_unknown = true;
                    break 'verdict Err(unknown(&PveError::malformed(&unread.0)));
                }
            };
            ev.trail.last_task = Some(upid.to_string());
            let followed = follow_task(&pve, &upid).await;
            let followed = ev.trail.followed(followed);
            or_break!('verdict, followed.map_err(|why| format!("resize {label} to {}: {why}", args.size)));
        }
        // The config polled until the disk's size reaches `target`, briefly: the task already ended.
        let disk = &args.disk;
        let budget_ms = SETTLE_MS.min(run.wait_budget_ms());
        let mut pacer = Pacer::new(run.host.now_ms(), budget_ms, run.pve().poll_cap_ms);
        let deadline = pacer.deadline_ms();
        // The last size seen (a read the wait's end cut short sees none, and keeps this one).
        let mut last = None;
        let reached = loop {
            // The resize is done: a failed read must not invite a second `+N`, which would grow again.
            // Within the wait, each read ends by the wait's end (`Pve::call_within`).
            let read = pve.call_within(&read_config, Some(deadline)).await;
            let size = disk_size(run, ev, disk, &read_config, read, Some(deadline));
            let size = or_break!('verdict, size.map_err(|why| {
                format!(
                    "the resize of disk {disk} ended, but its size could not be read back: {why}; check the size (run getConfig) before resizing again — a relative size (+N) would grow the disk again"
                )
            }));
            match size {
                Some(bytes) if bytes >= target => break bytes,
                Some(bytes) => last = Some(bytes),
                None => {}
            }
            if pacer.pause(run.host).await.is_err() {
                break 'verdict Err(format!(
                    "{label} did not reach the target size: expected at least {}, observed {} after {} — check the storage's free space and the resize task's log",
                    human(target),
                    last.map_or("no size".to_string(), human),
                    seconds(budget_ms)
                ));
            }
        };
        // The state after it, for the record: a lock there is "not yet" (the resize holds only the
        // config's flock, PVE/API2/Qemu.pm resize_vm, pve-container PVE/API2/LXC.pm resize_vm: a
        // lock is another operation's); one that cannot be read keeps the earlier state, as a warning.
        let settled = settled_after(run, ev, "the resize task ended successfully", true).await;
        or_break!('verdict, settled);
        Ok(format!(
            "{label} is {} (target {}, was {})",
            human(reached),
            human(target),
            before.map_or("unknown".to_string(), human)
        ))
    }
}

/// The disk's `size=` in bytes from a read of its config (`request`, read by `deadline_ms` within the
/// wait): `None` when the config has none; a missing disk is a failure.
fn disk_size<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    disk: &str,
    request: &PveRequest,
    read: Result<Value, PveError>,
    deadline_ms: Option<f64>,
) -> Result<Option<u64>, String> {
    // The wait's end cut the read short: no size was seen, and the wait is over.
    if cut_at_the_end(run, &read, deadline_ms) {
        return Ok(None);
    }
    let config = ev.config_read(run, request, read)?;
    let Some(value) = config.get(disk).and_then(flex::string_of) else {
        return Err(format!(
            "{} has no disk {disk} (its disks: {})",
            ev.label(run),
            disks_of(run.kind, &config)
        ));
    };
    Ok(size_of(&value))
}

fn disks_of(kind: GuestKind, config: &Map<String, Value>) -> String {
    let mut disks = String::new();
    for key in config.keys() {
        if kind.is_disk(key) {
            crate::quote::push_item(&mut disks, ", ", key);
        }
    }
    match disks.is_empty() {
        true => "none".to_string(),
        false => disks,
    }
}

/// Bytes as PVE prints sizes: the largest unit that divides them exactly.
fn human(bytes: u64) -> String {
    let unit = UNITS
        .iter()
        .rev()
        .find(|(_, factor)| bytes >= *factor && bytes % factor == 0);
    match unit {
        Some((u, factor)) => format!("{}{u}", bytes / factor),
        None => format!("{bytes} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome;
    use crate::outcome::Verdict;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, run_method, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:resize:100:root@pam!t:";

    fn script(host: &ScriptedHost, configs: Vec<Value>) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "stopped"}),
        );
        host.on(
            "GET /nodes/pve1/qemu/100/config",
            configs.into_iter().map(Answer::Data),
        );
    }

    fn run_resize(host: &ScriptedHost, extra: Value) -> Outcome {
        let args = api_args(json!({"vmid": 100, "size": "+1G"}));
        let mut args = args;
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        run_method_of(GuestKind::Qemu, host, "resizeDisk", &args)
    }

    fn disk(size: &str) -> Value {
        json!({"smbios1": "uuid=a", "scsi0": format!("local-lvm:vm-100-disk-0,size={size}")})
    }

    fn failure(outcome: &Outcome) -> &str {
        match &outcome.verdict {
            Verdict::Failed { message } => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn growth_is_followed_through_the_task_to_the_config() {
        let host = ScriptedHost::new();
        script(&host, vec![disk("32G"), disk("32G"), disk("33G")]);
        host.data("PUT /nodes/pve1/qemu/100/resize", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let outcome = run_resize(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].data["lastTask"], UPID);
        let Verdict::Succeeded { summary } = &outcome.verdict else {
            unreachable!()
        };
        assert!(
            summary.contains("is 33G (target 33G, was 32G)"),
            "{summary}"
        );
    }

    #[test]
    fn older_pve_answers_null_and_is_verified_at_once() {
        let host = ScriptedHost::new();
        // The first config answer is the identity read of the sighting.
        script(&host, vec![disk("32G"), disk("32G"), disk("33G")]);
        host.data("PUT /nodes/pve1/qemu/100/resize", Value::Null);
        assert!(run_resize(&host, json!({})).is_success());
    }

    #[test]
    fn a_size_that_never_arrives_fails_with_expected_and_observed() {
        let host = ScriptedHost::new();
        script(&host, vec![disk("32G")]);
        host.data("PUT /nodes/pve1/qemu/100/resize", Value::Null);
        let outcome = run_resize(&host, json!({"size": "40G"}));
        let message = failure(&outcome);
        assert!(
            message.contains("expected at least 40G, observed 32G"),
            "{message}"
        );
        assert_eq!(outcome.writes.len(), 1);
    }

    #[test]
    fn shrinking_surfaces_pves_refusal() {
        let host = ScriptedHost::new();
        script(&host, vec![disk("32G")]);
        host.on(
            "PUT /nodes/pve1/qemu/100/resize",
            [Answer::Error(
                500,
                "shrinking disks is not supported".into(),
            )],
        );
        let message = failure(&run_resize(&host, json!({"size": "16G"}))).to_string();
        assert!(
            message.contains("shrinking disks is not supported"),
            "{message}"
        );
    }

    #[test]
    fn an_unknown_disk_fails_naming_it_before_any_change() {
        let host = ScriptedHost::new();
        script(&host, vec![disk("32G")]);
        let outcome = run_resize(&host, json!({"disk": "virtio3"}));
        assert!(failure(&outcome).contains("has no disk virtio3 (its disks: scsi0)"));
        assert!(!host.routes_called().iter().any(|r| r.starts_with("PUT")));
    }

    #[test]
    fn sizes_parse_like_pve() {
        let parse =
            |size: &str| ResizeArgs::parse(GuestKind::Qemu, &json!({"vmid": 100, "size": size}));
        assert_eq!(parse("+1.5G").unwrap().bytes, 1_610_612_736);
        assert_eq!(parse("512").unwrap().bytes, 512);
        assert!(!parse("50G").unwrap().grow_by);
        for bad in ["", "+", "1.G", "1g", "-1G", "1GB", " 1G"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let disk = |d: &str| {
            ResizeArgs::parse(
                GuestKind::Qemu,
                &json!({"vmid": 100, "size": "1G", "disk": d}),
            )
        };
        assert!(disk("efidisk0").is_err() && disk("scsi").is_err() && disk("virtio12").is_ok());
        assert_eq!(human(33 << 30), "33G");
        assert_eq!(human(1536 << 20), "1536M");
    }

    #[test]
    fn a_container_resizes_rootfs_or_mount_points() {
        let parse = |extra: Value| {
            let mut args = json!({"vmid": 300, "size": "+1G"});
            for (k, v) in extra.as_object().unwrap() {
                args[k] = v.clone();
            }
            ResizeArgs::parse(GuestKind::Lxc, &args)
        };
        assert_eq!(parse(json!({})).unwrap().disk, "rootfs");
        assert!(parse(json!({"disk": "mp12"})).is_ok());
        for bad in ["scsi0", "mp", "rootfs0", "MP1"] {
            let e = parse(json!({"disk": bad})).unwrap_err();
            assert_eq!(e.rule, "must match ^(rootfs|mp\\d+)$", "{bad}");
        }
        assert!(GuestKind::Qemu.is_disk("virtio3") && !GuestKind::Qemu.is_disk("rootfs"));
    }

    #[test]
    fn a_container_volume_is_resized_on_the_lxc_path() {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 300, "type": "lxc", "node": "pve2"}]),
        );
        host.data(
            "GET /nodes/pve2/lxc/300/status/current",
            json!({"status": "running"}),
        );
        let rootfs = |size: &str| json!({"rootfs": format!("local-lvm:vm-300-disk-0,size={size}")});
        host.on(
            "GET /nodes/pve2/lxc/300/config",
            [rootfs("8G"), rootfs("8G"), rootfs("12G")].map(Answer::Data),
        );
        host.data(
            "PUT /nodes/pve2/lxc/300/resize",
            json!(UPID.replace("pve1", "pve2")),
        );
        host.data(
            &format!(
                "GET /nodes/pve2/tasks/{}/status",
                UPID.replace("pve1", "pve2")
            ),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let outcome = run_method(&host, "lxc", "resize", json!({"vmid": 300, "size": "+4G"}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].instance, "ct-300");
        let Verdict::Succeeded { summary } = &outcome.verdict else {
            unreachable!()
        };
        assert!(
            summary.starts_with("disk rootfs of container 300 on node pve2 is 12G"),
            "{summary}"
        );
    }
}
