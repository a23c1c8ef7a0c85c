//! The cap on one node's requests in flight, shared by every run of the process. PVE serves the API
//! with a few synchronous workers (pveproxy and pvedaemon run 3 each by default:
//! pve-manager `PVE/Service/pvedaemon.pm`, `max_workers => 3`); a fleet that sends more at once
//! only queues inside the node, ahead of everyone else who uses it (the web UI, other automation).
//! Waiting here instead keeps the node's own queue short, and in arrival order is fair to every run.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// A first-come, first-served limit on requests in flight to one node.
pub struct Gate {
    capacity: usize,
    in_flight: Cell<usize>,
    /// Tickets of the runs waiting, in arrival order, with the waker of each once it polled.
    queue: RefCell<VecDeque<(u64, Option<Waker>)>>,
    next_ticket: Cell<u64>,
}

/// Leave to send one request; the slot is freed when it is dropped.
pub struct Pass {
    gate: Rc<Gate>,
}

impl Drop for Pass {
    fn drop(&mut self) {
        self.gate.in_flight.set(self.gate.in_flight.get() - 1);
        self.gate.wake_first();
    }
}

/// A place in the queue; leaving it (a run dropped while waiting) wakes the next one.
struct Ticket<'a> {
    gate: &'a Gate,
    number: u64,
    admitted: bool,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.admitted {
            self.gate
                .queue
                .borrow_mut()
                .retain(|(n, _)| *n != self.number);
            self.gate.wake_first();
        }
    }
}

/// A run waiting at the gate ([`Gate::enter`]): a future of its own, not an async function's
/// state machine (issue 32: the request engine awaits it on every request).
pub struct Entering<'a> {
    gate: &'a Rc<Gate>,
    ticket: Ticket<'a>,
}

impl Future for Entering<'_> {
    type Output = Pass;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Pass> {
        let Entering { gate, ticket } = self.get_mut();
        {
            let mut queue = gate.queue.borrow_mut();
            let first = queue.front().map(|(n, _)| *n);
            if first != Some(ticket.number) || gate.in_flight.get() >= gate.capacity {
                if let Some(entry) = queue.iter_mut().find(|(n, _)| *n == ticket.number) {
                    entry.1 = Some(cx.waker().clone());
                }
                return Poll::Pending;
            }
            queue.pop_front();
            gate.in_flight.set(gate.in_flight.get() + 1);
            ticket.admitted = true;
        }
        // The next in line may fit too (several slots freed while it slept).
        gate.wake_first();
        Poll::Ready(Pass {
            gate: Rc::clone(gate),
        })
    }
}

impl Gate {
    /// A gate letting `capacity` requests (at least one) through at once.
    pub fn new(capacity: usize) -> Rc<Self> {
        Rc::new(Gate {
            capacity: capacity.max(1),
            in_flight: Cell::new(0),
            queue: RefCell::new(VecDeque::new()),
            next_ticket: Cell::new(0),
        })
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.get()
    }

    /// Whether a request would wait now: every slot is taken, or others wait already.
    pub fn is_full(&self) -> bool {
        self.in_flight.get() >= self.capacity || !self.queue.borrow().is_empty()
    }

    /// Waits for a free slot, after every run that asked earlier (in the queue from this call).
    pub fn enter(self: &Rc<Self>) -> Entering<'_> {
        let number = self.next_ticket.get();
        self.next_ticket.set(number + 1);
        self.queue.borrow_mut().push_back((number, None));
        Entering {
            gate: self,
            ticket: Ticket {
                gate: self,
                number,
                admitted: false,
            },
        }
    }

    fn wake_first(&self) {
        if self.in_flight.get() >= self.capacity {
            return;
        }
        if let Some(waker) = self.queue.borrow().front().and_then(|(_, w)| w.clone()) {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::Context;

    #[test]
    fn requests_beyond_the_capacity_wait_in_arrival_order() {
        let gate = Gate::new(2);
        let mut cx = Context::from_waker(Waker::noop());
        let mut a = pin!(gate.enter());
        let mut b = pin!(gate.enter());
        let mut c = pin!(gate.enter());
        let mut d = pin!(gate.enter());
        let Poll::Ready(pass_a) = a.as_mut().poll(&mut cx) else {
            panic!("the first enters")
        };
        let Poll::Ready(_pass_b) = b.as_mut().poll(&mut cx) else {
            panic!("the second fits")
        };
        assert!(c.as_mut().poll(&mut cx).is_pending(), "the third waits");
        assert!(d.as_mut().poll(&mut cx).is_pending(), "the fourth waits");
        drop(pass_a);
        assert!(
            d.as_mut().poll(&mut cx).is_pending(),
            "the fourth may not overtake the third"
        );
        let Poll::Ready(_pass_c) = c.as_mut().poll(&mut cx) else {
            panic!("the third enters once a slot is free")
        };
        assert_eq!(gate.in_flight(), 2);
    }

    #[test]
    fn a_waiter_that_leaves_the_queue_lets_the_next_one_in() {
        let gate = Gate::new(1);
        let mut cx = Context::from_waker(Waker::noop());
        let mut a = pin!(gate.enter());
        let Poll::Ready(pass) = a.as_mut().poll(&mut cx) else {
            panic!("the first enters")
        };
        {
            let mut gone = Box::pin(gate.enter());
            assert!(gone.as_mut().poll(&mut cx).is_pending());
        }
        let mut c = pin!(gate.enter());
        assert!(c.as_mut().poll(&mut cx).is_pending());
        drop(pass);
        assert!(c.as_mut().poll(&mut cx).is_ready());
    }
}
