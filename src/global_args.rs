//! The model's global arguments: which transport reaches PVE, and the time budget of tasks and polls.

use crate::args::{credential_fault, ArgError, Fields, Kind, Read, Spec};
use serde_json::Value;

/// Settings of the HTTPS API transport.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiSettings {
    pub node: String,
    /// Base URL without `/api2/json`, e.g. `https://pve1:8006`.
    pub api_url: String,
    pub token_id: String,
    pub token_secret: Secret,
    pub ca_cert: Option<String>,
    pub skip_tls_verify: bool,
}

/// Settings of the ssh transport (pvesh run on the node).
#[derive(Debug, Clone, PartialEq)]
pub struct SshSettings {
    pub node: String,
    pub host: String,
    pub user: String,
    pub port: u16,
    pub proxy_jump: Option<String>,
    pub proxy_command: Option<String>,
    pub identity_file: Option<String>,
    pub identity_agent: Option<String>,
    pub strict_host_key_checking: Option<String>,
    pub connect_timeout_sec: u64,
    pub ssh_binary: String,
    pub pvesh_binary: String,
    /// `pct` on the node (containers' guestExec runs `pct exec`).
    pub pct_binary: String,
}

/// How PVE is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportSettings {
    Api(ApiSettings),
    Ssh(SshSettings),
}

impl TransportSettings {
    /// The node the transport talks to (the default node of node-scoped methods).
    pub fn node(&self) -> &str {
        match self {
            TransportSettings::Api(api) => &api.node,
            TransportSettings::Ssh(ssh) => &ssh.node,
        }
    }

    /// Who PVE sees as the caller (`$rpcenv->get_user()`): the token id, or root@pam for pvesh.
    pub fn caller(&self) -> &str {
        match self {
            TransportSettings::Api(api) => &api.token_id,
            TransportSettings::Ssh(_) => "root@pam",
        }
    }
}

/// A secret value whose `Debug` output never shows it.
#[derive(Clone, PartialEq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Self {
        Secret(value)
    }
    /// The secret itself; call only where it is placed into a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Arguments shared by every method of a model.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalArgs {
    pub transport: TransportSettings,
    pub task_timeout_sec: u64,
    pub poll_interval_sec: u64,
    /// How long one ordinary request may go unanswered (`requestTimeoutSec`): a hung read is then
    /// retried, a hung mutation fails as "effect unknown". Separate from `taskTimeoutSec`: a long
    /// task budget must not mean a long hang per request, nor a short one cut a slow read.
    pub request_timeout_sec: u64,
}

const MAX_SECONDS: i32 = 7 * 24 * 3600;

impl GlobalArgs {
    /// Reads and checks the global arguments from the merged argument object.
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        // One table in two walks, the transport read between them as before.
        let mut read = [Read::default(); TOP.len()];
        let (name, rest) = TOP.split_at(1);
        let (read_name, read_rest) = read.split_at_mut(1);
        fields.read_all(name, read_name)?;
        let transport = parse_transport(&fields.object("transport")?)?;
        fields.read_all(rest, read_rest)?;
        let [_, task, poll, request] = read;
        Ok(GlobalArgs {
            transport,
            task_timeout_sec: task.int as u64,
            poll_interval_sec: poll.int as u64,
            request_timeout_sec: request.int as u64,
        })
    }
}

/// The top-level fields, in order; the transport comes after the name.
const TOP: [Spec; 4] = [
    Spec::new("name", Kind::RequiredText).rule(name_fault),
    Spec::new("taskTimeoutSec", Kind::IntOr(1, MAX_SECONDS, 300)),
    Spec::new("pollIntervalSec", Kind::IntOr(1, 3600, 3)),
    Spec::new("requestTimeoutSec", Kind::IntOr(1, 3600, 30)),
];

fn name_fault(name: &str) -> Option<&'static str> {
    name.is_empty().then_some("must not be empty")
}

fn parse_transport(fields: &Fields) -> Result<TransportSettings, ArgError> {
    match fields.required_text("kind")? {
        // Each returns the settings as the transport: built in place, not moved into it (issue 32).
        "api" => parse_api(fields),
        "ssh" => parse_ssh(fields),
        other => Err(ArgError::new(
            fields.path("kind"),
            format!("must be \"api\" or \"ssh\" (got {other:?})"),
        )),
    }
}

// Both transports are a table of their fields, read and checked borrowed, in order, before any is
// copied: a refusal drops nothing.

const API: [Spec; 6] = [
    Spec::new("apiUrl", Kind::Line).rule(api_url_fault),
    Spec::new("tokenSecret", Kind::RequiredText).rule(credential_fault),
    Spec::new("tokenId", Kind::RequiredText).rule(credential_fault),
    Spec::new("node", Kind::Segment),
    Spec::new("caCert", Kind::Text),
    Spec::new("skipTlsVerify", Kind::Flag(false)),
];

fn api_url_fault(url: &str) -> Option<&'static str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let well_formed = rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'));
    (!well_formed).then_some("must be an http(s) URL, e.g. https://pve1:8006")
}

fn parse_api(fields: &Fields) -> Result<TransportSettings, ArgError> {
    let mut read = [Read::default(); API.len()];
    fields.read_all(&API, &mut read)?;
    let [api_url, secret, token_id, node, ca_cert, skip_tls_verify] = read;
    Ok(TransportSettings::Api(ApiSettings {
        node: node.owned_or(""),
        api_url: api_url.text.unwrap_or("").trim_end_matches('/').to_string(),
        token_id: token_id.owned_or(""),
        token_secret: Secret::new(secret.owned_or("")),
        ca_cert: ca_cert.owned(),
        skip_tls_verify: skip_tls_verify.int != 0,
    }))
}

const SSH: [Spec; 13] = [
    Spec::new("strictHostKeyChecking", Kind::OptionalLine).rule(strict_fault),
    Spec::new("host", Kind::Line).rule(host_fault),
    Spec::new("user", Kind::OptionalLine).rule(user_fault),
    Spec::new("node", Kind::Segment),
    Spec::new("port", Kind::IntOr(1, 65535, 22)),
    Spec::new("proxyJump", Kind::OptionalLine),
    Spec::new("proxyCommand", Kind::OptionalLine),
    Spec::new("identityFile", Kind::OptionalLine),
    Spec::new("identityAgent", Kind::OptionalLine),
    Spec::new("connectTimeoutSec", Kind::IntOr(1, 3600, 15)),
    Spec::new("sshBinary", Kind::OptionalLine),
    Spec::new("pveshBinary", Kind::OptionalLine),
    Spec::new("pctBinary", Kind::OptionalLine),
];

fn strict_fault(value: &str) -> Option<&'static str> {
    let known = matches!(value, "yes" | "accept-new" | "no" | "off");
    (!known).then_some("must be one of yes, accept-new, no, off")
}

fn host_fault(host: &str) -> Option<&'static str> {
    let rule = "must not start with `-` (ssh would read it as an option)";
    host.starts_with('-').then_some(rule)
}

fn user_fault(user: &str) -> Option<&'static str> {
    let bad = user.starts_with('-') || user.contains('@');
    bad.then_some("must not start with `-` or contain `@`")
}

fn parse_ssh(fields: &Fields) -> Result<TransportSettings, ArgError> {
    let mut read = [Read::default(); SSH.len()];
    fields.read_all(&SSH, &mut read)?;
    let [strict, host, user, node, port, jump, command, file, agent, timeout, ssh, pvesh, pct] =
        read;
    Ok(TransportSettings::Ssh(SshSettings {
        node: node.owned_or(""),
        host: host.owned_or(""),
        user: user.owned_or("root"),
        port: port.int as u16,
        proxy_jump: jump.owned(),
        proxy_command: command.owned(),
        identity_file: file.owned(),
        identity_agent: agent.owned(),
        strict_host_key_checking: strict.owned(),
        connect_timeout_sec: timeout.int as u64,
        ssh_binary: ssh.owned_or("ssh"),
        pvesh_binary: pvesh.owned_or("pvesh"),
        pct_binary: pct.owned_or("pct"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api(extra: Value) -> Value {
        let mut transport = json!({"kind": "api", "node": "pve1", "apiUrl": "https://pve1:8006/",
            "tokenId": "root@pam!swamp", "tokenSecret": "s3cret"});
        for (k, v) in extra.as_object().unwrap() {
            transport[k] = v.clone();
        }
        json!({"name": "fleet", "transport": transport})
    }

    #[test]
    fn api_transport_defaults_apply() {
        let args = GlobalArgs::parse(&api(json!({}))).unwrap();
        assert_eq!(args.task_timeout_sec, 300);
        assert_eq!(args.poll_interval_sec, 3);
        assert_eq!(args.request_timeout_sec, 30);
        let TransportSettings::Api(api) = args.transport else {
            panic!("api expected")
        };
        assert_eq!(api.api_url, "https://pve1:8006");
        assert!(!api.skip_tls_verify);
    }

    #[test]
    fn request_timeout_is_bounded_like_the_zod_schema() {
        let with = |v: Value| {
            let mut args = api(json!({}));
            args["requestTimeoutSec"] = v;
            GlobalArgs::parse(&args)
        };
        assert_eq!(with(json!(1)).unwrap().request_timeout_sec, 1);
        assert_eq!(with(json!(3600)).unwrap().request_timeout_sec, 3600);
        for bad in [json!(0), json!(3601), json!(1.5), json!("5")] {
            assert_eq!(with(bad).unwrap_err().field, "requestTimeoutSec");
        }
    }

    #[test]
    fn unknown_transport_kind_names_the_field() {
        let err =
            GlobalArgs::parse(&json!({"name": "x", "transport": {"kind": "telnet"}})).unwrap_err();
        assert_eq!(err.field, "transport.kind");
    }

    #[test]
    fn newline_in_node_is_refused() {
        let err = GlobalArgs::parse(&api(json!({"node": "pve1\nx"}))).unwrap_err();
        assert_eq!(err.field, "transport.node");
    }

    #[test]
    fn a_control_character_in_a_credential_is_refused_naming_the_field() {
        for bad in ["a\tb", "a\u{7f}", "a\u{1b}[2J", "a\u{85}b", "x\n"] {
            let secret = GlobalArgs::parse(&api(json!({"tokenSecret": bad}))).unwrap_err();
            assert_eq!(secret.field, "transport.tokenSecret", "{bad:?}");
            assert!(
                !secret.rule.contains(bad),
                "the rule never echoes the secret"
            );
            let id = GlobalArgs::parse(&api(json!({"tokenId": bad}))).unwrap_err();
            assert_eq!(id.field, "transport.tokenId", "{bad:?}");
        }
    }

    #[test]
    fn secret_never_appears_in_debug_output() {
        let args = GlobalArgs::parse(&api(json!({}))).unwrap();
        assert!(!format!("{args:?}").contains("s3cret"));
    }

    #[test]
    fn ssh_option_with_newline_is_refused() {
        let v = json!({"name": "x", "transport": {"kind": "ssh", "node": "pve1", "host": "h",
            "proxyJump": "a\nb"}});
        assert_eq!(
            GlobalArgs::parse(&v).unwrap_err().field,
            "transport.proxyJump"
        );
    }

    #[test]
    fn ssh_host_starting_with_dash_is_refused() {
        let v = json!({"name": "x", "transport": {"kind": "ssh", "node": "pve1", "host": "-oProxyCommand=x"}});
        assert_eq!(GlobalArgs::parse(&v).unwrap_err().field, "transport.host");
    }
}
