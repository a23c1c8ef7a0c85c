//! Which VMID a new guest gets — qemu `clone` and lxc `create` alike.
//!
//! With `vmid` the caller chose it (a taken one counts only as a re-run of the same request, see
//! `create_course`). Without it, a free one is claimed: `GET /cluster/nextid` proposes the
//! lowest free id, but reserves nothing (two runs are told the same id), so the creating request
//! itself is the atomic claim — PVE writes the new config file before it forks the task and refuses
//! a second request for the same id ("unable to create VM n: config file already exists",
//! qemu-server PVE/API2/Qemu.pm `clone_vm`; "CT n already exists on node …", pve-container's
//! create_vm through `PVE::Cluster::check_vmid_unused`). On that refusal the next id is tried, a
//! bounded number of times. A guest another run claimed is never looked at, let alone counted: the
//! VMID is ours only once PVE accepted OUR request for it.

use super::evidence::TaskTrail;
use super::reference::{VMID_MAX, VMID_MIN};
use crate::args::{ArgError, Fields};
use crate::client::shaped;
use crate::explain::could_not;
use crate::host::Host;
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex;
use crate::pve::request::PveRequest;
use crate::pve::responses::ClusterGuest;
use crate::run::Run;
use serde_json::Value;

/// How many ids a free claim tries before it gives up (each refusal means another run won one).
pub const CLAIM_ATTEMPTS: u32 = 16;

/// The VMID a new guest is to get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmidChoice {
    /// The caller's `vmid`.
    Given(u32),
    /// The lowest free id within `min..=max` (`vmidRange`; default PVE's whole range).
    Free { min: u32, max: u32 },
}

impl VmidChoice {
    /// Reads `vmid` or `vmidRange {min, max}` (not both); neither means any free id.
    pub fn parse(fields: &Fields) -> Result<Self, ArgError> {
        // An optional VMID, read once: the same checks and words as a required one.
        let given = fields.optional_count_in("vmid", VMID_MIN, VMID_MAX)?;
        let range = match fields.present("vmidRange")? {
            Some(_) => {
                let range = fields.object("vmidRange")?;
                let min = range.int_in("min", VMID_MIN, VMID_MAX)? as u32;
                let max = range.int_in("max", VMID_MIN, VMID_MAX)? as u32;
                if min > max {
                    return Err(ArgError::new(
                        "vmidRange.max",
                        "must be at least vmidRange.min",
                    ));
                }
                Some((min, max))
            }
            None => None,
        };
        match (given, range) {
            (Some(_), Some(_)) => Err(ArgError::new(
                "vmidRange",
                "give either vmid or vmidRange, not both",
            )),
            (Some(vmid), None) => Ok(VmidChoice::Given(vmid as u32)),
            (None, Some((min, max))) => Ok(VmidChoice::Free { min, max }),
            (None, None) => Ok(VmidChoice::Free {
                min: VMID_MIN as u32,
                max: VMID_MAX as u32,
            }),
        }
    }

    /// The VMID as messages name it before it is known.
    pub fn describe(&self) -> String {
        match self {
            VmidChoice::Given(vmid) => vmid.to_string(),
            VmidChoice::Free { min, max } => format!("(a free one in {min}–{max})"),
        }
    }
}

/// The VMID a new guest gets, decided request by request: the create course sends each request
/// [`Claim::next`] plans (or, for the candidate, its creating request) from its own await and
/// hands the answer to [`Claim::heard`], then follows the task of the request PVE accepted (plain
/// steps: each await point costs the course room, docs/performance.md). A given VMID is sent as it is (PVE's refusal is the failure:
/// `create_course` judged a taken one before); a free one in `min..=max` is claimed: nextid
/// proposes the lowest free id of the whole cluster; a range above it starts past the ids the
/// listing shows in use (the token may not see all: PVE's refusal still decides).
pub struct Claim {
    phase: Phase,
    min: u32,
    max: u32,
    /// A free VMID is being claimed (not a given one).
    claiming: bool,
    proposed: u32,
    listed: Vec<u32>,
    /// The VMID the creating request is (or was last) sent for.
    pub candidate: u32,
    taken: Vec<u32>,
}

impl Claim {
    // Always inlined into its one caller, the create course: its fields written where the course
    // keeps the claim, not built apart and copied there (issue 32).
    #[inline(always)]
    pub fn new(choice: VmidChoice) -> Claim {
        let (min, max, claiming) = match choice {
            VmidChoice::Given(vmid) => (vmid, vmid, false),
            VmidChoice::Free { min, max } => (min, max, true),
        };
        Claim {
            // A given VMID is the proposal itself: nothing is read.
            phase: if claiming {
                Phase::Proposal
            } else {
                Phase::Claim
            },
            min,
            max,
            claiming,
            proposed: min,
            listed: Vec::new(),
            candidate: min,
            taken: Vec::new(),
        }
    }

    /// The next request: nextid or the listing (`Ok(Some)`), or (`Ok(None)`) the creating request
    /// for [`Claim::candidate`], which the course builds and notes as a mutation itself; `Err`
    /// when no VMID is left to try.
    pub fn next(&self) -> Result<Option<PveRequest>, String> {
        let (min, max, taken) = (self.min, self.max, &self.taken);
        Ok(Some(match self.phase {
            Phase::Proposal => endpoints::next_free_id(),
            Phase::Listing => endpoints::cluster_guests(),
            Phase::Claim => {
                if taken.len() >= CLAIM_ATTEMPTS as usize {
                    return Err(format!(
                        "no VMID could be claimed: {} were each taken by another guest between /cluster/nextid and the request ({}) — many creates at once? run again, or give vmidRange with more room",
                        taken.len(),
                        list(taken)
                    ));
                }
                if self.candidate > max {
                    return Err(exhausted(min, max, self.proposed, taken));
                }
                return Ok(None);
            }
        }))
    }

    /// The answer to `request` ([`Claim::next`]'s, or the creating request): `Some` the creating
    /// request's answer for the course to judge (PVE accepted it, or refused it for another reason
    /// than another guest holding the id); `None` when another request is to be sent (`trail`
    /// forgets a creating request PVE refused because the id was taken: nothing was changed).
    pub fn heard<H: Host>(
        &mut self,
        run: &Run<'_, H>,
        trail: &mut TaskTrail,
        request: &PveRequest,
        answer: Result<Value, PveError>,
    ) -> Result<Option<Result<Value, PveError>>, String> {
        self.phase = match self.phase {
            Phase::Proposal => {
                self.proposed = lowest_free(request, answer)?;
                match self.proposed >= self.min {
                    true => Phase::Claim,
                    false => Phase::Listing,
                }
            }
            Phase::Listing => {
                self.listed = listed_ids(request, answer)?;
                Phase::Claim
            }
            Phase::Claim => {
                let candidate = self.candidate;
                return match answer {
                    // PVE refused it because another guest holds the id: nothing was changed.
                    Err(e) if self.claiming && e.kind == ErrorKind::IdTaken => {
                        trail.mutations_sent -= 1;
                        run.info_args(format_args!(
                            "VMID {candidate} was claimed by another guest after /cluster/nextid proposed it ({}); trying {}",
                            e.message,
                            candidate + 1
                        ));
                        self.taken.push(candidate);
                        self.candidate = skip_listed(&self.listed, candidate + 1);
                        Ok(None)
                    }
                    answer => Ok(Some(answer)),
                };
            }
        };
        if self.phase == Phase::Claim {
            self.candidate = skip_listed(&self.listed, self.proposed.max(self.min));
        }
        Ok(None)
    }
}

/// What a [`Claim`] sends next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `GET /cluster/nextid`.
    Proposal,
    /// `GET /cluster/resources`, the VMIDs in use.
    Listing,
    /// The creating request for the candidate.
    Claim,
}

/// `id`, or the first id above it that the listing does not show in use.
// A plain walk: slice::contains compares integers in chunks of 16, a larger loop (issue 32).
#[allow(clippy::manual_contains)]
fn skip_listed(listed: &[u32], mut id: u32) -> u32 {
    while listed.iter().any(|&l| l == id) {
        id += 1;
    }
    id
}

/// `GET /cluster/nextid`'s answer: the lowest free VMID (PVE's proposal, not a reservation).
fn lowest_free(request: &PveRequest, answer: Result<Value, PveError>) -> Result<u32, String> {
    let data = answer.map_err(|e| could_not("find a free VMID (GET /cluster/nextid)", &e).0)?;
    match flex::u64_of(&data) {
        Some(id) if (VMID_MIN as u64..=VMID_MAX as u64).contains(&id) => Ok(id as u32),
        _ => Err(format!(
            "could not find a free VMID: {} answered {data} where a VMID was expected",
            request.label(),
            data = crate::quote::json(&data)
        )),
    }
}

/// The VMIDs `/cluster/resources` shows in use, from its answer.
fn listed_ids(request: &PveRequest, answer: Result<Value, PveError>) -> Result<Vec<u32>, String> {
    let guests: Vec<ClusterGuest> = shaped(request, "a list of guests", answer)
        .map_err(|e| could_not("list the VMIDs in use (GET /cluster/resources)", &e).0)?;
    let mut ids = Vec::with_capacity(guests.len());
    for guest in &guests {
        ids.extend(guest.vmid.and_then(|id| u32::try_from(id).ok()));
    }
    Ok(ids)
}

fn exhausted(min: u32, max: u32, proposed: u32, taken: &[u32]) -> String {
    match taken.is_empty() {
        true => format!(
            "no free VMID in vmidRange {min}–{max}: every id in it is in use (/cluster/nextid proposed {proposed}, the lowest free id of the cluster) — widen vmidRange or free a VMID in it"
        ),
        false => format!(
            "no free VMID left in vmidRange {min}–{max}: {} were taken by other guests while this run tried them — widen vmidRange",
            list(taken)
        ),
    }
}

fn list(ids: &[u32]) -> String {
    let mut list = String::new();
    for id in ids {
        crate::quote::push_item(&mut list, ", ", &id.to_string());
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<VmidChoice, ArgError> {
        VmidChoice::parse(&Fields::of(&v, "").unwrap())
    }

    #[test]
    fn no_vmid_means_any_free_one() {
        assert_eq!(
            parse(json!({})).unwrap(),
            VmidChoice::Free {
                min: 100,
                max: 999_999_999
            }
        );
    }

    #[test]
    fn a_range_bounds_the_claim() {
        let choice = parse(json!({"vmidRange": {"min": 500, "max": 509}})).unwrap();
        assert_eq!(choice, VmidChoice::Free { min: 500, max: 509 });
    }

    #[test]
    fn a_reversed_range_names_max() {
        let e = parse(json!({"vmidRange": {"min": 509, "max": 500}})).unwrap_err();
        assert_eq!(e.field, "vmidRange.max");
    }

    #[test]
    fn vmid_and_range_together_are_refused() {
        let e = parse(json!({"vmid": 500, "vmidRange": {"min": 500, "max": 509}})).unwrap_err();
        assert_eq!(e.field, "vmidRange");
    }

    #[test]
    fn range_bounds_are_vmids() {
        let e = parse(json!({"vmidRange": {"min": 99, "max": 509}})).unwrap_err();
        assert_eq!(e.field, "vmidRange.min");
        let e = parse(json!({"vmidRange": {"min": 100}})).unwrap_err();
        assert_eq!(e.field, "vmidRange.max");
    }
}
