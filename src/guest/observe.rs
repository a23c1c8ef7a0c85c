//! How a located guest is read for a record: its status with its config (`lookup`), or its status
//! with the identity carried from its stored record (an action), and the record of what was read —
//! flagging a VMID that now holds another guest.

use super::identity::{stored_identity, Identity};
use super::locate::Located;
use super::record::{identity_change, GuestRecord};
use super::settle::{status_of, status_request};
use crate::client::shaped;
use crate::host::Host;
use crate::pve::endpoints;
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::responses::{parse, GuestStatus};
use crate::record_json::set;
use crate::run::Run;
use serde_json::{Map, Value};

/// How much a sighting reads of the guest besides its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// Its config too, for its identity (and whatever the method reads from it).
    WithConfig,
    /// Its identity from the stored record while that still describes the guest (see
    /// [`read_guest`]): the state before an action, in one request.
    ToAct,
    /// Its state alone, no identity (a clone's template, whose lock a clone waits out).
    State,
}

/// `, locked (clone): an operation on it has not finished` for a summary; empty without a lock.
pub fn locked_note(lock: Option<&str>) -> String {
    match lock {
        Some(lock) => format!(", locked ({lock}): an operation on it has not finished"),
        None => String::new(),
    }
}

/// Reads a located guest as `look` says: its status, and its identity with when it was read (ISO
/// time) — and, for [`Look::WithConfig`], its config (where that identity is; empty otherwise).
///
/// [`Look::ToAct`] takes the identity by `sync`'s rule: carried from the stored record while that
/// record says the guest is present under the same name — with the time it was read
/// (`identityObservedAt`), never as read now; without that time it is not carried — read from its
/// config when the record says absent or names another guest (the VMID may hold another guest
/// now); none when nothing is stored (nothing to compare with; `lookup` establishes it). So the
/// state before an action is one request in the common case.
///
/// Both looks in one course: one await of each read, not one per look (issue 32).
pub async fn read_guest<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    look: Look,
) -> Result<(GuestStatus, Map<String, Value>, Identity, Option<String>), PveError> {
    let to_act = look == Look::ToAct;
    // The guest's state before an action. Alone on its node, a run reads the guest's own
    // `status/current`. When the node is busy with the process's other runs — a fleet started
    // at once — it reads the node's guest list instead, joining the one list read already
    // waiting to be sent if there is one: one answer admits the whole fleet, where one read each
    // would queue hundreds of requests ahead of the first start (issue 32). A read joined before
    // it was sent was made after this run began, so it is this run's observation. The list has
    // no HA state and no `agent` flag (pve-manager's `PVE/API2/Qemu.pm` vmlist is `vmstatus`
    // without the HA service status `status/current` adds); those fields stay unrecorded until
    // the run's next read. A guest the list does not hold is read on its own.
    // Read from this function's own awaits (no wrapper's state machine, issue 32).
    let status = 'status: {
        let pve = run.pve();
        let list = endpoints::node_guests(&at.node, run.kind);
        if to_act && pve.shared.crowded(pve.settings, &list) {
            let vmid = Some(u64::from(at.vmid));
            let entry = |data: &Value| {
                let guests = data.as_array().map(Vec::as_slice).unwrap_or_default();
                let listed = guests
                    .iter()
                    .find(|g| g.get("vmid").and_then(flex::u64_of) == vmid);
                listed.cloned().unwrap_or(Value::Null)
            };
            if let Ok(listed) = pve.call_coalesced_part(&list, &entry).await {
                if let Some(status) = parse::<GuestStatus>(&listed) {
                    break 'status status;
                }
            }
        }
        let request = status_request(run.kind, at, false);
        let answer = pve.call(&request).await;
        status_of(&request, answer)?
    };
    if look != Look::WithConfig {
        // The state alone takes no identity: as with nothing stored.
        let stored = match to_act {
            true => {
                let stored = run.host.read_record(&run.guest_instance(at.vmid)).await;
                stored.ok().flatten()
            }
            false => None,
        };
        if let Some(carried) = carried_identity(&status, stored.as_ref()) {
            return Ok((status, Map::new(), carried.0, carried.1));
        }
    }
    // An object, or the answer is wrong: a config read as "nothing" would skip the reuse check.
    let request = endpoints::guest_config(&at.node, run.kind, at.vmid);
    let answer = run.pve().call(&request).await;
    let config = shaped(&request, "a guest config", answer)?;
    let identity = Identity::from_config(&config);
    let config = match look {
        Look::WithConfig => config,
        Look::ToAct | Look::State => Map::new(),
    };
    Ok((status, config, identity, Some(run.now_iso())))
}

/// The identity an action takes from the stored record ([`read_guest`]), with when it was read;
/// `None` when the record says absent or names another guest: the config is read then.
fn carried_identity(
    status: &GuestStatus,
    stored: Option<&Value>,
) -> Option<(Identity, Option<String>)> {
    let no_identity = Identity {
        smbios_uuid: None,
        ctime: None,
    };
    match stored {
        // Nothing stored to compare with: `lookup` establishes the identity.
        None => Some((no_identity, None)),
        Some(s) if same_guest(s, status) => Some(match carried_from(s) {
            Some((carried, read_at)) => (carried, Some(read_at)),
            None => (no_identity, None),
        }),
        // Recorded absent, or under another name: the VMID may hold another guest now.
        Some(_) => None,
    }
}

/// Whether a stored record still describes the guest `status` shows: present, under the same name.
/// Otherwise (recorded absent, or under another name) the VMID may hold another guest now: the
/// cheap signal `sync` and an action read the guest's config on.
pub fn same_guest(stored: &Value, status: &GuestStatus) -> bool {
    stored.get("present") == Some(&Value::Bool(true))
        && stored.get("name").and_then(Value::as_str) == status.name.as_deref()
}

/// The identity a stored record holds, with the time it was read (`identityObservedAt`), to carry
/// forward without re-reading it: never asserted as current. None without that time (an older
/// record): nothing would say how old it is.
pub fn carried_from(stored: &Value) -> Option<(Identity, String)> {
    let read_at = stored.get("identityObservedAt").and_then(Value::as_str)?;
    Some((stored_identity(stored)?, read_at.to_string()))
}

/// The record of an observed guest, flagging a reused VMID against the stored record; its identity
/// is taken as read just now (an action's record says when it really was: `Evidence::record_of`).
pub async fn record_for<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    status: &GuestStatus,
    identity: Identity,
) -> GuestRecord {
    // A stored record that cannot be read only loses the reuse check; the observed state stands.
    let stored = run
        .host
        .read_record(&run.guest_instance(at.vmid))
        .await
        .ok()
        .flatten();
    let mut record = GuestRecord::observed(at.vmid, &at.node, status, run.method, run.now_iso());
    judge_identity(run, &mut record, identity, stored.as_ref());
    record
}

/// Sets a record's identity as read just now, flagging a reused VMID against the stored record
/// ([`record_for`]'s, or the one `sync` read with the rest of its node's in one host call).
pub fn judge_identity<H: Host>(
    run: &Run<'_, H>,
    record: &mut GuestRecord,
    identity: Identity,
    stored: Option<&Value>,
) {
    let previous = stored.and_then(stored_identity);
    if let Some(previous) = previous.filter(|p| identity.differs_from(p)) {
        run.warn_args(format_args!(
            "VMID {} now belongs to a different guest than {} recorded (smbios uuid {} → {}): the VMID was reused",
            record.vmid,
            run.guest_instance(record.vmid),
            previous.smbios_uuid.as_deref().unwrap_or("?"),
            identity.smbios_uuid.as_deref().unwrap_or("?")
        ));
        set(
            &mut record.fields,
            "identityChanged",
            identity_change(&previous, &identity),
        );
    }
    record.identity_observed_at = (!identity.is_empty()).then(|| run.now_iso());
    record.identity = identity.recorded();
}
