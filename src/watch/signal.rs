//! A wake-up that many waiting runs can await at once: the watcher raises it after each shared
//! reading, and every run whose answer that reading may hold looks again. Single-threaded (wasm):
//! plain cells, no locks.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::{Poll, Waker};

/// A counter of raised events with the wakers of those waiting for the next one.
#[derive(Default)]
pub struct Signal {
    raised: Cell<u64>,
    waiting: RefCell<Vec<Waker>>,
}

impl Signal {
    /// How many times the signal was raised so far: what [`Signal::after`] compares with.
    pub fn count(&self) -> u64 {
        self.raised.get()
    }

    /// Raises the signal, waking every waiter.
    pub fn raise(&self) {
        self.raised.set(self.raised.get() + 1);
        for waker in self.waiting.take() {
            waker.wake();
        }
    }

    /// Ready once the signal was raised more than `seen` times.
    pub fn after(&self, seen: u64) -> impl Future<Output = ()> + '_ {
        poll_fn(move |cx| {
            if self.raised.get() > seen {
                return Poll::Ready(());
            }
            let mut waiting = self.waiting.borrow_mut();
            if !waiting.iter().any(|w| w.will_wake(cx.waker())) {
                waiting.push(cx.waker().clone());
            }
            Poll::Pending
        })
    }
}

/// Awaits whichever of two futures ends first, the other dropped; with no `b`, `a` alone. The
/// `Option` lets a caller that waits on one or on two await once: each await point costs its state
/// machine room (docs/performance.md).
pub async fn first_of<A: Future, B: Future>(a: A, b: Option<B>) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    poll_fn(move |cx| {
        let b = b.as_mut().as_pin_mut();
        if a.as_mut().poll(cx).is_ready() || b.is_some_and(|b| b.poll(cx).is_ready()) {
            return Poll::Ready(());
        }
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Context;

    #[test]
    fn a_waiter_is_ready_only_after_a_raise_it_has_not_seen() {
        let signal = Signal::default();
        let seen = signal.count();
        let mut wait = pin!(signal.after(seen));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        signal.raise();
        assert!(wait.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn first_of_ends_with_the_first_ready_future() {
        let signal = Signal::default();
        let mut both = pin!(first_of(
            signal.after(0),
            Some(std::future::pending::<()>())
        ));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(both.as_mut().poll(&mut cx).is_pending());
        signal.raise();
        assert!(both.as_mut().poll(&mut cx).is_ready());
    }
}
