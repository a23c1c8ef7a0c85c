//! `listBackups`: records the backup archives of this model's guests that a storage lists (one
//! guest's with `vmid`) — volid, size, ctime, notes, protected, verification state — as
//! `<vm|ct>-<vmid>-backups`, or `backups-<node>-<storage>` for all of them.

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::guest::backups::{backups_write, list_archives};
use crate::guest::reference::VMID;
use crate::host::Host;
use crate::methods::node_status::{NodeArgs, NODE};
use crate::outcome::{Failure, Outcome};
use crate::run::Run;
use serde_json::Value;

/// The fields of `listBackups`, in the order they are checked.
const FIELDS: [Spec; 3] = [VMID, Spec::new("storage", Kind::Segment), NODE];

/// The arguments of `listBackups`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListBackupsArgs {
    pub storage: String,
    pub vmid: Option<u32>,
    pub node: NodeArgs,
}

impl ListBackupsArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let [vmid, storage, node, ..] = Fields::of(args, "")?.read_table(&FIELDS)?;
        Ok(ListBackupsArgs {
            storage: storage.owned_or(""),
            vmid: vmid.count().map(|vmid| vmid as u32),
            node: NodeArgs { node: node.owned() },
        })
    }
}

/// Runs `listBackups`.
pub async fn list_backups<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match ListBackupsArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let node = args.node.node(run);
    match list_archives(run, &node, &args.storage, args.vmid).await {
        Ok(archives) => {
            let whose = match args.vmid {
                Some(vmid) => format!("{} {vmid}", run.kind.noun()),
                None => format!("{}s", run.kind.noun()),
            };
            let summary = format!(
                "storage {} on node {node} holds {} backup(s) of {whose}",
                args.storage,
                archives.len()
            );
            let record = backups_write(run, &node, &args.storage, args.vmid, &archives);
            Outcome::succeeded(vec![record], summary)
        }
        Err(message) => Failure::new(message).into(),
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::json;

    #[test]
    fn each_archive_of_the_model_kind_is_recorded() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/storage/local/content",
            json!([
                {"volid": "local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma.zst", "vmid": 120, "subtype": "qemu",
                 "size": 4096, "ctime": 20, "notes": "n", "protected": 1},
                {"volid": "local:backup/vzdump-lxc-400-2026_12_01-10_00_00.tar.zst", "vmid": 400, "subtype": "lxc", "size": 10, "ctime": 10},
                {"volid": "local:backup/vzdump-qemu-121-2026_12_01-09_00_00.vma", "vmid": 121, "subtype": "qemu", "size": 5, "ctime": 5}
            ]),
        );
        let outcome = run_method(&host, "qemu", "listBackups", json!({"storage": "local"}));
        assert!(outcome.is_success(), "{outcome:?}");
        let record = &outcome.writes[0];
        assert_eq!(record.instance, "backups-pve1-local");
        let listed = record.data["backups"].as_array().unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0]["vmid"], 121, "oldest first");
        assert_eq!(listed[1]["protected"], true);
        assert_eq!(listed[1]["notes"], "n");
    }

    #[test]
    fn one_guests_backups_are_its_record_and_an_unreadable_storage_fails_writing_nothing() {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve1/storage/local/content", json!([]));
        let outcome = run_method(
            &host,
            "lxc",
            "listBackups",
            json!({"storage": "local", "vmid": 400}),
        );
        assert_eq!(outcome.writes[0].instance, "ct-400-backups");
        // The whole record: what the storage listed and where, and what the run adds.
        let mut data = outcome.writes[0].data.clone();
        let at = data.as_object_mut().and_then(|d| d.remove("recordedAt"));
        assert!(at.is_some_and(|at| at.is_string()));
        let want = json!({"node": "pve1", "storage": "local", "vmid": 400, "backups": [],
                          "lastOperation": "listBackups"});
        assert_eq!(data, want);
        let host = ScriptedHost::new();
        host.on(
            "GET /nodes/pve1/storage/nfs/content",
            [Answer::Error(500, "storage 'nfs' is not online".into())],
        );
        let outcome = run_method(&host, "qemu", "listBackups", json!({"storage": "nfs"}));
        assert!(failure_of(&outcome).contains("is not online"));
        assert!(outcome.writes.is_empty());
    }
}
