//! The `transport-reachable` check: PVE answers `GET /version` over the configured transport.

use crate::explain::could_not;
use crate::host::Host;
use crate::outcome::Outcome;
use crate::pve::endpoints;
use crate::pve::flex::string_of;
use crate::run::Run;

/// Passes when PVE answered with its version.
pub async fn transport_reachable<H: Host>(run: &Run<'_, H>) -> Outcome {
    let node = run.global.transport.node();
    match run.pve().call_coalesced(&endpoints::version()).await {
        Ok(data) => match data.get("version").and_then(string_of) {
            Some(version) => {
                Outcome::succeeded(Vec::new(), format!("PVE {version} answered on node {node}"))
            }
            None => Outcome::failed(
                Vec::new(),
                format!(
                    "GET /version on node {node} answered {data}, without a version: check that apiUrl (or the ssh host) is a PVE node"
                ),
            ),
        },
        Err(e) => could_not(&format!("reach PVE on node {node} (GET /version)"), &e).into(),
    }
}
