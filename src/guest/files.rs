//! Files in a VM through its guest agent, as `fileWrite` and `fileRead` share them: PVE's limits
//! (qemu-server PVE/API2/Qemu/Agent.pm), reading bytes back exactly, and the `vm-<vmid>-file`
//! record. Content always travels as base64 (`encode=0` / `decode=0`): PVE's default encodings
//! pass bytes through Perl strings, which mangles anything that is not ASCII.

use super::locate::Located;
use crate::client::Pve;
use crate::host::Host;
use crate::pve::base64;
use crate::pve::endpoints;
use crate::pve::error::PveError;
use crate::record_json::{opt, put, set};
use crate::run::Run;
use serde_json::{Map, Value};

/// `file-write`'s `content` maxLength (apidata.json): 61 440 base64 characters = 46 080 bytes.
pub const WRITE_CHUNK_BYTES: usize = 61_440 / 4 * 3;
/// PVE's `$MAX_READ_SIZE` for one `file-read` (16 MiB), also the largest file these methods handle.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;
/// One `file-read` window: PVE reads 1 MiB per agent call and joins the answers; asking for no more
/// keeps each answer one agent read.
const READ_WINDOW_BYTES: usize = 1024 * 1024;

/// Reads up to `limit` bytes of `path` from the start, in windows, stopping at the end of the file.
pub async fn read_bytes<H: Host>(
    pve: &Pve<'_, H>,
    at: &Located,
    path: &str,
    limit: usize,
) -> Result<Vec<u8>, PveError> {
    let mut out = Vec::new();
    while out.len() < limit {
        let want = READ_WINDOW_BYTES.min(limit - out.len());
        let request = endpoints::agent_file_read(&at.node, at.vmid, path, out.len(), want);
        let data = pve.call(&request).await?;
        let content = data
            .get("content")
            .and_then(|c| c.as_str())
            .ok_or_else(|| {
                PveError::malformed_args(format_args!(
                    "file-read answered without content: {data}",
                    data = crate::quote::json(&data)
                ))
            })?;
        let bytes = base64::decode(content).ok_or_else(|| {
            PveError::malformed("file-read (decode=0) answered content that is not base64")
        })?;
        if bytes.len() > want {
            return Err(PveError::malformed_args(format_args!(
                "file-read answered {} bytes where at most {want} were asked",
                bytes.len()
            )));
        }
        let short = bytes.len() < want;
        out.extend(bytes);
        // A regular file reads short only at its end.
        if short {
            break;
        }
    }
    Ok(out)
}

/// How bytes are recorded: as text when they are UTF-8, else as base64.
#[derive(Debug, Clone, PartialEq)]
pub struct Content {
    /// `utf8` or `base64`.
    pub encoding: &'static str,
    pub content: Option<String>,
    pub content_base64: Option<String>,
}

impl Content {
    pub fn of(bytes: &[u8]) -> Content {
        match std::str::from_utf8(bytes) {
            Ok(text) => Content {
                encoding: "utf8",
                content: Some(text.to_string()),
                content_base64: None,
            },
            Err(_) => Content {
                encoding: "base64",
                content: None,
                content_base64: Some(base64::encode(bytes)),
            },
        }
    }
}

/// The `vm-<vmid>-file` record: what one fileWrite or fileRead observed of one file. Written as
/// JSON by [`FileRecord::json`] (record_json.rs): no serializer of its own (issue 32).
#[derive(Debug, Clone, PartialEq)]
pub struct FileRecord {
    pub vmid: u32,
    pub node: String,
    pub path: String,
    /// Bytes written — taken by file-write calls PVE answered OK — (fileWrite) or recorded (fileRead).
    pub bytes: usize,
    /// fileRead: the file goes on beyond `maxBytes`.
    pub truncated: bool,
    /// fileWrite: the read-back matched byte for byte.
    pub verified: Option<bool>,
    /// fileWrite: how many file-write calls PVE answered OK.
    pub chunks: Option<usize>,
    /// fileWrite: the file's mode as `stat` showed it after the `chmod`.
    pub mode: Option<String>,
    /// fileRead: the bytes read, its fields written into the record's own.
    pub content: Option<Content>,
    pub error: Option<String>,
    pub last_operation: String,
    pub recorded_at: String,
}

impl FileRecord {
    pub fn new<H: Host>(run: &Run<'_, H>, at: &Located, path: &str) -> FileRecord {
        FileRecord {
            vmid: at.vmid,
            node: at.node.clone(),
            path: path.to_string(),
            bytes: 0,
            truncated: false,
            verified: None,
            chunks: None,
            mode: None,
            content: None,
            error: None,
            last_operation: run.method.to_string(),
            recorded_at: run.now_iso(),
        }
    }

    /// The record as written: absent optionals left out, the content's fields among its own.
    pub fn json(&self) -> Value {
        let mut record = Map::new();
        set(&mut record, "vmid", Value::from(self.vmid));
        put(&mut record, "node", Some(&self.node));
        put(&mut record, "path", Some(&self.path));
        set(&mut record, "bytes", Value::from(self.bytes));
        set(&mut record, "truncated", Value::Bool(self.truncated));
        opt(&mut record, "verified", self.verified.map(Value::Bool));
        opt(&mut record, "chunks", self.chunks.map(Value::from));
        put(&mut record, "mode", self.mode.as_deref());
        if let Some(content) = &self.content {
            put(&mut record, "encoding", Some(content.encoding));
            put(&mut record, "content", content.content.as_deref());
            put(
                &mut record,
                "contentBase64",
                content.content_base64.as_deref(),
            );
        }
        put(&mut record, "error", self.error.as_deref());
        put(&mut record, "lastOperation", Some(&self.last_operation));
        set(
            &mut record,
            "recordedAt",
            Value::from(self.recorded_at.as_str()),
        );
        Value::Object(record)
    }
}

/// Checks a guest path argument: not empty, no NUL (no argv and no C path can carry one).
pub fn check_path(path: &str) -> Result<(), crate::args::ArgError> {
    if path.is_empty() {
        return Err(crate::args::ArgError::new("path", "must not be empty"));
    }
    if path.contains('\0') {
        return Err(crate::args::ArgError::new("path", "must not contain NUL"));
    }
    Ok(())
}
