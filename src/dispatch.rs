//! From (model, method, arguments) to the method's logic. The only table of what the core implements.

use crate::args::Fields;
use crate::global_args::GlobalArgs;
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::methods::{
    check, clone, create, delete, get_config, guest_exec, lookup, node_config, node_status,
    resize_disk, set_config, shutdown, start, stop, sync,
};
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::GuestKind;
use crate::run::Run;
use serde_json::Value;

/// The check names, as the wrapper passes them (`check:<name>`).
pub const CHECK_TRANSPORT_REACHABLE: &str = "check:transport-reachable";

/// Applies a method's argument rules without running it: `Err` names the field and the rule.
/// (The tests that prove zod and the core agree call this through the wasm boundary.)
pub fn validate_arguments(model: &str, method: &str, args: &Value) -> Result<(), String> {
    let kind = model_kind(model).map_err(|f| f.0)?;
    GlobalArgs::parse(args).map_err(|e| e.to_string())?;
    let fields = Fields::of(args, "").map_err(|e| e.to_string())?;
    let checked = match (kind, method) {
        (_, "lookup" | "getConfig") => GuestRef::parse(&fields).map(drop),
        (GuestKind::Qemu, "guestExec") => guest_exec::ExecArgs::parse(args).map(drop),
        (_, "start") => start::StartArgs::parse(args).map(drop),
        (_, "stop") => stop::StopArgs::parse(args).map(drop),
        (_, "shutdown") => shutdown::ShutdownArgs::parse(args).map(drop),
        (_, "delete") => delete::DeleteArgs::parse(args).map(drop),
        (GuestKind::Qemu, "clone") => clone::CloneArgs::parse(args).map(drop),
        (GuestKind::Lxc, "create") => create::CreateArgs::parse(args).map(drop),
        (_, "setConfig") => set_config::SetConfigArgs::parse(args).map(drop),
        (GuestKind::Qemu, "resizeDisk") | (GuestKind::Lxc, "resize") => {
            resize_disk::ResizeArgs::parse(kind, args).map(drop)
        }
        (_, "sync") => sync::SyncArgs::parse(args).map(drop),
        (_, "nodeStatus" | "nodeConfig") => node_status::NodeArgs::parse(args).map(drop),
        _ => {
            return Err(format!(
                "method {method:?} of the {model} model has no argument rules in the core"
            ))
        }
    };
    checked.map_err(|e| e.to_string())
}

fn model_kind(model: &str) -> Result<GuestKind, Failure> {
    match model {
        "qemu" => Ok(GuestKind::Qemu),
        "lxc" => Ok(GuestKind::Lxc),
        other => Err(Failure::new(format!(
            "unknown model {other:?}: expected \"qemu\" or \"lxc\""
        ))),
    }
}

/// Runs one method of one model with the merged `{...globalArgs, ...methodArgs}` object.
pub async fn run_method<H: Host>(host: &H, model: &str, method: &str, args: &Value) -> Outcome {
    let kind = match model_kind(model) {
        Ok(kind) => kind,
        Err(failure) => return failure.into(),
    };
    let global = match GlobalArgs::parse(args) {
        Ok(global) => global,
        Err(e) => return Failure::from(e).into(),
    };
    let run = Run {
        host,
        global: &global,
        kind,
        method,
    };
    match (kind, method) {
        // Written once for both kinds: what differs is data on `GuestKind`.
        (_, "lookup") => lookup::lookup(&run, args).await,
        (_, "start") => start::start(&run, args).await,
        (_, "stop") => stop::stop(&run, args).await,
        (_, "shutdown") => shutdown::shutdown(&run, args).await,
        (_, "delete") => delete::delete(&run, args).await,
        (_, "getConfig") => get_config::get_config(&run, args).await,
        (_, "setConfig") => set_config::set_config(&run, args).await,
        (_, "sync") => sync::sync(&run, args).await,
        // A VM is cloned from a template and has a guest agent; a container is created from one.
        (GuestKind::Qemu, "guestExec") => guest_exec::guest_exec(&run, args).await,
        (GuestKind::Qemu, "clone") => clone::clone(&run, args).await,
        (GuestKind::Lxc, "create") => create::create(&run, args).await,
        (GuestKind::Qemu, "resizeDisk") | (GuestKind::Lxc, "resize") => {
            resize_disk::resize_disk(&run, args).await
        }
        (_, "nodeStatus") => node_status::node_status(&run, args).await,
        (_, "nodeConfig") => node_config::node_config(&run, args).await,
        (_, CHECK_TRANSPORT_REACHABLE) => check::transport_reachable(&run).await,
        _ => Failure::new(format!(
            "method {method:?} of the {model} model is not implemented by the core"
        ))
        .into(),
    }
}
