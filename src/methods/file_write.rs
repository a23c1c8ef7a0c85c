//! `fileWrite`: writes a file into a VM through its guest agent and succeeds only when reading it
//! back gives the same bytes. PVE's `file-write` truncates and writes one `content` of at most
//! 61 440 base64 characters (46 080 bytes) per call (qemu-server PVE/API2/Qemu/Agent.pm): a larger
//! file is written as parts beside it, joined by `cat` through a verified guest exec. `mode` is
//! applied with `chmod` and read back with `stat`, both verified execs.

use crate::args::{ArgError, Fields};
use crate::explain::{could_not_args, mutation_failed};
use crate::guest::agent_exec::execute;
use crate::guest::exec::{ExecArgs, ExecOutcome, ExitPolicy};
use crate::guest::files::{check_path, read_bytes, FileRecord, MAX_FILE_BYTES, WRITE_CHUNK_BYTES};
use crate::guest::locate::{absent_message, locate, Found, Located};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::base64;
use crate::pve::endpoints;
use crate::pve::error::PveError;
use crate::run::{write_value, Run};
use serde_json::Value;

/// How long each helper exec (join, chmod, stat) may take.
const HELPER_EXEC_SEC: u64 = 60;

/// The arguments of `fileWrite`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWriteArgs<'a> {
    pub target: GuestRef,
    /// The path and the mode, borrowed from the arguments: never copied (issue 32).
    pub path: &'a str,
    pub bytes: Vec<u8>,
    pub mode: Option<&'a str>,
}

impl<'a> FileWriteArgs<'a> {
    pub fn parse(args: &'a Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let path = fields.required_text("path")?;
        check_path(path)?;
        let text = fields.text("content")?;
        let encoded = fields.text("contentBase64")?;
        let bytes = match (text, encoded) {
            (Some(text), None) => text.as_bytes().to_vec(),
            (None, Some(encoded)) => base64::decode_strict(encoded)
                .ok_or_else(|| ArgError::new("contentBase64", "must be padded base64"))?,
            _ => {
                return Err(ArgError::new(
                    "content",
                    "give exactly one of content (text) and contentBase64 (bytes)",
                ))
            }
        };
        if bytes.len() > MAX_FILE_BYTES {
            return Err(ArgError::new(
                "content",
                "must be at most 16777216 bytes (PVE's largest file-read, which verifies it)",
            ));
        }
        let mode = fields.text("mode")?;
        if let Some(mode) = mode {
            let octal =
                (3..=4).contains(&mode.len()) && mode.bytes().all(|b| (b'0'..=b'7').contains(&b));
            if !octal {
                return Err(ArgError::new(
                    "mode",
                    "must be 3 or 4 octal digits, e.g. 0644",
                ));
            }
        }
        Ok(FileWriteArgs {
            target: GuestRef::parse(&fields)?,
            path,
            bytes,
            mode,
        })
    }
}

/// Runs `fileWrite`.
pub async fn file_write<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match FileWriteArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    // Located from this method's own await (no wrapper's state machine, issue 32).
    let at = match locate(&run.pve(), run.kind, &args.target).await {
        Ok(Found::Present(at)) => at,
        Ok(Found::Absent { vmid }) => return Failure(absent_message(run.kind, vmid, "")).into(),
        Err(failure) => return failure.into(),
    };
    let mut record = FileRecord::new(run, &at, args.path);
    let verdict = write_verified(run, &at, &args, &mut record).await;
    record.verified = Some(verdict.is_ok());
    record.error = verdict.as_ref().err().cloned();
    let writes = vec![write_value(
        "file",
        format!("{}-file", run.guest_instance(at.vmid)),
        record.json(),
    )];
    match verdict {
        Ok(summary) => Outcome::succeeded(writes, summary),
        Err(message) => Outcome::failed(writes, message),
    }
}

async fn write_verified<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &FileWriteArgs<'_>,
    record: &mut FileRecord,
) -> Result<String, String> {
    let label = format!("{:?} in VM {} on node {}", args.path, at.vmid, at.node);
    let parts = parts_of(args);
    let pve = run.pve();
    for (path, bytes) in &parts {
        let request = endpoints::agent_file_write(&at.node, at.vmid, path, &base64::encode(bytes));
        let answer = pve.call(&request).await;
        put(answer, path, bytes, &label, record)?;
    }
    if parts.len() > 1 {
        let mut join = vec![
            "sh",
            "-c",
            "out=$1; shift; cat -- \"$@\" > \"$out\" && rm -f -- \"$@\"",
            "sh",
            args.path,
        ];
        for (part, _) in &parts {
            join.push(part);
        }
        helper(
            run,
            at,
            &join,
            &format!("join the {} parts of {label}", parts.len()),
        )
        .await
        .map_err(|why| {
            format!(
                "{why}; the parts {}.swamp-part-* may be left in the guest",
                args.path
            )
        })?;
    }
    if let Some(mode) = args.mode {
        let chmod = ["chmod", mode, args.path];
        helper(run, at, &chmod, &format!("chmod {mode} {label}")).await?;
        let stat = ["stat", "-c", "%a", args.path];
        let shown = helper(run, at, &stat, &format!("read the mode of {label}")).await?;
        let want = mode.trim_start_matches('0');
        let shown = shown.trim();
        // The record holds the mode as `stat` showed it (in the request's spelling when equal).
        let same = shown == if want.is_empty() { "0" } else { want };
        record.mode = Some(if same {
            mode.to_string()
        } else {
            shown.to_string()
        });
        if !same {
            return Err(format!("{label} has mode {shown} after chmod {mode}"));
        }
    }
    let back = read_bytes(&run.pve(), at, args.path, args.bytes.len() + 1)
        .await
        .map_err(|e| could_not_args(format_args!("read back {label}"), &e).0)?;
    if back != args.bytes {
        let at_byte = back
            .iter()
            .zip(&args.bytes)
            .take_while(|(a, b)| a == b)
            .count();
        return Err(format!(
            "{label} was written, but reading it back gave {} bytes that differ from the {} written from byte {at_byte} on — something else writes the file, or the guest's disk is full",
            back.len(),
            args.bytes.len()
        ));
    }
    Ok(format!(
        "wrote {} bytes to {label} in {} file-write call(s); the read-back matches byte for byte",
        args.bytes.len(),
        parts.len()
    ))
}

/// What each `file-write` writes, and where: the file itself when it fits one call (an empty file
/// is one call too), else numbered parts beside it for the join.
// Inlined into its one caller, `write_verified` (issue 32).
#[inline(always)]
fn parts_of<'a>(args: &'a FileWriteArgs<'_>) -> Vec<(String, &'a [u8])> {
    if args.bytes.len() <= WRITE_CHUNK_BYTES {
        return vec![(args.path.to_string(), &args.bytes[..])];
    }
    let mut parts = Vec::new();
    for chunk in args.bytes.chunks(WRITE_CHUNK_BYTES) {
        let path = format!("{}.swamp-part-{:04}", args.path, parts.len());
        parts.push((path, chunk));
    }
    parts
}

/// One `file-write`'s answer (never re-sent); one PVE answered OK counts in the record (its bytes
/// and calls).
// Inlined into its one caller, `write_verified` (issue 32).
#[inline(always)]
fn put(
    answer: Result<Value, PveError>,
    path: &str,
    bytes: &[u8],
    label: &str,
    record: &mut FileRecord,
) -> Result<(), String> {
    answer.map_err(|e| {
        mutation_failed(
            format_args!("write {path:?} ({} bytes) for {label}", bytes.len()),
            &e,
            "the file in the guest",
        )
        .0
    })?;
    record.bytes += bytes.len();
    record.chunks = Some(record.chunks.unwrap_or(0) + 1);
    Ok(())
}

/// Runs a helper command through the agent; `Ok(stdout)` only when it exited 0.
async fn helper<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    command: &[&str],
    what: &str,
) -> Result<String, String> {
    let mut argv = Vec::with_capacity(command.len());
    for word in command {
        argv.push(word.to_string());
    }
    let exec = ExecArgs {
        target: GuestRef {
            vmid: Some(at.vmid),
            name: None,
        },
        command: argv,
        timeout_sec: HELPER_EXEC_SEC,
        policy: ExitPolicy::ZeroOnly,
        input: None,
    };
    let (_, outcome, status) = execute(run, at, &exec, None).await;
    match outcome {
        // Read borrowed, as stderr below: the status is dropped whole, not taken apart.
        ExecOutcome::Exited { code: 0 } => {
            let stdout = status.as_ref().and_then(|s| s.stdout.as_ref());
            Ok(stdout.map_or(String::new(), |o| o.text.clone()))
        }
        ExecOutcome::Exited { code } => {
            // Borrowed where it is said, not copied out beforehand for every ending.
            let stderr = status.as_ref().and_then(|s| s.stderr.as_ref());
            Err(format!(
                "could not {what}: {:?} exited with code {code} ({}) — check that the guest has sh, cat, chmod and stat, and the path is writable",
                exec.command[0],
                stderr.map_or("", |o| o.text.as_str()).trim()
            ))
        }
        other => Err(format!(
            "could not {what}: the guest exec ended as {} — check the guest agent",
            debug_text(&other)
        )),
    }
}

/// How an exec's end is named in a message: as its derived `Debug` prints it (`TimedOut`,
/// `NotStarted { reason: "…" }`), written out here so that the module carries no struct
/// formatter for it (issue 32).
fn debug_text(outcome: &ExecOutcome) -> String {
    let (name, field, reason) = match outcome {
        ExecOutcome::Exited { code } => ("Exited", "code", code.to_string()),
        ExecOutcome::Signaled { signal } => ("Signaled", "signal", signal.to_string()),
        ExecOutcome::NotStarted { reason } => ("NotStarted", "reason", format!("{reason:?}")),
        ExecOutcome::Unconfirmed { reason } => ("Unconfirmed", "reason", format!("{reason:?}")),
        ExecOutcome::ResultLost { reason } => ("ResultLost", "reason", format!("{reason:?}")),
        ExecOutcome::TimedOut => return "TimedOut".to_string(),
        ExecOutcome::Aborted => return "Aborted".to_string(),
    };
    format!("{name} {{ {field}: {reason} }}")
}

#[cfg(test)]
mod tests {
    use crate::pve::base64;
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::{json, Value};

    /// A one-call write with `mode`: chmod ends as `chmod`, stat shows 644, the read-back matches.
    fn run_write(chmod: Value) -> crate::outcome::Outcome {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data("POST /nodes/pve1/qemu/100/agent/file-write", json!(null));
        host.on(
            "POST /nodes/pve1/qemu/100/agent/exec",
            [
                Answer::Data(json!({"pid": 1})),
                Answer::Data(json!({"pid": 2})),
            ],
        );
        host.on(
            "GET /nodes/pve1/qemu/100/agent/exec-status",
            [
                Answer::Data(chmod),
                Answer::Data(json!({"exited": 1, "exitcode": 0, "out-data": "644\n"})),
            ],
        );
        host.data(
            "GET /nodes/pve1/qemu/100/agent/file-read",
            json!({"content": base64::encode(b"hello")}),
        );
        let args = json!({"vmid": 100, "path": "/etc/motd", "content": "hello", "mode": "0644"});
        run_method(&host, "qemu", "fileWrite", args)
    }

    #[test]
    fn an_exec_end_is_named_as_its_derived_debug_prints_it() {
        use crate::guest::exec::ExecOutcome;
        let reason = "agent \"qga\" not running\n".to_string();
        for outcome in [
            ExecOutcome::Exited { code: -1 },
            ExecOutcome::Signaled { signal: 9 },
            ExecOutcome::TimedOut,
            ExecOutcome::NotStarted {
                reason: reason.clone(),
            },
            ExecOutcome::Unconfirmed {
                reason: reason.clone(),
            },
            ExecOutcome::ResultLost { reason },
            ExecOutcome::Aborted,
        ] {
            assert_eq!(super::debug_text(&outcome), format!("{outcome:?}"));
        }
    }

    #[test]
    fn a_helper_hands_back_its_stdout_or_says_its_exit_code_and_stderr() {
        let outcome = run_write(json!({"exited": 1, "exitcode": 0}));
        assert!(outcome.is_success(), "{outcome:?}");
        let file = &outcome.writes[0].data;
        assert_eq!(file["mode"], "0644", "{file}");
        let failed = run_write(json!({"exited": 1, "exitcode": 1, "err-data": " chmod: denied\n"}));
        assert!(
            failure_of(&failed).starts_with(
                "could not chmod 0644 \"/etc/motd\" in VM 100 on node pve1: \"chmod\" exited with code 1 (chmod: denied) — "
            ),
            "{failed:?}"
        );
    }
}
