//! Pauses between polls. A wait probes at once (a command or task that is already over costs one
//! request), then pauses `40 ms + a tenth of the time waited so far`, never beyond the caller's
//! interval (`pollIntervalSec`). So an end is noticed within 10% of the wait plus 40 ms (and one
//! round trip), while a long wait settles at `pollIntervalSec` between probes: a 500 ms task costs
//! 10 probes, a 30 s one 47; after that, one probe per `pollIntervalSec`.
//!
//! No read is sent without time to answer: a wait's last probe goes out [`ANSWER_MS`] before its
//! deadline, and a read sent later still gets that long (`Pve::call_by`). So the last read of a
//! wait is answered, and a timeout says what it saw; a wait ends within one read's time of its bound.

use crate::host::Host;
use std::cell::Cell;

/// One method's whole wait (`taskTimeoutSec`): its tasks, the wait for their effect, and any chain
/// of them (delete's stop then destroy) share it. It starts at the first wait; every later wait
/// gets what is left, so a task that ends just inside the budget leaves its effect little time.
#[derive(Debug)]
pub struct WaitBudget {
    pub total_ms: u64,
    started_at: Cell<Option<f64>>,
}

impl WaitBudget {
    pub fn new(total_ms: u64) -> Self {
        WaitBudget {
            total_ms,
            started_at: Cell::new(None),
        }
    }

    /// When the budget runs out; the first call (the method's first wait) starts it.
    pub fn deadline(&self, now_ms: f64) -> f64 {
        let started = self.started_at.get().unwrap_or(now_ms);
        self.started_at.set(Some(started));
        started + self.total_ms as f64
    }

    /// What is left of the budget, starting it if no wait has yet.
    pub fn remaining_ms(&self, now_ms: f64) -> u64 {
        (self.deadline(now_ms) - now_ms).max(0.0).ceil() as u64
    }
}

/// A growing delay: `first`, ×1.5 each step, capped (retry pauses of a failed read).
#[derive(Debug, Clone)]
pub struct Backoff {
    next_ms: f64,
    cap_ms: f64,
}

impl Backoff {
    pub fn new(first_ms: u64, cap_ms: u64) -> Self {
        let cap = cap_ms.max(1) as f64;
        Backoff {
            next_ms: (first_ms as f64).min(cap),
            cap_ms: cap,
        }
    }

    /// The next pause, in milliseconds.
    pub fn next_delay(&mut self) -> u64 {
        let delay = self.next_ms;
        self.next_ms = (self.next_ms * 1.5).min(self.cap_ms);
        delay.round() as u64
    }
}

/// The shortest pause between two probes of one wait: what keeps a fleet of waits bearable for
/// PVE's pvedaemon (3 workers by default) while a short task is still noticed quickly.
pub const SHORTEST_PAUSE_MS: f64 = 40.0;
/// The time a read of a bounded wait is given to answer, at least. A real node answers a status
/// read in 10–20 ms (`../shared/realpve/`); a second leaves room for a busy daemon.
pub const ANSWER_MS: f64 = 1_000.0;
/// The pause grows by this fraction of the time waited so far: the bound on how late an end is seen.
pub const PAUSE_PER_WAITED: f64 = 0.1;

/// The pause after a wait of `waited_ms`: `40 ms + waited/10`, at most `cap_ms`.
pub fn pause_after(waited_ms: f64, cap_ms: u64) -> u64 {
    let pause = SHORTEST_PAUSE_MS + waited_ms.max(0.0) * PAUSE_PER_WAITED;
    pause.min(cap_ms.max(1) as f64).round() as u64
}

/// Why a bounded poll loop stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The budget is spent.
    OutOfTime,
    /// The caller aborted the run.
    Aborted,
}

/// Paces a poll loop that probes first and pauses between probes ([`pause_after`]), its last probe
/// leaving one read's time before the loop's deadline ([`Pacer::last_probe_ms`]), ending when the
/// run is aborted.
pub struct Pacer {
    /// When the schedule began: given, or the first pause.
    started_ms: Option<f64>,
    deadline_ms: f64,
    cap_ms: u64,
    /// When the last pause ended, i.e. the last probe was sent (none before the first pause).
    probed_ms: Option<f64>,
}

impl Pacer {
    /// A loop that may run `budget_ms` from `now_ms`, pausing at most `cap_ms` between probes.
    pub fn new(now_ms: f64, budget_ms: u64, cap_ms: u64) -> Self {
        Pacer {
            started_ms: Some(now_ms),
            ..Pacer::until(now_ms + budget_ms as f64, cap_ms)
        }
    }

    /// A loop that may run until `deadline_ms` (a share of a method's [`WaitBudget`]), pausing at
    /// most `cap_ms` between probes; its pauses grow from its first pause.
    pub fn until(deadline_ms: f64, cap_ms: u64) -> Self {
        Pacer {
            started_ms: None,
            deadline_ms,
            cap_ms,
            probed_ms: None,
        }
    }

    /// When the loop's budget runs out (epoch ms).
    pub fn deadline_ms(&self) -> f64 {
        self.deadline_ms
    }

    /// Waits before the next probe; `Err` once the budget is spent or the run was aborted.
    pub async fn pause<H: Host>(&mut self, host: &H) -> Result<(), Stopped> {
        let (due, _) = self.next_probe(host.now_ms())?;
        host.sleep((due - host.now_ms()).max(0.0).ceil() as u64)
            .await;
        self.probed(host.now_ms());
        match host.aborted() {
            true => Err(Stopped::Aborted),
            false => Ok(()),
        }
    }

    /// The last time a probe may go out: [`ANSWER_MS`] before the deadline (a quarter of a wait
    /// shorter than four reads' time, so that a short wait still probes).
    pub fn last_probe_ms(&self) -> f64 {
        let span = self
            .started_ms
            .map_or(0.0, |started| self.deadline_ms - started);
        self.deadline_ms - ANSWER_MS.min(span / 4.0).max(0.0)
    }

    /// When the next probe is due (never past [`Pacer::last_probe_ms`]) and the pause that leads
    /// to it; `Err` once no probe fits in the budget.
    pub fn next_probe(&mut self, now: f64) -> Result<(f64, u64), Stopped> {
        let started = *self.started_ms.get_or_insert(now);
        let remaining = self.last_probe_ms() - now;
        if remaining <= 0.0 {
            return Err(Stopped::OutOfTime);
        }
        // The schedule counts from probe to probe: the time the last probe's round trip took is
        // part of the pause, so a slow answer does not push every later probe back.
        let in_flight = self
            .probed_ms
            .map_or(0, |probed| (now - probed).max(0.0).round() as u64);
        // A slow answer is a busy daemon: at most half of a pause is taken back.
        let scheduled = pause_after(now - started, self.cap_ms);
        let pause = (scheduled - in_flight.min(scheduled / 2)).min(remaining.ceil() as u64);
        Ok((now + pause as f64, pause))
    }

    /// When the last probe went out; `None` before the first.
    pub fn probed_at(&self) -> Option<f64> {
        self.probed_ms
    }

    /// Notes that a probe went out at `at` (the next pause counts from it).
    pub fn probed(&mut self, at: f64) {
        self.probed_ms = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe times of a wait whose probes take no time, up to `until_ms`.
    fn probes(cap_ms: u64, until_ms: f64) -> Vec<f64> {
        let mut at = vec![0.0];
        while *at.last().unwrap() < until_ms {
            let last = *at.last().unwrap();
            at.push(last + pause_after(last, cap_ms) as f64);
        }
        at
    }

    #[test]
    fn the_first_pause_is_the_shortest_and_pauses_never_shrink() {
        let at = probes(3_000, 60_000.0);
        assert_eq!(at[1], SHORTEST_PAUSE_MS);
        let pauses: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(pauses.windows(2).all(|p| p[0] <= p[1]), "{pauses:?}");
    }

    #[test]
    fn an_end_is_noticed_within_a_tenth_of_its_length_plus_the_shortest_pause() {
        let at = probes(3_000, 30_000.0);
        for end in [1.0, 120.0, 499.0, 500.0, 2_000.0, 9_999.0, 29_000.0] {
            let seen = at.iter().copied().find(|t| *t >= end).unwrap();
            assert!(
                seen - end <= SHORTEST_PAUSE_MS + end * PAUSE_PER_WAITED,
                "end {end} seen at {seen}"
            );
        }
    }

    #[test]
    fn a_long_wait_settles_at_the_cap() {
        assert_eq!(pause_after(1_000_000.0, 3_000), 3_000);
        assert_eq!(pause_after(1_000_000.0, 1_000), 1_000);
        assert_eq!(
            pause_after(0.0, 20),
            20,
            "a cap below the shortest pause wins"
        );
    }

    #[test]
    fn a_500_ms_wait_costs_ten_probes() {
        let at = probes(3_000, 500.0);
        assert_eq!(at.len(), 10, "{at:?}");
    }

    #[test]
    fn the_wait_budget_starts_at_the_first_wait_and_is_shared_after() {
        let budget = WaitBudget::new(10_000);
        assert_eq!(budget.remaining_ms(1_000.0), 10_000);
        assert_eq!(budget.remaining_ms(9_000.0), 2_000);
        assert_eq!(budget.deadline(9_000.0), 11_000.0);
        assert_eq!(budget.remaining_ms(20_000.0), 0);
    }

    /// The probe times of a paced wait of `budget_ms` whose probes take no time.
    fn paced(budget_ms: u64) -> Vec<f64> {
        let mut pacer = Pacer::new(0.0, budget_ms, 1_000);
        let mut at = vec![];
        while let Ok((due, _)) = pacer.next_probe(at.last().copied().unwrap_or(0.0)) {
            pacer.probed(due);
            at.push(due);
        }
        at
    }

    #[test]
    fn the_last_probe_goes_out_one_reads_time_before_the_deadline() {
        let at = paced(10_000);
        assert_eq!(at.last(), Some(&(10_000.0 - ANSWER_MS)), "{at:?}");
    }

    #[test]
    fn a_short_wait_keeps_a_quarter_of_itself_for_its_last_read() {
        assert_eq!(paced(2_000).last(), Some(&1_500.0));
    }

    #[test]
    fn a_cap_below_the_first_step_wins() {
        assert_eq!(Backoff::new(50, 20).next_delay(), 20);
    }

    #[test]
    fn a_probe_round_trip_counts_toward_the_pause_but_never_more_than_half_of_it() {
        use crate::host::Host;
        use crate::testing::{block_on, ScriptedHost};
        let host = ScriptedHost::new();
        let t0 = host.now_ms();
        let mut pacer = Pacer::new(t0, 60_000, 3_000);
        let mut sent = vec![];
        for round_trip in [10.0, 10.0, 500.0] {
            block_on(pacer.pause(&host)).unwrap();
            sent.push(host.now_ms() - t0);
            block_on(host.sleep(round_trip as u64)); // the probe's answer takes this long
        }
        block_on(pacer.pause(&host)).unwrap();
        sent.push(host.now_ms() - t0);
        // Probe to probe 45 and 50 ms (40 ms + a tenth of the time waited) despite 10 ms answers;
        // after a 500 ms answer half of the next pause (104 ms → 52 ms) is still waited.
        assert_eq!(sent, vec![40.0, 85.0, 135.0, 135.0 + 500.0 + 52.0]);
    }
}
