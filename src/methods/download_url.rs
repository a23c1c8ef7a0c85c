//! `downloadUrl` (both models): PVE fetches a URL into a storage — an ISO image, a container
//! template, or a disk image for `import-from` — successful only when the volume is then seen in
//! the storage's content with a size, and, when a checksum was given, PVE's own check of it ran.
//!
//! PVE's handler (pve-storage `PVE/API2/Storage/Status.pm` download_url) normalizes the file name
//! (`PVE::Storage::normalize_content_filename`: every character outside `[a-zA-Z0-9_.-]` becomes
//! `_`), checks its extension per content type, forks a `download` worker, and the worker
//! (pve-common `PVE/Tools.pm` download_file_from_url) downloads to a temporary file, checks the
//! checksum ("calculating checksum...OK, checksum verified"), decompresses, and renames it into
//! place. A file that is already there is refused ("refusing to override existing file") unless a
//! checksum was given; then its checksum is compared and, when equal, nothing is downloaded
//! ("OK, got correct file already, no need to download").
//!
//! 1. Up front, before anything changes: the storage exists on the node, is enabled, active and
//!    configured for the content type; the file name is one PVE keeps as given (no normalization)
//!    with the content type's extension; the URL's size is read from the node
//!    (`query-url-metadata`, the HEAD request PVE's GUI makes — its privileges are a part of the
//!    download's, so a 403 there is the download's own refusal).
//! 2. A volume of that name already there: done without a download when its size is the URL's
//!    (and, with a checksum, PVE's check of the existing file passes); otherwise a failure naming it.
//! 3. Else `POST …/download-url`, its task followed; then the content list must show the volume with
//!    a size > 0, equal to the URL's size when the server gave one (and nothing decompressed it),
//!    and with a checksum the task log must carry PVE's "checksum verified" line.

use crate::args::{segment_fault, ArgError, Fields, Kind, Read, Spec};
use crate::client::shaped;
use crate::explain::{could_not_args, hint, mutation_failed};
use crate::guest::evidence::TaskTrail;
use crate::guest::storage::{storage_in, storage_refusal};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex;
use crate::pve::request::PveRequest;
use crate::pve::responses::{log_text, NodeStorage, TaskLogLine};
use crate::pve::upid::Upid;
use crate::record_json::{list, opt, put, set};
use crate::run::{write_value, Run};
use crate::task::{follow_task, upid_of, TaskTrouble};
use serde_json::{Map, Value};

/// PVE's longest file name (the schema's `maxLength`).
const MAX_FILENAME: usize = 255;
/// What a verified download prints (pve-common download_file_from_url).
const CHECKSUM_VERIFIED: &str = "OK, checksum verified";
/// What a file already there with the right checksum prints instead of downloading.
const ALREADY_THERE: &str = "OK, got correct file already";

/// The content types PVE downloads (the schema's enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    Iso,
    Vztmpl,
    Import,
}

impl Content {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "iso" => Some(Content::Iso),
            "vztmpl" => Some(Content::Vztmpl),
            "import" => Some(Content::Import),
            _ => None,
        }
    }

    /// The content type's name, which is also its directory in a volume id (`local:iso/x.iso`).
    pub fn name(self) -> &'static str {
        match self {
            Content::Iso => "iso",
            Content::Vztmpl => "vztmpl",
            Content::Import => "import",
        }
    }

    /// Whether `filename` has the extension PVE requires for this content type (Status.pm
    /// download_url with PVE::Storage's `$ISO_EXT_RE_0`, `$VZTMPL_EXT_RE_1` — both ignore case —
    /// and `$UPLOAD_IMPORT_EXT_RE_1`, which does not), after at least one character.
    fn takes(self, filename: &str) -> bool {
        let (extensions, any_case): (&[&str], bool) = match self {
            Content::Iso => (&[".iso", ".img"], true),
            Content::Vztmpl => (
                &[".tar", ".tar.gz", ".tar.xz", ".tar.zst", ".tar.bz2"],
                true,
            ),
            Content::Import => (&[".ova", ".qcow2", ".raw", ".vmdk"], false),
        };
        let lower = filename.to_ascii_lowercase();
        let name = match any_case {
            true => lower.as_bytes(),
            false => filename.as_bytes(),
        };
        for extension in extensions {
            let extension = extension.as_bytes();
            if name.len() > extension.len() && name.ends_with(extension) {
                return true;
            }
        }
        false
    }

    fn extensions(self) -> &'static str {
        match self {
            Content::Iso => ".iso or .img",
            Content::Vztmpl => ".tar, .tar.gz, .tar.xz, .tar.zst or .tar.bz2",
            Content::Import => ".ova, .qcow2, .raw or .vmdk (lower case)",
        }
    }
}

/// The checksum algorithms PVE offers, with their digest's length in hex digits.
const ALGORITHMS: [(&str, usize); 6] = [
    ("md5", 32),
    ("sha1", 40),
    ("sha224", 56),
    ("sha256", 64),
    ("sha384", 96),
    ("sha512", 128),
];

/// The compressions PVE can undo, for ISO images only (`KNOWN_COMPRESSION_FORMATS`; the worker
/// dies "decompression not supported for <content>" for the others).
const COMPRESSIONS: [&str; 4] = ["gz", "lzo", "zst", "bz2"];

/// The arguments of `downloadUrl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadUrlArgs<'a> {
    /// The texts given are borrowed from the call's arguments: nothing copied (issue 32).
    pub node: Option<&'a str>,
    pub storage: &'a str,
    pub content: Content,
    pub url: &'a str,
    pub filename: &'a str,
    /// `(algorithm, digest)`: the algorithm as [`ALGORITHMS`] names it, the digest in lower case.
    pub checksum: Option<(&'static str, String)>,
    pub verify_certificates: bool,
    pub compression: Option<&'a str>,
}

/// The fields read first, in order: the node (any text, checked as a path segment), the content,
/// the URL and the filename, each with its own rule.
const FIRST: [Spec; 4] = [
    Spec::new("node", Kind::Text).rule(segment_fault),
    Spec::new("content", Kind::RequiredText).rule(content_fault),
    Spec::new("url", Kind::Line).rule(url_fault),
    Spec::new("filename", Kind::Line),
];

fn content_fault(text: &str) -> Option<&'static str> {
    Content::parse(text)
        .is_none()
        .then_some("must be one of iso, vztmpl, import")
}

fn url_fault(url: &str) -> Option<&'static str> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Some("must start with http:// or https:// (PVE's pattern)");
    }
    // PVE logs the URL in the task log (download_file_from_url: "downloading <url> to …"),
    // readable by anyone who may audit the node's tasks: a password there is a leaked one.
    has_credentials(url).then_some(
        "must not carry a user name or password (user:password@host): PVE writes the URL into the task log",
    )
}

impl<'a> DownloadUrlArgs<'a> {
    pub fn parse(args: &'a Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        // Every field is checked borrowed before any is copied: a refusal drops nothing (issue 32).
        // The first fields are one table walk; the filename's checks need the content.
        let mut read = [Read::default(); FIRST.len()];
        fields.read_all(&FIRST, &mut read)?;
        let [node, content, url, filename] = read;
        let content = Content::parse(content.text.unwrap_or("")).unwrap_or(Content::Iso);
        let (url, filename) = (url.text.unwrap_or(""), filename.text.unwrap_or(""));
        check_filename(filename, content)?;
        let compression = fields.text("compression")?;
        if let Some(c) = compression {
            if !COMPRESSIONS.contains(&c) {
                return Err(ArgError::new(
                    "compression",
                    "must be one of gz, lzo, zst, bz2",
                ));
            }
            if content != Content::Iso {
                return Err(ArgError::new(
                    "compression",
                    "is only for content iso (PVE decompresses nothing else)",
                ));
            }
        }
        let storage = fields.segment_str("storage")?;
        let checksum = parse_checksum(&fields)?;
        let verify_certificates = fields.flag_or("verifyCertificates", true)?;
        Ok(DownloadUrlArgs {
            node: node.text,
            storage,
            content,
            url,
            filename,
            checksum: checksum.map(|(algorithm, digest)| (algorithm, digest.to_ascii_lowercase())),
            verify_certificates,
            compression,
        })
    }

    /// The volume id the download makes: `<storage>:<content>/<filename>`.
    pub fn volid(&self) -> String {
        format!("{}:{}/{}", self.storage, self.content.name(), self.filename)
    }

    /// `POST …/download-url` on `node`, its parameters added in place (one `&str` form of
    /// [`PveRequest::add`] for all of them).
    fn download_request(&self, node: &str) -> PveRequest {
        let mut request = endpoints::storage_download_url(node, self.storage, Vec::new());
        request.add("url", self.url);
        request.add("content", self.content.name());
        request.add("filename", self.filename);
        if let Some((algorithm, digest)) = &self.checksum {
            request.add("checksum", digest.as_str());
            request.add("checksum-algorithm", *algorithm);
        }
        if !self.verify_certificates {
            request.add("verify-certificates", "0");
        }
        if let Some(compression) = self.compression {
            request.add("compression", compression);
        }
        request
    }
}

/// A file name PVE keeps as given: within its length, only the characters its normalization keeps
/// (a name it would rename could never be found under the name asked for), the content type's
/// extension, and no `..` (a swamp data name cannot hold one).
fn check_filename(name: &str, content: Content) -> Result<(), ArgError> {
    if name.len() > MAX_FILENAME {
        return Err(ArgError::new(
            "filename",
            "must be at most 255 characters (PVE's limit)",
        ));
    }
    if let Some(renamed) = normalized(name) {
        return Err(ArgError::new("filename", renamed));
    }
    if name.contains("..") {
        return Err(ArgError::new(
            "filename",
            "must not contain .. (a swamp data name cannot hold it)",
        ));
    }
    if !content.takes(name) {
        return Err(ArgError::new(
            "filename",
            format!(
                "must end in {} for content {} (PVE: wrong file extension)",
                content.extensions(),
                content.name()
            ),
        ));
    }
    Ok(())
}

/// The rule a name PVE would normalize breaks, naming its first such character and the name PVE
/// would store (`normalize_content_filename`); `None` when PVE keeps the name as given.
fn normalized(name: &str) -> Option<String> {
    let mut stored = String::with_capacity(name.len());
    let mut first = None;
    for c in name.chars() {
        match c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
            true => stored.push(c),
            false => {
                first.get_or_insert(c);
                stored.push('_');
            }
        }
    }
    let bad = first?;
    Some(format!(
        "must hold only letters, digits, _, . and - (PVE would replace {} with _ and store {stored:?})",
        crate::debug_text::char(bad)
    ))
}

/// `checksum` and `checksumAlgorithm` come together (PVE's `requires`); the digest must be the
/// algorithm's hex digits, since PVE compares it with a hex digest and nothing else can match.
fn parse_checksum<'a>(fields: &Fields<'a>) -> Result<Option<(&'static str, &'a str)>, ArgError> {
    let digest = fields.text("checksum")?;
    let algorithm = fields.text("checksumAlgorithm")?;
    let (digest, algorithm) = match (digest, algorithm) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(ArgError::new(
                "checksumAlgorithm",
                "is required with checksum",
            ))
        }
        (None, Some(_)) => {
            return Err(ArgError::new(
                "checksum",
                "is required with checksumAlgorithm",
            ))
        }
        (Some(d), Some(a)) => (d, a),
    };
    let Some((name, digits)) = ALGORITHMS.iter().find(|(name, _)| *name == algorithm) else {
        return Err(ArgError::new(
            "checksumAlgorithm",
            "must be one of md5, sha1, sha224, sha256, sha384, sha512",
        ));
    };
    if digest.len() != *digits || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ArgError::new(
            "checksum",
            format!("must be the {digits} hex digits of a {algorithm} digest"),
        ));
    }
    Ok(Some((name, digest)))
}

/// One volume of a storage's content list.
#[derive(Debug, Clone, PartialEq)]
struct Volume {
    size: Option<u64>,
    format: Option<String>,
}

/// The volume `volid` in a content list answer, if listed.
fn volume_in(list: &Value, volid: &str) -> Option<Volume> {
    list.as_array()?
        .iter()
        .find(|v| v.get("volid").and_then(flex::string_of).as_deref() == Some(volid))
        .map(|v| Volume {
            size: v.get("size").and_then(flex::u64_of),
            format: v.get("format").and_then(flex::string_of),
        })
}

/// Whether the URL's authority (between `://` and the first `/`, `?` or `#`) names a user (and
/// maybe a password): `https://me:pw@host/…`.
fn has_credentials(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    for byte in rest.bytes() {
        match byte {
            b'/' | b'?' | b'#' => return false,
            b'@' => return true,
            _ => {}
        }
    }
    false
}

/// What one run found and did, for the record.
struct Findings<'a> {
    args: &'a DownloadUrlArgs<'a>,
    /// The volume the download makes ([`DownloadUrlArgs::volid`]), as every message names it.
    volid: String,
    /// The node asked for, else the transport's: borrowed, not copied (issue 32).
    node: &'a str,
    url_size: Option<u64>,
    downloaded: bool,
    checksum_verified: bool,
    /// The download task and where its log is kept ([`TaskTrail::followed_outcome`]).
    trail: TaskTrail,
}

impl Findings<'_> {
    /// The `volume-<storage>-<filename>` record: what the storage showed of the volume, built as
    /// JSON (record_json.rs), no struct with a serializer of its own (issue 32). Inlined into its
    /// one caller, [`Findings::outcome`].
    #[inline(always)]
    fn record<H: Host>(&self, run: &Run<'_, H>, volume: Option<&Volume>) -> Value {
        let args = self.args;
        let mut record = Map::new();
        put(&mut record, "node", Some(self.node));
        put(&mut record, "storage", Some(args.storage));
        put(&mut record, "content", Some(args.content.name()));
        put(&mut record, "filename", Some(args.filename));
        put(&mut record, "volid", Some(&self.volid));
        set(&mut record, "present", Value::Bool(volume.is_some()));
        opt(
            &mut record,
            "size",
            volume.and_then(|v| v.size).map(Value::from),
        );
        put(
            &mut record,
            "format",
            volume.and_then(|v| v.format.as_deref()),
        );
        put(&mut record, "url", Some(args.url));
        opt(&mut record, "urlSize", self.url_size.map(Value::from));
        // What the task log says is a claim about the volume only where the volume was seen.
        let downloaded = self.downloaded && volume.is_some();
        set(&mut record, "downloaded", Value::Bool(downloaded));
        let checksum = args.checksum.as_ref();
        put(&mut record, "checksumAlgorithm", checksum.map(|(a, _)| *a));
        put(&mut record, "checksum", checksum.map(|(_, d)| d.as_str()));
        let verified = self.checksum_verified && volume.is_some();
        set(&mut record, "checksumVerified", Value::Bool(verified));
        put(&mut record, "lastTask", self.trail.last_task.as_deref());
        put(
            &mut record,
            "lastTaskLog",
            self.trail.last_task_log.0.as_deref(),
        );
        list(&mut record, "lastTaskLogTail", &self.trail.last_task_log.1);
        set(&mut record, "observedAt", Value::from(run.now_iso()));
        Value::Object(record)
    }

    fn outcome<H: Host>(
        &self,
        run: &Run<'_, H>,
        volume: Option<&Volume>,
        verdict: Result<String, String>,
    ) -> Outcome {
        let args = self.args;
        let instance = format!("volume-{}-{}", args.storage, args.filename);
        let writes = vec![write_value("volume", instance, self.record(run, volume))];
        match verdict {
            Ok(summary) => Outcome::succeeded(writes, summary),
            Err(message) => Outcome::failed(writes, message),
        }
    }

    /// `GET …/storage/<storage>/content?content=<content>`: where the volume is looked for.
    fn content_list(&self) -> PveRequest {
        let args = self.args;
        endpoints::storage_content(self.node, args.storage, args.content.name())
    }

    /// `the <content> content of storage <storage> on node <node>`, as messages name it.
    fn content_text(&self) -> String {
        let args = self.args;
        format!(
            "the {} content of storage {} on node {}",
            args.content.name(),
            args.storage,
            self.node
        )
    }
}

/// A 403 from PVE, as the refusal of the download it is (naming the privileges of the
/// download-url schema's `permissions`): nothing was downloaded.
fn refused(volid: &str, error: &PveError, node: &str, storage: &str) -> Failure {
    Failure::new(format!(
        "cannot download to {volid}: PVE refused it: {error} — the download needs Datastore.AllocateTemplate on /storage/{storage}, and Sys.Audit plus Sys.Modify on / or Sys.AccessNetwork on /nodes/{node}; nothing was downloaded"
    ))
}

/// Runs `downloadUrl`.
pub async fn download_url<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match DownloadUrlArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut findings = Findings {
        node: args.node.unwrap_or(run.global.transport.node()),
        volid: args.volid(),
        args: &args,
        url_size: None,
        downloaded: false,
        checksum_verified: false,
        trail: TaskTrail::default(),
    };
    // The course: what is there before, the download when it is needed, what is there after.
    // The one place `downloadUrl` awaits PVE: [`Course`] decides each request from the answers.
    let pve = run.pve();
    let mut course = Course {
        step: Step::Storages,
        existing: None,
        verdict: None,
    };
    let mut next = Next::Send(endpoints::node_storage(findings.node));
    loop {
        next = match next {
            Next::Send(request) => {
                let answer = pve.call(&request).await;
                course.answered(run, &mut findings, &request, answer)
            }
            Next::Follow(upid) => {
                let followed = follow_task(&pve, &upid).await;
                let followed = findings.trail.followed_outcome(followed);
                course.followed(&mut findings, &upid, followed)
            }
            Next::Done(outcome) => return outcome,
        };
    }
}

/// What the course asks of its driver.
enum Next {
    Send(PveRequest),
    /// Follow the download's task to its end.
    Follow(Upid),
    Done(Outcome),
}

/// Which answer the course waits for.
#[derive(Clone, Copy)]
enum Step {
    /// Step 1: the node's storages, then the volume as the storage lists it (if there), and the
    /// URL's size as the node sees it.
    Storages,
    Before,
    Metadata,
    /// Step 3: the download request, its task's log, and the storage's list after it.
    Download,
    Log,
    After,
}

/// `downloadUrl` as plain steps: each answer judged, and the next request decided from it.
struct Course {
    step: Step,
    /// The volume of that name listed before the download.
    existing: Option<Volume>,
    /// The verdict the task's log gave on a volume that was there ([`read_task_log`]).
    verdict: Option<Result<String, String>>,
}

impl Course {
    fn answered<H: Host>(
        &mut self,
        run: &Run<'_, H>,
        findings: &mut Findings<'_>,
        request: &PveRequest,
        answer: Result<Value, PveError>,
    ) -> Next {
        let args = findings.args;
        let node = findings.node;
        match self.step {
            Step::Storages => match store_takes(storage_in(answer, node, args.storage), args) {
                Err(why) => Next::Done(
                    Failure::new(format!(
                        "cannot download to {} on node {node}: {why}; nothing was downloaded",
                        findings.volid
                    ))
                    .into(),
                ),
                Ok(()) => self.send(Step::Before, findings.content_list()),
            },
            Step::Before => match volume_listed(answer, findings) {
                Err(failure) => Next::Done(failure.into()),
                Ok(existing) => {
                    self.existing = existing;
                    let metadata =
                        endpoints::url_metadata(node, args.url, args.verify_certificates);
                    self.send(Step::Metadata, metadata)
                }
            },
            Step::Metadata => match url_size_of(answer, findings) {
                Err(failure) => Next::Done(failure.into()),
                Ok(url_size) => {
                    findings.url_size = url_size;
                    self.unsent(run, findings)
                }
            },
            Step::Download => match accepted(findings, answer) {
                Ok(upid) => Next::Follow(upid),
                Err(why) => self.sent(findings, Err(why)),
            },
            Step::Log => {
                // The log is where PVE says whether its checksum check ran: unreadable is not "it
                // did not". The task is the one `accepted` noted.
                let log = shaped::<Vec<TaskLogLine>>(request, "a task log", answer);
                let task = findings.trail.last_task.as_deref().unwrap_or_default();
                let says = log_says(log, task, &findings.volid);
                self.sent(findings, says)
            }
            Step::After => {
                let after = volume_listed(answer, findings);
                Next::Done(conclude(run, findings, self.verdict.take(), after))
            }
        }
    }

    /// Step 2, the URL's size known: the verdict on a volume already there without a download, or
    /// the download request.
    fn unsent<H: Host>(&mut self, run: &Run<'_, H>, findings: &Findings<'_>) -> Next {
        if let Some(volume) = &self.existing {
            if let Some(verdict) = unsent_verdict(findings, volume) {
                return Next::Done(findings.outcome(run, Some(volume), verdict));
            }
        }
        let args = findings.args;
        let request = args.download_request(findings.node);
        self.send(Step::Download, request)
    }

    /// The download's task followed: its whole log next (`limit` 0: the check comes after one
    /// line of wget's progress per 32 MiB).
    fn followed(
        &mut self,
        findings: &mut Findings<'_>,
        upid: &Upid,
        followed: Result<(), TaskTrouble>,
    ) -> Next {
        if let Err(trouble) = followed {
            let volid = &findings.volid;
            let why = format!("download to {volid}: {}", trouble.into_failure().0);
            return self.sent(findings, Err(why));
        }
        let request = endpoints::task_log(upid, 0, 0);
        self.send(Step::Log, request)
    }

    /// What the download's task said (or why it says nothing): the verdict it gives, then the
    /// storage's list after it.
    fn sent(&mut self, findings: &mut Findings<'_>, sent: Result<LogSays, String>) -> Next {
        match read_task_log(findings, self.existing.as_ref(), sent) {
            Err(failure) => Next::Done(failure.into()),
            Ok(verdict) => {
                self.verdict = verdict;
                self.send(Step::After, findings.content_list())
            }
        }
    }

    fn send(&mut self, step: Step, request: PveRequest) -> Next {
        self.step = step;
        Next::Send(request)
    }
}

/// The storage exists on the node, is enabled and active and takes the content type.
// Inlined into its one caller, [`Course::answered`] (issue 32).
#[inline(always)]
fn store_takes(
    store: Result<NodeStorage, String>,
    args: &DownloadUrlArgs<'_>,
) -> Result<(), String> {
    match storage_refusal(&store?, args.content.name()) {
        Some(why) => Err(format!("storage {} {why}", args.storage)),
        None => Ok(()),
    }
}

/// The volume as the storage's content list shows it, if it is there.
fn volume_listed(
    answer: Result<Value, PveError>,
    findings: &Findings<'_>,
) -> Result<Option<Volume>, Failure> {
    let volid = &findings.volid;
    let error = match answer {
        Ok(list) if list.is_array() => return Ok(volume_in(&list, volid)),
        Ok(other) => PveError::malformed_args(format_args!(
            "PVE answered {other} where a list was expected",
            other = crate::quote::json(&other)
        )),
        Err(e) => e,
    };
    Err(could_not_args(
        format_args!("list {} (to see {volid})", findings.content_text()),
        &error,
    ))
}

/// The size the URL's server reports, asked from the node (the download comes from there).
// Inlined into its one caller, [`Course::answered`] (issue 32).
#[inline(always)]
fn url_size_of(
    answer: Result<Value, PveError>,
    findings: &Findings<'_>,
) -> Result<Option<u64>, Failure> {
    let args = findings.args;
    let node = &findings.node;
    match answer {
        Ok(meta) if meta.is_object() => Ok(meta.get("size").and_then(flex::u64_of)),
        Ok(other) => Err(could_not_args(
            format_args!(
                "query the URL for {} from node {node} (GET /nodes/{node}/query-url-metadata)",
                findings.volid
            ),
            &PveError::malformed_args(format_args!(
                "PVE answered {} where an object was expected",
                crate::quote::json(&other)
            )),
        )),
        Err(e) if e.kind == ErrorKind::Forbidden => {
            Err(refused(&findings.volid, &e, node, args.storage))
        }
        Err(e) => Err(Failure::new(format!(
            "cannot download to {}: node {node} could not query the URL (GET /nodes/{node}/query-url-metadata): {e} — {}; nothing was downloaded",
            findings.volid,
            hint(e.kind)
        ))),
    }
}

/// Step 2, a volume of that name there: the verdict without a download — unless a checksum was
/// given and the sizes agree, for then PVE checks the existing file itself (`None`).
fn unsent_verdict(findings: &Findings<'_>, volume: &Volume) -> Option<Result<String, String>> {
    let args = findings.args;
    let volid = &findings.volid;
    let node = &findings.node;
    let have = volume.size.unwrap_or(0);
    let mismatch = match (findings.url_size, &args.compression) {
        (_, Some(c)) => Some(format!(
            "it cannot be compared with the URL's file, which is {c}-compressed"
        )),
        (None, _) => Some("the URL's server reports no size to compare it with".to_string()),
        (Some(want), None) if want != have => Some(format!("the URL's file has {want} bytes")),
        _ => None,
    };
    if let Some(why) = mismatch {
        return Some(Err(format!(
            "volume {volid} already exists on node {node} with {have} bytes, and {why}; nothing was downloaded — delete it or choose another filename"
        )));
    }
    match args.checksum {
        None => Some(Ok(format!(
            "{volid} is already on node {node} with the URL's size ({have} bytes); nothing was downloaded"
        ))),
        Some(_) => None,
    }
}

/// What the task's log says: for a volume that was there, the verdict on PVE's check of it
/// (`Some`); for a download, what it did (`None`: the storage decides), or the failure that ends
/// the run before the storage is looked at again.
fn read_task_log(
    findings: &mut Findings<'_>,
    existing: Option<&Volume>,
    sent: Result<LogSays, String>,
) -> Result<Option<Result<String, String>>, Failure> {
    let Some(volume) = existing else {
        let says = sent.map_err(Failure)?;
        findings.downloaded = !says.already_there;
        findings.checksum_verified = says.verified || says.already_there;
        return Ok(None);
    };
    let (volid, node) = (&findings.volid, &findings.node);
    let have = volume.size.unwrap_or(0);
    let verdict = match sent {
        Ok(says) if says.already_there => Ok(format!(
            "{volid} is already on node {node} with the URL's size ({have} bytes) and PVE found its checksum correct; nothing was downloaded"
        )),
        Ok(_) => Err(format!(
            "the download task for the existing {volid} ended OK, but its log does not show PVE's check of the existing file ({ALREADY_THERE:?})"
        )),
        Err(message) => Err(format!("volume {volid} already exists: {message}")),
    };
    // Only PVE's check of the file it found passes.
    findings.checksum_verified = verdict.is_ok();
    Ok(Some(verdict))
}

/// Step 3's end: the verdict the log gave, or [`judge`]'s on what the storage lists after a
/// download, with the volume listed.
fn conclude<H: Host>(
    run: &Run<'_, H>,
    findings: &Findings<'_>,
    verdict: Option<Result<String, String>>,
    after: Result<Option<Volume>, Failure>,
) -> Outcome {
    let volume = match after {
        Ok(volume) => volume,
        Err(failure) if verdict.is_some() => return failure.into(),
        Err(Failure(why)) => {
            return Failure::new(format!(
                "the download task ended OK, but whether {} is there is unknown: {why}",
                findings.volid
            ))
            .into()
        }
    };
    let verdict = verdict.unwrap_or_else(|| judge(findings, volume.as_ref()));
    findings.outcome(run, volume.as_ref(), verdict)
}

/// Whether what the storage shows after an OK task is the URL's file.
fn judge(findings: &Findings<'_>, volume: Option<&Volume>) -> Result<String, String> {
    let task = findings
        .trail
        .last_task
        .as_deref()
        .unwrap_or("the download task");
    // Every failure is worded around what was seen: one message built once.
    shortfall(findings, volume).map_err(|seen| {
        format!(
            "task {task} ended OK{seen} — check the task's log on node {} and the URL's file",
            findings.node
        )
    })
}

/// [`judge`]'s summary, or what was seen instead of the URL's file (within its message).
fn shortfall(findings: &Findings<'_>, volume: Option<&Volume>) -> Result<String, String> {
    let args = findings.args;
    let volid = &findings.volid;
    let node = &findings.node;
    let Some(volume) = volume else {
        return Err(format!(
            ", but {volid} is not in {}",
            findings.content_text()
        ));
    };
    let size = volume.size.unwrap_or(0);
    if size == 0 {
        return Err(format!(", but {volid} on node {node} is empty (size 0)"));
    }
    if let (Some(want), None) = (findings.url_size, &args.compression) {
        if size != want {
            return Err(format!(
                ", but {volid} on node {node} has {size} bytes where the URL's file has {want} (a short or altered download)"
            ));
        }
    }
    let mut summary = format!("downloaded {volid} on node {node}: {size} bytes");
    if let Some((algorithm, _)) = &args.checksum {
        if !findings.checksum_verified {
            return Err(format!(
                " and {volid} has {size} bytes, but its log does not show PVE's {algorithm} check ({CHECKSUM_VERIFIED:?})"
            ));
        }
        summary.push_str(&format!(", {algorithm} verified by PVE"));
    }
    Ok(summary)
}

/// The download's task, from PVE's answer to the request; or why there is none to follow.
// Inlined into its one caller, [`Course::answered`] (issue 32).
#[inline(always)]
fn accepted(findings: &mut Findings<'_>, answer: Result<Value, PveError>) -> Result<Upid, String> {
    let args = findings.args;
    let node = &findings.node;
    let volid = &findings.volid;
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) if e.kind == ErrorKind::Forbidden => {
            return Err(refused(volid, &e, node, args.storage).0)
        }
        Err(e) => {
            let check = format!(
                "{} (nodeConfig, or the node's task list)",
                findings.content_text()
            );
            return Err(mutation_failed(
                format_args!("download {} to {volid}", args.url),
                &e,
                &check,
            )
            .0);
        }
    };
    let upid = upid_of(&answer, "POST …/download-url").map_err(|Failure(why)| {
        format!(
            "download to {volid}: {why}; whether PVE started it is unknown — it was not sent again: check {}",
            findings.content_text()
        )
    })?;
    findings.trail.last_task = Some(upid.to_string());
    Ok(upid)
}

/// What a download task's log says of PVE's checks (pve-common download_file_from_url).
#[derive(Debug, Default)]
struct LogSays {
    /// The file was there with the right checksum, and nothing was downloaded.
    already_there: bool,
    /// The downloaded file's checksum was verified.
    verified: bool,
}

/// What the task log says, or why it could not be read.
// Inlined into its one caller, [`Course::answered`] (issue 32).
#[inline(always)]
fn log_says(
    log: Result<Vec<TaskLogLine>, PveError>,
    task: &str,
    volid: &str,
) -> Result<LogSays, String> {
    let lines = log.map_err(|e| {
        could_not_args(
            format_args!(
                "read the log of task {task}, which ended OK, to see PVE's checks of {volid}"
            ),
            &e,
        )
        .0
    })?;
    let mut says = LogSays::default();
    for line in &lines {
        let text = log_text(line);
        let text = text.as_deref().unwrap_or("");
        says.already_there |= text.contains(ALREADY_THERE);
        says.verified |= text.contains(CHECKSUM_VERIFIED);
    }
    Ok(says)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:download:cloud.qcow2:root@pam!t:";
    const URL: &str = "http://images.example/cloud.qcow2";
    const VOLID: &str = "local:import/cloud.qcow2";
    const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn request(extra: Value) -> Value {
        let mut args = json!({"storage": "local", "content": "import", "url": URL,
            "filename": "cloud.qcow2"});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    }

    /// The arguments parsed from a call's that outlives the test (they borrow it).
    fn parse(extra: Value) -> Result<DownloadUrlArgs<'static>, ArgError> {
        DownloadUrlArgs::parse(Box::leak(Box::new(request(extra))))
    }

    fn node(host: &ScriptedHost, url_size: Value) {
        node_with(host, Answer::Data(url_size));
    }

    fn node_with(host: &ScriptedHost, metadata: Answer) {
        host.data(
            "GET /nodes/pve1/storage",
            json!([{"storage": "local", "content": "iso,vztmpl,import", "enabled": 1, "active": 1},
                   {"storage": "local-lvm", "content": "images,rootdir", "enabled": 1, "active": 1}]),
        );
        host.on("GET /nodes/pve1/query-url-metadata", [metadata]);
    }

    fn task(host: &ScriptedHost, exitstatus: &str, log: &[&str]) {
        host.data("POST /nodes/pve1/storage/local/download-url", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": exitstatus}),
        );
        let lines: Vec<Value> = log
            .iter()
            .enumerate()
            .map(|(n, t)| json!({"n": n + 1, "t": t}))
            .collect();
        host.data(&format!("GET /nodes/pve1/tasks/{UPID}/log"), json!(lines));
    }

    fn content(host: &ScriptedHost, answers: Vec<Value>) {
        host.on(
            "GET /nodes/pve1/storage/local/content",
            answers.into_iter().map(Answer::Data),
        );
    }

    fn listed(size: u64) -> Value {
        json!([{"volid": VOLID, "size": size, "format": "qcow2", "content": "import"}])
    }

    fn posted(host: &ScriptedHost) -> bool {
        host.routes_called().iter().any(|r| r.starts_with("POST"))
    }

    #[test]
    fn file_names_are_refused_as_pve_would_rename_or_refuse_them() {
        let field = |name: &str, content: &str| {
            parse(json!({"filename": name, "content": content}))
                .err()
                .map(|e| e.field.clone())
        };
        assert_eq!(field("cloud.qcow2", "import"), None);
        assert_eq!(field("debian-12.ISO", "iso"), None);
        assert_eq!(field("x.img", "iso"), None);
        assert_eq!(field("ct.tar.zst", "vztmpl"), None);
        assert_eq!(field("ct.TAR", "vztmpl"), None);
        for (bad, content) in [
            ("cloud.QCOW2", "import"),
            ("cloud.img", "import"),
            (".iso", "iso"),
            ("a b.iso", "iso"),
            ("dir/x.iso", "iso"),
            ("ü.iso", "iso"),
            ("a..iso", "iso"),
            ("ct.tar.lz", "vztmpl"),
            ("x.iso", "vztmpl"),
        ] {
            assert_eq!(field(bad, content), Some("filename".into()), "{bad}");
        }
        let e = parse(json!({"filename": "a b.qcow2"})).unwrap_err();
        assert!(e.rule.contains("store \"a_b.qcow2\""), "{}", e.rule);
        let long = format!("{}.iso", "a".repeat(252));
        assert_eq!(field(&long, "iso"), Some("filename".into()));
    }

    #[test]
    fn checksums_come_with_their_algorithm_as_its_hex_digits() {
        let field = |extra: Value| parse(extra).err().map(|e| e.field.clone());
        assert_eq!(
            field(json!({"checksum": SHA, "checksumAlgorithm": "sha256"})),
            None
        );
        assert_eq!(
            parse(json!({"checksum": SHA.to_uppercase(), "checksumAlgorithm": "sha256"}))
                .unwrap()
                .checksum,
            Some(("sha256", SHA.into()))
        );
        assert_eq!(
            field(json!({"checksum": SHA})),
            Some("checksumAlgorithm".into())
        );
        assert_eq!(
            field(json!({"checksumAlgorithm": "md5"})),
            Some("checksum".into())
        );
        assert_eq!(
            field(json!({"checksum": SHA, "checksumAlgorithm": "md5"})),
            Some("checksum".into())
        );
        assert_eq!(
            field(json!({"checksum": SHA, "checksumAlgorithm": "sha3"})),
            Some("checksumAlgorithm".into())
        );
    }

    #[test]
    fn other_argument_rules() {
        let field = |extra: Value| parse(extra).err().map(|e| e.field.clone());
        assert_eq!(field(json!({"content": "images"})), Some("content".into()));
        assert_eq!(field(json!({"url": "ftp://x/a.qcow2"})), Some("url".into()));
        assert_eq!(field(json!({"url": "http://x/\n"})), Some("url".into()));
        assert_eq!(field(json!({"storage": "a/b"})), Some("storage".into()));
        assert_eq!(
            field(json!({"compression": "gz"})),
            Some("compression".into())
        );
        assert_eq!(
            field(json!({"content": "iso", "filename": "a.iso", "compression": "xz"})),
            Some("compression".into())
        );
        assert_eq!(
            field(json!({"content": "iso", "filename": "a.iso", "compression": "zst"})),
            None
        );
        assert_eq!(
            field(json!({"verifyCertificates": "no"})),
            Some("verifyCertificates".into())
        );
    }

    #[test]
    fn a_download_is_verified_in_the_storage_and_recorded() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024, "filename": "cloud.qcow2"}));
        content(&host, vec![json!([]), listed(1024)]);
        task(&host, "OK", &["downloading …", "TASK OK"]);
        let outcome = run_method(&host, "qemu", "downloadUrl", request(json!({})));
        assert!(outcome.is_success(), "{outcome:?}");
        let record = &outcome.writes[0];
        assert_eq!(record.instance, "volume-local-cloud.qcow2");
        assert_eq!(record.data["size"], 1024);
        assert_eq!(record.data["present"], true);
        assert_eq!(record.data["downloaded"], true);
        assert_eq!(record.data["lastTask"], UPID);
        let body = host.first_body("POST");
        assert!(
            body.contains("content=import") && body.contains("filename=cloud.qcow2"),
            "{body}"
        );
    }

    #[test]
    fn an_ok_task_without_the_volume_fails_and_records_it_absent() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![json!([]), json!([])]);
        task(&host, "OK", &["TASK OK"]);
        let outcome = run_method(&host, "qemu", "downloadUrl", request(json!({})));
        assert!(
            failure_of(&outcome).contains("is not in the import content"),
            "{outcome:?}"
        );
        assert_eq!(outcome.writes[0].data["present"], false);
    }

    #[test]
    fn a_download_task_ending_with_warnings_records_the_file_holding_its_log() {
        let mut host = ScriptedHost::new();
        host.files = Some(Default::default());
        node(&host, json!({"size": 1024}));
        content(&host, vec![json!([]), listed(1024)]);
        task(
            &host,
            "WARNINGS: 1",
            &["WARN: slow mirror", "TASK WARNINGS: 1"],
        );
        let outcome = run_method(&host, "qemu", "downloadUrl", request(json!({})));
        assert!(outcome.is_success(), "{outcome:?}");
        let record = &outcome.writes[0].data;
        assert_eq!(record["lastTask"], UPID);
        assert_eq!(record["lastTaskLog"], "tasklog-pve1-0000AAAA-6571E3A1");
        let files = host.files.unwrap().into_inner();
        assert_eq!(files[0].2, "WARN: slow mirror\nTASK WARNINGS: 1\n");
    }

    #[test]
    fn a_volume_never_seen_is_not_recorded_as_downloaded_or_verified() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![json!([]), json!([])]);
        task(
            &host,
            "OK",
            &["calculating checksum...OK, checksum verified", "TASK OK"],
        );
        let args = request(json!({"checksum": SHA, "checksumAlgorithm": "sha256"}));
        let outcome = run_method(&host, "qemu", "downloadUrl", args);
        assert!(
            failure_of(&outcome).contains("is not in the import content"),
            "{outcome:?}"
        );
        let record = &outcome.writes[0].data;
        assert_eq!(record["present"], false);
        assert_eq!(record["downloaded"], false, "{record}");
        assert_eq!(record["checksumVerified"], false, "{record}");
    }

    #[test]
    fn a_short_volume_fails_naming_both_sizes() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![json!([]), listed(512)]);
        task(&host, "OK", &["TASK OK"]);
        let outcome = run_method(&host, "lxc", "downloadUrl", request(json!({})));
        let message = failure_of(&outcome);
        assert!(
            message.contains("has 512 bytes where the URL's file has 1024"),
            "{message}"
        );
        assert_eq!(outcome.writes[0].data["size"], 512);
    }

    #[test]
    fn a_checksum_needs_pves_verified_line() {
        let checked = request(json!({"checksum": SHA, "checksumAlgorithm": "sha256"}));
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![json!([]), listed(1024)]);
        task(
            &host,
            "OK",
            &["calculating checksum...OK, checksum verified", "TASK OK"],
        );
        let outcome = run_method(&host, "qemu", "downloadUrl", checked.clone());
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].data["checksumVerified"], true);
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![json!([]), listed(1024)]);
        task(&host, "OK", &["TASK OK"]);
        let outcome = run_method(&host, "qemu", "downloadUrl", checked);
        assert!(
            failure_of(&outcome).contains("does not show PVE's sha256 check"),
            "{outcome:?}"
        );
    }

    #[test]
    fn the_whole_task_log_is_read_so_a_long_download_s_checksum_line_counts() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![json!([]), listed(1024)]);
        // wget's dot:giga progress: one line per 32 MiB, 600 of them before the check (19 GiB).
        let mut log = vec!["........ ........ ........ ........ 1% 12M 3s"; 600];
        log.extend(["calculating checksum...OK, checksum verified", "TASK OK"]);
        task(&host, "OK", &log);
        let args = request(json!({"checksum": SHA, "checksumAlgorithm": "sha256"}));
        let outcome = run_method(&host, "qemu", "downloadUrl", args);
        assert!(outcome.is_success(), "{outcome:?}");
        let asked = host.requests.borrow();
        let log_read = asked.iter().find(|r| r.url.contains("/log")).unwrap();
        assert!(
            log_read.url.ends_with("/log?start=0&limit=0"),
            "{}",
            log_read.url
        );
    }

    #[test]
    fn an_unreadable_task_log_is_no_proof_of_the_checksum_check() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![json!([]), listed(1024)]);
        host.data("POST /nodes/pve1/storage/local/download-url", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host.on(
            &format!("GET /nodes/pve1/tasks/{UPID}/log"),
            [Answer::Error(500, "unable to open file".into())],
        );
        let outcome = run_method(
            &host,
            "qemu",
            "downloadUrl",
            request(json!({"checksum": SHA, "checksumAlgorithm": "sha256"})),
        );
        let message = failure_of(&outcome);
        assert!(
            message.contains(&format!(
                "could not read the log of task {UPID}, which ended OK"
            )),
            "{message}"
        );
        assert!(message.contains("unable to open file"), "{message}");
    }

    #[test]
    fn a_checksum_mismatch_fails_with_pves_words() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![json!([])]);
        let pve = format!("checksum mismatch: got 'abc' != expect '{SHA}'");
        task(
            &host,
            &pve,
            &["calculating checksum...", &format!("TASK ERROR: {pve}")],
        );
        let outcome = run_method(
            &host,
            "qemu",
            "downloadUrl",
            request(json!({"checksum": SHA, "checksumAlgorithm": "sha256"})),
        );
        assert!(failure_of(&outcome).contains(&pve), "{outcome:?}");
    }

    #[test]
    fn a_storage_that_does_not_take_the_content_is_refused_up_front() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1}));
        let outcome = run_method(
            &host,
            "qemu",
            "downloadUrl",
            request(json!({"storage": "local-lvm"})),
        );
        let message = failure_of(&outcome);
        assert!(
            message.contains("storage local-lvm does not allow content import"),
            "{message}"
        );
        assert!(!posted(&host));
        let outcome = run_method(
            &host,
            "qemu",
            "downloadUrl",
            request(json!({"storage": "nfs"})),
        );
        assert!(failure_of(&outcome).contains("storage nfs does not exist on node pve1"));
    }

    #[test]
    fn a_missing_privilege_is_pves_refusal_before_anything_is_downloaded() {
        let host = ScriptedHost::new();
        let denied = Answer::Error(403, "Permission check failed (/, Sys.Audit)".into());
        node_with(&host, denied);
        content(&host, vec![json!([])]);
        let outcome = run_method(&host, "qemu", "downloadUrl", request(json!({})));
        let message = failure_of(&outcome);
        assert!(
            message.contains("PVE refused it: Permission check failed"),
            "{message}"
        );
        assert!(
            message.contains("Datastore.AllocateTemplate on /storage/local"),
            "{message}"
        );
        assert!(!posted(&host));
    }

    #[test]
    fn an_existing_volume_of_the_urls_size_is_done_without_a_download() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![listed(1024)]);
        let outcome = run_method(&host, "qemu", "downloadUrl", request(json!({})));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].data["downloaded"], false);
        assert!(!posted(&host));
    }

    #[test]
    fn an_existing_volume_of_another_size_fails_naming_it() {
        for meta in [json!({"size": 2048}), json!({})] {
            let host = ScriptedHost::new();
            node(&host, meta);
            content(&host, vec![listed(1024)]);
            let outcome = run_method(&host, "qemu", "downloadUrl", request(json!({})));
            let message = failure_of(&outcome);
            assert!(
                message.starts_with(&format!("volume {VOLID} already exists")),
                "{message}"
            );
            assert!(!posted(&host));
        }
    }

    #[test]
    fn an_existing_volume_with_a_checksum_is_checked_by_pve() {
        let host = ScriptedHost::new();
        node(&host, json!({"size": 1024}));
        content(&host, vec![listed(1024), listed(1024)]);
        task(
            &host,
            "OK",
            &["calculating checksum of existing file...OK, got correct file already, no need to download"],
        );
        let outcome = run_method(
            &host,
            "qemu",
            "downloadUrl",
            request(json!({"checksum": SHA, "checksumAlgorithm": "sha256"})),
        );
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].data["checksumVerified"], true);
        assert_eq!(outcome.writes[0].data["downloaded"], false);
    }

    #[test]
    fn a_url_with_credentials_is_refused_they_would_reach_the_task_log() {
        let field = |url: &str| parse(json!({"url": url})).err().map(|e| e.field.clone());
        assert_eq!(field("https://me:pw@host/x.qcow2"), Some("url".into()));
        assert_eq!(field("https://me@host/x.qcow2"), Some("url".into()));
        assert_eq!(field("https://host/x.qcow2?who=a@b"), None);
        assert_eq!(field("https://host/a@b/x.qcow2"), None);
    }
}
