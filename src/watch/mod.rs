//! What the method runs of one process share about each PVE node: a fleet is one node's load.
//!
//! swamp runs a workflow's parallel steps in one process, and the wasm core is loaded once per
//! process (both models' bundles use the same instance: `js/_lib/core.ts`), so concurrent runs can
//! share state here. Three things are shared, each keyed so that only runs that would have seen the
//! same answers share it (the same API endpoint, the same identity, the same node):
//! - [`gate::Gate`]: a cap on requests in flight to one endpoint, first come first served;
//! - [`node_tasks::NodeTasks`]: one reader of a node's task list for every run following a task
//!   there (task ends coalesced);
//! - [`flight::Flight`]: one answer for identical reads waiting to be sent (the reachability check).
//!
//! Nothing here outlives its use: a node's task watcher goes when its last followed task does, a
//! flight when it landed. A run alone on a node sees no difference: it reads its own task.

pub mod flight;
pub mod gate;
pub mod node_tasks;
pub mod signal;

use crate::global_args::TransportSettings;
use crate::pve::request::PveRequest;
use crate::pve::upid::Upid;
use flight::Flight;
use gate::Gate;
use node_tasks::NodeTasks;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Requests one process keeps in flight to one PVE endpoint: pveproxy and pvedaemon each serve the
/// API with 3 workers by default, so a 4th request would only queue inside the node, ahead of
/// everyone else who uses it.
pub const API_REQUESTS_IN_FLIGHT: usize = 3;

/// The state concurrent runs of one process share.
#[derive(Default)]
pub struct Shared {
    gates: RefCell<HashMap<String, Rc<Gate>>>,
    node_tasks: RefCell<HashMap<String, Rc<NodeTasks>>>,
    flights: RefCell<HashMap<String, Rc<Flight>>>,
}

/// Where requests go: one API endpoint, or one ssh account on one host.
fn endpoint(settings: &TransportSettings) -> String {
    match settings {
        TransportSettings::Api(api) => format!("api {}", api.api_url),
        TransportSettings::Ssh(ssh) => format!("ssh {}@{}:{}", ssh.user, ssh.host, ssh.port),
    }
}

/// Who asks: what PVE decides visibility by (a token sees only its own tasks without Sys.Audit).
fn identity(settings: &TransportSettings) -> &str {
    match settings {
        TransportSettings::Api(api) => &api.token_id,
        TransportSettings::Ssh(ssh) => &ssh.user,
    }
}

impl Shared {
    /// The gate of the endpoint `settings` sends to; `None` where requests are not capped (pvesh
    /// over ssh runs each call, its task included, in a process of its own on the node).
    pub fn gate(&self, settings: &TransportSettings) -> Option<Rc<Gate>> {
        let TransportSettings::Api(_) = settings else {
            return None;
        };
        let mut gates = self.gates.borrow_mut();
        let gate = gates
            .entry(endpoint(settings))
            .or_insert_with(|| Gate::new(API_REQUESTS_IN_FLIGHT));
        Some(gate.clone())
    }

    /// Follows `upid` on the task watcher of its node, for as long as the returned guard lives;
    /// `None` over ssh, where pvesh returns only once the task ended.
    pub fn follow_task<'a>(
        &'a self,
        settings: &TransportSettings,
        upid: &Upid,
    ) -> Option<Following<'a>> {
        let TransportSettings::Api(_) = settings else {
            return None;
        };
        let key = format!(
            "{}|{}|{}",
            endpoint(settings),
            identity(settings),
            upid.node
        );
        let watcher = self
            .node_tasks
            .borrow_mut()
            .entry(key.clone())
            .or_default()
            .clone();
        watcher.follow(upid);
        Some(Following {
            shared: self,
            key,
            watcher,
            upid: upid.as_str().to_string(),
        })
    }

    /// The flight a coalesced read joins, and whether this run sends it (it opened the flight).
    pub fn flight(
        &self,
        settings: &TransportSettings,
        request: &PveRequest,
    ) -> (Rc<Flight>, FlightKey) {
        let key = format!(
            "{}|{}|{} {}?{:?}",
            endpoint(settings),
            identity(settings),
            request.verb.http_method(),
            request.display_path(),
            request.params
        );
        let mut flights = self.flights.borrow_mut();
        if let Some(flight) = flights.get(&key).filter(|f| f.joinable()) {
            return (flight.clone(), FlightKey::Joined);
        }
        let flight = Rc::new(Flight::default());
        flights.insert(key.clone(), flight.clone());
        (flight, FlightKey::Sends(key))
    }

    /// Forgets a flight once it landed (only if it is still the one under `key`).
    pub fn flight_done(&self, key: &str, flight: &Rc<Flight>) {
        let mut flights = self.flights.borrow_mut();
        if flights.get(key).is_some_and(|f| Rc::ptr_eq(f, flight)) {
            flights.remove(key);
        }
    }
}

/// A run's role in a coalesced read.
pub enum FlightKey {
    /// Another run sends it; this one waits for the answer.
    Joined,
    /// This run sends it, under this key.
    Sends(String),
}

/// One run following one task on its node's watcher; dropping it stops following.
pub struct Following<'a> {
    shared: &'a Shared,
    key: String,
    pub watcher: Rc<NodeTasks>,
    pub upid: String,
}

impl Drop for Following<'_> {
    fn drop(&mut self) {
        if self.watcher.unfollow(&self.upid) {
            let mut watchers = self.shared.node_tasks.borrow_mut();
            if watchers
                .get(&self.key)
                .is_some_and(|w| Rc::ptr_eq(w, &self.watcher))
            {
                watchers.remove(&self.key);
            }
        }
    }
}
