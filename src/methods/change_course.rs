//! The one course of the methods that change a guest's disks or config — `resizeDisk`, `moveDisk`,
//! `convertToTemplate`, `cloudInit` and those built on `setConfig` (setConfig, setNic, removeNic,
//! attachDisk, detachDisk): read the arguments, find the guest and wait out a lock on it, run the method's own
//! course, record. One state machine and one boxed future for them all (issue 32: a wrapper
//! future per method cost its own).

use crate::args::ArgError;
use crate::guest::evidence::{sight_look_to_change, Look, NOTHING_TO};
use crate::guest::record::GuestRecord;
use crate::host::Host;
use crate::methods::cloud_init::{self, CloudInitArgs};
use crate::methods::move_disk::{self, MoveArgs};
use crate::methods::resize_disk::{self, ResizeArgs};
use crate::methods::set_config::{self, ConfigChange};
use crate::methods::template::{self, TemplateArgs};
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::GuestKind;
use crate::run::Run;
use serde_json::Value;

/// What a guest change was asked: its arguments, read.
pub enum GuestChange {
    Resize(ResizeArgs),
    Move(MoveArgs),
    Template(TemplateArgs),
    /// A method built on `setConfig`.
    Config(Box<dyn ConfigChange>),
    CloudInit(Box<CloudInitArgs>),
}

/// Reads a method's arguments into its change ([`GuestChange`]).
pub type Parse = fn(GuestKind, &Value) -> Result<GuestChange, ArgError>;

/// `resizeDisk`'s (qemu) or `resize`'s (lxc) change, from its arguments. The method files read
/// their arguments; which change a method is is said here, so that a method never names the course
/// that runs it (no import circle).
pub fn resize_disk(kind: GuestKind, args: &Value) -> Result<GuestChange, ArgError> {
    ResizeArgs::parse(kind, args).map(GuestChange::Resize)
}

/// `moveDisk`'s change, from its arguments.
pub fn move_disk(kind: GuestKind, args: &Value) -> Result<GuestChange, ArgError> {
    MoveArgs::parse(kind, args).map(GuestChange::Move)
}

/// `convertToTemplate`'s change, from its arguments.
pub fn convert_to_template(_: GuestKind, args: &Value) -> Result<GuestChange, ArgError> {
    TemplateArgs::parse(args).map(GuestChange::Template)
}

/// `setConfig`'s change, from its arguments.
pub fn set_config(kind: GuestKind, args: &Value) -> Result<GuestChange, ArgError> {
    Ok(GuestChange::Config(Box::new(set_config::set_config(
        kind, args,
    )?)))
}

/// `cloudInit`'s change, from its arguments.
pub fn cloud_init(_: GuestKind, args: &Value) -> Result<GuestChange, ArgError> {
    Ok(GuestChange::CloudInit(Box::new(CloudInitArgs::parse(
        args,
    )?)))
}

/// Runs a guest change (its arguments read by `parse`).
pub async fn guest_change<H: Host>(run: &Run<'_, H>, args: &Value, parse: Parse) -> Outcome {
    let change = match parse(run.kind, args) {
        Ok(change) => change,
        Err(e) => return Failure::from(e).into(),
    };
    // The config is read for its identity and the course's judgement; a conversion needs none
    // (`sight_to_change`'s look, as convertToTemplate read before).
    let (target, look, words) = match &change {
        GuestChange::Resize(args) => (
            &args.target,
            Look::WithConfig,
            (": there is no disk to resize", ""),
        ),
        GuestChange::Move(args) => (
            &args.target,
            Look::WithConfig,
            (": there is no disk to move", ""),
        ),
        GuestChange::Template(args) => (
            &args.target,
            Look::ToAct,
            (": there is nothing to convert to a template", ""),
        ),
        GuestChange::Config(method) => (
            &method.base().target,
            Look::WithConfig,
            (": there is no config to change", ""),
        ),
        GuestChange::CloudInit(args) => (
            &args.set.target,
            Look::ToAct,
            (NOTHING_TO, "configure cloud-init for"),
        ),
    };
    let mut ev = match sight_look_to_change(run, target, look, words).await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    // A config change's record shows what it left pending (cloudInit's: its pending keys alone);
    // the others' show the guest alone.
    let mut pending = None;
    let (verdict, mut snapshot) = match &change {
        GuestChange::Resize(args) => (resize_disk::course(run, &mut ev, args).await, None),
        GuestChange::Move(args) => (move_disk::course(run, &mut ev, args).await, None),
        GuestChange::Template(args) => (template::convert(run, &mut ev, args).await, None),
        GuestChange::Config(method) => set_config::course(run, &mut ev, &**method).await,
        GuestChange::CloudInit(args) => {
            let (verdict, left) = cloud_init::course(run, &mut ev, args).await;
            pending = Some(left);
            (verdict, None)
        }
    };
    let mut extend = |record: &mut GuestRecord| {
        set_config::with_pending(record, &mut snapshot);
        if let Some(pending) = pending.take() {
            record.put_pending(pending);
        }
    };
    ev.outcome_with(run, verdict, Some(&mut extend)).await
}
