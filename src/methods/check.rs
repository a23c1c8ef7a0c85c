//! The `transport-reachable` check: PVE answers `GET /version` over the configured transport.

use crate::explain::could_not_args;
use crate::host::Host;
use crate::outcome::Outcome;
use crate::pve::endpoints;
use crate::pve::flex::string_of;
use crate::run::Run;

/// Passes when PVE answered with its version.
pub async fn transport_reachable<H: Host>(run: &Run<'_, H>) -> Outcome {
    let node = run.global.transport.node();
    match pve_version(run).await {
        Ok(version) => {
            Outcome::succeeded(Vec::new(), format!("PVE {version} answered on node {node}"))
        }
        Err(message) => Outcome::failed(Vec::new(), message),
    }
}

/// PVE's version (`GET /version`), one read shared with the runs of the process that ask it at
/// once (swamp's checks before a fleet's runs); `Err` says what answered instead.
pub async fn pve_version<H: Host>(run: &Run<'_, H>) -> Result<String, String> {
    let node = run.global.transport.node();
    match run.pve().call_coalesced(&endpoints::version()).await {
        Ok(data) => data.get("version").and_then(string_of).ok_or_else(|| {
            format!(
                "GET /version on node {node} answered {}, without a version: check that apiUrl (or the ssh host) is a PVE node",
                crate::quote::value(&data)
            )
        }),
        Err(e) => Err(could_not_args(format_args!("reach PVE on node {node} (GET /version)"), &e).0),
    }
}
