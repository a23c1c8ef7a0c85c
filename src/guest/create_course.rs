//! The one course of `create`, VM and container alike, of `clone` and of `restore`: refuse what
//! PVE would refuse the caller, judge a given VMID (free, or a re-run of this very request; for a
//! restore, a guest it may replace), check that the node can take the new guest (a clone: find its
//! template's node, its lock waited out; a restore: read the archive's config), send the create and
//! follow its task, sight the new guest, then judge what it holds. Each model says only what
//! differs, as a [`NewGuest`]; the start its request may ask for follows in `methods::start`.
//! Object-safe: every model runs through `&dyn NewGuest`, so the course is compiled once.
//!
//! qemu-server `PVE/API2/Qemu.pm` create_vm and pve-container `src/PVE/API2/LXC.pm` create_vm both
//! write the config under `lock: create` and leave the volumes to the worker (`qmcreate`,
//! `vzcreate`), which removes the lock when it is done.

use super::backups::{archive_listed, list_archives, ArchiveConfig, BackupVolid};
use super::evidence::{
    lock_released, sight, sight_or_absent, sight_with, unlocked, unlocked_after, Absent, Evidence,
    Sighting, TaskTrail,
};
use super::gates::MANAGED_TAG;
use super::locate::next_id_free;
use super::observe::Look;
use super::placement::{problems, refusal, survey, Placement, Survey};
use super::provision::{
    has_managed_tag, is_requested, occupant, verify_settings, with_managed_tag,
};
use super::readiness::ReadyArgs;
use super::reference::GuestRef;
use super::root_only::Caller;
use super::settle::{lock_of, locked_advice};
use super::vmid_claim::{Claim, VmidChoice};
use super::volumes::{disks_listed, disks_request, storage_of};
use crate::explain::{could_not_args, mutation_failed};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::error::ErrorKind;
use crate::pve::flex;
use crate::pve::request::PveRequest;
use crate::pve::responses::StorageVolume;
use crate::quote::Joined;
use crate::run::Run;
use crate::task::follow_task;
use serde_json::{Map, Value};

/// What one model's `create` asks for, and what of it must read back.
pub trait NewGuest {
    /// The VMID asked for.
    fn vmid(&self) -> VmidChoice;

    /// The name the guest must carry: a VM's `name`, a container's `hostname`.
    fn name(&self) -> &str;

    /// What PVE would refuse this caller among the new guest's options (root-only keys); for a
    /// `task` other than `create`, the whole message.
    fn refusal(&self, caller: Caller) -> Option<String>;

    /// The creating request for `vmid` on `node`, after what was read `before`.
    fn request(&self, node: &str, vmid: u32, before: &Before) -> PveRequest;

    /// The creating request as messages name it (`noun` the guest's kind).
    fn action(&self, noun: &str, node: &str, vmid: u32, _before: &Before) -> String {
        format!("create {noun} {vmid} on node {node}")
    }

    /// The backup a restore makes the guest from: its config is read where the restore runs, and
    /// a guest holding the given VMID is restored over rather than judged as a re-run.
    fn archive(&self) -> Option<&BackupVolid> {
        None
    }

    /// Why the guest holding the VMID may not be restored over; `None` when it may.
    fn holder_refusal(&self, _label: &str, _holder: &Evidence) -> Option<String> {
        None
    }

    /// A restore that cannot start, and `why`.
    fn cannot(&self, why: &str) -> String {
        why.to_string()
    }

    /// What a restored guest's config shows against the archive's: `Ok` the disks `(key, volume
    /// id)` to find on their storages, `Err` the message.
    fn judge_restored(
        &self,
        _label: &str,
        _config: &Map<String, Value>,
        _archive: &ArchiveConfig,
    ) -> Result<Vec<(String, String)>, String> {
        Ok(Vec::new())
    }

    /// Whether the disks on `store` are all in its listing `volumes` (a restore's).
    fn judge_store(
        &self,
        _label: &str,
        _disks: &[(String, String)],
        _store: &str,
        _volumes: &[StorageVolume],
    ) -> Result<(), String> {
        Ok(())
    }

    /// What a restore that held did (`how` it got its VMID).
    fn restored(
        &self,
        _how: &str,
        _label: &str,
        _archive: &ArchiveConfig,
        _disks: &[(String, String)],
    ) -> String {
        String::new()
    }

    /// What the create places on the node, checked before anything changes; `None`: nothing the
    /// node is surveyed for (a clone lands where its template lives, on the template's storages).
    fn placement(&self) -> Option<Placement<'_>>;

    /// The template a clone is made from: the new guest lands on its node, once it is unlocked.
    /// `None`: the guest is made on the transport's node.
    fn template(&self) -> Option<u32> {
        None
    }

    /// The step as messages name it: `create`, `clone`.
    fn task(&self) -> &'static str {
        "create"
    }

    /// Whether a guest found made by an earlier run is held to the request again and started as
    /// asked (a create's); `false`: it is taken as it is (a clone's).
    fn recheck(&self) -> bool {
        true
    }

    /// The settings that must read back as requested (`provision::verify_settings`).
    fn settings(&self) -> Vec<(String, String)>;

    /// What the config must show besides the settings (a VM's `cipassword`, which PVE keeps only
    /// hashed); `label` names the guest in the message. Nothing, unless a model says otherwise.
    fn judge_config(&self, _label: &str, _config: &Map<String, Value>) -> Result<(), String> {
        Ok(())
    }

    /// The disks whose new volumes must be listed on their storages (a VM's); `None`: the model
    /// judges its volumes by the settings that read back alone (a container's rootfs and mpN).
    fn disks(&self) -> Option<Vec<NewDisk<'_>>>;

    /// Whether it is to be started once made (`start: true`).
    fn start(&self) -> bool;

    /// `waitReady`: start it and wait until it is usable (a VM's).
    fn ready(&self) -> Option<&ReadyArgs> {
        None
    }
}

/// What the course read before it sends: the archive's config (a restore's), and whether the
/// guest holding the VMID is restored over.
#[derive(Debug, Default)]
pub struct Before {
    pub archive: ArchiveConfig,
    pub over: bool,
}

/// A disk the create makes: its config key, its storage, the image it imports (borrowed from the
/// request's arguments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDisk<'a> {
    pub key: &'a str,
    pub storage: &'a str,
    pub import_from: Option<&'a str>,
}

/// How the course ends: the guest whose record the run writes, the verdict and whether the guest is
/// to be started as asked; `Err` an outcome already made (nothing seen to record, or the record a
/// shared step wrote).
pub type Ending = Result<(Box<Evidence>, Result<String, String>, bool), Outcome>;

/// Runs the course up to the verdict on what was made: the new (or re-run) guest's evidence, that
/// verdict and whether the guest is to be started as asked, or — before a guest was seen — the
/// run's outcome.
pub async fn create_course<H: Host>(run: &Run<'_, H>, guest: &dyn NewGuest) -> Ending {
    let noun = run.kind.noun();
    let task = guest.task();
    let pve = &run.pve();
    // What the model says once, asked once (each ask is a call through its vtable).
    let (choice, name, restoring) = (guest.vmid(), guest.name(), guest.archive());
    if let Some(refusal) = guest.refusal(Caller::of(&run.global.transport)) {
        let message = match task {
            "create" => format!("cannot create {noun}: {refusal}; nothing was changed"),
            _ => refusal,
        };
        return Err(Failure::new(message).into());
    }
    let node = run.global.transport.node();
    // What the node was found to hold, and what the course read before it sends, are filled in
    // place where they are read (not carried out of the branches that read them).
    let mut facts = Survey::default();
    let mut before = Before::default();
    // The guest holding a given VMID, if any (`GET /cluster/nextid?vmid=…` says whether one does),
    // found from the course's own awaits; and the node surveyed from one await: before the VMID is
    // judged when disks are checked (a re-run checks the disks it made against the images'
    // sizes), else once it is judged free (a guest holding it is a re-run, or one a restore
    // replaces: no placement). The model's placement and disks are asked for where they are
    // used, not held across the course.
    let early = guest.disks().is_some();
    let mut judged: Option<Option<Box<Evidence>>> = None;
    let holder = loop {
        let due = match &judged {
            None => early,
            Some(holder) => !early && holder.is_none(),
        };
        if due {
            if let Some(placement) = &guest.placement() {
                survey(run, node, placement, &mut facts).await;
            }
        }
        if let Some(holder) = judged {
            break holder;
        }
        judged = Some(match choice {
            VmidChoice::Given(vmid) => 'holder: {
                match next_id_free(pve, vmid).await {
                    Ok(()) => break 'holder None,
                    Err(e) if e.kind == ErrorKind::IdTaken => {}
                    Err(e) => {
                        return Err(could_not_args(
                            format_args!("check whether VMID {vmid} is free (GET /cluster/nextid)"),
                            &e,
                        )
                        .into());
                    }
                }
                let target = GuestRef {
                    vmid: Some(vmid),
                    name: None,
                };
                match sight(run, &target).await {
                    Ok(Sighting::Present(ev)) => Some(ev),
                    Ok(Sighting::Absent(vmid)) => return Err(Failure::new(format!(
                        "VMID {vmid} was in use a moment ago and is free now (a create or delete in progress?); run {} again",
                        run.method
                    ))
                    .into()),
                    // Typically a guest of the other kind (or one this token may not audit).
                    Err(failure) => return Err(Failure::new(format!(
                        "VMID {vmid} is in use by another guest: {}",
                        failure.0
                    ))
                    .into()),
                }
            }
            VmidChoice::Free { .. } => None,
        });
    };
    // The guest the verdict is on, what it is held to, and what the summary starts with: a re-run
    // found holding the VMID, or the guest this run makes.
    let (ev, prefix) = match holder {
        Some(ev) if restoring.is_none() => {
            // The guest holding the requested VMID is a re-run, nothing to create, when it is the
            // guest named as asked with the managed tag; else the refusal, on its record (the
            // course writes that record), judged from the course's own awaits.
            let mut ev = ev;
            let vmid = ev.at.vmid;
            // qemu-server's clone_vm and pve-container's create write the new guest's config
            // (final name, tags) under `lock: clone` / `lock: create` before the work is done: a
            // re-run that finds the requested guest locked has found an unfinished guest. Wait for
            // the lock, then judge. One refusal for both ways a re-run is refused.
            let refused = 'refused: {
                if let Some(lock) = lock_of(&ev.status).map(str::to_string) {
                    if ev.status.name.as_deref() == Some(name) {
                        run.info_args(format_args!(
                            "{} holds {name:?} but is locked ({lock}): an operation on it is still running; waiting for it to finish",
                            ev.label(run)
                        ));
                        // The config read while locked was unfinished: read what the finished
                        // guest holds.
                        if let Err(why) = lock_released(run, &mut ev, true).await {
                            break 'refused Some(format!(
                                "VMID {vmid} holds {name:?}, but it is locked ({lock}): the operation that creates it has not finished ({why}) — it is not counted as done; check the task list of node {} for its task, then run {} again",
                                ev.at.node, run.method
                            ));
                        }
                    }
                }
                if is_requested(&ev.status, name) {
                    break 'refused None;
                }
                Some(format!(
                    "VMID {vmid} is in use by another guest ({}), not the requested {name:?} with the `{MANAGED_TAG}` tag — choose a free vmid, or remove that guest first",
                    occupant(&ev.status)
                ))
            };
            if let Some(message) = refused {
                return Ok((ev, Err(message), false));
            }
            // A create names the guest's kind, a clone the clone: "nothing was created/cloned".
            let what = if task == "create" { noun } else { task };
            let done = format!(
                "{} already is the requested {what} {:?} with the `{MANAGED_TAG}` tag; nothing was {task}d",
                ev.label(run),
                name
            );
            if !guest.recheck() {
                return Ok((ev, Ok(done), false));
            }
            (ev, Ok(done))
        }
        holder => {
            let over = match holder {
                Some(ev) => match guest.holder_refusal(&ev.label(run), &ev) {
                    Some(message) => return Ok((ev, Err(message), false)),
                    None => Some(unlocked(run, ev).await?),
                },
                None => None,
            };
            let placement = guest.placement();
            if let Some(placement) = &placement {
                let found = problems(placement, node, &facts);
                if !found.is_empty() {
                    let what = format!("{noun} {}", choice.describe());
                    return Err(refusal(&what, node, &found).into());
                }
            }
            // A restore runs where the guest it replaces lives (its archive read there too: a
            // storage local to a node holds that node's); a clone where its template lives.
            let node = match (guest.template(), &over) {
                // The node the template lives on, once PVE would accept a clone of it: a lock on
                // it (a backup) is waited out within the method's budget. Asked where it is
                // expected first (the configured node, or where its record saw it), as every read
                // is; from the course's own awaits (no wrapper's state machine).
                (Some(template_id), _) => 'template: {
                    let template = GuestRef {
                        vmid: Some(template_id),
                        name: None,
                    };
                    // Its state read where it lives, as a sighting of its state alone.
                    let sighted = sight_with(run, &template, Look::State).await?;
                    let mut template = match sighted {
                        Sighting::Present(template) => template,
                        Sighting::Absent(vmid) => {
                            let missing = "does not exist on any node: check templateId";
                            return ended(None, format!("template {vmid} {missing}"));
                        }
                    };
                    // qemu-server's clone_vm refuses while the template is locked (`check_lock`
                    // in `$load_and_check`, before the worker forks) — one vzdump is backing up,
                    // say.
                    let Some(lock) = lock_of(&template.status).map(str::to_owned) else {
                        break 'template std::mem::take(&mut template.at.node);
                    };
                    match lock_released(run, &mut template, false).await {
                        Ok(()) => std::mem::take(&mut template.at.node),
                        Err(why) => {
                            return ended(None, format!(
                                "template VM {} on node {} did not show its lock released: {why} — {}",
                                template.at.vmid,
                                template.at.node,
                                locked_advice(run.kind, &lock, "clone")
                            ))
                        }
                    }
                }
                (None, Some(ev)) => ev.at.node.clone(),
                (None, None) => node.to_string(),
            };
            let archive = match restoring {
                // The archive as listed (a size above 0 required), then the config it holds, each
                // read from the course's own await.
                Some(archive) => {
                    let listed = list_archives(run, &node, &archive.storage, archive.vmid).await;
                    let listed = listed.and_then(|l| archive_listed(run.kind, &node, archive, &l));
                    let read = match listed {
                        Ok(()) => {
                            let request = endpoints::vzdump_extract_config(&node, &archive.volid);
                            ArchiveConfig::extracted(&archive.volid, pve.call(&request).await)
                        }
                        Err(why) => Err(why),
                    };
                    match read {
                        Ok(config) => config,
                        Err(why) => return ended(over, guest.cannot(&why)),
                    }
                }
                None => ArchiveConfig::default(),
            };
            before.archive = archive;
            before.over = over.is_some();
            let mut trail = TaskTrail::default();
            // The creating request for the chosen VMID and its task, a given VMID and a free one
            // alike through one [`Claim`] (its requests sent from this course's own await): the
            // VMID the guest got, and how it was chosen (a prefix for the summary). A given VMID
            // was judged as a re-run above.
            let mut claim = Claim::new(choice);
            let made = 'claim: loop {
                let vmid = claim.candidate;
                let sent = match or_break!('claim, claim.next()) {
                    Some(read) => read,
                    None => {
                        trail.sending();
                        guest.request(&node, vmid, &before)
                    }
                };
                let answer = pve.call(&sent).await;
                let heard = claim.heard(run, &mut trail, &sent, answer);
                if let Some(answer) = or_break!('claim, heard) {
                    // The action as messages name it: "clone VM 9000 on node pve1 to VMID 123".
                    let action = guest.action(noun, &node, vmid, &before);
                    let upid =
                        or_break!('claim, trail.accepted(answer, &sent, format_args!("{action}")));
                    // The task's own words name it by UPID only: say which action it was.
                    let followed = follow_task(pve, &upid).await;
                    break trail
                        .followed(followed)
                        .map(|()| vmid)
                        .map_err(|why| format!("{action}: {why}"));
                }
            };
            let vmid = match made {
                Ok(vmid) => vmid,
                Err(message) => return ended(over, message),
            };
            // The new guest, located and read, carrying the run's task trail, and unlocked
            // ([`unlocked_after`]: a lock still there is an unfinished guest), from the course's
            // own awaits. A guest absent after all, or still locked when the budget runs out, is
            // the course's end: the run's failure, on the guest's record when it was seen.
            let target = GuestRef {
                vmid: Some(vmid),
                name: None,
            };
            let done = format!("the {task} task ended successfully");
            let absent = |vmid| {
                format!(
                    "{done}, but {noun} {vmid} does not exist on any node — check the {task} task's log"
                )
            };
            let mut ev = sight_or_absent(run, &target, Absent::Said(&absent), false).await?;
            // Read after the creating task: not stale.
            ev.observed_after = trail.mutations_sent;
            ev.trail = trail;
            if let Err(message) = unlocked_after(run, &mut ev, &done).await {
                return Ok((ev, Err(message), false));
            }
            // How the guest got its VMID, as the summary starts (decided once the guest was
            // seen: not held across its reads).
            let claimed = match (before.over, choice) {
                (true, _) => "restored over the existing guest: ".to_string(),
                (false, VmidChoice::Given(_)) => String::new(),
                (false, VmidChoice::Free { .. }) => format!("claimed the free VMID {vmid}: "),
            };
            // A restored guest is held to the archive below; a made one must carry the requested
            // name and the managed tag (added when missing), judged in the course's own labeled
            // block (no wrapper's state machine).
            let named = 'named: {
                if restoring.is_some() {
                    break 'named Ok(claimed);
                }
                let label = ev.label(run);
                if ev.status.name.as_deref() != Some(name) {
                    break 'named Err(format!(
                        "{done}, but {label} is named {:?}, not {name:?} — check the {task} task's log",
                        ev.status.name.as_deref().unwrap_or(""),
                    ));
                }
                if has_managed_tag(&ev.status) {
                    break 'named Ok(format!(
                        "{claimed}{label} exists as {name:?} with the `{MANAGED_TAG}` tag"
                    ));
                }
                // Added to the guest's own tags and read back, from the course's own awaits.
                let tags = with_managed_tag(ev.status.tags.as_deref().unwrap_or_default());
                let request = endpoints::set_guest_tags(&ev.at.node, run.kind, ev.at.vmid, &tags);
                ev.trail.sending();
                let answer = pve.call(&request).await;
                ev.trail.answered(&answer);
                if let Err(e) = answer {
                    break 'named Err(mutation_failed(
                        format_args!("add the `{MANAGED_TAG}` tag to {label}"),
                        &e,
                        "its tags (run lookup)",
                    )
                    .0);
                }
                or_break!('named, ev.refresh(run).await);
                if !has_managed_tag(&ev.status) {
                    break 'named Err(format!(
                        "the `{MANAGED_TAG}` tag was set on {label}, but its tags read back as {:?} — check the token's VM.Config.Options privilege and the cluster's tag settings",
                        ev.status.tags.as_deref().unwrap_or("")
                    ));
                }
                Ok(format!(
                    "{claimed}{label} exists as {name:?}; the `{MANAGED_TAG}` tag was added and read back"
                ))
            };
            (ev, named)
        }
    };
    // What the guest is held to (a restored one: the archive's config; a made one or a re-run: the
    // settings, the config and the disks the request made), then every disk it names against its
    // storage's listing: each storage listed once, from this course's own await.
    let verdict = 'verdict: {
        let prefix = or_break!('verdict, prefix);
        let label = ev.label(run);
        let held = or_break!('verdict, Held::of(run, &ev, &label, guest, &before));
        let stores = held.storages();
        let mut lists: Vec<(&str, Vec<StorageVolume>)> = Vec::new();
        let mut seen = Vec::new();
        for (i, store) in stores.iter().enumerate() {
            let at = match lists.iter().position(|(listed, _)| listed == store) {
                Some(at) => at,
                None => {
                    let answer = pve.call(&disks_request(run.kind, &ev, store)).await;
                    let volumes = or_break!('verdict, disks_listed(&label, &ev, store, answer));
                    lists.push((store, volumes));
                    lists.len() - 1
                }
            };
            let volumes = lists.get(at).map(|(_, volumes)| volumes.as_slice());
            let volumes = volumes.unwrap_or_default();
            let judged = held.judge(guest, &label, &ev.config, i, store, volumes, &facts);
            if let Some(shown) = or_break!('verdict, judged) {
                seen.push(shown);
            }
        }
        Ok(held.summary(guest, prefix, &label, &before.archive, &seen))
    };
    Ok((ev, verdict, true))
}

/// What the verdict holds a guest's disks to, besides what the course judged itself.
enum Held<'g> {
    /// A restored guest's disks `(key, volume id)`, each on its storage's listing.
    Restored(Vec<(String, String)>),
    /// The disks the request made, each on its storage's listing (`None`: not checked by listing).
    Made(Option<Vec<NewDisk<'g>>>),
}

/// `of`, `storages` and `summary` each have one caller, the course's verdict: always inlined there
/// (measured smaller than calls, issue 32).
impl<'g> Held<'g> {
    /// A restored guest's config against the archive's; a made one's settings read back as
    /// requested and its config showing what the model asks of it.
    #[inline(always)]
    fn of<H: Host>(
        run: &Run<'_, H>,
        ev: &Evidence,
        label: &str,
        guest: &'g dyn NewGuest,
        before: &Before,
    ) -> Result<Held<'g>, String> {
        if guest.archive().is_some() {
            return guest
                .judge_restored(label, &ev.config, &before.archive)
                .map(Held::Restored);
        }
        verify_settings(run, ev, &guest.settings(), "create")?;
        guest.judge_config(label, &ev.config)?;
        Ok(Held::Made(guest.disks()))
    }

    /// The storages to list, in the order their disks are judged: a restore's each once, sorted;
    /// a create's one per disk, in the request's order.
    #[inline(always)]
    fn storages(&self) -> Vec<&str> {
        let mut stores = Vec::new();
        match self {
            Held::Restored(disks) => {
                for (_, volid) in disks {
                    stores.push(storage_of(volid));
                }
                crate::order::sort_dedup(&mut stores);
            }
            Held::Made(disks) => {
                for disk in disks.iter().flatten() {
                    stores.push(disk.storage);
                }
            }
        }
        stores
    }

    /// The `i`th judgment of [`Held::storages`]: `store`'s listing `volumes` holds what it should.
    /// `Ok` holds what a made disk showed.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn judge(
        &self,
        guest: &dyn NewGuest,
        label: &str,
        config: &Map<String, Value>,
        i: usize,
        store: &str,
        volumes: &[StorageVolume],
        facts: &Survey,
    ) -> Result<Option<String>, String> {
        match self {
            Held::Restored(disks) => guest
                .judge_store(label, disks, store, volumes)
                .map(|()| None),
            Held::Made(disks) => match disks.as_deref().and_then(|disks| disks.get(i)) {
                Some(disk) => {
                    let image = disk.import_from;
                    let image_size = image.and_then(|image| facts.volume(image)?.size);
                    judge_disk(label, config, disk, volumes, image_size).map(Some)
                }
                None => Ok(None),
            },
        }
    }

    /// The summary: `prefix` (what was done) then what the disks showed (`seen`), when they were
    /// checked; a restore's from the model.
    #[inline(always)]
    fn summary(
        &self,
        guest: &dyn NewGuest,
        prefix: String,
        label: &str,
        archive: &ArchiveConfig,
        seen: &[String],
    ) -> String {
        match self {
            Held::Restored(disks) => guest.restored(&prefix, label, archive, disks),
            Held::Made(None) => prefix,
            Held::Made(Some(disks)) if disks.is_empty() => {
                format!("{prefix}; no disks were requested")
            }
            Held::Made(Some(_)) => format!("{prefix}; {}", seen.joined("; ")),
        }
    }
}

/// A step's failure as the run's end: on the record of the guest a restore would have replaced,
/// when there is one.
fn ended(over: Option<Box<Evidence>>, message: String) -> Ending {
    match over {
        Some(ev) => Ok((ev, Err(message), false)),
        None => Err(Failure::new(message).into()),
    }
}

/// One disk the request made: its volume is listed on its storage with a size, an imported one
/// with the image's (`image_size`, when its storage listed it).
fn judge_disk(
    label: &str,
    config: &Map<String, Value>,
    disk: &NewDisk<'_>,
    volumes: &[StorageVolume],
    image_size: Option<u64>,
) -> Result<String, String> {
    let key = disk.key;
    let value = config
        .get(key)
        .and_then(flex::string_of)
        .unwrap_or_default();
    let volid = value.split(',').next().unwrap_or_default();
    let size = volumes
        .iter()
        .find(|v| v.volid == volid)
        .map(|v| v.size.unwrap_or(0));
    let Some(size) = size else {
        let missing = format_args!("is not on storage {}", disk.storage);
        return Err(disk_failed(label, key, volid, missing));
    };
    let made = format!("{key} is {volid}");
    let Some(image) = &disk.import_from else {
        return Ok(format!("{made} ({size} bytes)"));
    };
    match image_size {
        Some(want) if size == want && size > 0 => Ok(format!(
            "{made}, imported from {image} ({size} bytes, the image's size)"
        )),
        Some(want) => Err(disk_failed(label, key, volid, format_args!(
            "imported from {image} holds {size} bytes where the image has {want} (an empty or short import)"
        ))),
        None if size > 0 => Ok(format!(
            "{made}, imported from {image} ({size} bytes; the image's size was not listed)"
        )),
        None => Err(disk_failed(label, key, volid, format_args!("imported from {image} is empty"))),
    }
}

/// Why a disk the create made is not as it should be: `what` it shows (written in place, not
/// formatted apart first, issue 32).
fn disk_failed(label: &str, key: &str, volid: &str, what: std::fmt::Arguments) -> String {
    format!("{label} exists, but its disk {key} ({volid}) {what} — check the create task's log and the storage")
}
