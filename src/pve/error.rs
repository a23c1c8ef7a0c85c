//! What went wrong with one PVE call, classified from the HTTP status (or pvesh exit) and PVE's message.

use crate::host::{HostError, HostErrorKind};
use std::fmt;

/// The class of a failed call; decides retries and the words of the final message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `Configuration file '…/<vmid>.conf' does not exist`: not on the node asked (maybe on another).
    GuestNotOnNode,
    /// 401: the token is unknown or its secret is wrong.
    Unauthorized,
    /// 403 `Permission check failed (…)`.
    Forbidden,
    /// 501: the API path does not exist on this PVE.
    NotImplemented,
    /// A task's status was asked for before PVE registered it.
    NoSuchTask,
    /// A VMID some guest already holds (`/cluster/nextid`, a clone, a create).
    IdTaken,
    /// 400: a parameter was refused.
    BadRequest,
    /// The guest agent is not configured, not running, or refused the command.
    Agent,
    /// `VM <vmid> is not running`.
    GuestNotRunning,
    /// Any other error PVE reported.
    Server,
    /// The network failed (connection refused/reset, ssh could not connect).
    Network,
    /// The node that answered could not reach the node the request is for: pveproxy's 595 (`no
    /// route to host`, `Connection refused`: not delivered) or 596 (timed out after sending).
    NodeUnreachable,
    /// ssh could not open a session for a reason a retry would not change soon: the connection was
    /// refused, the host key does not match (or is unknown under strict checking), authentication
    /// was refused, the host name does not resolve, or no session within `connectTimeoutSec` (a
    /// retry would wait as long again). pvesh never ran. The message names which and what to check.
    /// Never retried.
    SshConnect,
    /// No answer in time.
    Timeout,
    /// TLS verification failed.
    Tls,
    /// An answer arrived but could not be understood.
    Malformed,
    /// The run was aborted by the caller.
    Aborted,
}

/// A failed PVE call: its class, PVE's (or the transport's) own words, and the HTTP status if any.
/// Boxed: a call's error travels up through every `?` of every course, and a pointer is one word
/// to move where the three fields were five (issue 32). Reads as the [`PveFault`] it holds.
#[derive(Clone, PartialEq, Eq)]
pub struct PveError(Box<PveFault>);

/// What a [`PveError`] says.
#[derive(Clone, PartialEq, Eq)]
pub struct PveFault {
    pub kind: ErrorKind,
    pub message: String,
    pub status: Option<u16>,
}

impl std::ops::Deref for PveError {
    type Target = PveFault;

    fn deref(&self) -> &PveFault {
        &self.0
    }
}

impl std::ops::DerefMut for PveError {
    fn deref_mut(&mut self) -> &mut PveFault {
        &mut self.0
    }
}

/// As the struct of three fields it was before it was boxed: `PveError { kind: …, … }`.
impl fmt::Debug for PveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PveError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("status", &self.status)
            .finish()
    }
}

impl fmt::Display for PveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(status) => write!(f, "{} (HTTP {status})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl PveError {
    /// An error of `kind` in `message`'s words, with the HTTP status if any.
    pub fn new(kind: ErrorKind, message: String, status: Option<u16>) -> Self {
        PveError(Box::new(PveFault {
            kind,
            message,
            status,
        }))
    }

    /// An error PVE reported, classified from its status and message.
    /// PVE's words are quoted bounded ([`crate::quote::bounded`]): the reason comes first.
    pub fn reported(status: Option<u16>, message: &str) -> Self {
        let message = crate::quote::bounded(message.trim());
        PveError::new(classify(status, &message), message, status)
    }

    /// An answer that could not be parsed; `what` says what was expected.
    pub fn malformed(what: &str) -> Self {
        PveError::new(ErrorKind::Malformed, crate::quote::bounded(what), None)
    }

    /// [`PveError::malformed`] of words given as `format_args!`: formatted here, once, not into a
    /// text of its own at every call site (issue 32).
    pub fn malformed_args(what: fmt::Arguments<'_>) -> Self {
        PveError::malformed(&fmt::format(what))
    }

    /// Whether a safe-to-repeat request may be tried again after this error.
    pub fn is_transient(&self) -> bool {
        match self.kind {
            ErrorKind::Network | ErrorKind::Timeout | ErrorKind::NodeUnreachable => true,
            // Gateway errors (502/503/504) come and go.
            ErrorKind::Server => matches!(self.status, Some(502..=504)),
            _ => false,
        }
    }
}

impl PveError {
    /// Whether a mutation that failed this way may still have been carried out: its answer was lost
    /// (connection reset, no answer in time, the run aborted while it was in flight), could not be
    /// read, or came from a gateway that may have forwarded it (502, 504, pveproxy's 596). An error
    /// PVE itself reported — and 595, pveproxy's "could not reach the node" — means it was not.
    pub fn outcome_unknown(&self) -> bool {
        match self.kind {
            ErrorKind::Network | ErrorKind::Timeout | ErrorKind::Malformed | ErrorKind::Aborted => {
                true
            }
            ErrorKind::Server => matches!(self.status, Some(502 | 504)),
            ErrorKind::NodeUnreachable => self.status == Some(596),
            _ => false,
        }
    }
}

impl From<HostError> for PveError {
    fn from(error: HostError) -> Self {
        let kind = match error.kind {
            HostErrorKind::Network | HostErrorKind::Spawn | HostErrorKind::Internal => {
                ErrorKind::Network
            }
            HostErrorKind::Timeout => ErrorKind::Timeout,
            HostErrorKind::Tls => ErrorKind::Tls,
            HostErrorKind::Aborted => ErrorKind::Aborted,
        };
        PveError::new(kind, error.message, None)
    }
}

/// Classifies by PVE's message first (the same words arrive over HTTP and pvesh), then by status.
fn classify(status: Option<u16>, message: &str) -> ErrorKind {
    let lower = message.to_ascii_lowercase();
    if lower.starts_with("configuration file") && lower.contains("does not exist") {
        return ErrorKind::GuestNotOnNode;
    }
    if lower.contains("permission check failed") {
        return ErrorKind::Forbidden;
    }
    if lower.contains("no such task") {
        return ErrorKind::NoSuchTask;
    }
    if id_taken(&lower) {
        return ErrorKind::IdTaken;
    }
    if lower.ends_with("is not running") && lower.starts_with("vm ") {
        return ErrorKind::GuestNotRunning;
    }
    if lower.starts_with("agent error") || lower.contains("qemu guest agent") {
        return ErrorKind::Agent;
    }
    match status {
        Some(595 | 596) => ErrorKind::NodeUnreachable,
        Some(401) => ErrorKind::Unauthorized,
        Some(403) => ErrorKind::Forbidden,
        Some(501) => ErrorKind::NotImplemented,
        Some(400) => ErrorKind::BadRequest,
        _ if lower.contains("authentication failure") => ErrorKind::Unauthorized,
        _ => ErrorKind::Server,
    }
}

/// Whether a (lower-cased) message is PVE's refusal of a VMID some guest already holds. Three
/// wordings: `/cluster/nextid` raises a parameter error ("Parameter verification failed. (vmid: VM
/// 150 already exists)"); qemu-server's clone_vm dies "unable to create VM 150: config file already
/// exists" (PVE/API2/Qemu.pm); `PVE::Cluster::check_vmid_unused`, which pve-container's create_vm
/// calls, dies "VM 150 already exists on node 'pve1'" ("CT …" for a container). A volume that
/// already exists is a different refusal, so the wording must name the VMID.
fn id_taken(lower: &str) -> bool {
    let Some(at) = lower.find(" already exists") else {
        return false;
    };
    let before = &lower[..at];
    let names_an_id = |prefix: &str| {
        before
            .rsplit_once(prefix)
            .is_some_and(|(_, id)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    };
    names_an_id("vm ")
        || names_an_id("ct ")
        || (before.starts_with("unable to create vm ") && before.ends_with(": config file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boxed_error_prints_as_the_struct_it_was() {
        let error = PveError::new(ErrorKind::Server, "boom".to_string(), Some(500));
        assert_eq!(
            format!("{error:?}"),
            r#"PveError { kind: Server, message: "boom", status: Some(500) }"#
        );
        assert_eq!(error.to_string(), "boom (HTTP 500)");
    }

    #[test]
    fn every_wording_of_a_taken_vmid_is_id_taken() {
        for m in [
            "Parameter verification failed. (vmid: VM 150 already exists)",
            "unable to create VM 150: config file already exists",
            "VM 150 already exists on node 'pve1'",
            "CT 150 already exists on node 'pve2'",
        ] {
            assert_eq!(
                PveError::reported(Some(500), m).kind,
                ErrorKind::IdTaken,
                "{m}"
            );
        }
    }

    #[test]
    fn an_existing_volume_is_not_a_taken_vmid() {
        let m = "storage migration failed: volume 'local-lvm:vm-150-disk-0' already exists";
        assert_eq!(PveError::reported(Some(500), m).kind, ErrorKind::Server);
    }

    #[test]
    fn missing_config_file_means_not_on_this_node() {
        let e = PveError::reported(
            Some(500),
            "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist\n",
        );
        assert_eq!(e.kind, ErrorKind::GuestNotOnNode);
        assert_eq!(
            e.message,
            "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist"
        );
    }

    #[test]
    fn permission_failure_is_forbidden_without_status() {
        assert_eq!(
            PveError::reported(None, "Permission check failed (/vms/100, VM.Audit)").kind,
            ErrorKind::Forbidden
        );
    }

    #[test]
    fn agent_messages_are_agent_errors() {
        for m in [
            "No QEMU guest agent configured",
            "QEMU guest agent is not running",
            "Agent error: Invalid parameter 'pid'",
        ] {
            assert_eq!(
                PveError::reported(Some(500), m).kind,
                ErrorKind::Agent,
                "{m}"
            );
        }
        assert_eq!(
            PveError::reported(Some(500), "VM 100 is not running").kind,
            ErrorKind::GuestNotRunning
        );
    }

    #[test]
    fn a_taken_vmid_is_recognised_inside_a_parameter_error() {
        let e = PveError::reported(
            Some(400),
            "Parameter verification failed. (vmid: VM 150 already exists)",
        );
        assert_eq!(e.kind, ErrorKind::IdTaken);
    }

    #[test]
    fn statuses_classify_when_the_message_says_nothing_known() {
        assert_eq!(
            PveError::reported(Some(501), "Method 'GET /x' not implemented").kind,
            ErrorKind::NotImplemented
        );
        assert_eq!(
            PveError::reported(Some(401), "authentication failure").kind,
            ErrorKind::Unauthorized
        );
        assert_eq!(
            PveError::reported(Some(500), "boom").kind,
            ErrorKind::Server
        );
    }

    #[test]
    fn a_lost_or_unreadable_answer_leaves_a_mutation_unknown_but_a_pve_refusal_does_not() {
        let host = |kind| {
            PveError::from(HostError {
                kind,
                message: "x".into(),
            })
        };
        assert!(host(HostErrorKind::Network).outcome_unknown());
        assert!(host(HostErrorKind::Timeout).outcome_unknown());
        assert!(host(HostErrorKind::Aborted).outcome_unknown());
        assert!(PveError::malformed("truncated").outcome_unknown());
        assert!(PveError::reported(Some(502), "Bad Gateway").outcome_unknown());
        assert!(PveError::reported(Some(596), "Connection timed out").outcome_unknown());
        for (status, message) in [
            (500, "VM is locked (backup)"),
            (403, "Permission check failed (/vms/100, VM.PowerMgmt)"),
            (400, "Parameter verification failed."),
            (501, "Method 'POST /x' not implemented"),
            (595, "no route to host"),
        ] {
            assert!(
                !PveError::reported(Some(status), message).outcome_unknown(),
                "{status} {message}"
            );
        }
    }

    #[test]
    fn only_network_timeouts_and_gateway_errors_are_transient() {
        assert!(PveError::reported(Some(503), "unavailable").is_transient());
        assert!(!PveError::reported(Some(500), "boom").is_transient());
        assert!(!PveError::reported(Some(403), "Permission check failed").is_transient());
    }

    #[test]
    fn pveproxy_595_and_596_mean_another_node_is_unreachable() {
        for (status, message) in [
            (595, "no route to host"),
            (595, "Connection refused"),
            (596, "Connection timed out"),
        ] {
            let e = PveError::reported(Some(status), message);
            assert_eq!(e.kind, ErrorKind::NodeUnreachable, "{status} {message}");
            assert!(e.is_transient(), "a read may retry it");
        }
        // 595: the proxy never reached the node, so a mutation was not delivered; 596: it may have been.
        assert!(!PveError::reported(Some(595), "no route to host").outcome_unknown());
        assert!(PveError::reported(Some(596), "Connection timed out").outcome_unknown());
    }
}
