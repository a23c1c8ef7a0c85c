//! One reader of a node's task list for every run of the process that follows a task there.
//!
//! A fleet of runs each polling `GET /nodes/{node}/tasks/{upid}/status` costs the node one request
//! per run per probe. `GET /nodes/{node}/tasks?source=all` answers for all of them at once
//! (pve-manager `PVE/API2/Tasks.pm` node_tasks): the tasks of the node's active file that are still
//! running come first with status `RUNNING`, then the archive (`/var/log/pve/tasks/index`) with each
//! ended task's exit status — written there by `active_workers` (pve-common
//! `PVE/RESTEnvironment.pm`) with `PVE::UPID::read_status`, the very function the per-task status
//! read answers `exitstatus` with, so an archived status is as final as that read.
//!
//! What the list cannot say: a task whose worker ended but was not yet reaped by the daemon that
//! forked it (`worker_reaper` → `log_task_result` → `active_workers`) still shows `RUNNING` — the
//! list lags the task by the reaping; a task the token may not see (without `Sys.Audit` on
//! `/nodes/{node}` a token sees only its own tasks: `check_task_user`); a list cut short by `limit`.
//! So the list only ever ends a wait early: a run whose task the list does not show reads the
//! task's own status, every run still reads it itself now and then ([`own_read_due`]), and a
//! list that cannot be read at all sends every run back to its own reads (said once in the log).

use super::signal::Signal;
use crate::poll::SHORTEST_PAUSE_MS;
use crate::pve::endpoints;
use crate::pve::read::Obj;
use crate::pve::request::PveRequest;
use crate::pve::upid::Upid;
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::task::{Poll, Waker};

/// However well the list answers, a run reads its task's own status at least this often: a list
/// that stopped moving (a daemon that never reaped its worker) cannot hold a run longer.
pub const VERIFY_AFTER_MS: f64 = 10_000.0;

/// When a run whose task the list shows running next reads the task's own status, having last read
/// it at `read_own_ms`: [`VERIFY_AFTER_MS`] later, or halfway to its wait's last probe
/// (`last_probe_ms`) when that is sooner. So a list that stopped moving cannot hold a short wait to
/// its end: a task that ended is seen with time left to read the guest's state after it, and the
/// wait's last probe (one read's time before the budget ends) is the task's own status.
pub fn own_read_due(read_own_ms: f64, last_probe_ms: f64) -> f64 {
    read_own_ms + VERIFY_AFTER_MS.min((last_probe_ms - read_own_ms) / 2.0)
}
/// Tasks of other runs or users that may share the list's time window, read beyond our own.
const LIST_SLACK: usize = 50;
/// The most reads a fleet banks for its tail ([`NodeTasks::credit`]): two seconds of reads at
/// the shortest pause. Enough for the last tasks of a fleet started together (their ends spread
/// over about a second) to be seen as soon as its middle ones; not enough to keep a long task of
/// the fleet's last run on the list's pace for long.
const BANK_CAP: f64 = 50.0;

/// What a run that wants a fresh list read does next ([`NodeTasks::next_step`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ListStep {
    /// A read sent recently enough was published: its sightings answer the probe.
    Fresh,
    /// Another run's read is in flight: wait for its publication.
    AwaitInFlight,
    /// The last read was too recent: not before this time (epoch ms).
    NotBefore(f64),
    /// Send the read, for everyone.
    Send,
    /// The list cannot be read: read the task's own status.
    Unusable,
}

/// What the latest list said of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sighting {
    /// No list read since the task was followed showed it.
    Unseen,
    /// Listed as running (it may have ended since: the list lags by the daemon's reaping).
    Running,
    /// Listed as ended, with its exit status: final.
    Ended(String),
}

struct Followed {
    upid: String,
    starttime: u64,
    sighting: Sighting,
    /// Runs following this UPID (two runs may follow one task); 0 once all left, kept while a
    /// followed task older than it is: the list still holds it, so the list's `limit` counts it.
    runs: usize,
    /// The runs waiting for this task's end ([`NodeTasks::ended`]): only they wake when a list
    /// shows it, not the whole fleet at every list read.
    waiting: Vec<Waker>,
}

/// One node's task list as this process last read it, and who reads it next.
#[derive(Default)]
pub struct NodeTasks {
    /// Sorted by UPID, found by binary search (no hash table in the wasm): a fleet's runs each look
    /// their task up after every list read, and each list row is looked up once.
    followed: RefCell<Vec<Followed>>,
    /// When the list read in flight was sent, if one is.
    in_flight: Cell<Option<f64>>,
    /// When the latest list read that answered was sent.
    read_at: Cell<Option<f64>>,
    /// How long that read took (the node's pace: a slow node is asked less often).
    round_trip_ms: Cell<f64>,
    /// The list could not be read: every run reads its own task's status.
    unusable: Cell<bool>,
    /// Reads the followers' own probes would have made while the list answered for them, less
    /// the reads made on the fleet's pace since: what its tail may still spend
    /// ([`NodeTasks::credit`]).
    bank: Cell<f64>,
    published: Signal,
}

/// One row of the node's task list, read as a plain object: its `upid` and `status` are read
/// tolerantly where they are used, so the reader of a list of objects is shared with every other
/// such read, where a type of its own was two more readers (issue 32).
pub type ListedTask = Map<String, Value>;

/// The row's UPID, when it is one.
pub fn listed_upid(row: &ListedTask) -> Option<Upid> {
    Obj(row).opt_string("upid").as_deref().and_then(Upid::parse)
}

impl NodeTasks {
    /// Starts following `upid`.
    pub fn follow(&self, upid: &Upid) {
        let mut followed = self.followed.borrow_mut();
        match find(&followed, upid.as_str()) {
            Ok(at) => followed[at].runs += 1,
            Err(at) => followed.insert(
                at,
                Followed {
                    upid: upid.as_str().to_string(),
                    starttime: upid.starttime,
                    sighting: Sighting::Unseen,
                    runs: 1,
                    waiting: Vec::new(),
                },
            ),
        }
    }

    /// Stops following `upid` (one run's share of it); true when nothing is followed any more.
    pub fn unfollow(&self, upid: &str) -> bool {
        let mut followed = self.followed.borrow_mut();
        if let Ok(at) = find(&followed, upid) {
            let entry = &mut followed[at];
            entry.runs = entry.runs.saturating_sub(1);
        }
        match live_of(&followed).1 {
            Some(oldest) => followed.retain(|f| f.runs > 0 || f.starttime >= oldest),
            None => followed.clear(),
        }
        followed.is_empty()
    }

    /// The tasks some run still follows.
    fn live(&self) -> u64 {
        live_of(&self.followed.borrow()).0
    }

    /// Whether one list read is worth it: two tasks or more are followed and the list answers.
    /// A run alone reads its own task's status, as cheap and never lagging.
    pub fn worth_reading(&self) -> bool {
        !self.unusable.get() && self.live() >= 2
    }

    /// A run's pause before its next probe while the list answers for every followed task: the
    /// list is read as often as their own probes would have been in all (one task's `pause` over
    /// the tasks followed), never more often than the shortest pause. So each end of a fleet is
    /// seen about as soon as a task alone would see it, for no more reads than polling each task.
    /// While reads are banked the shortest pause holds, down to the fleet's last run (which reads
    /// its own task on the bank): the fleet's last tasks are seen ending as soon as its middle
    /// ones, on reads its runs would have made anyway.
    pub fn fleet_pause(&self, pause: u64) -> u64 {
        let shared = if self.unusable.get() {
            pause
        } else if self.bank.get() >= 1.0 {
            SHORTEST_PAUSE_MS as u64
        } else if self.worth_reading() {
            pause / self.live()
        } else {
            pause
        };
        shared.max(SHORTEST_PAUSE_MS as u64).min(pause)
    }

    /// Spends a banked read: a list read, or a run's read of its own task.
    pub fn spend_read(&self) {
        self.bank.set((self.bank.get() - 1.0).max(0.0));
    }

    /// Banks `own_probes`: the probes a follower's own pace would have made since its last probe,
    /// while the list answered for it (two runs or more), up to [`BANK_CAP`]. Each read on the
    /// fleet's pace spends one ([`NodeTasks::spend_read`]). So a fleet never reads the list more often, in all, than its runs would have
    /// polled their own tasks, yet keeps the list's pace to its end.
    pub fn credit(&self, own_probes: f64) {
        if self.worth_reading() {
            self.bank.set((self.bank.get() + own_probes).min(BANK_CAP));
        }
    }

    /// What the latest list read said of `upid`.
    pub fn sighting(&self, upid: &str) -> Sighting {
        let followed = self.followed.borrow();
        find(&followed, upid).map_or(Sighting::Unseen, |at| followed[at].sighting.clone())
    }

    /// Ready once a list read showed `upid` ended. Pending while it does not (or is not followed):
    /// the caller races it against its own pause.
    pub fn ended<'a>(&'a self, upid: &'a str) -> impl Future<Output = ()> + 'a {
        poll_fn(move |cx| {
            let mut followed = self.followed.borrow_mut();
            let Ok(at) = find(&followed, upid) else {
                return Poll::Pending;
            };
            let entry = &mut followed[at];
            if matches!(entry.sighting, Sighting::Ended(_)) {
                return Poll::Ready(());
            }
            if !entry.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                entry.waiting.push(cx.waker().clone());
            }
            Poll::Pending
        })
    }

    /// How many list reads were published so far (see [`NodeTasks::published_after`]).
    pub fn publications(&self) -> u64 {
        self.published.count()
    }

    /// Ready once a list read newer than `seen` was published (or given up).
    /// The signal's own future, handed back rather than awaited: a wrapper's state machine would
    /// only add room.
    pub fn published_after(&self, seen: u64) -> impl Future<Output = ()> + '_ {
        self.published.after(seen)
    }

    /// What a run whose probe wants a list read sent at or after `fresh_since` (epoch ms) does now.
    pub fn next_step(&self, fresh_since: f64, now: f64) -> ListStep {
        if self.unusable.get() {
            return ListStep::Unusable;
        }
        if self.read_at.get().is_some_and(|sent| sent >= fresh_since) {
            return ListStep::Fresh;
        }
        if self.in_flight.get().is_some() {
            return ListStep::AwaitInFlight;
        }
        match self.next_read_at().filter(|at| *at > now) {
            Some(at) => ListStep::NotBefore(at),
            None => ListStep::Send,
        }
    }

    /// The earliest time the next list read may go out: the shortest pause after the last one,
    /// or twice its round trip on a slow node.
    fn next_read_at(&self) -> Option<f64> {
        let pace = SHORTEST_PAUSE_MS.max(2.0 * self.round_trip_ms.get());
        self.read_at.get().map(|sent| sent + pace)
    }

    /// A run sends the list read for everyone, now: the request to send (holding every followed
    /// task: from the oldest one's start, with room for the process's tasks since then that ended
    /// and for others' tasks of that window) and the mark that clears the read in flight however
    /// the run leaves.
    pub fn begin_read(&self, node: &str, now: f64) -> (PveRequest, InFlight<'_>) {
        self.in_flight.set(Some(now));
        self.spend_read();
        let followed = self.followed.borrow();
        let since = live_of(&followed).1.unwrap_or(0);
        let request = endpoints::node_tasks(node, since, followed.len() + LIST_SLACK);
        (request, InFlight(self))
    }

    /// Publishes the answer of the list read asked for at `asked`, which left the process (past
    /// the cap on requests in flight) at `left` and was read back at `now`. Its freshness counts
    /// from `asked`; the node's pace from `left`, since time queued behind the process's own
    /// requests says nothing of the node.
    pub fn publish(&self, rows: &[ListedTask], asked: f64, left: f64, now: f64) {
        self.apply(rows);
        self.read_at.set(Some(asked));
        self.round_trip_ms.set(now - left);
    }

    /// The list could not be read: every run reads its own task from now on.
    pub fn give_up(&self) {
        self.unusable.set(true);
    }

    fn apply(&self, rows: &[ListedTask]) {
        let mut followed = self.followed.borrow_mut();
        // Every task not ended is unseen unless this list shows it; an end is final (a later
        // list may have cut it off).
        for entry in followed.iter_mut() {
            if !matches!(entry.sighting, Sighting::Ended(_)) {
                entry.sighting = Sighting::Unseen;
            }
        }
        for row in rows {
            let row = Obj(row);
            let upid = row.opt_string("upid");
            let Some(Ok(at)) = upid.as_deref().map(|upid| find(&followed, upid)) else {
                continue;
            };
            let entry = &mut followed[at];
            entry.sighting = match (&entry.sighting, row.opt_string("status").as_deref()) {
                (Sighting::Ended(_), _) => continue,
                (_, None | Some("RUNNING")) => Sighting::Running,
                (_, Some(status)) => Sighting::Ended(status.to_string()),
            };
            if matches!(entry.sighting, Sighting::Ended(_)) {
                entry.waiting.drain(..).for_each(Waker::wake);
            }
        }
    }
}

/// The tasks some run still follows: how many, and the oldest one's start. One loop for the three
/// questions asked of them, not an iterator chain each (issue 32).
fn live_of(followed: &[Followed]) -> (u64, Option<u64>) {
    let (mut count, mut oldest) = (0, None::<u64>);
    for f in followed {
        if f.runs > 0 {
            count += 1;
            oldest = Some(oldest.map_or(f.starttime, |o| o.min(f.starttime)));
        }
    }
    (count, oldest)
}

/// Where `upid` is in `followed` (sorted by UPID), or where it would go.
fn find(followed: &[Followed], upid: &str) -> Result<usize, usize> {
    followed.binary_search_by(|f| f.upid.as_str().cmp(upid))
}

/// Clears the read in flight however the reading run leaves (answer, error, or dropped), and wakes
/// every run waiting for it.
pub struct InFlight<'a>(&'a NodeTasks);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.set(None);
        self.0.published.raise();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmstart:100:root@pam!t:";
    const B: &str = "UPID:pve1:0000AAAC:0000BBBC:6571E3A5:qmstart:101:root@pam!t:";
    const C: &str = "UPID:pve1:0000AAAD:0000BBBD:6571E3A9:qmstart:102:root@pam!t:";

    fn row(upid: &str, status: Option<&str>) -> ListedTask {
        let mut row = ListedTask::new();
        row.insert("upid".into(), upid.into());
        if let Some(status) = status {
            row.insert("status".into(), status.into());
        }
        row
    }

    fn watching(upids: &[&str]) -> NodeTasks {
        let watcher = NodeTasks::default();
        for upid in upids {
            watcher.follow(&Upid::parse(upid).unwrap());
        }
        watcher
    }

    #[test]
    fn a_run_alone_is_not_worth_a_list_read() {
        let watcher = watching(&[A]);
        assert!(!watcher.worth_reading());
        watcher.follow(&Upid::parse(B).unwrap());
        assert!(watcher.worth_reading());
    }

    #[test]
    fn the_list_read_starts_at_the_oldest_followed_task_and_has_room_for_others() {
        let watcher = watching(&[B, A]);
        let (request, _in_flight) = watcher.begin_read("pve1", 0.0);
        assert_eq!(
            request.params,
            vec![
                ("source".to_string(), "all".to_string()),
                ("since".to_string(), 0x6571E3A1u64.to_string()),
                ("limit".to_string(), (2 + LIST_SLACK).to_string()),
            ]
        );
    }

    #[test]
    fn a_run_waits_for_the_read_in_flight_then_takes_it_and_paces_the_next() {
        let watcher = watching(&[A, B]);
        assert_eq!(watcher.next_step(100.0, 100.0), ListStep::Send);
        let (_, in_flight) = watcher.begin_read("pve1", 100.0);
        assert_eq!(watcher.next_step(100.0, 105.0), ListStep::AwaitInFlight);
        watcher.publish(&[], 100.0, 100.0, 130.0);
        drop(in_flight);
        assert_eq!(watcher.next_step(90.0, 131.0), ListStep::Fresh);
        // The next read waits twice the 30 ms round trip, at least the shortest pause (40 ms).
        assert_eq!(watcher.next_step(150.0, 150.0), ListStep::NotBefore(160.0));
        watcher.give_up();
        assert_eq!(watcher.next_step(150.0, 170.0), ListStep::Unusable);
    }

    #[test]
    fn beside_other_tasks_the_pause_is_shared_among_them_down_to_the_shortest() {
        let alone = watching(&[A]);
        assert_eq!(alone.fleet_pause(340), 340, "a run alone keeps its pause");
        let two = watching(&[A, B]);
        assert_eq!(two.fleet_pause(340), 170);
        assert_eq!(two.fleet_pause(60), 40, "never below the shortest pause");
        assert_eq!(two.fleet_pause(30), 30, "never longer than the run's own");
    }

    #[test]
    fn a_fleets_last_run_keeps_the_shortest_pause_on_the_reads_its_fleet_banked() {
        let watcher = watching(&[A, B]);
        watcher.credit(2.5);
        assert_eq!(
            watcher.fleet_pause(340),
            40,
            "reads banked: the shortest pause"
        );
        assert!(!watcher.unfollow(A));
        assert!(!watcher.worth_reading(), "the last run reads its own task");
        assert_eq!(watcher.fleet_pause(340), 40, "on the bank");
        let (_, list_read) = watcher.begin_read("pve1", 0.0);
        drop(list_read);
        watcher.spend_read();
        assert_eq!(
            watcher.fleet_pause(340),
            340,
            "the bank is spent: its own pace again"
        );
    }

    #[test]
    fn a_run_alone_banks_nothing_and_a_bank_holds_two_seconds_of_reads_at_most() {
        let alone = watching(&[A]);
        alone.credit(5.0);
        assert!(!alone.worth_reading());
        let fleet = watching(&[A, B]);
        fleet.credit(1_000.0);
        assert_eq!(fleet.bank.get(), BANK_CAP);
    }

    #[test]
    fn running_archived_and_missing_tasks_are_told_apart() {
        let watcher = watching(&[A, B]);
        watcher.apply(&[row(A, Some("RUNNING"))]);
        assert_eq!(watcher.sighting(A), Sighting::Running);
        assert_eq!(watcher.sighting(B), Sighting::Unseen);
        watcher.apply(&[row(B, Some("VM quit/powerdown failed")), row(A, None)]);
        assert_eq!(
            watcher.sighting(B),
            Sighting::Ended("VM quit/powerdown failed".into())
        );
        assert_eq!(
            watcher.sighting(A),
            Sighting::Running,
            "an active entry without a status is running"
        );
    }

    #[test]
    fn an_end_once_listed_stays_though_a_later_list_leaves_the_task_out() {
        let watcher = watching(&[A, B]);
        watcher.apply(&[row(A, Some("OK"))]);
        watcher.apply(&[]);
        assert_eq!(watcher.sighting(A), Sighting::Ended("OK".into()));
    }

    #[test]
    fn a_run_waiting_for_its_task_wakes_only_when_a_list_shows_that_task_ended() {
        use std::pin::pin;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        use std::task::{Context, Wake};

        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let watcher = watching(&[A, B]);
        let woken = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let mut end_of_a = pin!(watcher.ended(A));
        assert!(end_of_a.as_mut().poll(&mut cx).is_pending());
        watcher.apply(&[row(A, Some("RUNNING")), row(B, Some("OK"))]);
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            0,
            "B's end does not wake A's run"
        );
        watcher.apply(&[row(A, Some("OK"))]);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        assert!(end_of_a.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn a_list_row_finds_its_task_among_many_followed_in_any_order() {
        let upids: Vec<String> = (0..300)
            .rev()
            .map(|n| format!("UPID:pve1:{n:08X}:0000BBBB:6571E3A1:qmstart:{n}:root@pam!t:"))
            .collect();
        let watcher = watching(&upids.iter().map(String::as_str).collect::<Vec<_>>());
        let rows: Vec<ListedTask> = upids
            .iter()
            .step_by(3)
            .map(|u| row(u, Some("OK")))
            .collect();
        watcher.apply(&rows);
        for (n, upid) in upids.iter().enumerate() {
            let want = match n % 3 {
                0 => Sighting::Ended("OK".into()),
                _ => Sighting::Unseen,
            };
            assert_eq!(watcher.sighting(upid), want, "{upid}");
        }
    }

    #[test]
    fn a_run_reads_its_own_task_every_10_s_or_halfway_to_its_last_probe_when_sooner() {
        assert_eq!(own_read_due(1_000.0, 300_000.0), 11_000.0);
        assert_eq!(own_read_due(1_000.0, 8_000.0), 4_500.0);
        assert_eq!(
            own_read_due(7_000.0, 7_000.0),
            7_000.0,
            "at the last probe: now"
        );
    }

    #[test]
    fn the_pace_counts_from_when_the_read_left_not_from_its_wait_in_the_queue() {
        let watcher = watching(&[A, B]);
        let (_, in_flight) = watcher.begin_read("pve1", 100.0);
        watcher.publish(&[], 100.0, 900.0, 910.0);
        drop(in_flight);
        // Paced by the node's 10 ms, not the 800 ms the read waited behind the process's own.
        assert_eq!(watcher.next_step(150.0, 150.0), ListStep::Send);
    }

    #[test]
    fn an_ended_task_newer_than_a_followed_one_still_counts_toward_the_lists_limit() {
        let watcher = watching(&[A, B]);
        watcher.follow(&Upid::parse(C).unwrap());
        assert!(!watcher.unfollow(B));
        let (request, _in_flight) = watcher.begin_read("pve1", 0.0);
        assert!(request
            .params
            .contains(&("limit".to_string(), (3 + LIST_SLACK).to_string())));
        assert!(!watcher.unfollow(A), "C is still followed");
        let (request, _in_flight) = watcher.begin_read("pve1", 0.0);
        assert!(
            request
                .params
                .contains(&("since".to_string(), 0x6571E3A9u64.to_string())),
            "the window starts at the oldest task still followed"
        );
        assert!(request
            .params
            .contains(&("limit".to_string(), (1 + LIST_SLACK).to_string())));
    }

    #[test]
    fn two_runs_following_one_task_keep_it_until_both_left() {
        let watcher = watching(&[A, A]);
        assert!(!watcher.unfollow(A));
        assert!(watcher.unfollow(A), "nothing followed any more");
    }
}
