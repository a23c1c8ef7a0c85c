//! The ssh transport: `ssh … -- host '<pvesh command>'`, argv only, and pvesh's exit code and streams.

use super::api::snippet;
use super::pvesh_output::extract_json;
use crate::global_args::SshSettings;
use crate::host::{ProcessOutput, ProcessRequest};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::request::PveRequest;
use serde_json::Value;

/// ssh's own exit status when it could not connect or authenticate.
const SSH_FAILURE: i32 = 255;

/// Builds the ssh argv. The remote command is one string parsed by the node's shell, so every part
/// of it is single-quoted; locally nothing goes through a shell.
pub fn assemble(settings: &SshSettings, request: &PveRequest, timeout_ms: u64) -> ProcessRequest {
    let mut argv = vec![settings.ssh_binary.clone()];
    let mut option = |text: String| {
        argv.push("-o".to_string());
        argv.push(text);
    };
    // Never prompt: a prompt would hang the method until its timeout.
    option("BatchMode=yes".to_string());
    option(format!("ConnectTimeout={}", settings.connect_timeout_sec));
    if let Some(file) = &settings.identity_file {
        option(format!("IdentityFile={file}"));
    }
    if let Some(agent) = &settings.identity_agent {
        option(format!("IdentityAgent={agent}"));
    }
    if let Some(strict) = &settings.strict_host_key_checking {
        option(format!("StrictHostKeyChecking={strict}"));
    }
    if let Some(jump) = &settings.proxy_jump {
        option(format!("ProxyJump={jump}"));
    }
    if let Some(command) = &settings.proxy_command {
        option(format!("ProxyCommand={command}"));
    }
    argv.extend([
        "-p".to_string(),
        settings.port.to_string(),
        "-l".to_string(),
        settings.user.clone(),
    ]);
    argv.extend([
        "--".to_string(),
        settings.host.clone(),
        remote_command(settings, request),
    ]);
    ProcessRequest { argv, timeout_ms }
}

/// `'pvesh' 'get' '/path' '--key=value' … '--output-format=json'`, each word single-quoted.
pub fn remote_command(settings: &SshSettings, request: &PveRequest) -> String {
    let mut words = vec![
        settings.pvesh_binary.clone(),
        request.verb.pvesh_command().to_string(),
        request.display_path(),
    ];
    // `--key=value` in one word, so a value starting with `-` is never read as an option.
    words.extend(request.params.iter().map(|(k, v)| format!("--{k}={v}")));
    words.push("--output-format=json".to_string());
    words
        .iter()
        .map(|w| single_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// POSIX single quoting: `'` becomes `'\''`; everything else is literal inside quotes.
pub fn single_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// pvesh's answer: its JSON on exit 0, else a classified error from stderr.
pub fn interpret(settings: &SshSettings, output: &ProcessOutput) -> Result<Value, PveError> {
    match output.code {
        Some(0) => extract_json(&output.stdout).ok_or_else(|| {
            PveError::malformed(format!(
                "pvesh exited 0 but printed no JSON ({})",
                snippet(&output.stdout)
            ))
        }),
        Some(SSH_FAILURE) => Err(connection_error(settings, &output.stderr)),
        Some(code) => Err(pvesh_error(code, &output.stderr)),
        None => Err(PveError {
            kind: ErrorKind::Network,
            message: format!(
                "ssh to {} was killed by a signal before pvesh answered",
                settings.host
            ),
            status: None,
        }),
    }
}

fn pvesh_error(code: i32, stderr: &str) -> PveError {
    let message = stderr.trim();
    if message.is_empty() {
        return PveError::reported(None, &format!("pvesh exited {code} with nothing on stderr"));
    }
    // pvesh prints HTTP-style errors as "<status> <message>" (e.g. "400 Parameter verification failed.").
    let status = message.split_once(' ').and_then(|(code, _)| {
        (code.len() == 3)
            .then(|| code.parse::<u16>().ok())
            .flatten()
    });
    let text = match status {
        Some(_) => message
            .split_once(' ')
            .map(|(_, rest)| rest)
            .unwrap_or(message),
        None => message,
    };
    PveError::reported(
        status,
        &text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// Names which ssh failure it was and what to check; never hides ssh's own words.
fn connection_error(settings: &SshSettings, stderr: &str) -> PveError {
    let said = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .collect::<Vec<_>>()
        .join("; ");
    let lower = said.to_ascii_lowercase();
    let target = format!("{}@{}:{}", settings.user, settings.host, settings.port);
    let (kind, hint) = if lower.contains("host key verification failed")
        || lower.contains("remote host identification has changed")
    {
        (ErrorKind::Network, "the host key does not match known_hosts: check the node's key, or strictHostKeyChecking")
    } else if lower.contains("permission denied") {
        (
            ErrorKind::Network,
            "authentication failed: check user and identityFile/identityAgent",
        )
    } else if lower.contains("connection refused") {
        (
            ErrorKind::Network,
            "connection refused: check host, port and that sshd runs",
        )
    } else if lower.contains("timed out") {
        (
            ErrorKind::Timeout,
            "connection timed out: check host, port, proxyJump and connectTimeoutSec",
        )
    } else if lower.contains("could not resolve") {
        (
            ErrorKind::Network,
            "the host name does not resolve: check host",
        )
    } else {
        (ErrorKind::Network, "ssh could not run pvesh on the node")
    };
    PveError {
        kind,
        message: format!("ssh to {target} failed — {hint} (ssh said: {said})"),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pve::request::{Repeat, Verb};

    fn settings() -> SshSettings {
        SshSettings {
            node: "pve1".into(),
            host: "pve1.lan".into(),
            user: "root".into(),
            port: 2222,
            proxy_jump: Some("jump@bastion".into()),
            proxy_command: None,
            identity_file: Some("/keys/id".into()),
            identity_agent: None,
            strict_host_key_checking: Some("yes".into()),
            connect_timeout_sec: 7,
            ssh_binary: "ssh".into(),
            pvesh_binary: "pvesh".into(),
        }
    }

    fn out(code: Option<i32>, stdout: &str, stderr: &str) -> ProcessOutput {
        ProcessOutput {
            code,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn argv_ends_with_host_and_one_quoted_remote_command() {
        let req = PveRequest::get(&["nodes", "pve1", "qemu", "100", "status", "current"]);
        let p = assemble(&settings(), &req, 5000);
        let n = p.argv.len();
        assert_eq!(p.argv[0], "ssh");
        assert_eq!(
            &p.argv[n - 3..n - 1],
            &["--".to_string(), "pve1.lan".to_string()]
        );
        assert_eq!(
            p.argv[n - 1],
            "'pvesh' 'get' '/nodes/pve1/qemu/100/status/current' '--output-format=json'"
        );
        assert!(p
            .argv
            .windows(2)
            .any(|w| w == ["-o", "ProxyJump=jump@bastion"]));
        assert!(p.argv.windows(2).any(|w| w == ["-o", "BatchMode=yes"]));
        assert!(p.argv.windows(2).any(|w| w == ["-p", "2222"]));
    }

    #[test]
    fn hostile_values_stay_inside_single_quotes() {
        let req = PveRequest::new(
            Verb::Create,
            &["nodes", "pve1", "qemu", "100", "agent", "exec"],
            Repeat::Never,
        )
        .param("command", "it's $(rm -rf /) `x`; | -n");
        let cmd = remote_command(&settings(), &req);
        assert!(
            cmd.contains(r"'--command=it'\''s $(rm -rf /) `x`; | -n'"),
            "{cmd}"
        );
    }

    #[test]
    fn pvesh_error_keeps_the_message_and_status() {
        let e = interpret(
            &settings(),
            &out(
                Some(2),
                "",
                "400 Parameter verification failed.\nvmid: invalid\n",
            ),
        )
        .unwrap_err();
        assert_eq!(e.status, Some(400));
        assert_eq!(e.message, "Parameter verification failed.; vmid: invalid");
        let missing = interpret(
            &settings(),
            &out(
                Some(2),
                "",
                "Configuration file 'nodes/pve1/qemu-server/1.conf' does not exist\n",
            ),
        )
        .unwrap_err();
        assert_eq!(missing.kind, ErrorKind::GuestNotOnNode);
    }

    #[test]
    fn ssh_failures_say_which_and_what_to_check() {
        let e = interpret(
            &settings(),
            &out(Some(255), "", "Host key verification failed.\n"),
        )
        .unwrap_err();
        assert!(e.message.contains("host key"), "{}", e.message);
        assert!(e.message.contains("root@pve1.lan:2222"));
        let refused = interpret(
            &settings(),
            &out(
                Some(255),
                "",
                "ssh: connect to host pve1.lan port 2222: Connection refused\n",
            ),
        )
        .unwrap_err();
        assert!(refused.message.contains("connection refused"));
    }

    #[test]
    fn upid_after_progress_lines_is_the_answer() {
        let v = interpret(
            &settings(),
            &out(
                Some(0),
                "starting\n\"UPID:pve1:1:2:3:qmstart:100:root@pam:\"\n",
                "",
            ),
        )
        .unwrap();
        assert_eq!(v, "UPID:pve1:1:2:3:qmstart:100:root@pam:");
    }
}
