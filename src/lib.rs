//! Decision core of the `@stateless/proxmox` swamp extension.
//!
//! It decides what to ask Proxmox VE, whether a method's intended effect happened, and which records
//! to write. It performs no I/O: every effect goes through the injected [`host::Host`].

/// `expr?` inside a labeled block that makes a verdict: an `Err` ends the block `'label` with it. A
/// method's course can then sit in the async function that records its outcome, with no future of
/// its own (issue 32: each async function costs its own state machine).
macro_rules! or_break {
    ($label:lifetime, $e:expr) => {
        match $e {
            Ok(value) => value,
            Err(e) => break $label Err(e),
        }
    };
}

pub mod args;
#[cfg(test)]
mod bounds_tests;
pub mod catalog;
pub mod client;
pub mod clock;
pub mod debug_text;
pub mod dispatch;
pub mod explain;
#[cfg(test)]
mod fault_tests;
pub mod global_args;
pub mod guest;
pub mod host;
pub mod json_text;
#[cfg(test)]
mod lock_after_ok_tests;
#[cfg(test)]
mod long_tail_tests;
pub mod methods;
pub mod order;
pub mod outcome;
pub mod poll;
pub mod progress;
pub mod pve;
pub mod quote;
pub mod record_json;
#[cfg(test)]
mod record_truth_tests;
pub mod run;
pub mod scrub;
pub mod task;
#[cfg(test)]
pub mod testing;
pub mod transport;
pub mod units;
pub mod watch;

#[cfg(target_arch = "wasm32")]
pub mod wasm;
