//! Turning a [`PveRequest`] into an effect and its answer back into data, over either transport.
//!
//! After assembly both transports are identical to the rest of the core: a call yields PVE's `data`
//! or a classified [`PveError`].

pub mod api;
pub mod pvesh_output;
pub mod ssh;

use crate::global_args::TransportSettings;
use crate::host::{Host, HostError, HttpResponse, ProcessOutput};
use crate::pve::error::PveError;
use crate::pve::request::{PveRequest, Verb};
use crate::scrub::Scrubber;
use serde_json::Value;

/// Sends one request over the configured transport and interprets the answer. Whatever came back
/// is scrubbed of the run's secrets before anything reads it: the strings of PVE's data, and the
/// text an error quotes (scrubbed whole before it is cut, so no cut can leave part of a secret).
pub async fn send<H: Host>(
    host: &H,
    settings: &TransportSettings,
    request: &PveRequest,
    timeout_ms: u64,
    scrub: &Scrubber,
) -> Result<Value, PveError> {
    let mut answer = match settings {
        TransportSettings::Api(api) => {
            let response = match host.http(api::assemble(api, request, timeout_ms)).await {
                Ok(response) => response,
                Err(e) => return Err(host_failed(e, scrub)),
            };
            api::interpret(&response).map_err(|raw| {
                let clean = HttpResponse {
                    status: response.status,
                    status_text: scrub.text(&response.status_text),
                    body: scrub.text(&response.body),
                };
                api::interpret(&clean)
                    .err()
                    .unwrap_or_else(|| scrubbed(raw, scrub))
            })
        }
        TransportSettings::Ssh(ssh) => {
            // pvesh runs task workers in the foreground, so a mutation lasts as long as its task.
            let output = match host.run(ssh::assemble(ssh, request, timeout_ms)?).await {
                Ok(output) => output,
                Err(e) => return Err(host_failed(e, scrub)),
            };
            ssh::interpret(ssh, &output).map_err(|raw| {
                let clean = ProcessOutput {
                    code: output.code,
                    stdout: scrub.text(&output.stdout),
                    stderr: scrub.text(&output.stderr),
                    stdout_bytes: output.stdout_bytes,
                    stderr_bytes: output.stderr_bytes,
                };
                ssh::interpret(ssh, &clean)
                    .err()
                    .unwrap_or_else(|| scrubbed(raw, scrub))
            })
        }
    };
    // Scrubbed where it lies, not moved through a closure and back (issue 32).
    if let Ok(data) = &mut answer {
        scrub.value(data);
    }
    answer
}

fn scrubbed(mut error: PveError, scrub: &Scrubber) -> PveError {
    error.message = scrub.text(&error.message);
    error
}

/// A host's failure as the run's error, scrubbed: one copy of the conversion for both transports.
fn host_failed(mut error: HostError, scrub: &Scrubber) -> PveError {
    error.message = crate::quote::bounded(&scrub.text(&error.message));
    error.into()
}

/// Whether this request blocks for the length of a task on this transport.
pub fn blocks_for_task(settings: &TransportSettings, request: &PveRequest) -> bool {
    matches!(settings, TransportSettings::Ssh(_)) && request.verb != Verb::Get
}
