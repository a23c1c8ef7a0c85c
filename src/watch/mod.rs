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
use crate::pve::request::{PveRequest, Verb};
use crate::pve::upid::Upid;
use flight::Flight;
use gate::Gate;
use node_tasks::NodeTasks;
use std::cell::RefCell;
use std::rc::Rc;

/// Requests one process keeps in flight to one PVE endpoint: pveproxy and pvedaemon each serve the
/// API with 3 workers by default (pve-manager `PVE/Service/pvedaemon.pm`), and one request more
/// keeps them busy while an answer travels back and the next request is made (with 3, the node
/// sat idle about half of a 200-guest fleet's admission: `tests/bench/fleet_scale.ts`). Any more
/// would only queue inside the node, ahead of everyone else who uses it; this one waits there at
/// most one request's time.
pub const API_REQUESTS_IN_FLIGHT: usize = 4;
/// Reads one process runs at once over ssh to one node: each is an ssh connection, and sshd starts
/// refusing connections once more than 10 are unauthenticated at a time (`MaxStartups 10:30:100`).
pub const SSH_READS_IN_FLIGHT: usize = 8;

/// The state concurrent runs of one process share.
#[derive(Default)]
pub struct Shared {
    gates: Keyed<Gate>,
    node_tasks: Keyed<NodeTasks>,
    flights: Keyed<Flight>,
}

/// A few shared things by key (a process talks to a handful of nodes): a list is all it takes, and
/// keeps a hash table's code out of the wasm.
struct Keyed<T>(RefCell<Vec<(String, Rc<T>)>>);

impl<T> Default for Keyed<T> {
    fn default() -> Self {
        Keyed(RefCell::new(Vec::new()))
    }
}

impl<T> Keyed<T> {
    fn get(&self, key: &str) -> Option<Rc<T>> {
        self.0
            .borrow()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    /// Puts `value` under `key`, in place of what was there. Keys are each once, so a search
    /// and a swap do what a `retain` would, without its code copied for every `T` (issue 32).
    fn insert(&self, key: String, value: Rc<T>) {
        let mut all = self.0.borrow_mut();
        match all.iter_mut().find(|(k, _)| *k == key) {
            Some(held) => held.1 = value,
            None => all.push((key, value)),
        }
    }

    /// The thing under `key`, made by `make` when there is none.
    fn get_or(&self, key: String, make: impl FnOnce() -> Rc<T>) -> Rc<T> {
        if let Some(found) = self.get(&key) {
            return found;
        }
        let made = make();
        self.insert(key, made.clone());
        made
    }

    /// Forgets `key` if it still holds `value` (and not a newer one).
    fn remove_if(&self, key: &str, value: &Rc<T>) {
        let mut all = self.0.borrow_mut();
        if let Some(at) = all
            .iter()
            .position(|(k, v)| k == key && Rc::ptr_eq(v, value))
        {
            all.swap_remove(at);
        }
    }
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
    /// The gate `request` passes on its way to the endpoint `settings` sends to; `None` for an
    /// ssh mutation, which holds its connection for the whole task (pvesh runs it in the
    /// foreground), so capping it would hold a fleet's starts back by whole tasks.
    pub fn gate(&self, settings: &TransportSettings, request: &PveRequest) -> Option<Rc<Gate>> {
        let capacity = match settings {
            TransportSettings::Api(_) => API_REQUESTS_IN_FLIGHT,
            TransportSettings::Ssh(_) if request.verb == Verb::Get => SSH_READS_IN_FLIGHT,
            TransportSettings::Ssh(_) => return None,
        };
        Some(
            self.gates
                .get_or(endpoint(settings), || Gate::new(capacity)),
        )
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
        let watcher = self.node_tasks.get_or(key.clone(), Rc::default);
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
        let key = flight_key(settings, request);
        if let Some(flight) = self.flights.get(&key).filter(|f| f.joinable()) {
            return (flight, FlightKey::Joined);
        }
        let flight = Rc::new(Flight::default());
        self.flights.insert(key.clone(), flight.clone());
        (flight, FlightKey::Sends(key))
    }

    /// Whether `request` would not go out at once now: the endpoint's gate is full, or the same
    /// read waits to be sent already (a run may join it). A run that reads one guest of a busy
    /// node asks for the node's list instead, which one answer serves for all (a fleet's starts).
    pub fn crowded(&self, settings: &TransportSettings, request: &PveRequest) -> bool {
        let joinable = self
            .flights
            .get(&flight_key(settings, request))
            .is_some_and(|f| f.joinable());
        joinable || self.gate(settings, request).is_some_and(|g| g.is_full())
    }

    /// Forgets a flight once it landed (only if it is still the one under `key`).
    pub fn flight_done(&self, key: &str, flight: &Rc<Flight>) {
        self.flights.remove_if(key, flight);
    }
}

/// What makes two reads the same read: where they go, who asks, and what.
fn flight_key(settings: &TransportSettings, request: &PveRequest) -> String {
    format!(
        "{}|{}|{} {}?{}",
        endpoint(settings),
        identity(settings),
        request.verb.http_method(),
        request.display_path(),
        crate::debug_text::pairs(&request.params)
    )
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
            self.shared.node_tasks.remove_if(&self.key, &self.watcher);
        }
    }
}
