//! One answer for runs that ask the same read of the same node at once (a fleet's reachability
//! checks: every mutating run of swamp first asks `GET /version`). A run joins a request only while
//! it waits to be sent, so the answer it gets was produced after it asked: a reading of this run.

use super::signal::Signal;
use crate::pve::error::PveError;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

/// A request some run will send, and its answer once it came.
#[derive(Default)]
pub struct Flight {
    sent: Cell<bool>,
    answer: RefCell<Option<Result<Value, PveError>>>,
    landed: Signal,
}

impl Flight {
    /// Whether a run may still join: the request has not left yet.
    pub fn joinable(&self) -> bool {
        !self.sent.get() && self.answer.borrow().is_none()
    }

    /// The sending run marks the request sent just before it goes out.
    pub fn mark_sent(&self) {
        self.sent.set(true);
    }

    /// The sending run hands over the answer; every joined run wakes.
    pub fn land(&self, answer: Result<Value, PveError>) {
        *self.answer.borrow_mut() = Some(answer);
        self.landed.raise();
    }

    /// Waits until the sending run handed over the answer or gave up without one.
    /// The signal's own future, handed back rather than awaited: a wrapper's state machine would
    /// only add room.
    pub fn landed(self: &Rc<Self>) -> impl Future<Output = ()> + '_ {
        self.landed.after(0)
    }

    /// What `look` makes of the answer, once it landed; `None` when the sending run gave up
    /// without one (aborted), so the joined run sends the request itself. The answer is lent, not
    /// copied: a fleet's runs each take only their part of one list.
    pub fn read<T>(&self, look: impl FnOnce(&Result<Value, PveError>) -> T) -> Option<T> {
        self.answer.borrow().as_ref().map(look)
    }

    /// The sending run left without an answer (its run was aborted or dropped).
    pub fn abandon(&self) {
        self.landed.raise();
    }
}
