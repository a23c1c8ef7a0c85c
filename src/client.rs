//! One PVE call with the run's discipline: abort checks, bounded retries of safe reads, debug logging.

use crate::global_args::TransportSettings;
use crate::host::{Host, LogLevel};
use crate::poll::{Backoff, WaitBudget, ANSWER_MS};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::read::FromJson;
use crate::pve::request::{PveRequest, Repeat};
use crate::scrub::Scrubber;
use crate::transport;
use crate::watch::flight::Flight;
use crate::watch::{FlightKey, Shared};
use serde_json::Value;
use std::fmt::Write;
use std::future::Future;
use std::rc::Rc;

/// How many times a safe read is re-sent after a transient fault.
const READ_RETRIES: u32 = 2;
/// Extra time granted over the task timeout when pvesh runs a task in the foreground.
const FOREGROUND_TASK_SLACK_MS: u64 = 30_000;

/// A PVE API client bound to one run: its host, transport and task budget.
pub struct Pve<'a, H: Host> {
    pub host: &'a H,
    pub settings: &'a TransportSettings,
    pub task_timeout_ms: u64,
    pub poll_cap_ms: u64,
    /// Budget of one ordinary request (`requestTimeoutSec`).
    pub request_timeout_ms: u64,
    /// The run's secrets, scrubbed out of every answer.
    pub scrub: &'a Scrubber,
    /// The method's one wait budget (`taskTimeoutSec`), shared by its tasks and effect waits.
    pub budget: &'a WaitBudget,
    /// What this run shares with the process's other runs (the node's request cap, its task list).
    pub shared: &'a Shared,
}

impl<'a, H: Host> Pve<'a, H> {
    /// Sends one request; safe reads are retried on transient faults, mutations never.
    pub fn call<'r>(
        &'r self,
        request: &'r PveRequest,
    ) -> impl Future<Output = Result<Value, PveError>> + 'r {
        self.send(request, None, None)
    }

    /// [`Pve::call`] of a read whose one answer may serve every run of the process that asks it
    /// of the same node, as the same identity, before it is sent (swamp's reachability check
    /// before each mutating run: a fleet asks it at once).
    pub fn call_coalesced<'r>(
        &'r self,
        request: &'r PveRequest,
    ) -> impl Future<Output = Result<Value, PveError>> + 'r {
        self.call_coalesced_part(request, &Value::clone)
    }

    /// [`Pve::call_coalesced`] of which the run needs only `part` (its own entry of a node's
    /// guest list): only that part of the one answer is copied and scrubbed for the run, so a
    /// fleet of N runs costs N entries, not N lists.
    pub async fn call_coalesced_part(
        &self,
        request: &PveRequest,
        part: &dyn Fn(&Value) -> Value,
    ) -> Result<Value, PveError> {
        let mine =
            |answer: &Result<Value, PveError>| answer.as_ref().map(part).map_err(Clone::clone);
        match self.shared.flight(self.settings, request) {
            (flight, FlightKey::Joined) => {
                flight.landed().await;
                match flight.read(mine) {
                    Some(answer) => {
                        self.host.log_args(
                            LogLevel::Debug,
                            format_args!(
                                "{} → one answer for the runs that asked at once",
                                request.label()
                            ),
                        );
                        answer.map(|mut data| {
                            self.scrub.value(&mut data);
                            data
                        })
                    }
                    // The sending run gave up without an answer: ask ourselves.
                    None => self.send(request, None, None).await.map(|data| part(&data)),
                }
            }
            (flight, FlightKey::Sends(key)) => {
                let landing = Landing {
                    shared: self.shared,
                    key,
                    flight,
                };
                let answer = self
                    .send(request, None, Some(&|_| landing.flight.mark_sent()))
                    .await;
                let taken = mine(&answer);
                landing.flight.land(answer);
                taken
            }
        }
    }

    /// [`Pve::call`] for a request of a wait that ends at `deadline_ms`: each attempt gets the time
    /// left, but never less than one read's time ([`ANSWER_MS`]: no read goes out without time to
    /// answer, so a wait ends within that of its bound), and a retry is made only while time is
    /// left for it.
    pub fn call_by<'r>(
        &'r self,
        request: &'r PveRequest,
        deadline_ms: f64,
    ) -> impl Future<Output = Result<Value, PveError>> + 'r {
        self.send(request, Some(deadline_ms), None)
    }

    /// [`Pve::call_by`] when `deadline_ms` is given, else [`Pve::call`]: one future for a caller
    /// that sends both kinds from one place (one await point instead of two).
    pub fn call_within<'r>(
        &'r self,
        request: &'r PveRequest,
        deadline_ms: Option<f64>,
    ) -> impl Future<Output = Result<Value, PveError>> + 'r {
        self.send(request, deadline_ms, None)
    }

    /// Sends one request (retrying a safe read, within `deadline_ms` if given), within the node's
    /// cap on requests in flight; `leaving` is told the time each attempt leaves (past the cap).
    async fn send(
        &self,
        request: &PveRequest,
        deadline_ms: Option<f64>,
        leaving: Option<&dyn Fn(f64)>,
    ) -> Result<Value, PveError> {
        let foreground = transport::blocks_for_task(self.settings, request);
        let budget_ms = match foreground {
            true => self.task_timeout_ms + FOREGROUND_TASK_SLACK_MS,
            false => self.request_timeout_ms,
        };
        let mut retry_pause = Backoff::new(200, 2_000);
        let mut attempt = 0;
        loop {
            if self.host.aborted() {
                return Err(aborted());
            }
            let pass = match self.shared.gate(self.settings, request) {
                Some(gate) => Some(gate.enter().await),
                None => None,
            };
            if self.host.aborted() {
                return Err(aborted());
            }
            let started = self.host.now_ms();
            if let Some(leaving) = leaving {
                leaving(started);
            }
            let left = deadline_ms.map(|d| (d - started).max(ANSWER_MS).ceil() as u64);
            let timeout_ms = left.map_or(budget_ms, |left| left.min(budget_ms));
            let cut = timeout_ms < budget_ms;
            let mut result =
                transport::send(self.host, self.settings, request, timeout_ms, self.scrub).await;
            // The error amended where it lies, not moved through a function and back (issue 32).
            if let Err(e) = &mut result {
                match cut {
                    true => name_the_wait(e, timeout_ms),
                    false => name_the_budget(e, foreground, timeout_ms),
                }
            }
            drop(pass);
            let elapsed = (self.host.now_ms() - started).max(0.0).round() as u64;
            // One line for both ends: the answer's word, then the time it took.
            let said = match &result {
                Ok(_) => "ok".to_string(),
                Err(e) => e.to_string(),
            };
            self.host.log_args(
                LogLevel::Debug,
                format_args!("{} → {said} in {elapsed} ms", request.label()),
            );
            let next_pause = retry_pause.next_delay();
            let time_for_retry =
                deadline_ms.is_none_or(|d| self.host.now_ms() + (next_pause as f64) < d);
            match result {
                Err(e)
                    if request.repeat == Repeat::Safe
                        && e.is_transient()
                        && attempt < READ_RETRIES
                        && time_for_retry =>
                {
                    attempt += 1;
                    self.host.log_args(
                        LogLevel::Warning,
                        format_args!(
                            "{} failed ({e}); retrying ({attempt} of {READ_RETRIES})",
                            request.label()
                        ),
                    );
                    self.host.sleep(next_pause).await;
                }
                other => return other,
            }
        }
    }

    /// [`Pve::call`] telling `leaving` when the request left, past the node's cap on requests in
    /// flight: the node's own pace, without the time spent queued behind the process's other runs.
    pub fn call_noting<'r>(
        &'r self,
        request: &'r PveRequest,
        leaving: &'r dyn Fn(f64),
    ) -> impl Future<Output = Result<Value, PveError>> + 'r {
        self.send(request, None, Some(leaving))
    }
}

/// An answer to `request` read as `T`: for a caller that sent it with [`Pve::call`] from its own
/// await and judges it in a plain function. One copy of the sending code for every shape read, and
/// no boxed reader per shape (issue 32).
pub fn shaped<T: FromJson>(
    request: &PveRequest,
    what: &str,
    answer: Result<Value, PveError>,
) -> Result<T, PveError> {
    // Read where it lies: `answer?` would first move the answer out of its `Result`, a copy in
    // every shape's reader (issue 32). An error is the cold path.
    match &answer {
        Ok(data) => T::from_json(data).map_err(|e| misshapen(request, what, e)),
        Err(error) => Err(error.clone()),
    }
}

/// An answer that is not the shape asked for. Apart from [`shaped`], which is instantiated for
/// every shape read, so that the message is built by one copy of the code (issue 32).
fn misshapen(request: &PveRequest, what: &str, why: String) -> PveError {
    PveError::malformed_args(format_args!(
        "{} answered with data that is not {what} ({why})",
        request.label()
    ))
}

/// A coalesced read's sending side: forgets the flight however the run leaves, and lets the runs
/// that joined ask themselves when no answer landed (the run was aborted or dropped).
struct Landing<'a> {
    shared: &'a Shared,
    key: String,
    flight: Rc<Flight>,
}

impl Drop for Landing<'_> {
    fn drop(&mut self) {
        self.shared.flight_done(&self.key, &self.flight);
        self.flight.abandon();
    }
}

/// A timeout names the knob that set its budget, so the user knows what to raise. Appended where
/// the message lies, not built anew around it (issue 32).
fn name_the_budget(error: &mut PveError, foreground: bool, timeout_ms: u64) {
    if error.kind == ErrorKind::Timeout {
        let message = &mut error.message;
        let _ = match foreground {
            true => write!(
                message,
                " (budget: taskTimeoutSec plus {}s)",
                FOREGROUND_TASK_SLACK_MS / 1000
            ),
            false => write!(
                message,
                " (budget: requestTimeoutSec={}s)",
                timeout_ms / 1000
            ),
        };
    }
}

/// A timeout of a request cut at its wait's deadline says so: the wait is over.
fn name_the_wait(error: &mut PveError, given_ms: u64) {
    if error.kind == ErrorKind::Timeout {
        let _ = write!(
            error.message,
            " (cut at the wait's end, after {given_ms} ms)"
        );
    }
}

/// The error every loop returns once the caller aborted the run.
pub fn aborted() -> PveError {
    PveError::new(ErrorKind::Aborted, "the run was aborted".to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::global_args::GlobalArgs;
    use crate::host::{HostError, HostErrorKind};
    use crate::pve::endpoints;
    use crate::testing::{api_args, block_on, Answer, ScriptedHost};
    use serde_json::json;

    fn reset() -> Answer {
        Answer::Fail(HostError {
            kind: HostErrorKind::Network,
            message: "connection reset by peer".into(),
        })
    }

    fn call(host: &ScriptedHost, request: &PveRequest) -> Result<Value, PveError> {
        let global = GlobalArgs::parse(&api_args(json!({"requestTimeoutSec": 7}))).unwrap();
        let pve = Pve {
            host,
            settings: &global.transport,
            task_timeout_ms: 60_000,
            poll_cap_ms: 1000,
            request_timeout_ms: global.request_timeout_sec * 1000,
            scrub: &crate::scrub::Scrubber::default(),
            budget: &crate::poll::WaitBudget::new(60_000),
            shared: &crate::watch::Shared::default(),
        };
        block_on(pve.call(request))
    }

    /// [`Pve::call_by`] of the cluster's guest list, with `left_ms` to the wait's deadline.
    fn call_with_left(host: &ScriptedHost, left_ms: f64) -> Result<Value, PveError> {
        let global = GlobalArgs::parse(&api_args(json!({}))).unwrap();
        let pve = Pve {
            host,
            settings: &global.transport,
            task_timeout_ms: 60_000,
            poll_cap_ms: 1000,
            request_timeout_ms: 30_000,
            scrub: &crate::scrub::Scrubber::default(),
            budget: &crate::poll::WaitBudget::new(60_000),
            shared: &crate::watch::Shared::default(),
        };
        let deadline = host.now_ms() + left_ms;
        block_on(pve.call_by(&endpoints::cluster_guests(), deadline))
    }

    #[test]
    fn a_read_sent_at_its_waits_end_is_still_given_one_reads_time_to_answer() {
        let host = ScriptedHost::new();
        let guests = Answer::Data(json!([]));
        host.on(
            "GET /cluster/resources",
            [Answer::Slow(300, Box::new(guests))],
        );
        assert_eq!(call_with_left(&host, 0.0), Ok(json!([])));
        assert_eq!(host.requests.borrow()[0].timeout_ms, ANSWER_MS as u64);
    }

    #[test]
    fn a_retry_near_a_waits_end_is_still_given_one_reads_time() {
        // After a 200 ms pause: with 300 ms left the retry goes, and gets a read's time to answer;
        // with 100 ms left there is no time left for it.
        for (left_ms, sent) in [(300.0, 2), (100.0, 1)] {
            let host = ScriptedHost::new();
            host.on("GET /cluster/resources", [reset(), Answer::Data(json!([]))]);
            assert_eq!(call_with_left(&host, left_ms).is_ok(), sent == 2);
            let requests = host.requests.borrow();
            assert_eq!(requests.len(), sent, "{left_ms} ms left");
            assert!(requests.iter().all(|r| r.timeout_ms == ANSWER_MS as u64));
        }
    }

    #[test]
    fn a_safe_read_absorbs_a_transient_fault_with_a_pause() {
        let host = ScriptedHost::new();
        host.on("GET /cluster/resources", [reset(), Answer::Data(json!([]))]);
        assert_eq!(call(&host, &endpoints::cluster_guests()), Ok(json!([])));
        assert_eq!(host.requests.borrow().len(), 2);
        assert!(host.elapsed_ms() >= 200.0, "backs off before the retry");
    }

    #[test]
    fn a_safe_read_gives_up_after_a_bounded_number_of_retries() {
        let host = ScriptedHost::new();
        host.on("GET /cluster/resources", [reset()]);
        let e = call(&host, &endpoints::cluster_guests()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Network);
        assert_eq!(host.requests.borrow().len() as u32, 1 + READ_RETRIES);
    }

    #[test]
    fn a_pve_error_on_a_read_is_not_retried() {
        let host = ScriptedHost::new();
        host.on(
            "GET /cluster/resources",
            [Answer::Error(500, "cluster not ready - no quorum?".into())],
        );
        assert!(call(&host, &endpoints::cluster_guests()).is_err());
        assert_eq!(host.requests.borrow().len(), 1);
    }

    #[test]
    fn mutations_and_exec_status_are_never_re_sent() {
        let argv = ["true".to_string()];
        for request in [
            endpoints::guest_start("pve1", endpoints::GuestKind::Qemu, 100),
            endpoints::qemu_clone("pve1", 9000, 300, "x", true, None),
            endpoints::agent_exec("pve1", 100, &argv, None),
            endpoints::agent_exec_status("pve1", 100, 7),
        ] {
            let host = ScriptedHost::new();
            host.on(&request.label(), [reset()]);
            let e = call(&host, &request).unwrap_err();
            assert!(e.outcome_unknown(), "{e}");
            assert_eq!(host.requests.borrow().len(), 1, "{}", request.label());
        }
    }

    #[test]
    fn the_request_budget_is_request_timeout_sec_and_a_timeout_names_it() {
        let host = ScriptedHost::new();
        host.on(
            "GET /version",
            [Answer::Fail(HostError {
                kind: HostErrorKind::Timeout,
                message: "GET https://pve1:8006/api2/json/version: no answer within 7000 ms".into(),
            })],
        );
        let e = call(&host, &endpoints::version()).unwrap_err();
        assert!(
            e.message.ends_with("(budget: requestTimeoutSec=7s)"),
            "{}",
            e.message
        );
        assert!(host.requests.borrow().iter().all(|r| r.timeout_ms == 7000));
        assert_eq!(host.requests.borrow().len() as u32, 1 + READ_RETRIES);
    }
}
