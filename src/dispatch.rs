//! From (model, method, arguments) to the method's logic. The only table of what the core implements.

use crate::global_args::GlobalArgs;
use crate::host::Host;
use crate::methods::{check, guest_exec, lookup};
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::GuestKind;
use crate::run::Run;
use serde_json::Value;

/// The check names, as the wrapper passes them (`check:<name>`).
pub const CHECK_TRANSPORT_REACHABLE: &str = "check:transport-reachable";

/// Runs one method of one model with the merged `{...globalArgs, ...methodArgs}` object.
pub async fn run_method<H: Host>(host: &H, model: &str, method: &str, args: &Value) -> Outcome {
    let kind = match model {
        "qemu" => GuestKind::Qemu,
        "lxc" => GuestKind::Lxc,
        other => {
            return Failure::new(format!(
                "unknown model {other:?}: expected \"qemu\" or \"lxc\""
            ))
            .into()
        }
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
        (_, "lookup") => lookup::lookup(&run, args).await,
        (GuestKind::Qemu, "guestExec") => guest_exec::guest_exec(&run, args).await,
        (_, CHECK_TRANSPORT_REACHABLE) => check::transport_reachable(&run).await,
        _ => Failure::new(format!(
            "method {method:?} of the {model} model is not implemented by the core"
        ))
        .into(),
    }
}
