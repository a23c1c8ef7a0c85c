//! The ssh transport: `ssh … -- host '<pvesh command>'`, argv only, and pvesh's exit code and streams.

use super::api::snippet;
use super::pvesh_output::extract_json;
use crate::global_args::SshSettings;
use crate::host::{ProcessOutput, ProcessRequest};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::request::PveRequest;
use crate::quote::Joined;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt::Write;

/// ssh's own exit status when it could not connect or authenticate. pvesh can exit 255 too: its
/// handler errors are uncaught Perl `die`s, whose status is errno, else 255 (see [`ssh_failed`]).
const SSH_FAILURE: i32 = 255;

/// The longest single argument Linux passes to a program (`MAX_ARG_STRLEN` = 32 pages, less the NUL).
/// The remote command is one argument twice: of the local `ssh`, and of the node's `sh -c`.
pub const MAX_REMOTE_COMMAND_BYTES: usize = 131_071;

/// Builds the ssh argv. The remote command is one string parsed by the node's shell, so every part
/// of it is single-quoted; locally nothing goes through a shell. A command line longer than one
/// program argument may be is refused here, before anything runs (see [`MAX_REMOTE_COMMAND_BYTES`]).
pub fn assemble(
    settings: &SshSettings,
    request: &PveRequest,
    timeout_ms: u64,
) -> Result<ProcessRequest, PveError> {
    let remote = remote_command(settings, request);
    if remote.len() > MAX_REMOTE_COMMAND_BYTES {
        return Err(PveError::new(ErrorKind::BadRequest, format!(
                "{} over ssh would need a {}-byte pvesh command line, and a program argument is \
                 limited to {MAX_REMOTE_COMMAND_BYTES} bytes on Linux (single quotes in values count \
                 4 bytes each): send less data (e.g. a smaller inputData) or use the api transport",
                request.label(),
                remote.len()
            ), None));
    }
    Ok(ssh_argv(settings, remote, timeout_ms))
}

/// `pct exec <vmid> -- <argv>` on the node, as one remote command line: every word single-quoted,
/// `input` fed to the command's stdin with the shell's `printf` (else stdin is `/dev/null`). Refused
/// before anything runs when it would exceed one program argument.
pub fn assemble_pct_exec(
    settings: &SshSettings,
    vmid: u32,
    argv: &[String],
    input: Option<&str>,
    timeout_ms: u64,
) -> Result<ProcessRequest, PveError> {
    let mut words = vec![
        settings.pct_binary.clone(),
        "exec".to_string(),
        vmid.to_string(),
        "--".to_string(),
    ];
    // Loops, not extends from iterators: each such extend brings its own copy of the code.
    for word in argv {
        words.push(word.clone());
    }
    let attach = quoted_words(&words);
    let remote = match input {
        Some(data) => format!("printf '%s' {} | {attach}", single_quote(data)),
        None => format!("{attach} </dev/null"),
    };
    if remote.len() > MAX_REMOTE_COMMAND_BYTES {
        return Err(PveError::new(
            ErrorKind::BadRequest,
            format!(
                "pct exec over ssh would need a {}-byte command line, and a program argument is \
                 limited to {MAX_REMOTE_COMMAND_BYTES} bytes on Linux (single quotes count 4 bytes \
                 each): send a shorter command or less inputData",
                remote.len()
            ),
            None,
        ));
    }
    Ok(ssh_argv(settings, remote, timeout_ms))
}

/// ssh's own failure, when exit 255 came with ssh's words rather than the remote command's.
pub fn ssh_failure(settings: &SshSettings, output: &ProcessOutput) -> Option<PveError> {
    (output.code == Some(SSH_FAILURE) && ssh_failed(&output.stderr))
        .then(|| connection_error(settings, &output.stderr))
}

/// The ssh argv that runs `remote` on the node.
fn ssh_argv(settings: &SshSettings, remote: String, timeout_ms: u64) -> ProcessRequest {
    let mut argv = vec![settings.ssh_binary.clone()];
    let mut option = |text: String| {
        argv.push("-o".to_string());
        argv.push(text);
    };
    // Never prompt: a prompt would hang the method until its timeout.
    option("BatchMode=yes".to_string());
    option(format!("ConnectTimeout={}", settings.connect_timeout_sec));
    // ConnectTimeout bounds the TCP connect and the banner only: a server that sends its banner and
    // then stalls in key exchange would hold ssh forever (seen with OpenSSH 9.2). Keepalives bound
    // key exchange and authentication by interval × count = connectTimeoutSec, and end a session
    // whose node stopped answering; a live node answers them even while pvesh runs a long task.
    option(format!(
        "ServerAliveInterval={}",
        settings.connect_timeout_sec
    ));
    option("ServerAliveCountMax=1".to_string());
    // The chosen ones in this order, each `Name=value`: one table, one formatting (issue 32).
    let chosen = [
        ("IdentityFile", &settings.identity_file),
        ("IdentityAgent", &settings.identity_agent),
        ("StrictHostKeyChecking", &settings.strict_host_key_checking),
        ("ProxyJump", &settings.proxy_jump),
        ("ProxyCommand", &settings.proxy_command),
    ];
    for (name, value) in chosen {
        if let Some(value) = value {
            option(format!("{name}={value}"));
        }
    }
    for word in [
        "-p",
        &settings.port.to_string(),
        "-l",
        &settings.user,
        "--",
        &settings.host,
    ] {
        argv.push(word.to_string());
    }
    argv.push(remote);
    // Connecting is bounded by connectTimeoutSec on its own; the request's budget starts after it.
    let timeout_ms = timeout_ms.saturating_add(settings.connect_timeout_sec.saturating_mul(1000));
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
    for (k, v) in &request.params {
        words.push(format!("--{k}={v}"));
    }
    words.push("--output-format=json".to_string());
    quoted_words(&words)
}

/// Each word single-quoted ([`single_quote`]), joined by spaces: one shell command line.
fn quoted_words(words: &[String]) -> String {
    let mut line = String::new();
    for word in words {
        crate::quote::push_item(&mut line, " ", &single_quote(word));
    }
    line
}

/// POSIX single quoting: `'` becomes `'\''`; everything else is literal inside quotes.
pub fn single_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// pvesh's answer: its JSON on exit 0, else a classified error from stderr.
pub fn interpret(settings: &SshSettings, output: &ProcessOutput) -> Result<Value, PveError> {
    match output.code {
        Some(0) => extract_json(&output.stdout).ok_or_else(|| {
            PveError::malformed_args(format_args!(
                "pvesh exited 0 but printed no JSON ({})",
                snippet(&output.stdout)
            ))
        }),
        Some(SSH_FAILURE) if ssh_failed(&output.stderr) => {
            Err(connection_error(settings, &output.stderr))
        }
        Some(code) => Err(pvesh_error(settings, code, &output.stderr)),
        None => Err(PveError::new(
            ErrorKind::Network,
            format!(
                "ssh to {} was killed by a signal before pvesh answered",
                settings.host
            ),
            None,
        )),
    }
}

/// Whether an exit 255 is ssh's own failure rather than pvesh's. ssh's failures speak in a few fixed
/// forms (OpenSSH 9.2, see tests/ssh/transport_test.ts); pvesh's `die` prints PVE's messages, which
/// never start like these.
fn ssh_failed(stderr: &str) -> bool {
    const STARTS: [&str; 16] = [
        "ssh: ",
        "kex_exchange_identification:",
        "banner exchange:",
        "connection closed by ",
        "connection reset by ",
        "connection to ",
        "connection timed out during banner exchange",
        "timeout, server ",
        "host key verification failed",
        "stdio forwarding failed",
        "load key ",
        "bad owner or permissions on ",
        "command-line line ",
        "command-line: ",
        "unable to negotiate with ",
        "received disconnect from ",
    ];
    const CONTAINS: [&str; 5] = [
        "permission denied (",
        "remote host identification has changed",
        "host key is known for",
        "too many authentication failures",
        ": bad configuration option",
    ];
    stderr.lines().any(|line| {
        let lower = line.trim().to_ascii_lowercase();
        STARTS.iter().any(|s| lower.starts_with(s))
            || CONTAINS.iter().any(|c| lower.contains(c))
            || (lower.starts_with("channel ") && lower.contains("open failed"))
    })
}

fn pvesh_error(settings: &SshSettings, code: i32, stderr: &str) -> PveError {
    let message = stderr.trim();
    if matches!(code, 126 | 127) {
        // The node's shell: 127 = not found, 126 = found but not executable.
        return PveError::new(
            ErrorKind::Server,
            format!(
                "the node's shell could not run pveshBinary {:?} (exit {code}: {}) — check \
                 pveshBinary, and that pvesh is installed on the node (is it a PVE node?)",
                settings.pvesh_binary,
                one_line(message)
            ),
            None,
        );
    }
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
    PveError::reported(status, &one_line(text))
}

/// Non-empty lines joined with `; `.
fn one_line(text: &str) -> String {
    let mut joined = String::new();
    for line in text.lines() {
        let line = line.trim();
        if !line.is_empty() {
            crate::quote::push_item(&mut joined, "; ", line);
        }
    }
    joined
}

/// Names which ssh failure it was and what to check; never hides ssh's own words (the host key
/// warning's banner and boilerplate are left out, its verdict lines kept).
fn connection_error(settings: &SshSettings, stderr: &str) -> PveError {
    let mut lines = Vec::new();
    for line in stderr.lines().map(str::trim) {
        if !line.is_empty()
            && !line.starts_with('@')
            && !line.starts_with("Warning: Permanently added")
        {
            lines.push(line);
        }
    }
    let lower = lines.joined("\n").to_ascii_lowercase();
    let has = |needle: &str| lower.contains(needle);
    let host_key = has("host key verification failed")
        || has("remote host identification has changed")
        || has("host key is known for");
    let (kind, hint): (ErrorKind, Cow<'static, str>) = if host_key {
        (
            ErrorKind::SshConnect,
            "the host key is not the one known_hosts holds for it (or is unknown while strict \
             checking is on): verify the node's key, then fix known_hosts (ssh-keygen -R) or \
             strictHostKeyChecking"
                .into(),
        )
    } else if has("permission denied (")
        || has("too many authentication failures")
        || has("load key ")
    {
        (
            ErrorKind::SshConnect,
            "authentication failed: check user, identityFile/identityAgent, and that the key is \
             in the node's authorized_keys"
                .into(),
        )
    } else if has("could not resolve hostname") {
        (
            ErrorKind::SshConnect,
            "the host name does not resolve: check host".into(),
        )
    } else if has("connection refused") {
        (
            ErrorKind::SshConnect,
            "connection refused: check host, port and that sshd runs on the node".into(),
        )
    } else if has("timeout, server") && has("not responding") {
        (
            ErrorKind::Timeout,
            "the connection went silent mid-call (no keepalive answer): the node or the network \
             stopped answering"
                .into(),
        )
    } else if has("timed out") {
        (
            ErrorKind::SshConnect,
            format!(
                "no ssh session within connectTimeoutSec={}s: check host, port, the proxy hop if \
                 any, firewalls, and connectTimeoutSec",
                settings.connect_timeout_sec
            )
            .into(),
        )
    } else if has("bad configuration option") || has("command-line") {
        (
            ErrorKind::SshConnect,
            "ssh refused its options: check sshBinary and the ssh option values".into(),
        )
    } else {
        (
            ErrorKind::Network,
            "ssh could not run pvesh on the node".into(),
        )
    };
    // After a host key failure, its verdict lines only: "Host key for … has changed …",
    // "Offending … key in …", "… failed." Pushed in place, not listed then joined (issue 32).
    let mut said = String::new();
    for line in lines {
        let l = line.to_ascii_lowercase();
        if !host_key
            || l.starts_with("host key")
            || l.starts_with("offending")
            || (l.starts_with("no ") && l.contains("host key is known"))
        {
            crate::quote::push_item(&mut said, "; ", line);
        }
    }
    // The message grows where it lies: the target, the hop if any, then the verdict (issue 32).
    let mut message = format!(
        "ssh to {}@{}:{}",
        settings.user, settings.host, settings.port
    );
    match (&settings.proxy_jump, &settings.proxy_command) {
        (Some(jump), _) => {
            let _ = write!(message, " (through proxyJump {jump})");
        }
        (None, Some(_)) => message.push_str(" (through proxyCommand)"),
        (None, None) => {}
    }
    let _ = write!(message, " failed — {hint} (ssh said: {said})");
    PveError::new(kind, message, None)
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
            pct_binary: "pct".into(),
            pvesh_binary: "pvesh".into(),
        }
    }

    fn out(code: Option<i32>, stdout: &str, stderr: &str) -> ProcessOutput {
        ProcessOutput {
            code,
            stdout: stdout.into(),
            stderr: stderr.into(),
            stdout_bytes: None,
            stderr_bytes: None,
        }
    }

    #[test]
    fn argv_ends_with_host_and_one_quoted_remote_command() {
        let req = PveRequest::get(&["nodes", "pve1", "qemu", "100", "status", "current"]);
        let p = assemble(&settings(), &req, 5000).unwrap();
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

    /// ssh's stderr for each failure, verbatim from OpenSSH 9.2 against a real sshd (tests/ssh).
    const REFUSED: &str = "ssh: connect to host 127.0.0.1 port 42999: Connection refused\r\n";
    const CHANGED: &str = "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n\
        @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\n\
        @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n\
        IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\r\n\
        Someone could be eavesdropping on you right now (man-in-the-middle attack)!\r\n\
        It is also possible that a host key has just been changed.\r\n\
        The fingerprint for the ED25519 key sent by the remote host is\r\n\
        SHA256:QqjfrWil3hMnXPizaj5U6206cWTKVXAQgJhzQtYUSYk.\r\n\
        Please contact your system administrator.\r\n\
        Add correct host key in /tmp/kh to get rid of this message.\r\n\
        Offending ED25519 key in /tmp/kh:1\r\n\
          remove with:\r\n\
          ssh-keygen -f \"/tmp/kh\" -R \"[127.0.0.1]:42022\"\r\n\
        Host key for [127.0.0.1]:42022 has changed and you have requested strict checking.\r\n\
        Host key verification failed.\r\n";
    const UNKNOWN: &str = "No ED25519 host key is known for [127.0.0.1]:42022 and you have requested strict checking.\r\nHost key verification failed.\r\n";
    const DENIED: &str = "root@127.0.0.1: Permission denied (publickey).\r\n";
    const BANNER_TIMEOUT: &str =
        "Connection timed out during banner exchange\r\nConnection to 127.0.0.1 port 42555 timed out\r\n";
    const KEX_TIMEOUT: &str = "Connection to 127.0.0.1 port 42558 timed out\r\n";
    const JUMP_REFUSED: &str = "ssh: connect to host 127.0.0.1 port 42999: Connection refused\r\n\
        kex_exchange_identification: Connection closed by remote host\r\n\
        Connection closed by UNKNOWN port 65535\r\n";
    const UNRESOLVED: &str =
        "ssh: Could not resolve hostname no-such-host.invalid: Name or service not known\r\n";

    #[test]
    fn each_real_ssh_failure_is_named_with_what_to_check() {
        let cases = [
            (
                REFUSED,
                ErrorKind::SshConnect,
                "connection refused: check host, port",
            ),
            (
                CHANGED,
                ErrorKind::SshConnect,
                "host key is not the one known_hosts holds",
            ),
            (
                UNKNOWN,
                ErrorKind::SshConnect,
                "host key is not the one known_hosts holds",
            ),
            (
                DENIED,
                ErrorKind::SshConnect,
                "authentication failed: check user, identityFile",
            ),
            (
                BANNER_TIMEOUT,
                ErrorKind::SshConnect,
                "no ssh session within connectTimeoutSec",
            ),
            (
                KEX_TIMEOUT,
                ErrorKind::SshConnect,
                "no ssh session within connectTimeoutSec",
            ),
            (JUMP_REFUSED, ErrorKind::SshConnect, "connection refused"),
            (
                UNRESOLVED,
                ErrorKind::SshConnect,
                "host name does not resolve",
            ),
        ];
        for (stderr, kind, hint) in cases {
            let e = interpret(&settings(), &out(Some(255), "", stderr)).unwrap_err();
            assert_eq!(e.kind, kind, "{stderr}");
            assert!(e.message.contains(hint), "{}", e.message);
            assert!(
                e.message.starts_with(
                    "ssh to root@pve1.lan:2222 (through proxyJump jump@bastion) failed — "
                ),
                "{}",
                e.message
            );
            assert!(!e.is_transient(), "{stderr}");
        }
    }

    #[test]
    fn the_host_key_warning_keeps_its_verdict_and_drops_its_banner() {
        let e = interpret(&settings(), &out(Some(255), "", CHANGED)).unwrap_err();
        assert!(!e.message.contains("@@"), "{}", e.message);
        assert!(!e.message.contains("NASTY"), "{}", e.message);
        assert!(e.message.contains(
            "Offending ED25519 key in /tmp/kh:1; Host key for [127.0.0.1]:42022 has changed and you have requested strict checking.; Host key verification failed."
        ), "{}", e.message);
    }

    #[test]
    fn pvesh_dying_with_255_is_pveshs_error_not_a_connection_failure() {
        // A handler error is an uncaught Perl die: exit errno, else 255 — the same number as ssh's.
        let e = interpret(
            &settings(),
            &out(
                Some(255),
                "",
                "Configuration file 'nodes/pve1/qemu-server/999.conf' does not exist\n",
            ),
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::GuestNotOnNode);
        let forbidden = interpret(
            &settings(),
            &out(
                Some(255),
                "",
                "403 Permission check failed (/vms/100, VM.Audit)\n",
            ),
        )
        .unwrap_err();
        assert_eq!(forbidden.kind, ErrorKind::Forbidden);
        assert_eq!(forbidden.status, Some(403));
        let any_code = interpret(
            &settings(),
            &out(
                Some(2),
                "",
                "Configuration file 'nodes/pve1/qemu-server/9.conf' does not exist\n",
            ),
        )
        .unwrap_err();
        assert_eq!(any_code.kind, ErrorKind::GuestNotOnNode);
    }

    #[test]
    fn a_session_that_went_silent_is_a_timeout_that_may_have_run() {
        let e = interpret(
            &settings(),
            &out(
                Some(255),
                "",
                "Timeout, server 127.0.0.1 not responding.\r\n",
            ),
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout);
    }

    #[test]
    fn a_missing_pvesh_names_pvesh_binary() {
        let e = interpret(
            &settings(),
            &out(Some(127), "", "bash: line 1: pvesh: command not found\n"),
        )
        .unwrap_err();
        assert!(e.message.contains("pveshBinary \"pvesh\""), "{}", e.message);
        assert!(e.message.contains("command not found"), "{}", e.message);
    }

    #[test]
    fn keepalives_bound_key_exchange_by_the_connect_timeout() {
        let req = PveRequest::get(&["version"]);
        let p = assemble(&settings(), &req, 5000).unwrap();
        assert!(p.argv.windows(2).any(|w| w == ["-o", "ConnectTimeout=7"]));
        assert!(p
            .argv
            .windows(2)
            .any(|w| w == ["-o", "ServerAliveInterval=7"]));
        assert!(p
            .argv
            .windows(2)
            .any(|w| w == ["-o", "ServerAliveCountMax=1"]));
        assert_eq!(p.timeout_ms, 5000 + 7000, "the connect budget comes on top");
    }

    #[test]
    fn a_command_line_longer_than_one_argument_may_be_is_refused_before_running() {
        let quotes = "'".repeat(40_000); // 160 000 bytes once escaped
        let req = PveRequest::new(
            Verb::Create,
            &["nodes", "pve1", "qemu", "100", "agent", "exec"],
            Repeat::Never,
        )
        .param("command", "cat")
        .param("input-data", quotes);
        let e = assemble(&settings(), &req, 5000).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadRequest);
        assert!(e.message.contains("131071"), "{}", e.message);
        let fits =
            PveRequest::new(Verb::Create, &["x"], Repeat::Never).param("v", "a".repeat(100_000));
        assert!(assemble(&settings(), &fits, 5000).is_ok());
    }
}
