//! Turning a [`PveRequest`] into an effect and its answer back into data, over either transport.
//!
//! After assembly both transports are identical to the rest of the core: a call yields PVE's `data`
//! or a classified [`PveError`].

pub mod api;
pub mod pvesh_output;
pub mod ssh;

use crate::global_args::TransportSettings;
use crate::host::Host;
use crate::pve::error::PveError;
use crate::pve::request::{PveRequest, Verb};
use serde_json::Value;

/// Sends one request over the configured transport and interprets the answer.
pub async fn send<H: Host>(
    host: &H,
    settings: &TransportSettings,
    request: &PveRequest,
    timeout_ms: u64,
) -> Result<Value, PveError> {
    match settings {
        TransportSettings::Api(api) => {
            let response = host.http(api::assemble(api, request, timeout_ms)).await?;
            api::interpret(&response)
        }
        TransportSettings::Ssh(ssh) => {
            // pvesh runs task workers in the foreground, so a mutation lasts as long as its task.
            let output = host.run(ssh::assemble(ssh, request, timeout_ms)?).await?;
            ssh::interpret(ssh, &output)
        }
    }
}

/// Whether this request blocks for the length of a task on this transport.
pub fn blocks_for_task(settings: &TransportSettings, request: &PveRequest) -> bool {
    matches!(settings, TransportSettings::Ssh(_)) && request.verb != Verb::Get
}
