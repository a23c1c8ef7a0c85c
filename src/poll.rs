//! Pauses between polls: start fast, grow by half each time, never beyond the caller's interval.

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
