//! The one course of `create`, VM and container alike: refuse what PVE would refuse the caller,
//! judge a given VMID (free, or a re-run of this very request), check that the node can take the
//! new guest, send the create and follow its task, sight the new guest, then judge what it holds.
//! Each model says only what differs, as a [`NewGuest`]; the start its request may ask for follows
//! in `methods::start`. Object-safe: both models run through `&dyn NewGuest`, so the course is
//! compiled once.
//!
//! qemu-server `PVE/API2/Qemu.pm` create_vm and pve-container `src/PVE/API2/LXC.pm` create_vm both
//! write the config under `lock: create` and leave the volumes to the worker (`qmcreate`,
//! `vzcreate`), which removes the lock when it is done.

use super::evidence::{Evidence, TaskTrail};
use super::gates::MANAGED_TAG;
use super::placement::{problems, refusal, survey, Placement, Survey};
use super::provision::{claim_vmid, complete, sight_new, verify_settings, Claim};
use super::readiness::ReadyArgs;
use super::root_only::Caller;
use super::vmid_claim::{create_guest, VmidChoice};
use super::volumes::disks_on_storage;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::flex;
use crate::pve::request::PveRequest;
use crate::pve::responses::StorageVolume;
use crate::quote::Joined;
use crate::run::Run;
use serde_json::{Map, Value};

/// What one model's `create` asks for, and what of it must read back.
pub trait NewGuest {
    /// The VMID asked for.
    fn vmid(&self) -> VmidChoice;

    /// The name the guest must carry: a VM's `name`, a container's `hostname`.
    fn name(&self) -> &str;

    /// What PVE would refuse this caller among the new guest's options (root-only keys).
    fn refusal(&self, caller: Caller) -> Option<String>;

    /// The creating request for `vmid` on `node`.
    fn request(&self, node: &str, vmid: u32) -> PveRequest;

    /// What the create places on the node, checked before anything changes.
    fn placement(&self) -> Placement;

    /// The settings that must read back as requested (`provision::verify_settings`).
    fn settings(&self) -> Vec<(String, String)>;

    /// What the config must show besides the settings (a VM's `cipassword`, which PVE keeps only
    /// hashed); `label` names the guest in the message. Nothing, unless a model says otherwise.
    fn judge_config(&self, _label: &str, _config: &Map<String, Value>) -> Result<(), String> {
        Ok(())
    }

    /// The disks whose new volumes must be listed on their storages (a VM's); `None`: the model
    /// judges its volumes by the settings that read back alone (a container's rootfs and mpN).
    fn disks(&self) -> Option<Vec<NewDisk>>;

    /// Whether it is to be started once made (`start: true`).
    fn start(&self) -> bool;

    /// `waitReady`: start it and wait until it is usable (a VM's).
    fn ready(&self) -> Option<&ReadyArgs> {
        None
    }
}

/// A disk the create makes: its config key, its storage, the image it imports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDisk {
    pub key: String,
    pub storage: String,
    pub import_from: Option<String>,
}

/// Runs the course up to the verdict on what was made: the new (or re-run) guest's evidence and
/// that verdict, or — before a guest was seen — the run's outcome.
pub async fn create_course<H: Host>(
    run: &Run<'_, H>,
    guest: &dyn NewGuest,
) -> Result<(Box<Evidence>, Result<String, String>), Outcome> {
    let noun = run.kind.noun();
    if let Some(refusal) = guest.refusal(Caller::of(&run.global.transport)) {
        let message = format!("cannot create {noun}: {refusal}; nothing was changed");
        return Err(Failure::new(message).into());
    }
    let node = run.global.transport.node().to_string();
    let placement = guest.placement();
    let disks = guest.disks();
    // A re-run checks the disks it made against the images' sizes: the node is surveyed before the
    // VMID is judged when disks are checked, else only when there is something to create.
    let early = match disks {
        Some(_) => Some(survey(run, &node, &placement).await),
        None => None,
    };
    if let VmidChoice::Given(vmid) = guest.vmid() {
        if let Claim::Done(ev) = claim_vmid(run, vmid, guest.name()).await? {
            let done = format!(
                "{} already is the requested {noun} {:?} with the `{MANAGED_TAG}` tag; nothing was created",
                ev.label(run),
                guest.name()
            );
            let facts = early.unwrap_or_default();
            let verdict = check_made(run, &ev, guest, disks, &facts).await;
            return Ok((ev, verdict.map(|disks| joined(done, disks))));
        }
    }
    let facts = match early {
        Some(facts) => facts,
        None => survey(run, &node, &placement).await,
    };
    let found = problems(&placement, &node, &facts);
    if !found.is_empty() {
        let what = format!("{noun} {}", guest.vmid().describe());
        return Err(refusal(&what, &node, &found).into());
    }
    let mut trail = TaskTrail::default();
    let request = |vmid: u32| guest.request(&node, vmid);
    let action = |vmid: u32| format!("create {noun} {vmid} on node {node}");
    let (vmid, claimed) = create_guest(run, guest.vmid(), &mut trail, &request, &action)
        .await
        .map_err(|message| Outcome::from(Failure::new(message)))?;
    let mut ev = sight_new(run, vmid, trail, "create").await?;
    let verdict = match complete(run, &mut ev, guest.name(), "create").await {
        Ok(summary) => check_made(run, &ev, guest, disks, &facts)
            .await
            .map(|disks| joined(format!("{claimed}{summary}"), disks)),
        Err(message) => Err(message),
    };
    Ok((ev, verdict))
}

/// What was done, then what the disks showed (when they were checked).
fn joined(done: String, disks: Option<String>) -> String {
    match disks {
        Some(disks) => format!("{done}; {disks}"),
        None => done,
    }
}

/// Every setting reads back as requested, the config shows what the model asks of it, and every
/// disk the request made is on its storage — an imported one with the image's size. `Ok` holds
/// what the disks showed, when they were checked.
async fn check_made<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    guest: &dyn NewGuest,
    disks: Option<Vec<NewDisk>>,
    facts: &Survey,
) -> Result<Option<String>, String> {
    verify_settings(run, ev, &guest.settings(), "create")?;
    let label = ev.label(run);
    guest.judge_config(&label, &ev.config)?;
    let Some(disks) = disks else {
        return Ok(None);
    };
    if disks.is_empty() {
        return Ok(Some("no disks were requested".to_string()));
    }
    let mut lists: Vec<(String, Vec<StorageVolume>)> = Vec::new();
    let mut seen = Vec::new();
    for disk in &disks {
        if !lists.iter().any(|(s, _)| *s == disk.storage) {
            let volumes = disks_on_storage(run, ev, &label, &disk.storage).await?;
            lists.push((disk.storage.clone(), volumes));
        }
        let volumes = lists
            .iter()
            .find(|(s, _)| *s == disk.storage)
            .map(|(_, v)| v.as_slice())
            .unwrap_or_default();
        let image = disk.import_from.as_deref();
        let image_size = image.and_then(|image| facts.volume(image)?.size);
        seen.push(judge_disk(&label, &ev.config, disk, volumes, image_size)?);
    }
    Ok(Some(seen.joined("; ")))
}

/// One disk the request made: its volume is listed on its storage with a size, an imported one
/// with the image's (`image_size`, when its storage listed it).
fn judge_disk(
    label: &str,
    config: &Map<String, Value>,
    disk: &NewDisk,
    volumes: &[StorageVolume],
    image_size: Option<u64>,
) -> Result<String, String> {
    let key = &disk.key;
    let value = config
        .get(key)
        .and_then(flex::string_of)
        .unwrap_or_default();
    let volid = value.split(',').next().unwrap_or_default().to_string();
    let size = volumes
        .iter()
        .find(|v| v.volid == volid)
        .map(|v| v.size.unwrap_or(0));
    let Some(size) = size else {
        let missing = format!("is not on storage {}", disk.storage);
        return Err(disk_failed(label, key, &volid, &missing));
    };
    let made = format!("{key} is {volid}");
    let Some(image) = &disk.import_from else {
        return Ok(format!("{made} ({size} bytes)"));
    };
    match image_size {
        Some(want) if size == want && size > 0 => Ok(format!(
            "{made}, imported from {image} ({size} bytes, the image's size)"
        )),
        Some(want) => Err(disk_failed(label, key, &volid, &format!(
            "imported from {image} holds {size} bytes where the image has {want} (an empty or short import)"
        ))),
        None if size > 0 => Ok(format!(
            "{made}, imported from {image} ({size} bytes; the image's size was not listed)"
        )),
        None => Err(disk_failed(label, key, &volid, &format!("imported from {image} is empty"))),
    }
}

/// Why a disk the create made is not as it should be: `what` it shows.
fn disk_failed(label: &str, key: &str, volid: &str, what: &str) -> String {
    format!("{label} exists, but its disk {key} ({volid}) {what} — check the create task's log and the storage")
}
