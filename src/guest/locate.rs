//! Finding the node a guest lives on — or confirming that it does not exist anywhere.
//!
//! `/cluster/resources` maps every guest the token may audit to its node. Absence from it is not proof
//! of absence (PVE leaves out what the token may not see), so absence is confirmed with
//! `/cluster/nextid?vmid=N`, which answers "VM N already exists" for any user.

use super::reference::GuestRef;
use crate::client::Pve;
use crate::explain::could_not;
use crate::host::Host;
use crate::outcome::Failure;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex;
use crate::pve::responses::ClusterGuest;
use crate::run::Run;

/// A guest that exists, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub vmid: u32,
    pub node: String,
}

/// What the cluster says about a guest reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Present(Located),
    /// Confirmed absent on every node.
    Absent {
        vmid: u32,
    },
}

/// What reading a guest where it lives gave.
pub enum GuestRead<T> {
    /// Confirmed absent on every node.
    Absent { vmid: u32 },
    /// Found on `at`, and read.
    Read { at: Located, value: T },
}

/// Finds the guest, then reads it on its node with `read`. A guest that migrated between the
/// cluster listing and the read answers "does not exist" there: it is looked up once more. `what`
/// names the read in errors ("the state", "the config").
pub async fn read_where_it_lives<H: Host, T>(
    run: &Run<'_, H>,
    target: &GuestRef,
    what: &str,
    read: impl AsyncFn(&Located) -> Result<T, PveError>,
) -> Result<GuestRead<T>, Failure> {
    let pve = run.pve();
    for attempt in 0..2 {
        let at = match locate(&pve, run.kind, target).await? {
            Found::Absent { vmid } => return Ok(GuestRead::Absent { vmid }),
            Found::Present(at) => at,
        };
        match read(&at).await {
            Ok(value) => return Ok(GuestRead::Read { at, value }),
            Err(e) if e.kind == ErrorKind::GuestNotOnNode && attempt == 0 => continue,
            Err(e) => {
                let noun = run.kind.noun();
                let action = format!("read {what} of {noun} {} on node {}", at.vmid, at.node);
                return Err(could_not(&action, &e));
            }
        }
    }
    Err(Failure::new(format!(
        "{} {} moved between nodes twice while being read; try again",
        run.kind.noun(),
        target.describe()
    )))
}

/// Finds the guest's node, or confirms its absence; anything in between is a failure.
pub async fn locate<H: Host>(
    pve: &Pve<'_, H>,
    kind: GuestKind,
    target: &GuestRef,
) -> Result<Found, Failure> {
    let guests: Vec<ClusterGuest> = pve
        .read(&endpoints::cluster_guests(), "a list of guests")
        .await
        .map_err(|e| {
            let action = format!(
                "list the cluster's guests to find {} {} (GET /cluster/resources)",
                kind.noun(),
                target.describe()
            );
            could_not(&action, &e)
        })?;
    match (target.vmid, &target.name) {
        (Some(vmid), name) => by_vmid(pve, kind, &guests, vmid, name.as_deref()).await,
        (None, Some(name)) => by_name(kind, &guests, name),
        (None, None) => Err(Failure::new("Provide vmid or vmName")),
    }
}

async fn by_vmid<H: Host>(
    pve: &Pve<'_, H>,
    kind: GuestKind,
    guests: &[ClusterGuest],
    vmid: u32,
    name: Option<&str>,
) -> Result<Found, Failure> {
    let Some(guest) = guests.iter().find(|g| g.vmid == Some(u64::from(vmid))) else {
        return confirm_absent(pve, vmid).await;
    };
    if guest.kind != kind.segment() {
        return Err(Failure::new(format!(
            "VMID {vmid} is a {} guest on node {}, not a {}: use the @stateless/proxmox/{} model for it",
            guest.kind,
            guest.node,
            kind.segment(),
            guest.kind
        )));
    }
    if let Some(wanted) = name {
        if guest.name.as_deref() != Some(wanted) {
            return Err(Failure::new(format!(
                "VMID {vmid} is named {:?}, not {wanted:?}: vmid and vmName point at different guests",
                guest.name.as_deref().unwrap_or("")
            )));
        }
    }
    Ok(Found::Present(Located {
        vmid,
        node: guest.node.clone(),
    }))
}

fn by_name(kind: GuestKind, guests: &[ClusterGuest], name: &str) -> Result<Found, Failure> {
    let matches: Vec<&ClusterGuest> = guests
        .iter()
        .filter(|g| g.kind == kind.segment() && g.name.as_deref() == Some(name))
        .collect();
    match matches.as_slice() {
        [] => Err(Failure::new(format!(
            "no {} named {name:?} is visible in /cluster/resources (a guest the token may not audit is left out; give vmid to be sure)",
            kind.noun()
        ))),
        [one] => match one.vmid {
            Some(vmid) if vmid <= u64::from(u32::MAX) => Ok(Found::Present(Located { vmid: vmid as u32, node: one.node.clone() })),
            _ => Err(Failure::new(format!("the {} named {name:?} has no usable vmid in /cluster/resources", kind.noun()))),
        },
        many => {
            let ids: Vec<String> = many.iter().filter_map(|g| g.vmid).map(|v| v.to_string()).collect();
            Err(Failure::new(format!("{} name {name:?} is ambiguous (vmids {})", kind.noun(), ids.join(", "))))
        }
    }
}

/// `GET /cluster/nextid?vmid=N`: `Ok` when no guest holds N — PVE then echoes N back; any other
/// answer is unreadable, never "free" (absence is claimed only on PVE's word). A taken id is
/// `Err` of kind [`ErrorKind::IdTaken`].
pub async fn next_id_free<H: Host>(pve: &Pve<'_, H>, vmid: u32) -> Result<(), PveError> {
    let request = endpoints::next_id(vmid);
    let data = pve.call(&request).await?;
    match flex::u64_of(&data) == Some(u64::from(vmid)) {
        true => Ok(()),
        false => Err(PveError::malformed(format!(
            "{} answered {data} where VMID {vmid} was expected back",
            request.label()
        ))),
    }
}

async fn confirm_absent<H: Host>(pve: &Pve<'_, H>, vmid: u32) -> Result<Found, Failure> {
    match next_id_free(pve, vmid).await {
        Ok(_) => Ok(Found::Absent { vmid }),
        Err(e) if e.kind == ErrorKind::IdTaken => Err(Failure::new(format!(
            "VMID {vmid} exists but this token cannot see it: /cluster/resources leaves it out — grant VM.Audit on /vms/{vmid}"
        ))),
        Err(e) => Err(could_not(&format!("confirm whether VMID {vmid} exists (GET /cluster/nextid)"), &e)),
    }
}
