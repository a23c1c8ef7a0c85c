//! The one course of `resizeDisk`, `moveDisk` and `convertToTemplate`: read the arguments, find the
//! guest and wait out a lock on it, run the method's own course, record. One state machine and one
//! boxed future for the three methods (issue 32: a wrapper future per method cost its own).

use crate::args::ArgError;
use crate::guest::evidence::{sight_look_to_change, Look};
use crate::guest::locate::absent_message;
use crate::host::Host;
use crate::methods::move_disk::{self, MoveArgs};
use crate::methods::resize_disk::{self, ResizeArgs};
use crate::methods::template::{self, TemplateArgs};
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::GuestKind;
use crate::run::Run;
use serde_json::Value;

/// What a disk method was asked: its arguments, read.
pub enum DiskChange {
    Resize(ResizeArgs),
    Move(MoveArgs),
    Template(TemplateArgs),
}

/// Reads a method's arguments into its change ([`DiskChange`]).
pub type Parse = fn(GuestKind, &Value) -> Result<DiskChange, ArgError>;

/// Runs a disk method (its arguments read by `parse`).
pub async fn disk_change<H: Host>(run: &Run<'_, H>, args: &Value, parse: Parse) -> Outcome {
    let change = match parse(run.kind, args) {
        Ok(change) => change,
        Err(e) => return Failure::from(e).into(),
    };
    // The disk methods read the config; a conversion needs none (`sight_to_change`'s look).
    let (target, look, words) = match &change {
        DiskChange::Resize(args) => (
            &args.target,
            Look::WithConfig,
            ": there is no disk to resize",
        ),
        DiskChange::Move(args) => (&args.target, Look::WithConfig, ": there is no disk to move"),
        DiskChange::Template(args) => (
            &args.target,
            Look::ToAct,
            ": there is nothing to convert to a template",
        ),
    };
    let absent = |vmid| absent_message(run.kind, vmid, words);
    let mut ev = match sight_look_to_change(run, target, look, &absent).await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let verdict = match &change {
        DiskChange::Resize(args) => resize_disk::course(run, &mut ev, args).await,
        DiskChange::Move(args) => move_disk::course(run, &mut ev, args).await,
        DiskChange::Template(args) => template::convert(run, &mut ev, args).await,
    };
    ev.outcome(run, verdict).await
}
