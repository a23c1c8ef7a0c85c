//! Turning a failed PVE call into a message that says what was tried, what happened, and what to check.

use crate::outcome::Failure;
use crate::pve::error::{ErrorKind, PveError};

/// What the user should check for each class of error.
pub fn hint(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Unauthorized => "check tokenId and tokenSecret",
        ErrorKind::Forbidden => "the API token lacks the privilege named in PVE's message",
        ErrorKind::NotImplemented => "this PVE version does not offer that API path",
        ErrorKind::Network => "check that the node is reachable over the configured transport",
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
    Failure::new(format!(
        "could not {action}: {error} — {}",
        hint(error.kind)
    ))
}
