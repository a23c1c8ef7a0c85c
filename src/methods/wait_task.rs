//! `waitTask`: waits for a PVE task someone else started (a backup job, a replication, another
//! tool's start) to end — named by its UPID, or the one task a filter finds in its node's task list
//! (type, guest, started at or after a time). Succeeds when the task ended `OK` or `WARNINGS: n`;
//! a task that failed fails the method with its exit status and its log's last lines. The task is
//! followed like every method's own (`task::follow_task`: the shared per-node watcher, the one
//! budget `taskTimeoutSec`). Recorded as `task-<node>-<pid>-<starttime>`, before the verdict.

use super::node_status::{NodeArgs, NODE};
use crate::args::{check_segment, segment_fault, ArgError, Fields, Kind, Spec};
use crate::client::shaped;
use crate::clock::iso_time;
use crate::explain::could_not_args;
use crate::guest::reference::VMID;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::upid::Upid;
use crate::record_json::{list, put, set};
use crate::run::{write_value, Run};
use crate::task::{follow_task, TaskEnd, TaskTrouble};
use crate::watch::node_tasks::{listed_upid, ListedTask};
use serde_json::{Map, Value};

/// The fields of `waitTask`, in the order they are checked.
const FIELDS: [Spec; 5] = [
    NODE,
    Spec::new("type", Kind::Text).rule(segment_fault),
    VMID,
    Spec::new("startedAfter", Kind::CountIn(0, u32::MAX)),
    Spec::new("upid", Kind::Text).rule(upid_fault),
];

fn upid_fault(text: &str) -> Option<&'static str> {
    upid_arg(text).is_none().then_some("must be a PVE task id, UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>: (printable ASCII, the node a name of letters, digits, ., _ and -, the start time at most FFFFFFFF)")
}

/// The arguments of `waitTask`: a UPID, or a filter of a node's task list (PVE applies it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitTaskArgs {
    /// A UPID as `upid_arg` accepts it (kept as text: the run parses it again).
    pub upid: Option<String>,
    /// The node whose task list the filter reads (default: the transport's node).
    pub on: NodeArgs,
    pub task_type: Option<String>,
    pub vmid: Option<u32>,
    /// Unix seconds: tasks started at or after it (PVE's `since`).
    pub started_after: Option<u64>,
}

impl WaitTaskArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let [node, task_type, vmid, started_after, upid, ..] =
            Fields::of(args, "")?.read_table(&FIELDS)?;
        let on = NodeArgs { node: node.owned() };
        let (task_type, upid) = (task_type.text, upid.text);
        let vmid = vmid.count().map(|vmid| vmid as u32);
        let started_after = started_after.count();
        let filtered = task_type.is_some() || vmid.is_some() || started_after.is_some();
        // A UPID alone, or a filter (a node alone filters nothing).
        if upid.is_some() == (filtered || on.node.is_some()) || upid.is_none() && !filtered {
            return Err(ArgError::new(
                "upid",
                "give either upid or a filter: type, vmid and/or startedAfter (on node)",
            ));
        }
        Ok(WaitTaskArgs {
            upid: upid.map(str::to_string),
            on,
            task_type: task_type.map(str::to_string),
            vmid,
            started_after,
        })
    }
}

/// A UPID as an argument: PVE's form, in printable ASCII, started by 2106 (`%08X` seconds), on a
/// node whose name fits a path.
fn upid_arg(text: &str) -> Option<Upid> {
    Upid::parse(text).filter(|upid| {
        upid.as_str() == text
            && text.bytes().all(|b| b.is_ascii_graphic())
            && upid.starttime <= u32::MAX.into()
            && check_segment("upid", &upid.node).is_ok()
    })
}

/// The `task-<node>-<pid>-<starttime>` record: the task (its UPID names its node and user), and
/// Runs `waitTask`.
pub async fn wait_task<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match WaitTaskArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let pve = run.pve();
    // A `upid` argument parses (WaitTaskArgs::parse checked it with the same Upid::parse).
    let upid = match args.upid.as_deref().and_then(Upid::parse) {
        Some(upid) => upid,
        None => {
            let node = args.on.node(run);
            let request = endpoints::task_list(
                &node,
                args.task_type.as_deref(),
                args.vmid,
                args.started_after,
            );
            // Sent and shaped apart (`client::shaped`): no boxed reader of its own (issue 32).
            let answer = pve.call(&request).await;
            let listed = shaped::<Vec<ListedTask>>(&request, "a task list", answer);
            let found = listed
                .map_err(|e| could_not_args(format_args!("list the tasks of node {node}"), &e).0)
                .and_then(|rows| the_one(&node, &rows));
            match found {
                Ok(upid) => upid,
                Err(why) => return Failure::new(why).into(),
            }
        }
    };
    let ended = follow_task(&pve, &upid).await;
    verdict(run, upid, ended)
}

/// The one task the list shows; none or several is a failure naming what was listed.
fn the_one(node: &str, rows: &[ListedTask]) -> Result<Upid, String> {
    let mut found = rows.iter().filter_map(listed_upid);
    let (first, second) = (found.next(), found.next());
    let listed = match (&first, &second) {
        (Some(one), None) => return Ok(one.clone()),
        // pve-manager `PVE/API2/Tasks.pm` node_tasks leaves out, silently, the tasks the caller
        // does not own unless it holds Sys.Audit on the node.
        (None, _) => format!(
            "none (tasks started by other users are listed only with Sys.Audit on /nodes/{node})"
        ),
        (Some(one), Some(two)) => format!("{one}, {two}, …"),
    };
    Err(format!(
        "waitTask waits for exactly one task, and the tasks of node {node} that match the filter are: {listed} — give the upid, or narrow the filter (type, vmid, startedAfter)"
    ))
}

/// The `task-<node>-<pid>-<starttime>` record of how the task ended, written before the verdict:
/// built as JSON (record_json.rs), no struct with a serializer of its own (issue 32).
fn verdict<H: Host>(run: &Run<'_, H>, upid: Upid, ended: Result<TaskEnd, TaskTrouble>) -> Outcome {
    let instance = format!("task-{}", upid.key());
    let mut record = Map::new();
    put(&mut record, "upid", Some(upid.as_str()));
    put(&mut record, "type", Some(&upid.task_type));
    // The task's subject: a VMID, a storage, … (empty for some tasks, then left out).
    put(
        &mut record,
        "id",
        Some(upid.id.as_str()).filter(|id| !id.is_empty()),
    );
    let started_at = iso_time(upid.starttime as f64 * 1000.0);
    set(&mut record, "startedAt", Value::from(started_at));
    put(&mut record, "lastOperation", Some(run.method));
    set(&mut record, "recordedAt", Value::from(run.now_iso()));
    // Whether its end was observed in this run; how it ended; the file output (spec `taskLog`)
    // holding its log when it did not end plainly `OK`, or a failed task's last log lines (at
    // most 10, 2 KB, as the failure message quotes them) when no file holds it.
    let (ended, exit_status, error) = match ended {
        Ok(end) => {
            list(&mut record, "warnings", &end.warnings);
            put(&mut record, "logFile", end.log_file.as_deref());
            (true, Some(end.exit_status), None)
        }
        Err(TaskTrouble::Failed(failed)) => {
            // Where its log is ([`crate::task::TaskFailed::log_ref`]): the file, else the log's tail.
            put(&mut record, "logFile", failed.log_file.as_deref());
            if failed.log_file.is_none() {
                list(&mut record, "logTail", &failed.tail);
            }
            (true, Some(failed.exit_status), Some(failed.failure.0))
        }
        Err(TaskTrouble::Unknown(why)) => (false, None, Some(why.0)),
    };
    set(&mut record, "ended", Value::Bool(ended));
    put(&mut record, "exitStatus", exit_status.as_deref());
    put(&mut record, "error", error.as_deref());
    let writes = vec![write_value("task", instance, Value::Object(record))];
    match error {
        Some(message) => Outcome::failed(writes, message),
        None => {
            let exit_status = exit_status.unwrap_or_default();
            let summary = format!(
                "task {} {} ended {exit_status}",
                upid.task_type,
                upid.as_str()
            );
            Outcome::succeeded(writes, summary)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve2:0000AAAA:0000BBBB:6571E3A1:vzdump:100:backup@pam:";

    fn status_route(upid: &str) -> String {
        format!("GET /nodes/pve2/tasks/{upid}/status")
    }

    fn wait(host: &ScriptedHost, args: Value) -> Outcome {
        let mut args = args;
        args["taskTimeoutSec"] = json!(30);
        run_method(host, "qemu", "waitTask", args)
    }

    fn record(outcome: &Outcome) -> &Value {
        assert_eq!(outcome.writes[0].spec, "task");
        assert_eq!(outcome.writes[0].instance, "task-pve2-0000AAAA-6571E3A1");
        &outcome.writes[0].data
    }

    #[test]
    fn a_task_by_its_upid_succeeds_when_it_ends_ok_and_is_recorded() {
        let host = ScriptedHost::new();
        host.on(
            &status_route(UPID),
            [
                Answer::Data(json!({"status": "running"})),
                Answer::Data(json!({"status": "stopped", "exitstatus": "OK"})),
            ],
        );
        let outcome = wait(&host, json!({"upid": UPID}));
        assert_eq!(summary_of(&outcome), format!("task vzdump {UPID} ended OK"));
        let record = record(&outcome);
        assert_eq!(record["ended"], true);
        assert_eq!(record["exitStatus"], "OK");
        assert_eq!(record["type"], "vzdump");
        assert_eq!(record["id"], "100");
        assert_eq!(record["startedAt"], "2023-12-07T15:24:17.000Z");
        assert!(record.get("logTail").is_none());
    }

    #[test]
    fn warnings_succeed_and_are_recorded() {
        let host = ScriptedHost::new();
        host.data(
            &status_route(UPID),
            json!({"status": "stopped", "exitstatus": "WARNINGS: 1"}),
        );
        host.data(
            &format!("GET /nodes/pve2/tasks/{UPID}/log"),
            json!([{"n": 1, "t": "WARN: guest agent not running"}, {"n": 2, "t": "TASK WARNINGS: 1"}]),
        );
        let outcome = wait(&host, json!({"upid": UPID}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(
            record(&outcome)["warnings"],
            json!(["WARN: guest agent not running"])
        );
    }

    #[test]
    fn a_failed_task_fails_with_its_exit_status_and_log_tail_in_the_message_and_the_record() {
        let host = ScriptedHost::new();
        host.data(
            &status_route(UPID),
            json!({"status": "stopped", "exitstatus": "job errors"}),
        );
        let log: Vec<Value> = (1..=40)
            .map(|n| json!({"n": n, "t": format!("INFO: step {n}")}))
            .chain([json!({"n": 41, "t": "ERROR: token SECRET-in-tests rejected by storage"})])
            .collect();
        host.data(&format!("GET /nodes/pve2/tasks/{UPID}/log"), json!(log));
        let outcome = wait(&host, json!({"upid": UPID}));
        let message = failure_of(&outcome).to_string();
        assert!(message.contains("failed: job errors"), "{message}");
        assert!(message.contains("INFO: step 32 | "), "{message}");
        assert!(!message.contains("step 31 "), "{message}");
        assert!(!message.contains("SECRET-in-tests"), "{message}");
        let record = record(&outcome);
        assert_eq!(record["exitStatus"], "job errors");
        let tail = record["logTail"].as_array().unwrap();
        assert_eq!(tail.len(), 10);
        assert_eq!(tail[0], "INFO: step 32");
        let last = tail[9].as_str().unwrap();
        assert!(last.starts_with("ERROR: token ") && !last.contains("SECRET-in-tests"));
        assert_eq!(record["error"].as_str(), Some(message.as_str()));
    }

    #[test]
    fn a_failed_task_record_points_to_its_log_file_which_holds_the_whole_log_scrubbed() {
        let mut host = ScriptedHost::new();
        host.files = Some(Default::default());
        host.data(
            &status_route(UPID),
            json!({"status": "stopped", "exitstatus": "job errors"}),
        );
        let log: Vec<Value> = (1..=40)
            .map(|n| json!({"n": n, "t": format!("INFO: step {n}")}))
            .chain([json!({"n": 41, "t": "ERROR: token SECRET-in-tests rejected by storage"})])
            .collect();
        host.data(&format!("GET /nodes/pve2/tasks/{UPID}/log"), json!(log));
        let outcome = wait(&host, json!({"upid": UPID}));
        assert!(failure_of(&outcome).contains("INFO: step 32 | "));
        let record = record(&outcome);
        assert_eq!(record["logFile"], "tasklog-pve2-0000AAAA-6571E3A1");
        assert!(record.get("logTail").is_none(), "the file holds it");
        let files = host.files.as_ref().unwrap().borrow();
        let [(spec, name, text)] = files.as_slice() else {
            panic!("{files:?}")
        };
        assert_eq!(
            (spec.as_str(), name.as_str()),
            ("taskLog", "tasklog-pve2-0000AAAA-6571E3A1")
        );
        assert!(text.starts_with("INFO: step 1\nINFO: step 2\n"), "{text}");
        assert!(
            text.ends_with("ERROR: token *** rejected by storage\n"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 41);
    }

    #[test]
    fn a_task_still_running_at_the_budget_is_recorded_as_not_ended() {
        let host = ScriptedHost::new();
        host.data(&status_route(UPID), json!({"status": "running"}));
        let outcome = wait(&host, json!({"upid": UPID}));
        assert!(failure_of(&outcome).contains("still running after taskTimeoutSec=30s"));
        assert_eq!(record(&outcome)["ended"], false);
        assert!(record(&outcome).get("exitStatus").is_none());
    }

    fn listing(host: &ScriptedHost, rows: Value) {
        host.data("GET /nodes/pve2/tasks", rows);
    }

    #[test]
    fn a_filter_is_pves_and_the_one_task_it_lists_is_followed() {
        let host = ScriptedHost::new();
        listing(&host, json!([{"upid": UPID, "status": "RUNNING"}]));
        host.data(
            &status_route(UPID),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let since = 0x6571_E3A0_u64;
        let args = json!({"node": "pve2", "type": "vzdump", "vmid": 100, "startedAfter": since});
        let outcome = wait(&host, args);
        assert!(outcome.is_success(), "{outcome:?}");
        let url = &host.requests.borrow()[0].url;
        assert!(
            url.contains("typefilter=vzdump")
                && url.contains("vmid=100")
                && url.contains(&format!("since={since}"))
                && url.contains("source=all"),
            "{url}"
        );
        assert_eq!(record(&outcome)["upid"], UPID);
    }

    #[test]
    fn a_filter_that_finds_no_task_or_several_fails_without_a_record() {
        let host = ScriptedHost::new();
        listing(&host, json!([]));
        let outcome = wait(&host, json!({"node": "pve2", "type": "vzdump"}));
        assert!(
            failure_of(&outcome).contains("the tasks of node pve2 that match the filter are: none")
        );
        assert!(outcome.writes.is_empty());

        let host = ScriptedHost::new();
        let second = "UPID:pve2:0000AAA1:0000BBB1:6571E3A2:vzdump:100:root@pam:";
        listing(&host, json!([{"upid": UPID}, {"upid": second}]));
        let outcome = wait(&host, json!({"node": "pve2", "vmid": 100}));
        let message = failure_of(&outcome);
        assert!(
            message.contains(&format!("are: {UPID}, {second}, …")),
            "{message}"
        );
        assert!(message.contains("give the upid"), "{message}");
        assert!(outcome.writes.is_empty());
    }

    #[test]
    fn a_filter_that_finds_no_task_says_other_users_tasks_are_listed_only_with_sys_audit() {
        let host = ScriptedHost::new();
        listing(&host, json!([]));
        let outcome = wait(&host, json!({"node": "pve2", "vmid": 100}));
        let message = failure_of(&outcome);
        assert!(
            message.contains(
                "none (tasks started by other users are listed only with Sys.Audit on /nodes/pve2)"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_filter_reads_the_transports_node_by_default() {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve1/tasks", json!([]));
        let outcome = wait(&host, json!({"type": "vzdump"}));
        assert!(failure_of(&outcome).contains("node pve1"));
    }

    fn rule(args: Value) -> String {
        WaitTaskArgs::parse(&args).unwrap_err().to_string()
    }

    #[test]
    fn a_upid_or_a_filter_is_needed_and_not_both() {
        for both_or_neither in [
            json!({}),
            json!({"node": "pve1"}),
            json!({"upid": UPID, "vmid": 100}),
            json!({"upid": UPID, "node": "pve2"}),
        ] {
            assert!(rule(both_or_neither).contains("give either upid or a filter"));
        }
        assert!(WaitTaskArgs::parse(&json!({"upid": UPID})).is_ok());
    }

    #[test]
    fn a_upid_must_be_one_on_a_node_whose_name_fits_a_path() {
        for bad in [
            "UPID:pve2:1:2:3:vzdump:100:root@pam",
            " UPID:pve2:1:2:3:vzdump:100:root@pam:",
            "UPID:../x:1:2:3:vzdump:100:root@pam:",
            "UPID:pve2:1:2:3:vz dump:100:root@pam:",
            "UPID:pve2:1:2:100000000:vzdump:100:root@pam:",
        ] {
            assert!(
                rule(json!({"upid": bad})).contains("`upid`: must be a PVE task id"),
                "{bad}"
            );
        }
        assert!(rule(json!({"type": "vz dump"})).contains("`type`"));
        assert!(rule(json!({"vmid": 99})).contains("`vmid`"));
        assert!(rule(json!({"startedAfter": -1})).contains("`startedAfter`"));
    }
}
