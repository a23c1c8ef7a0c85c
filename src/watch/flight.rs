//! One answer for runs that ask the same read of the same node at once (a fleet's reachability
//! checks: every mutating run of swamp first asks `GET /version`). A run joins a request only while
//! it waits to be sent, so the answer it gets was produced after it asked: a reading of this run.

use super::signal::Signal;
use crate::pve::error::PveError;
use serde_json::Value;
use std::cell::{Cell, RefCell};
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

    /// The answer, once the sending run gave it; `None` when it gave up without one (aborted),
    /// so the joined run sends the request itself.
    pub async fn answer(self: &Rc<Self>) -> Option<Result<Value, PveError>> {
        self.landed.after(0).await;
        self.answer.borrow().clone()
    }

    /// The sending run left without an answer (its run was aborted or dropped).
    pub fn abandon(&self) {
        self.landed.raise();
    }
}
