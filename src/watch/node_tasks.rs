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
//! task's own status, every run still reads it itself now and then ([`VERIFY_AFTER_MS`]), and a
//! list that cannot be read at all sends every run back to its own reads (said once in the log).

use super::signal::{first_of, Signal};
use crate::client::Pve;
use crate::host::{Host, LogLevel};
use crate::poll::SHORTEST_PAUSE_MS;
use crate::pve::endpoints;
use crate::pve::error::ErrorKind;
use crate::pve::flex;
use crate::pve::upid::Upid;
use serde::Deserialize;
use std::cell::{Cell, RefCell};

/// However well the list answers, a run reads its task's own status at least this often: a list
/// that stopped moving (a daemon that never reaped its worker) cannot hold a run longer.
pub const VERIFY_AFTER_MS: f64 = 10_000.0;
/// Tasks of other runs or users that may share the list's time window, read beyond our own.
const LIST_SLACK: usize = 50;

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
    /// Runs following this UPID (two runs may follow one task).
    runs: usize,
}

/// One node's task list as this process last read it, and who reads it next.
#[derive(Default)]
pub struct NodeTasks {
    /// By UPID (a list: a fleet is a few hundred tasks at most, and no hash table in the wasm).
    followed: RefCell<Vec<Followed>>,
    /// When the list read in flight was sent, if one is.
    in_flight: Cell<Option<f64>>,
    /// When the latest list read that answered was sent.
    read_at: Cell<Option<f64>>,
    /// How long that read took (the node's pace: a slow node is asked less often).
    round_trip_ms: Cell<f64>,
    /// The list could not be read: every run reads its own task's status.
    unusable: Cell<bool>,
    published: Signal,
}

#[derive(Deserialize)]
struct ListedTask {
    #[serde(deserialize_with = "flex::opt_string", default)]
    upid: Option<String>,
    #[serde(deserialize_with = "flex::opt_string", default)]
    status: Option<String>,
}

impl NodeTasks {
    /// Starts following `upid`.
    pub fn follow(&self, upid: &Upid) {
        let mut followed = self.followed.borrow_mut();
        match followed.iter_mut().find(|f| f.upid == upid.as_str()) {
            Some(entry) => entry.runs += 1,
            None => followed.push(Followed {
                upid: upid.as_str().to_string(),
                starttime: upid.starttime,
                sighting: Sighting::Unseen,
                runs: 1,
            }),
        }
    }

    /// Stops following `upid` (one run's share of it); true when nothing is followed any more.
    pub fn unfollow(&self, upid: &str) -> bool {
        let mut followed = self.followed.borrow_mut();
        if let Some(entry) = followed.iter_mut().find(|f| f.upid == upid) {
            entry.runs -= 1;
        }
        followed.retain(|f| f.runs > 0);
        followed.is_empty()
    }

    /// Whether one list read is worth it: two tasks or more are followed and the list answers.
    /// A run alone reads its own task's status, as cheap and never lagging.
    pub fn worth_reading(&self) -> bool {
        !self.unusable.get() && self.followed.borrow().len() >= 2
    }

    /// What the latest list read said of `upid`.
    pub fn sighting(&self, upid: &str) -> Sighting {
        self.followed
            .borrow()
            .iter()
            .find(|f| f.upid == upid)
            .map_or(Sighting::Unseen, |f| f.sighting.clone())
    }

    /// How many list reads were published so far (see [`NodeTasks::published_after`]).
    pub fn publications(&self) -> u64 {
        self.published.count()
    }

    /// Ready once a list read newer than `seen` was published (or given up).
    pub async fn published_after(&self, seen: u64) {
        self.published.after(seen).await
    }

    /// Makes sure a list read sent at or after `fresh_since` (epoch ms) was published: waits for
    /// the one in flight, or sends one itself. `false` when no such read could be had (the list is
    /// unusable, the run was aborted, the budget ran out): the caller reads its own task's status.
    pub async fn read_since<H: Host>(
        &self,
        pve: &Pve<'_, H>,
        node: &str,
        fresh_since: f64,
    ) -> bool {
        loop {
            if self.unusable.get() || pve.host.aborted() {
                return false;
            }
            if self.read_at.get().is_some_and(|sent| sent >= fresh_since) {
                return true;
            }
            let remaining = pve.budget.remaining_ms(pve.host.now_ms());
            if remaining == 0 {
                return false;
            }
            if self.in_flight.get().is_some() {
                let seen = self.publications();
                first_of(pve.host.sleep(remaining), self.published_after(seen)).await;
                continue;
            }
            let now = pve.host.now_ms();
            if let Some(not_before) = self.next_read_at().filter(|at| *at > now) {
                pve.host.sleep((not_before - now).ceil() as u64).await;
                continue;
            }
            self.read(pve, node).await;
        }
    }

    /// The earliest time the next list read may go out: the shortest pause after the last one,
    /// or twice its round trip on a slow node.
    fn next_read_at(&self) -> Option<f64> {
        let pace = SHORTEST_PAUSE_MS.max(2.0 * self.round_trip_ms.get());
        self.read_at.get().map(|sent| sent + pace)
    }

    /// Sends one list read for every followed task and publishes what it says.
    async fn read<H: Host>(&self, pve: &Pve<'_, H>, node: &str) {
        let sent = pve.host.now_ms();
        self.in_flight.set(Some(sent));
        let in_flight = InFlight(self);
        let (since, limit) = self.window();
        let request = endpoints::node_tasks(node, since, limit);
        match pve.read::<Vec<ListedTask>>(&request, "a task list").await {
            Ok(rows) => {
                self.apply(&rows);
                self.read_at.set(Some(sent));
                self.round_trip_ms.set(pve.host.now_ms() - sent);
            }
            // Our run was aborted: the list is fine, another run reads it next.
            Err(e) if e.kind == ErrorKind::Aborted => {}
            Err(e) => {
                self.unusable.set(true);
                pve.host.log(
                    LogLevel::Warning,
                    &format!(
                        "the task list of node {node} could not be read ({e}): each run now reads its own task's status there"
                    ),
                );
            }
        }
        drop(in_flight);
    }

    /// `since` and `limit` that hold every followed task: the oldest start, and room for ours and
    /// others' tasks of that window.
    fn window(&self) -> (u64, usize) {
        let followed = self.followed.borrow();
        let since = followed.iter().map(|f| f.starttime).min().unwrap_or(0);
        (since, followed.len() + LIST_SLACK)
    }

    fn apply(&self, rows: &[ListedTask]) {
        for followed in self.followed.borrow_mut().iter_mut() {
            if matches!(followed.sighting, Sighting::Ended(_)) {
                continue; // an end is final; a later list may have cut it off
            }
            let listed = rows
                .iter()
                .find(|row| row.upid.as_deref() == Some(followed.upid.as_str()));
            followed.sighting = match listed.map(|row| row.status.as_deref()) {
                None => Sighting::Unseen,
                Some(None | Some("RUNNING")) => Sighting::Running,
                Some(Some(status)) => Sighting::Ended(status.to_string()),
            };
        }
    }
}

/// Clears the read in flight however the reading run leaves (answer, error, or dropped), and wakes
/// every run waiting for it.
struct InFlight<'a>(&'a NodeTasks);

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

    fn row(upid: &str, status: Option<&str>) -> ListedTask {
        ListedTask {
            upid: Some(upid.into()),
            status: status.map(str::to_string),
        }
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
    fn the_list_window_starts_at_the_oldest_followed_task_and_has_room_for_others() {
        let watcher = watching(&[B, A]);
        assert_eq!(watcher.window(), (0x6571E3A1, 2 + LIST_SLACK));
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
    fn two_runs_following_one_task_keep_it_until_both_left() {
        let watcher = watching(&[A, A]);
        assert!(!watcher.unfollow(A));
        assert!(watcher.unfollow(A), "nothing followed any more");
    }
}
