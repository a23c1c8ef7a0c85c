//! `deleteBackup`: removes one backup archive and succeeds only when the storage no longer lists
//! it. A protected archive is refused before anything is sent, as PVE refuses it (pve-storage
//! PVE/Storage/Plugin.pm `free_image`: "cannot remove protected volume '<volname>' on '<storage>'",
//! inside the `imgdel` task). An archive the storage does not list is already gone: success, with
//! the list as observed.

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::guest::backups::{backups_write, describe_all, list_archives, other_kind};
use crate::guest::backups::{Archive, BackupVolid};
use crate::guest::evidence::TaskTrail;
use crate::host::Host;
use crate::methods::node_status::{NodeArgs, NODE};
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::run::Run;
use serde_json::Value;

/// The arguments of `deleteBackup`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteBackupArgs {
    pub volid: BackupVolid,
    pub node: NodeArgs,
}

/// The fields of `deleteBackup`, in the order they are checked.
const FIELDS: [Spec; 2] = [
    Spec::new("volid", Kind::RequiredText).rule(BackupVolid::fault),
    NODE,
];

impl DeleteBackupArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let [volid, node, ..] = Fields::of(args, "")?.read_table(&FIELDS)?;
        Ok(DeleteBackupArgs {
            volid: BackupVolid::of(volid.text.unwrap_or_default()),
            node: NodeArgs { node: node.owned() },
        })
    }
}

/// Runs `deleteBackup`.
pub async fn delete_backup<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match DeleteBackupArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let volid = &args.volid;
    let noun = run.kind.noun();
    let rest = format_args!(", not of a {noun}: delete it with that model");
    if let Some(refusal) = other_kind(volid, run.kind, rest) {
        return Failure::new(refusal).into();
    }
    let node = args.node.node(run);
    let storage = &volid.storage;
    let before = match list_archives(run, &node, storage, volid.vmid).await {
        Ok(list) => list,
        Err(message) => return Failure::new(message).into(),
    };
    // The writes of a listing: its record alone (one copy of the list's making, issue 32).
    let record = |list: &[Archive]| vec![backups_write(run, &node, storage, volid.vmid, list)];
    let Some(archive) = before.iter().find(|a| a.volid == volid.volid) else {
        let summary = format!(
            "storage {storage} on node {node} does not list {}: there is nothing to delete",
            volid.volid
        );
        return Outcome::succeeded(record(&before), summary);
    };
    if archive.protected {
        let volname = volid.volid.split_once(':').map_or("", |(_, name)| name);
        let message = format!(
            "cannot remove protected volume '{volname}' on '{storage}' (PVE's refusal) — remove its protection first (PUT /nodes/{node}/storage/{storage}/content/{} with protected=0); nothing was changed",
            volid.volid
        );
        return Outcome::failed(record(&before), message);
    }
    let mut trail = TaskTrail::default();
    let request = endpoints::storage_volume_delete(&node, storage, &volid.volid);
    // Once PVE accepted the delete (or may have: a lost answer), the listing before it is no longer
    // an observation of now: a failure from then on writes no record.
    let stale = |trail: &TaskTrail| match trail.last_task.is_some() || trail.outcome_unknown {
        true => Vec::new(),
        false => record(&before),
    };
    if let Err(message) = trail
        .run(
            &run.pve(),
            &request,
            format_args!("delete backup {} on node {node}", volid.volid),
            None,
            false,
        )
        .await
    {
        return Outcome::failed(stale(&trail), message);
    }
    let after = match list_archives(run, &node, storage, volid.vmid).await {
        Ok(list) => list,
        Err(message) => return Outcome::failed(stale(&trail), message),
    };
    let writes = record(&after);
    match after.iter().any(|a| a.volid == volid.volid) {
        true => Outcome::failed(
            writes,
            format!(
                "the delete task ended successfully, but storage {storage} on node {node} still lists {} (its backups: {}) — check the imgdel task's log",
                volid.volid,
                describe_all(&after)
            ),
        ),
        false => Outcome::succeeded(
            writes,
            format!("backup {} is gone from storage {storage} on node {node}", volid.volid),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::json;

    const VOLID: &str = "local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma.zst";
    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:imgdel:120@local:root@pam!t:";

    fn entry(protected: bool) -> Value {
        json!({"volid": VOLID, "vmid": 120, "subtype": "qemu", "size": 10, "protected": if protected {1} else {0}})
    }

    fn delete(host: &ScriptedHost) -> Outcome {
        run_method(host, "qemu", "deleteBackup", json!({"volid": VOLID}))
    }

    /// The storage lists `listings` in turn; the delete answers a task that ends OK.
    fn deleted(host: &ScriptedHost, listings: Vec<Value>) {
        let content = "GET /nodes/pve1/storage/local/content";
        host.on(content, listings.into_iter().map(Answer::Data));
        host.data(
            &format!("DELETE /nodes/pve1/storage/local/content/{VOLID}"),
            json!(UPID),
        );
        let ended = json!({"status": "stopped", "exitstatus": "OK"});
        host.data(&format!("GET /nodes/pve1/tasks/{UPID}/status"), ended);
    }

    #[test]
    fn an_archive_no_longer_listed_after_the_task_is_deleted() {
        let host = ScriptedHost::new();
        deleted(&host, vec![json!([entry(false)]), json!([])]);
        let outcome = delete(&host);
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].instance, "vm-120-backups");
        assert_eq!(outcome.writes[0].data["backups"], json!([]));
    }

    #[test]
    fn a_task_ok_that_leaves_the_archive_fails() {
        let host = ScriptedHost::new();
        deleted(&host, vec![json!([entry(false)])]);
        assert!(failure_of(&delete(&host)).contains("still lists"));
    }

    #[test]
    fn a_protected_archive_is_refused_in_pves_words_before_anything_is_sent() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/storage/local/content",
            json!([entry(true)]),
        );
        let outcome = delete(&host);
        let message = failure_of(&outcome);
        assert!(
            message.starts_with("cannot remove protected volume 'backup/vzdump-qemu-120-2026_12_01-10_00_00.vma.zst' on 'local'"),
            "{message}"
        );
        assert!(!host.routes_called().iter().any(|r| r.starts_with("DELETE")));
    }

    #[test]
    fn an_archive_not_listed_is_already_gone_and_another_kinds_is_refused() {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve1/storage/local/content", json!([]));
        assert!(delete(&host).is_success());
        let outcome = run_method(&host, "lxc", "deleteBackup", json!({"volid": VOLID}));
        assert!(failure_of(&outcome).contains("is a backup of a VM"));
    }
}
