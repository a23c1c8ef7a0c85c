//! One PVE call with the run's discipline: abort checks, bounded retries of safe reads, debug logging.

use crate::global_args::TransportSettings;
use crate::host::{Host, LogLevel};
use crate::poll::Backoff;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::request::{PveRequest, Repeat};
use crate::transport;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// How many times a safe read is re-sent after a transient fault.
const READ_RETRIES: u32 = 2;
/// Budget of one ordinary request.
const REQUEST_TIMEOUT_MS: u64 = 30_000;
/// Extra time granted over the task timeout when pvesh runs a task in the foreground.
const FOREGROUND_TASK_SLACK_MS: u64 = 30_000;

/// A PVE API client bound to one run: its host, transport and task budget.
pub struct Pve<'a, H: Host> {
    pub host: &'a H,
    pub settings: &'a TransportSettings,
    pub task_timeout_ms: u64,
    pub poll_cap_ms: u64,
}

impl<'a, H: Host> Pve<'a, H> {
    /// Sends one request; safe reads are retried on transient faults, mutations never.
    pub async fn call(&self, request: &PveRequest) -> Result<Value, PveError> {
        let timeout_ms = if transport::blocks_for_task(self.settings, request) {
            self.task_timeout_ms + FOREGROUND_TASK_SLACK_MS
        } else {
            REQUEST_TIMEOUT_MS
        };
        let mut retry_pause = Backoff::new(200, 2_000);
        let mut attempt = 0;
        loop {
            if self.host.aborted() {
                return Err(aborted());
            }
            let started = self.host.now_ms();
            let result = transport::send(self.host, self.settings, request, timeout_ms).await;
            let elapsed = (self.host.now_ms() - started).max(0.0).round() as u64;
            match &result {
                Ok(_) => self.host.log(
                    LogLevel::Debug,
                    &format!("{} → ok in {elapsed} ms", request.label()),
                ),
                Err(e) => self.host.log(
                    LogLevel::Debug,
                    &format!("{} → {e} in {elapsed} ms", request.label()),
                ),
            }
            match result {
                Err(e)
                    if request.repeat == Repeat::Safe
                        && e.is_transient()
                        && attempt < READ_RETRIES =>
                {
                    attempt += 1;
                    self.host.log(
                        LogLevel::Warning,
                        &format!(
                            "{} failed ({e}); retrying ({attempt} of {READ_RETRIES})",
                            request.label()
                        ),
                    );
                    self.host.sleep(retry_pause.next_delay()).await;
                }
                other => return other,
            }
        }
    }

    /// Sends a request and reads its `data` as `T`; `what` names the expected shape in errors.
    pub async fn read<T: DeserializeOwned>(
        &self,
        request: &PveRequest,
        what: &str,
    ) -> Result<T, PveError> {
        let data = self.call(request).await?;
        T::deserialize(&data).map_err(|e| {
            PveError::malformed(format!(
                "{} answered with data that is not {what} ({e})",
                request.label()
            ))
        })
    }
}

/// The error every loop returns once the caller aborted the run.
pub fn aborted() -> PveError {
    PveError {
        kind: ErrorKind::Aborted,
        message: "the run was aborted".to_string(),
        status: None,
    }
}
