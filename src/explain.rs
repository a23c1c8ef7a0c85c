//! Turning a failed PVE call into a message that says what was tried, what happened, and what to check.

use crate::outcome::Failure;
use crate::pve::error::{ErrorKind, PveError};
use std::fmt;

/// What the user should check for each class of error.
pub fn hint(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Unauthorized => "check tokenId and tokenSecret",
        ErrorKind::Forbidden => "the API token lacks the privilege named in PVE's message",
        ErrorKind::NotImplemented => "this PVE version does not offer that API path",
        ErrorKind::Network => "check that the node is reachable over the configured transport",
        ErrorKind::NodeUnreachable => {
            "the node you connect to could not reach the node this request is for: check that node (is it online?) and the cluster network (pvecm status)"
        }
        ErrorKind::SshConnect => "fix what the ssh message names; a retry would fail the same way",
        ErrorKind::Timeout => "PVE did not answer in time; check the node's load and the network",
        ErrorKind::Tls => {
            "check caCert (the CA that signed the PVE certificate) and apiUrl's host name"
        }
        ErrorKind::Malformed => {
            "PVE's answer could not be read; is apiUrl a PVE API endpoint (or pveshBinary PVE's pvesh)?"
        }
        ErrorKind::Aborted => "the run was aborted by the caller",
        ErrorKind::Agent | ErrorKind::GuestNotRunning => {
            "check that the guest runs and its QEMU guest agent is enabled and running"
        }
        ErrorKind::GuestNotOnNode => "the guest is not on that node",
        ErrorKind::NoSuchTask => "PVE does not know the task",
        ErrorKind::IdTaken | ErrorKind::BadRequest | ErrorKind::Server => "see PVE's message",
    }
}

/// `could not <action>: <PVE's words> — <what to check>`.
pub fn could_not(action: &str, error: &PveError) -> Failure {
    could_not_args(format_args!("{action}"), error)
}

/// [`could_not`] of an action given as `format_args!`: written straight into the message, not
/// formatted apart first (issue 32).
pub fn could_not_args(action: fmt::Arguments<'_>, error: &PveError) -> Failure {
    Failure::new(format!(
        "could not {action}: {error} — {}",
        hint(error.kind)
    ))
}

/// The failure of a mutation whose answer was lost or unreadable ([`PveError::outcome_unknown`]):
/// PVE may have carried it out. Says so, that it was not sent again, and what to `check` first.
/// The action is given as `format_args!` ([`could_not_args`]).
pub fn outcome_unknown(action: fmt::Arguments<'_>, error: &PveError, check: &str) -> Failure {
    Failure::new(format!(
        "{action}: the request was sent, but {error}; whether PVE carried it out is unknown — it was not sent again (a second one could act twice): check {check} before trying again"
    ))
}

/// A failed mutation: [`outcome_unknown`] when it may have been carried out, else [`could_not`].
pub fn mutation_failed(action: fmt::Arguments<'_>, error: &PveError, check: &str) -> Failure {
    match error.outcome_unknown() {
        true => outcome_unknown(action, error, check),
        false => could_not_args(action, error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_answer_says_the_effect_is_unknown_and_what_to_check() {
        let lost = PveError::malformed("PVE answered HTTP 200 with a body that is not PVE's JSON");
        let failure = mutation_failed(
            format_args!("start VM 100 on node pve1"),
            &lost,
            "the guest (run lookup)",
        );
        assert!(
            failure
                .0
                .starts_with("start VM 100 on node pve1: the request was sent"),
            "{}",
            failure.0
        );
        assert!(failure.0.contains("is unknown"), "{}", failure.0);
        assert!(failure.0.contains("it was not sent again"), "{}", failure.0);
        assert!(
            failure.0.contains("check the guest (run lookup)"),
            "{}",
            failure.0
        );
    }

    #[test]
    fn a_refusal_by_pve_is_a_plain_could_not() {
        let refused = PveError::reported(Some(500), "VM is locked (backup)");
        let failure = mutation_failed(format_args!("start VM 100 on node pve1"), &refused, "x");
        assert_eq!(
            failure.0,
            "could not start VM 100 on node pve1: VM is locked (backup) (HTTP 500) — see PVE's message"
        );
    }
}
