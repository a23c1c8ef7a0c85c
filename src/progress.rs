//! Progress on long waits: a wait that lasts logs, at info level, what it waits for, how long so
//! far, and — for a PVE task — PVE's own progress from the task log. Short waits stay silent.
//!
//! # Cadence
//! The first line comes once the wait has lasted [`FIRST_AFTER_MS`] (5 s), then one every
//! [`EVERY_MS`] (15 s). A wait that ends sooner logs nothing. The task log is read only when a line
//! is due — one request per 15 s at most, never at each probe — and only from the line after the
//! last one read (`start`), so a long task's log is not read again.
//!
//! # API (one value per wait)
//! ```text
//! let mut progress = Progress::start(host.now_ms());
//! loop {
//!     … probe …
//!     progress.tick(host, || format!("VM 100 on node pve1 to stop (now: {state})"));  // any wait
//!     if let Some(read) = progress.task_log_due(host.now_ms(), &upid) {           // a PVE task
//!         progress.heard(host, &upid, pve.call(&read).await);
//!     }
//!     … pause …
//! }
//! ```
//! `tick` is synchronous and does no I/O; `what` is built only when a line is due. For a task,
//! `task_log_due` says when the log is to be read (the caller sends the read from its own await:
//! no state machine of this module's, issue 32) and `heard` logs the task itself (type, id, node)
//! with PVE's progress when its log has some. Both may be called at every probe: the cadence is
//! the module's (the log read is its own request, at most every 15 s per task).
//!
//! # What PVE prints (parsed by [`pve_progress`])
//! - a clone or disk move of a stopped guest, qemu-server `PVE/QemuServer/QemuImage.pm`
//!   `convert` (its `qemu-img convert -p` parser): `transferred 2.0 GiB of 10.0 GiB (20.00%)`;
//! - a drive mirror (clone of a running VM, a disk move, a migration with local disks),
//!   qemu-server `PVE/QemuServer/BlockJob.pm` `qemu_drive_mirror_monitor`:
//!   `drive-scsi0: transferred 2.0 GiB of 10.0 GiB (20.00%) in 12s`;
//! - a live migration, qemu-server `PVE/QemuMigrate.pm` `phase2` (`migration $status, $progress`):
//!   `migration active, transferred 512.0 MiB of 2.0 GiB VM-state, 100.0 MiB/s`;
//! - a backup, qemu-server `PVE/VZDump/QemuServer.pm` (its status line, printed through
//!   pve-guest-common `PVE/VZDump/Plugin.pm` `debugmsg` with `INFO:`):
//!   `INFO:  42% (4.2 GiB of 10.0 GiB) in 30s, read: 150.0 MiB/s, write: 140.0 MiB/s`.
//!
//! The last such line read is kept and repeated while no newer one arrives.

use crate::host::{Host, LogLevel};
use crate::pve::error::PveError;
use crate::pve::request::PveRequest;
use crate::pve::upid::Upid;
use serde_json::Value;
use std::fmt;

/// A wait logs its first progress line once it has lasted this long.
pub const FIRST_AFTER_MS: f64 = 5_000.0;
/// Then one line this often.
pub const EVERY_MS: f64 = 15_000.0;
/// Task log lines read per progress line (only the newest progress line matters).
const LOG_LINES_PER_READ: u32 = 500;

/// One wait's progress reporting.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    started_ms: f64,
    next_ms: f64,
    /// The task log line to read from next (0-based, PVE's `start`).
    log_from: u64,
    /// PVE's last progress line read from the task log.
    pve_said: Option<String>,
}

impl Progress {
    /// A wait that starts at `now_ms`.
    pub fn start(now_ms: f64) -> Self {
        Progress {
            started_ms: now_ms,
            next_ms: now_ms + FIRST_AFTER_MS,
            log_from: 0,
            pve_said: None,
        }
    }

    /// Whether a line is due at `now_ms`.
    pub fn due(&self, now_ms: f64) -> bool {
        now_ms >= self.next_ms
    }

    /// Logs `waiting for <what> — <n> s so far` when a line is due.
    pub fn tick<H: Host>(&mut self, host: &H, what: impl FnOnce() -> String) {
        let now = host.now_ms();
        if self.due(now) {
            self.say(host, now, format_args!("{}", what()));
        }
    }

    /// [`Progress::tick`]'s line, once a line is due: one copy for every caller's `what`.
    fn say<H: Host>(&mut self, host: &H, now: f64, what: fmt::Arguments<'_>) {
        self.next_ms = now + EVERY_MS;
        self.log_line(host, now, what, None);
    }

    /// The task follower's steps in one, for the tests: when a line is due, reads the task log
    /// written since the last read and logs the task, the time so far and PVE's newest progress
    /// line. The follower (`task::follow_task`) sends the read from its own await instead.
    #[cfg(test)]
    pub async fn tick_task<H: Host>(&mut self, pve: &crate::client::Pve<'_, H>, upid: &Upid) {
        if let Some(request) = self.task_log_due(pve.host.now_ms(), upid) {
            let answer = pve.call(&request).await;
            self.heard(pve.host, upid, answer);
        }
    }

    /// When a line is due at `now`: the read of the task log written since the last read. Plain,
    /// so that a follower's loop sends it from its own await (no state machine of this one's).
    pub fn task_log_due(&mut self, now: f64, upid: &Upid) -> Option<PveRequest> {
        if !self.due(now) {
            return None;
        }
        self.next_ms = now + EVERY_MS;
        Some(task_log_from(upid, self.log_from))
    }

    /// The log read's answer: the line on the task, its time so far and PVE's newest progress.
    pub fn heard<H: Host>(&mut self, host: &H, upid: &Upid, answer: Result<Value, PveError>) {
        if let Ok(data) = answer {
            self.read_lines(&data);
        }
        let what = format_args!(
            "task {} of {} on node {}",
            upid.task_type, upid.id, upid.node
        );
        self.log_line(host, host.now_ms(), what, self.pve_said.as_deref());
    }

    /// Logs the line: `what` written straight into it, not formatted apart first (issue 32).
    fn log_line<H: Host>(
        &self,
        host: &H,
        now_ms: f64,
        what: fmt::Arguments<'_>,
        pve: Option<&str>,
    ) {
        let so_far = so_far(now_ms - self.started_ms);
        let (before, said) = match pve {
            Some(said) => ("; PVE: ", said),
            None => ("", ""),
        };
        host.log_args(
            LogLevel::Info,
            format_args!("waiting for {what} — {so_far} so far{before}{said}"),
        );
    }

    /// Takes what the log read from `log_from` holds; an unreadable log only loses PVE's
    /// progress, never the wait.
    fn read_lines(&mut self, data: &Value) {
        let Some(lines) = data.as_array() else {
            return;
        };
        for entry in lines {
            if let Some(n) = entry.get("n").and_then(|n| n.as_u64()) {
                self.log_from = self.log_from.max(n);
            }
            if let Some(said) = entry
                .get("t")
                .and_then(|t| t.as_str())
                .and_then(pve_progress)
            {
                self.pve_said = Some(said);
            }
        }
    }
}

/// `GET /nodes/{node}/tasks/{upid}/log?start=N&limit=…`: the lines after the first `start`.
fn task_log_from(upid: &Upid, start: u64) -> PveRequest {
    PveRequest::get(&["nodes", &upid.node, "tasks", upid.as_str(), "log"])
        .param("start", start.to_string())
        .param("limit", LOG_LINES_PER_READ.to_string())
}

/// `7 s`, `2 min 05 s`, `1 h 02 min`.
fn so_far(ms: f64) -> String {
    let s = (ms.max(0.0) / 1000.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// PVE's own progress in one task log line, as shown to the user; `None` for any other line. The
/// forms are listed in the module doc.
pub fn pve_progress(line: &str) -> Option<String> {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("migration active, ") {
        return rest.starts_with("transferred ").then(|| rest.to_string());
    }
    if let Some(rest) = line.strip_prefix("INFO:") {
        return vzdump_status(rest.trim_start());
    }
    // `transferred … of … (n%)`, alone (qemu-img) or after a drive-mirror job id (`drive-scsi0: `).
    let at = line.find("transferred ")?;
    let (job, rest) = line.split_at(at);
    let job = job.trim_end().strip_suffix(':');
    if !(at == 0 || job.is_some_and(|j| !j.contains(' '))) {
        return None;
    }
    let close = rest.find("%)")?;
    if !rest[..close].contains(" of ") || !rest[..close].contains('(') {
        return None;
    }
    let shown = &rest[..close + 2];
    Some(match job {
        Some(job) => format!("{job}: {shown}"),
        None => shown.to_string(),
    })
}

/// `42% (4.2 GiB of 10.0 GiB) …` → `42% (4.2 GiB of 10.0 GiB)`.
fn vzdump_status(text: &str) -> Option<String> {
    let (percent, rest) = text.split_once("% (")?;
    if percent.is_empty() || !percent.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (amounts, _) = rest.split_once(')')?;
    amounts
        .contains(" of ")
        .then(|| format!("{percent}% ({amounts})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Pve;
    use crate::global_args::GlobalArgs;
    use crate::poll::WaitBudget;
    use crate::scrub::Scrubber;
    use crate::testing::{api_args, block_on, ScriptedHost};
    use serde_json::json;

    fn infos(host: &ScriptedHost) -> Vec<String> {
        host.logs
            .borrow()
            .iter()
            .filter(|(level, _)| *level == LogLevel::Info)
            .map(|(_, m)| m.clone())
            .collect()
    }

    #[test]
    fn a_short_wait_says_nothing() {
        let host = ScriptedHost::new();
        let mut progress = Progress::start(host.now_ms());
        for _ in 0..49 {
            block_on(host.sleep(100));
            progress.tick(&host, || "VM 100 to stop".into());
        }
        assert!(infos(&host).is_empty(), "4.9 s: {:?}", infos(&host));
    }

    #[test]
    fn the_first_line_comes_after_5_s_then_one_every_15_s() {
        let host = ScriptedHost::new();
        let mut progress = Progress::start(host.now_ms());
        let mut built = 0;
        // 40 s of probes every 500 ms.
        for _ in 0..80 {
            block_on(host.sleep(500));
            progress.tick(&host, || {
                built += 1;
                "VM 100 on node pve1 to stop (now: status running)".into()
            });
        }
        assert_eq!(
            infos(&host),
            [
                "waiting for VM 100 on node pve1 to stop (now: status running) — 5 s so far",
                "waiting for VM 100 on node pve1 to stop (now: status running) — 20 s so far",
                "waiting for VM 100 on node pve1 to stop (now: status running) — 35 s so far",
            ]
        );
        assert_eq!(built, 3, "what is built only when a line is due");
    }

    #[test]
    fn a_task_line_carries_pves_progress_and_reads_the_log_only_when_due() {
        let host = ScriptedHost::new();
        let upid =
            Upid::parse("UPID:pve1:0000ABCD:00000001:65000000:qmclone:9000:root@pam!t:").unwrap();
        let route = "GET /nodes/pve1/tasks/UPID:pve1:0000ABCD:00000001:65000000:qmclone:9000:root@pam!t:/log";
        host.on(
            route,
            [
                crate::testing::Answer::Data(json!([
                    {"n": 1, "t": "create full clone of drive scsi0 (local-lvm:base-9000-disk-0)"},
                    {"n": 2, "t": "transferred 1.0 GiB of 10.0 GiB (10.00%)"},
                    {"n": 3, "t": "transferred 2.0 GiB of 10.0 GiB (20.00%)"}
                ])),
                crate::testing::Answer::Data(json!([
                    {"n": 4, "t": "transferred 5.0 GiB of 10.0 GiB (50.00%)"}
                ])),
                crate::testing::Answer::Data(json!([])),
            ],
        );
        let global = GlobalArgs::parse(&api_args(json!({}))).unwrap();
        let budget = WaitBudget::new(600_000);
        let scrub = Scrubber::default();
        let pve = Pve {
            host: &host,
            settings: &global.transport,
            task_timeout_ms: 600_000,
            poll_cap_ms: 1000,
            request_timeout_ms: 30_000,
            scrub: &scrub,
            budget: &budget,
            shared: &crate::watch::Shared::default(),
        };
        let mut progress = Progress::start(host.now_ms());
        // 36 s of probes every 300 ms: lines due at 5 s, 20 s and 35 s.
        for _ in 0..120 {
            block_on(host.sleep(300));
            block_on(progress.tick_task(&pve, &upid));
        }
        let logs = infos(&host);
        assert_eq!(logs.len(), 3, "{logs:?}");
        assert_eq!(
            logs[0],
            "waiting for task qmclone of 9000 on node pve1 — 5 s so far; PVE: transferred 2.0 GiB of 10.0 GiB (20.00%)"
        );
        assert!(logs[1].ends_with("20 s so far; PVE: transferred 5.0 GiB of 10.0 GiB (50.00%)"));
        assert!(logs[2].ends_with("35 s so far; PVE: transferred 5.0 GiB of 10.0 GiB (50.00%)"));
        let reads: Vec<String> = host
            .requests
            .borrow()
            .iter()
            .map(|r| r.url.clone())
            .filter(|u| u.contains("/log"))
            .collect();
        assert_eq!(reads.len(), 3, "one log read per line, none per probe");
        assert!(reads[0].contains("start=0"), "{}", reads[0]);
        assert!(reads[1].contains("start=3"), "{}", reads[1]);
        assert!(reads[2].contains("start=4"), "{}", reads[2]);
    }

    #[test]
    fn pves_progress_lines_are_recognised_in_each_form_pve_prints() {
        let cases = [
            (
                "transferred 2.0 GiB of 10.0 GiB (20.00%)",
                Some("transferred 2.0 GiB of 10.0 GiB (20.00%)"),
            ),
            (
                "drive-scsi0: transferred 2.0 GiB of 10.0 GiB (20.00%) in 12s",
                Some("drive-scsi0: transferred 2.0 GiB of 10.0 GiB (20.00%)"),
            ),
            (
                "drive-scsi0: transferred 10.0 GiB of 10.0 GiB (100.00%) in 1m 2s, ready",
                Some("drive-scsi0: transferred 10.0 GiB of 10.0 GiB (100.00%)"),
            ),
            (
                "migration active, transferred 512.0 MiB of 2.0 GiB VM-state, 100.0 MiB/s",
                Some("transferred 512.0 MiB of 2.0 GiB VM-state, 100.0 MiB/s"),
            ),
            (
                "INFO:  42% (4.2 GiB of 10.0 GiB) in 30s, read: 150.0 MiB/s, write: 140.0 MiB/s",
                Some("42% (4.2 GiB of 10.0 GiB)"),
            ),
            ("INFO: starting new backup job: vzdump 100", None),
            ("migration status: completed", None),
            ("TASK OK", None),
            ("the user said: transferred 1 of 2 (5%)", None),
        ];
        for (line, shown) in cases {
            assert_eq!(pve_progress(line).as_deref(), shown, "{line}");
        }
    }

    #[test]
    fn time_so_far_reads_as_people_say_it() {
        assert_eq!(so_far(5_000.0), "5 s");
        assert_eq!(so_far(125_000.0), "2 min 05 s");
        assert_eq!(so_far(3_725_000.0), "1 h 02 min");
    }
}
