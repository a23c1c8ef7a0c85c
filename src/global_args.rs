//! The model's global arguments: which transport reaches PVE, and the time budget of tasks and polls.

use crate::args::{check_credential, ArgError, Fields};
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

const MAX_SECONDS: i64 = 7 * 24 * 3600;

impl GlobalArgs {
    /// Reads and checks the global arguments from the merged argument object.
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let name = fields.required_text("name")?;
        fields.rule("name", name.is_empty().then_some("must not be empty"))?;
        Ok(GlobalArgs {
            transport: parse_transport(&fields.object("transport")?)?,
            task_timeout_sec: fields.int_in_or("taskTimeoutSec", 1, MAX_SECONDS, 300)? as u64,
            poll_interval_sec: fields.int_in_or("pollIntervalSec", 1, 3600, 3)? as u64,
            request_timeout_sec: fields.int_in_or("requestTimeoutSec", 1, 3600, 30)? as u64,
        })
    }
}

fn parse_transport(fields: &Fields) -> Result<TransportSettings, ArgError> {
    match fields.required_text("kind")? {
        "api" => parse_api(fields).map(TransportSettings::Api),
        "ssh" => parse_ssh(fields).map(TransportSettings::Ssh),
        other => Err(ArgError::new(
            fields.path("kind"),
            format!("must be \"api\" or \"ssh\" (got {other:?})"),
        )),
    }
}

// Both transports check every field, borrowed, before they copy any: a refusal drops nothing.

fn parse_api(fields: &Fields) -> Result<ApiSettings, ArgError> {
    let api_url = fields.line_str("apiUrl")?;
    let rest = api_url
        .strip_prefix("https://")
        .or_else(|| api_url.strip_prefix("http://"));
    if !rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/')) {
        return Err(ArgError::new(
            fields.path("apiUrl"),
            "must be an http(s) URL, e.g. https://pve1:8006",
        ));
    }
    let secret = fields.required_text("tokenSecret")?;
    check_credential(&fields.path("tokenSecret"), secret)?;
    let token_id = fields.required_text("tokenId")?;
    check_credential(&fields.path("tokenId"), token_id)?;
    let node = fields.segment_str("node")?;
    let ca_cert = fields.text("caCert")?;
    let skip_tls_verify = fields.flag_or("skipTlsVerify", false)?;
    Ok(ApiSettings {
        node: node.to_string(),
        api_url: api_url.trim_end_matches('/').to_string(),
        token_id: token_id.to_string(),
        token_secret: Secret::new(secret.to_string()),
        ca_cert: ca_cert.map(str::to_string),
        skip_tls_verify,
    })
}

fn parse_ssh(fields: &Fields) -> Result<SshSettings, ArgError> {
    let strict = fields.optional_line_str("strictHostKeyChecking")?;
    let strict_ok = strict.is_none_or(|v| matches!(v, "yes" | "accept-new" | "no" | "off"));
    let strict_rule = "must be one of yes, accept-new, no, off";
    fields.rule("strictHostKeyChecking", (!strict_ok).then_some(strict_rule))?;
    let host = fields.line_str("host")?;
    let host_rule = "must not start with `-` (ssh would read it as an option)";
    fields.rule("host", host.starts_with('-').then_some(host_rule))?;
    let user = fields.optional_line_str("user")?.unwrap_or("root");
    let user_rule = "must not start with `-` or contain `@`";
    let user_bad = user.starts_with('-') || user.contains('@');
    fields.rule("user", user_bad.then_some(user_rule))?;
    let node = fields.segment_str("node")?;
    let port = fields.int_in_or("port", 1, 65535, 22)?;
    let proxy_jump = fields.optional_line_str("proxyJump")?;
    let proxy_command = fields.optional_line_str("proxyCommand")?;
    let identity_file = fields.optional_line_str("identityFile")?;
    let identity_agent = fields.optional_line_str("identityAgent")?;
    let connect_timeout_sec = fields.int_in_or("connectTimeoutSec", 1, 3600, 15)?;
    let ssh_binary = fields.optional_line_str("sshBinary")?.unwrap_or("ssh");
    let pvesh_binary = fields.optional_line_str("pveshBinary")?.unwrap_or("pvesh");
    let pct_binary = fields.optional_line_str("pctBinary")?.unwrap_or("pct");
    let owned = |text: Option<&str>| text.map(str::to_string);
    Ok(SshSettings {
        node: node.to_string(),
        host: host.to_string(),
        user: user.to_string(),
        port: port as u16,
        proxy_jump: owned(proxy_jump),
        proxy_command: owned(proxy_command),
        identity_file: owned(identity_file),
        identity_agent: owned(identity_agent),
        strict_host_key_checking: owned(strict),
        connect_timeout_sec: connect_timeout_sec as u64,
        ssh_binary: ssh_binary.to_string(),
        pvesh_binary: pvesh_binary.to_string(),
        pct_binary: pct_binary.to_string(),
    })
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
