//! `clone`: succeeds only when the new guest exists with the requested name and the managed `swamp`
//! tag (added and read back when the template lacks it). A VMID that is already taken counts as done
//! only when it holds that very guest (same name and the tag: a re-run); any other occupant fails.
//! Without `vmid`, a free VMID (within `vmidRange`) is claimed by the clone request itself
//! (`guest::vmid_claim`); the summary and the `vm-<vmid>` record say which. A lock on the template
//! (a backup of it) is waited out first: PVE refuses to clone a locked guest.

use crate::args::{is_dns_name, ArgError, Fields, Kind, Read, Spec};
use crate::guest::create_course::{Before, NewDisk, NewGuest};
use crate::guest::placement::Placement;
use crate::guest::readiness::ReadyArgs;
use crate::guest::reference::parse_vmid;
use crate::guest::root_only::Caller;
use crate::guest::vmid_claim::VmidChoice;
use crate::guest::volumes::storage_of;
use crate::host::Host;
use crate::methods::start::create_then_start;
use crate::outcome::Outcome;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::property::storage_volume;
use crate::pve::request::PveRequest;
use crate::quote::push_item;
use crate::run::Run;
use serde_json::{Map, Value};
use std::fmt::Write;
use std::future::Future;

/// The arguments of `clone`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloneArgs {
    pub template_id: u32,
    pub vmid: VmidChoice,
    pub name: String,
    pub full: bool,
    pub storage: Option<String>,
    /// Start the clone and wait until it is usable (`guest::readiness`).
    pub ready: Option<ReadyArgs>,
}

/// The clone's own fields, in the order they are read (after the template and the VMID).
const FIELDS: [Spec; 3] = [
    Spec::new("name", Kind::Line),
    Spec::new("full", Kind::Flag(true)),
    Spec::new("storage", Kind::OptionalLine),
];

impl CloneArgs {
    /// Always inlined into its one caller, [`new_clone`] (issue 32).
    #[inline(always)]
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let template_id = parse_vmid(&fields, "templateId")?;
        let vmid = VmidChoice::parse(&fields)?;
        // Read borrowed by one table walk; copied once every check has passed.
        let mut read = [Read::default(); FIELDS.len()];
        fields.read_all(&FIELDS, &mut read)?;
        let [name, full, storage] = read;
        let ready = ReadyArgs::wait_ready(&fields)?;
        if vmid == VmidChoice::Given(template_id) {
            return Err(ArgError::new("vmid", "must differ from templateId"));
        }
        // PVE's clone `name` is a `dns-name` (a 400 there): refused here first.
        let name = name.text.unwrap_or("");
        if !is_dns_name(name) {
            return Err(ArgError::new(
                "name",
                "must be a DNS name (letters, digits and inner hyphens, labels joined by dots), as PVE requires of a VM name",
            ));
        }
        // qemu-server clone_vm: "parameter 'storage' not allowed for linked clones".
        let full = full.int != 0;
        if !full && storage.text.is_some() {
            return Err(ArgError::new(
                "storage",
                "cannot be given with full: false — PVE puts a linked clone on its template's storage and refuses a target storage; drop storage or clone in full",
            ));
        }
        Ok(CloneArgs {
            template_id,
            vmid,
            name: name.to_string(),
            full,
            storage: storage.owned(),
            ready,
        })
    }
}

impl NewGuest for CloneArgs {
    fn vmid(&self) -> VmidChoice {
        self.vmid
    }

    fn name(&self) -> &str {
        &self.name
    }

    /// Nothing: a clone's options are the template's.
    fn refusal(&self, _caller: Caller) -> Option<String> {
        None
    }

    fn request(&self, node: &str, vmid: u32, _before: &Before) -> PveRequest {
        let storage = self.storage.as_deref();
        endpoints::qemu_clone(node, self.template_id, vmid, &self.name, self.full, storage)
    }

    fn action(&self, _noun: &str, node: &str, vmid: u32, _before: &Before) -> String {
        format!(
            "clone VM {} on node {node} to VMID {vmid}",
            self.template_id
        )
    }

    fn placement(&self) -> Option<Placement<'_>> {
        None
    }

    fn template(&self) -> Option<u32> {
        Some(self.template_id)
    }

    fn task(&self) -> &'static str {
        "clone"
    }

    fn recheck(&self) -> bool {
        false
    }

    /// Nothing beyond the name and the tag (checked by `create_course`).
    fn settings(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// A full clone to `storage` must have every volume there, as PVE writes it
    /// (`<storage>:<vmid>/<volume>` or `<storage>:<volume>`): qemu-server clone_vm copies each
    /// drive — disks, EFI vars, TPM state — to the target storage; a CD-ROM (a cloud-init drive
    /// included) or an empty drive holds no volume to move.
    fn judge_config(&self, label: &str, config: &Map<String, Value>) -> Result<(), String> {
        let Some(storage) = self.storage.as_deref().filter(|_| self.full) else {
            return Ok(());
        };
        // The disks elsewhere, written in place, not listed apart and joined (issue 32).
        let mut elsewhere = String::new();
        for (key, value) in config {
            let Some(value) = value
                .as_str()
                .filter(|_| GuestKind::Qemu.is_volume_key(key))
            else {
                continue;
            };
            if storage_volume(value).is_some_and(|v| storage_of(v) != storage) {
                push_item(&mut elsewhere, "; ", "");
                // Writing to a String cannot fail.
                let _ = write!(elsewhere, "{key} is {value:?}");
            }
        }
        match elsewhere.is_empty() {
            true => Ok(()),
            false => Err(format!(
                "{label} exists, but not every disk is on the requested storage {storage:?}: {elsewhere} — check the clone task's log"
            )),
        }
    }

    fn disks(&self) -> Option<Vec<NewDisk<'_>>> {
        None
    }

    fn start(&self) -> bool {
        false
    }

    fn ready(&self) -> Option<&ReadyArgs> {
        self.ready.as_ref()
    }
}

/// Runs `clone`: the course of `create` (`guest::create_course`) from the template's node.
pub fn clone<'a, H: Host>(
    run: &'a Run<'a, H>,
    args: &Value,
) -> impl Future<Output = Outcome> + use<'a, H> {
    create_then_start(run, new_clone(args))
}

/// `clone`'s new guest, from its arguments. Dispatch's argument check reads them through it too, so
/// the parser has one caller and builds the arguments in their box (issue 32).
pub fn new_clone(args: &Value) -> Result<Box<dyn NewGuest>, ArgError> {
    CloneArgs::parse(args).map(|args| Box::new(args) as Box<dyn NewGuest>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    fn run_clone(host: &ScriptedHost) -> Outcome {
        let args = api_args(json!({"templateId": 9000, "vmid": 300, "name": "web2"}));
        run_method_of(GuestKind::Qemu, host, "clone", &args)
    }

    fn taken_by(host: &ScriptedHost, name: &str, tags: &str) {
        host.on(
            "GET /cluster/nextid",
            [Answer::Error(
                400,
                "Parameter verification failed. (vmid: VM 300 already exists)".into(),
            )],
        );
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 300, "type": "qemu", "node": "pve1", "name": name}]),
        );
        host.data("GET /nodes/pve1/qemu/300/config", json!({}));
        host.data(
            "GET /nodes/pve1/qemu/300/status/current",
            json!({"status": "stopped", "name": name, "tags": tags}),
        );
    }

    #[test]
    fn a_vmid_held_by_the_same_managed_guest_is_done_without_a_clone() {
        let host = ScriptedHost::new();
        taken_by(&host, "web2", "swamp");
        let outcome = run_clone(&host);
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn a_vmid_held_by_another_guest_fails_and_records_it() {
        for (name, tags) in [("db", "swamp"), ("web2", "web")] {
            let host = ScriptedHost::new();
            taken_by(&host, name, tags);
            let outcome = run_clone(&host);
            let Verdict::Failed { message } = &outcome.verdict else {
                panic!("{outcome:?}")
            };
            assert!(
                message.starts_with("VMID 300 is in use by another guest"),
                "{message}"
            );
            assert_eq!(outcome.writes[0].data["name"], name);
        }
    }

    const CLONE_UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmclone:9000:root@pam!t:";

    const TEMPLATE_STATUS: &str = "GET /nodes/pve1/qemu/9000/status/current";

    fn template_status(lock: Option<&str>) -> Answer {
        let mut status = json!({"status": "stopped", "name": "tmpl", "template": 1});
        if let Some(lock) = lock {
            status["lock"] = json!(lock);
        }
        Answer::Data(status)
    }

    /// The template on pve1, and a clone task that ends OK; the clone at 301 is `web2`.
    /// `template_locks` are the template's locks as its successive status reads show them (the last
    /// one repeats).
    fn free_claim_fixture(host: &ScriptedHost, next_id: &str, template_locks: &[Option<&str>]) {
        clone_fixture(host, next_id, template_locks, json!({}));
    }

    /// [`free_claim_fixture`] with the config PVE wrote for the clone.
    fn clone_fixture(
        host: &ScriptedHost,
        next_id: &str,
        template_locks: &[Option<&str>],
        config: Value,
    ) {
        host.data("GET /cluster/nextid", json!(next_id));
        host.on(
            TEMPLATE_STATUS,
            template_locks.iter().map(|lock| template_status(*lock)),
        );
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 9000, "type": "qemu", "node": "pve1", "name": "tmpl"},
                   {"vmid": 301, "type": "qemu", "node": "pve1", "name": "web2"}]),
        );
        host.data(
            &format!("GET /nodes/pve1/tasks/{CLONE_UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host.data("GET /nodes/pve1/qemu/301/config", config);
        host.data(
            "GET /nodes/pve1/qemu/301/status/current",
            json!({"status": "stopped", "name": "web2", "tags": "swamp"}),
        );
    }

    fn run_free_clone(host: &ScriptedHost) -> Outcome {
        let args = api_args(json!({"templateId": 9000, "name": "web2"}));
        run_method_of(GuestKind::Qemu, host, "clone", &args)
    }

    #[test]
    fn a_template_absent_or_unreadable_fails_before_anything_is_sent() {
        let absent = "Configuration file 'nodes/pve1/qemu-server/9000.conf' does not exist";
        let denied = "Permission check failed (/vms/9000, VM.Audit)";
        let status = TEMPLATE_STATUS.to_string();
        let looked_up = vec![
            status.clone(),
            "GET /cluster/resources".into(),
            "GET /cluster/nextid".into(),
        ];
        for (answer, wanted, routes) in [
            (
                Answer::Error(500, absent.into()),
                "template 9000 does not exist on any node: check templateId",
                looked_up,
            ),
            (
                Answer::Error(403, denied.into()),
                "could not read the state of VM 9000 on node pve1: Permission check failed (/vms/9000, VM.Audit) (HTTP 403) — the API token lacks the privilege named in PVE's message",
                vec![status.clone()],
            ),
        ] {
            let host = ScriptedHost::new();
            // nextid echoes the template's VMID: no guest holds it (the absence confirmed).
            host.data("GET /cluster/nextid", json!("9000"));
            host.on(TEMPLATE_STATUS, [answer]);
            host.data("GET /cluster/resources", json!([]));
            let outcome = run_free_clone(&host);
            let message = crate::testing::failure_of(&outcome);
            assert_eq!(message, wanted);
            assert!(outcome.writes.is_empty(), "{outcome:?}");
            assert_eq!(host.routes_called(), routes);
        }
    }

    #[test]
    fn without_vmid_an_id_taken_after_nextid_is_skipped_and_the_next_one_claimed() {
        let host = ScriptedHost::new();
        free_claim_fixture(&host, "300", &[None]);
        host.on(
            "POST /nodes/pve1/qemu/9000/clone",
            [
                Answer::Error(
                    500,
                    "unable to create VM 300: config file already exists".into(),
                ),
                Answer::Data(json!(CLONE_UPID)),
            ],
        );
        let outcome = run_free_clone(&host);
        assert!(outcome.is_success(), "{outcome:?}");
        let Verdict::Succeeded { summary, .. } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            summary.starts_with("claimed the free VMID 301"),
            "{summary}"
        );
        assert_eq!(outcome.writes[0].instance, "vm-301");
        let posts = host
            .routes_called()
            .iter()
            .filter(|r| r.starts_with("POST"))
            .count();
        assert_eq!(posts, 2);
    }

    #[test]
    fn a_claim_that_keeps_losing_fails_after_a_bounded_number_of_tries() {
        let host = ScriptedHost::new();
        free_claim_fixture(&host, "300", &[None]);
        host.on(
            "POST /nodes/pve1/qemu/9000/clone",
            [Answer::Error(
                500,
                "unable to create VM 300: config file already exists".into(),
            )],
        );
        let outcome = run_free_clone(&host);
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.starts_with("no VMID could be claimed: 16 were each taken"),
            "{message}"
        );
        assert!(
            outcome.writes.is_empty(),
            "nothing of another run's guests is recorded"
        );
    }

    #[test]
    fn a_range_above_every_free_id_fails_without_a_clone() {
        let host = ScriptedHost::new();
        free_claim_fixture(&host, "600", &[None]);
        let args = api_args(
            json!({"templateId": 9000, "name": "web2", "vmidRange": {"min": 300, "max": 309}}),
        );
        let outcome = run_method_of(GuestKind::Qemu, &host, "clone", &args);
        let message = crate::testing::failure_of(&outcome);
        assert!(
            message.starts_with("no free VMID in vmidRange 300–309"),
            "{message}"
        );
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn a_template_lock_that_clears_inside_the_budget_is_waited_out_then_the_clone_is_sent() {
        let host = ScriptedHost::new();
        free_claim_fixture(&host, "301", &[Some("backup"), Some("backup"), None]);
        host.data("POST /nodes/pve1/qemu/9000/clone", json!(CLONE_UPID));
        let outcome = run_free_clone(&host);
        assert!(outcome.is_success(), "{outcome:?}");
        // Read locked, then polled until a read shows it unlocked; only then the clone.
        let routes = host.routes_called();
        let clone_at = routes.iter().position(|r| r.starts_with("POST"));
        let template_reads: Vec<usize> = (0..routes.len())
            .filter(|&i| routes[i] == TEMPLATE_STATUS)
            .collect();
        assert_eq!(template_reads.len(), 3, "{routes:?}");
        assert!(
            template_reads.iter().all(|&i| Some(i) < clone_at),
            "{routes:?}"
        );
    }

    #[test]
    fn a_template_lock_that_outlasts_the_budget_fails_naming_it_before_any_clone() {
        let host = ScriptedHost::new();
        free_claim_fixture(&host, "301", &[Some("backup")]);
        let args = api_args(json!({"templateId": 9000, "name": "web2", "taskTimeoutSec": 1}));
        let outcome = run_method_of(GuestKind::Qemu, &host, "clone", &args);
        let message = crate::testing::failure_of(&outcome);
        assert!(
            message.contains("template VM 9000 on node pve1 did not show its lock released")
                && message.contains("VM is locked (backup)")
                && message.contains("qm unlock"),
            "{message}"
        );
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn same_vmid_and_template_is_refused() {
        let e = CloneArgs::parse(&json!({"templateId": 300, "vmid": 300, "name": "x"}));
        assert_eq!(e.unwrap_err().field, "vmid");
    }

    #[test]
    fn a_name_that_is_not_a_dns_name_is_refused() {
        for name in ["web_01", "-web", "a..b", "grüße"] {
            let e = CloneArgs::parse(&json!({"templateId": 9000, "vmid": 300, "name": name}));
            assert_eq!(e.unwrap_err().field, "name", "{name}");
        }
        assert!(
            CloneArgs::parse(&json!({"templateId": 9000, "vmid": 300, "name": "web-1.lab"}))
                .is_ok()
        );
    }

    #[test]
    fn a_linked_clone_with_a_storage_is_refused_before_any_request() {
        let args = json!({"templateId": 9000, "vmid": 300, "name": "x", "full": false, "storage": "local-lvm"});
        assert_eq!(CloneArgs::parse(&args).unwrap_err().field, "storage");
        let full = json!({"templateId": 9000, "vmid": 300, "name": "x", "storage": "local-lvm"});
        assert!(CloneArgs::parse(&full).is_ok());
    }

    /// A full clone of template 9000 to storage `local` (dir) at 301, whose config PVE wrote as
    /// `config`.
    fn clone_to_local(config: Value) -> Outcome {
        let host = ScriptedHost::new();
        clone_fixture(&host, "301", &[None], config);
        host.data("POST /nodes/pve1/qemu/9000/clone", json!(CLONE_UPID));
        let args = api_args(json!({"templateId": 9000, "name": "web2", "storage": "local"}));
        run_method_of(GuestKind::Qemu, &host, "clone", &args)
    }

    #[test]
    fn a_full_clone_to_a_storage_has_every_volume_there_as_pve_names_it() {
        let outcome = clone_to_local(json!({
            "scsi0": "local:301/vm-301-disk-0.qcow2,iothread=1,size=8G",
            "efidisk0": "local:301/vm-301-disk-1.raw,efitype=4m,size=528K",
            "ide2": "local:301/vm-301-cloudinit.qcow2,media=cdrom",
            "ide0": "none,media=cdrom"
        }));
        assert!(outcome.is_success(), "{outcome:?}");
    }

    #[test]
    fn a_full_clone_with_a_volume_left_elsewhere_fails_naming_it() {
        let outcome = clone_to_local(json!({
            "scsi0": "local:301/vm-301-disk-0.qcow2,size=8G",
            "efidisk0": "local-lvm:vm-301-disk-1,efitype=4m,size=4M",
            "scsi1": "localbackup:vm-301-disk-2,size=1G"
        }));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.contains("not every disk is on the requested storage \"local\": efidisk0 is \"local-lvm:vm-301-disk-1,efitype=4m,size=4M\"; scsi1 is \"localbackup:vm-301-disk-2,size=1G\""),
            "{message}"
        );
    }
}
