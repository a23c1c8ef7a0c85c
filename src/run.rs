//! Everything one method run needs: the host, the parsed global arguments, the model's guest kind.

use crate::client::Pve;
use crate::clock::iso_time;
use crate::global_args::GlobalArgs;
use crate::host::{Host, LogLevel};
use crate::outcome::RecordWrite;
use crate::poll::WaitBudget;
use crate::pve::endpoints::GuestKind;
use crate::scrub::Scrubber;
use crate::watch::Shared;

/// One method run.
pub struct Run<'a, H: Host> {
    pub host: &'a H,
    pub global: &'a GlobalArgs,
    pub kind: GuestKind,
    /// The swamp method name, recorded as `lastOperation`.
    pub method: &'a str,
    /// The run's secrets (scrubbed from everything that comes back and everything said).
    pub scrub: &'a Scrubber,
    /// The method's one wait budget (`taskTimeoutSec`).
    pub budget: WaitBudget,
    /// What this run shares with the process's other runs on the same nodes.
    pub shared: &'a Shared,
}

impl<'a, H: Host> Run<'a, H> {
    /// A run of `method` on `kind` guests.
    pub fn new(
        host: &'a H,
        global: &'a GlobalArgs,
        kind: GuestKind,
        method: &'a str,
        scrub: &'a Scrubber,
        shared: &'a Shared,
    ) -> Self {
        Run {
            shared,
            host,
            global,
            kind,
            method,
            scrub,
            budget: WaitBudget::new(global.task_timeout_sec * 1000),
        }
    }

    /// The PVE client of this run.
    pub fn pve(&self) -> Pve<'_, H> {
        Pve {
            host: self.host,
            settings: &self.global.transport,
            task_timeout_ms: self.global.task_timeout_sec * 1000,
            poll_cap_ms: self.global.poll_interval_sec * 1000,
            request_timeout_ms: self.global.request_timeout_sec * 1000,
            scrub: self.scrub,
            budget: &self.budget,
            shared: self.shared,
        }
    }

    /// What is left of the method's one wait budget (`taskTimeoutSec`); starts it if no wait has.
    pub fn wait_budget_ms(&self) -> u64 {
        self.budget.remaining_ms(self.host.now_ms())
    }

    /// Now, as recorded in `recordedAt`.
    pub fn now_iso(&self) -> String {
        iso_time(self.host.now_ms())
    }

    /// The state record's instance name: `vm-<vmid>` or `ct-<vmid>`.
    pub fn guest_instance(&self, vmid: u32) -> String {
        format!("{}-{vmid}", self.kind.record_prefix())
    }

    /// The state record's spec: `guest` (qemu) or `container` (lxc).
    pub fn guest_spec(&self) -> &'static str {
        self.kind.record_spec()
    }

    pub fn info(&self, message: &str) {
        self.host.log(LogLevel::Info, message);
    }

    pub fn warn(&self, message: &str) {
        self.host.log(LogLevel::Warning, message);
    }

    /// [`Run::info`] of a line given as `format_args!` ([`Host::log_args`]).
    pub fn info_args(&self, message: std::fmt::Arguments<'_>) {
        self.host.log_args(LogLevel::Info, message);
    }

    /// [`Run::warn`] of a line given as `format_args!` ([`Host::log_args`]).
    pub fn warn_args(&self, message: std::fmt::Arguments<'_>) {
        self.host.log_args(LogLevel::Warning, message);
    }
}

/// A record to write, already made JSON (record_json.rs): one copy of the rest for every record
/// type, no serializer per record type (issue 32).
#[inline(never)]
pub fn write_value(spec: &str, instance: String, data: serde_json::Value) -> RecordWrite {
    RecordWrite {
        spec: spec.to_string(),
        instance,
        data,
    }
}
