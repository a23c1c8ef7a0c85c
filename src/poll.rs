//! Pauses between polls: start fast, grow by half each time, never beyond the caller's interval.

use crate::host::Host;

/// A growing delay: `first`, ×1.5 each step, capped.
#[derive(Debug, Clone)]
pub struct Backoff {
    next_ms: f64,
    cap_ms: f64,
}

/// The first pause of every poll loop: a 100 ms command must not cost a 3 s poll.
pub const FIRST_POLL_MS: u64 = 50;

impl Backoff {
    pub fn new(first_ms: u64, cap_ms: u64) -> Self {
        let cap = cap_ms.max(1) as f64;
        Backoff {
            next_ms: (first_ms as f64).min(cap),
            cap_ms: cap,
        }
    }

    /// The backoff of a poll loop whose longest pause is `pollIntervalSec`.
    pub fn for_polling(cap_ms: u64) -> Self {
        Backoff::new(FIRST_POLL_MS, cap_ms)
    }

    /// The next pause, in milliseconds.
    pub fn next_delay(&mut self) -> u64 {
        let delay = self.next_ms;
        self.next_ms = (self.next_ms * 1.5).min(self.cap_ms);
        delay.round() as u64
    }
}

/// Why a bounded poll loop stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The budget is spent.
    OutOfTime,
    /// The caller aborted the run.
    Aborted,
}

/// Paces a poll loop: growing pauses, never past the loop's deadline, ending when the run is aborted.
pub struct Pacer {
    deadline_ms: f64,
    backoff: Backoff,
}

impl Pacer {
    /// A loop that may run `budget_ms` from `now_ms`, pausing at most `cap_ms` between probes.
    pub fn new(now_ms: f64, budget_ms: u64, cap_ms: u64) -> Self {
        Pacer {
            deadline_ms: now_ms + budget_ms as f64,
            backoff: Backoff::for_polling(cap_ms),
        }
    }

    /// When the loop's budget runs out (epoch ms).
    pub fn deadline_ms(&self) -> f64 {
        self.deadline_ms
    }

    /// Waits before the next probe; `Err` once the budget is spent or the run was aborted.
    pub async fn pause<H: Host>(&mut self, host: &H) -> Result<(), Stopped> {
        let remaining = self.deadline_ms - host.now_ms();
        if remaining <= 0.0 {
            return Err(Stopped::OutOfTime);
        }
        host.sleep(self.backoff.next_delay().min(remaining.ceil() as u64))
            .await;
        match host.aborted() {
            true => Err(Stopped::Aborted),
            false => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_fast_and_grows_to_the_cap() {
        let mut b = Backoff::for_polling(3_000);
        let delays: Vec<u64> = (0..12).map(|_| b.next_delay()).collect();
        assert_eq!(&delays[..4], &[50, 75, 113, 169]);
        assert_eq!(*delays.last().unwrap(), 3_000);
        assert!(delays.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn a_cap_below_the_first_step_wins() {
        assert_eq!(Backoff::new(50, 20).next_delay(), 20);
    }
}
