//! `fileRead`: records a file of a VM through its guest agent (`file-read`, base64 so any bytes
//! survive), up to `maxBytes`, with `truncated` when the file goes on. Recorded as `vm-<vmid>-file`:
//! the content as text when it is UTF-8, else as base64.

use crate::args::{ArgError, Fields};
use crate::explain::could_not_args;
use crate::guest::files::{check_path, read_bytes, Content, FileRecord, MAX_FILE_BYTES};
use crate::guest::locate::{absent_message, locate, Found};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::run::{write_value, Run};
use serde_json::Value;

/// The arguments of `fileRead`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReadArgs {
    pub target: GuestRef,
    pub path: String,
    pub max_bytes: usize,
}

impl FileReadArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let path = fields.required_text("path")?;
        check_path(path)?;
        Ok(FileReadArgs {
            target: GuestRef::parse(&fields)?,
            path: path.to_string(),
            max_bytes: fields.int_in_or("maxBytes", 1, MAX_FILE_BYTES as i64, 1024 * 1024)?
                as usize,
        })
    }
}

/// Runs `fileRead`.
pub async fn file_read<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match FileReadArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    // Located from this method's own await (no wrapper's state machine, issue 32).
    let at = match locate(&run.pve(), run.kind, &args.target).await {
        Ok(Found::Present(at)) => at,
        Ok(Found::Absent { vmid }) => return Failure(absent_message(run.kind, vmid, "")).into(),
        Err(failure) => return failure.into(),
    };
    // One byte more than recorded tells a file of exactly maxBytes from a longer one.
    let mut bytes = match read_bytes(&run.pve(), &at, &args.path, args.max_bytes + 1).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return could_not_args(
                format_args!("read {:?} in VM {} on node {}", args.path, at.vmid, at.node),
                &e,
            )
            .into();
        }
    };
    let truncated = bytes.len() > args.max_bytes;
    bytes.truncate(args.max_bytes);
    let mut record = FileRecord::new(run, &at, &args.path);
    record.bytes = bytes.len();
    record.truncated = truncated;
    record.content = Some(Content::of(&bytes));
    let summary = format!(
        "read {} bytes of {:?} in VM {}{}",
        bytes.len(),
        args.path,
        at.vmid,
        if truncated {
            " (truncated at maxBytes)"
        } else {
            ""
        }
    );
    let instance = format!("{}-file", run.guest_instance(at.vmid));
    Outcome::succeeded(vec![write_value("file", instance, record.json())], summary)
}
