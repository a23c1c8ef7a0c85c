//! No lock is a result (issue 31), method by method, with the scripted host: a guest whose task
//! ended OK but whose state still shows `lock: <x>` is not done yet. Every method that creates or
//! changes a guest waits such a lock out within its one budget (`taskTimeoutSec`, 5 s here) and
//! succeeds once it clears; when it outlasts the budget the method fails naming it, and its record
//! shows it.

use crate::dispatch::run_method;
use crate::outcome::Outcome;
use crate::testing::{api_args, block_on, failure_of, Answer, ScriptedHost};
use serde_json::{json, Value};

/// One method run against a guest whose state, after the task, keeps a lock.
struct Case {
    model: &'static str,
    method: &'static str,
    args: Value,
    /// The guest's `status/current` route.
    status: String,
    /// What it answers before the task ended (the sighting, a wait before the request), in order.
    before: Vec<Value>,
    /// What it answers after the task: the effect, but for the lock.
    after: Value,
    lock: &'static str,
    /// The guest's record instance.
    instance: &'static str,
}

impl Case {
    /// Runs the method with the lock held for good, or gone from the second read after the task.
    fn run(&self, script: &dyn Fn(&ScriptedHost), clears: bool) -> (Outcome, ScriptedHost) {
        let host = ScriptedHost::new();
        let mut locked = self.after.clone();
        locked["lock"] = json!(self.lock);
        let mut answers: Vec<Value> = self.before.clone();
        answers.push(locked);
        if clears {
            answers.push(self.after.clone());
        }
        host.on(&self.status, answers.into_iter().map(Answer::Data));
        script(&host);
        let mut args = api_args(json!({"taskTimeoutSec": 5}));
        for (k, v) in self.args.as_object().into_iter().flatten() {
            args[k] = v.clone();
        }
        let outcome = block_on(run_method(&host, self.model, self.method, &args));
        (outcome, host)
    }

    fn record<'a>(&self, outcome: &'a Outcome) -> &'a Value {
        &outcome
            .writes
            .iter()
            .find(|w| w.instance == self.instance)
            .unwrap_or_else(|| panic!("{}: no {} record: {outcome:?}", self.method, self.instance))
            .data
    }

    /// The rule, both ways: a lock that stays fails the method at the budget naming it (its record
    /// shows it); one that clears within the budget is waited out, and the method succeeds with a
    /// record free of it.
    fn lock_is_not_a_result(self, script: impl Fn(&ScriptedHost)) {
        let (held, host) = self.run(&script, false);
        let message = failure_of(&held);
        let named = format!("still locked: {}", self.lock);
        assert!(message.contains(&named), "{}: {message}", self.method);
        assert!(
            message.contains("check "),
            "{}: says what to check: {message}",
            self.method
        );
        assert_eq!(self.record(&held)["lock"], self.lock, "{}", self.method);
        // The wait's last read goes out one read's time before its end (poll.rs `ANSWER_MS`).
        assert!(
            host.elapsed_ms() >= 5_000.0 - crate::poll::ANSWER_MS,
            "{}: gave up before the budget, at {} ms",
            self.method,
            host.elapsed_ms()
        );
        let (cleared, host) = self.run(&script, true);
        assert!(
            cleared.is_success(),
            "{}: {cleared:?}\n{:?}",
            self.method,
            host.routes_called()
        );
        assert_eq!(self.record(&cleared).get("lock"), None, "{}", self.method);
    }
}

/// A task of `upid` that ended OK.
fn task_ok(host: &ScriptedHost, node: &str, upid: &str) {
    host.data(
        &format!("GET /nodes/{node}/tasks/{upid}/status"),
        json!({"status": "stopped", "exitstatus": "OK"}),
    );
}

fn upid(kind: &str, vmid: u32) -> String {
    format!("UPID:pve1:0000AAAA:0000BBBB:6571E3A1:{kind}:{vmid}:root@pam!t:")
}

/// VM (or CT) `vmid` on pve1, as the cluster lists it, with its config.
fn listed(host: &ScriptedHost, kind: &str, vmid: u32, config: Value) {
    host.data(
        "GET /cluster/resources",
        json!([{"vmid": vmid, "type": kind, "node": "pve1"}]),
    );
    host.data(&format!("GET /nodes/pve1/{kind}/{vmid}/config"), config);
}

fn status_of(kind: &str, vmid: u32) -> String {
    format!("GET /nodes/pve1/{kind}/{vmid}/status/current")
}

/// A new guest of `kind` made by `POST path` on pve1 (storages `local` with a container template
/// and `local-lvm` for disks): the VMID free, the request's task OK, and it listed.
fn created(host: &ScriptedHost, kind: &str, vmid: u32, post: &str, task: &str, config: Value) {
    host.data(
        "GET /nodes/pve1/storage",
        json!([{"storage": "local", "content": "vztmpl", "enabled": 1, "active": 1},
               {"storage": "local-lvm", "content": "images,rootdir", "enabled": 1, "active": 1,
                "avail": 100u64 << 30}]),
    );
    host.data(
        "GET /nodes/pve1/storage/local/content",
        json!([{"volid": CT_TEMPLATE}]),
    );
    host.data("GET /cluster/nextid", json!(vmid.to_string()));
    host.data(post, json!(upid(task, vmid)));
    task_ok(host, "pve1", &upid(task, vmid));
    listed(host, kind, vmid, config);
}

#[test]
fn qemu_create_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    let vm = json!({"status": "stopped", "name": "web-vm", "tags": "swamp"});
    Case {
        model: "qemu",
        method: "create",
        args: json!({"vmid": 500, "name": "web-vm"}),
        status: status_of("qemu", 500),
        before: vec![],
        after: vm,
        lock: "create",
        instance: "vm-500",
    }
    .lock_is_not_a_result(|host| {
        let config = json!({"name": "web-vm", "tags": "swamp"});
        created(
            host,
            "qemu",
            500,
            "POST /nodes/pve1/qemu",
            "qmcreate",
            config,
        );
    });
}

const CT_TEMPLATE: &str = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst";

#[test]
fn lxc_create_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    Case {
        model: "lxc",
        method: "create",
        args: json!({"vmid": 400, "ostemplate": CT_TEMPLATE, "hostname": "web-ct",
                     "storage": "local-lvm"}),
        status: status_of("lxc", 400),
        before: vec![],
        after: json!({"status": "stopped", "name": "web-ct", "tags": "swamp"}),
        lock: "create",
        instance: "ct-400",
    }
    .lock_is_not_a_result(|host| {
        let config = json!({"hostname": "web-ct", "tags": "swamp",
                            "rootfs": "local-lvm:vm-400-disk-0,size=8G", "unprivileged": 1});
        created(host, "lxc", 400, "POST /nodes/pve1/lxc", "vzcreate", config);
    });
}

#[test]
fn clone_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    Case {
        model: "qemu",
        method: "clone",
        args: json!({"templateId": 9000, "vmid": 300, "name": "web2"}),
        status: status_of("qemu", 300),
        before: vec![],
        after: json!({"status": "stopped", "name": "web2", "tags": "swamp"}),
        lock: "clone",
        instance: "vm-300",
    }
    .lock_is_not_a_result(|host| {
        host.data(
            &status_of("qemu", 9000),
            json!({"status": "stopped", "template": 1}),
        );
        let config = json!({"name": "web2", "tags": "swamp"});
        let post = "POST /nodes/pve1/qemu/9000/clone";
        created(host, "qemu", 300, post, "qmclone", config);
    });
}

#[test]
fn restore_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    const ARCHIVE: &str = "local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma.zst";
    Case {
        model: "qemu",
        method: "restore",
        args: json!({"archive": ARCHIVE, "vmid": 130}),
        status: status_of("qemu", 130),
        before: vec![],
        after: json!({"status": "stopped", "name": "web", "tags": "swamp"}),
        lock: "create",
        instance: "vm-130",
    }
    .lock_is_not_a_result(|host| {
        host.data(
            "GET /nodes/pve1/storage/local/content",
            json!([{"volid": ARCHIVE, "vmid": 120, "subtype": "qemu", "size": 4096}]),
        );
        host.data(
            "GET /nodes/pve1/vzdump/extractconfig",
            json!("cores: 2\nname: web\ntags: swamp\n"),
        );
        let config = json!({"cores": 2, "name": "web", "tags": "swamp"});
        created(
            host,
            "qemu",
            130,
            "POST /nodes/pve1/qemu",
            "qmrestore",
            config,
        );
    });
}

/// VM 100 on pve1, stopped or running, as the sighting before a change reads it.
fn vm_100(status: &str) -> Value {
    json!({"status": status, "qmpstatus": status, "tags": "swamp", "pid": 10, "uptime": 500})
}

/// VM 100 listed on pve1, its `task` of `POST path` ending OK.
fn acted_on(host: &ScriptedHost, post: &str, task: &str) {
    listed(host, "qemu", 100, json!({"smbios1": "uuid=u-1"}));
    host.data(post, json!(upid(task, 100)));
    task_ok(host, "pve1", &upid(task, 100));
}

/// A change of VM 100 (`before`: its state when sighted; `after`: once the change is done).
fn change(
    method: &'static str,
    args: Value,
    before: &str,
    after: Value,
    lock: &'static str,
) -> Case {
    let mut all = json!({"vmid": 100});
    for (k, v) in args.as_object().into_iter().flatten() {
        all[k] = v.clone();
    }
    Case {
        model: "qemu",
        method,
        args: all,
        status: status_of("qemu", 100),
        before: vec![vm_100(before)],
        after,
        lock,
        instance: "vm-100",
    }
}

#[test]
fn migrate_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    let mut case = change(
        "migrate",
        json!({"targetNode": "pve2"}),
        "stopped",
        vm_100("stopped"),
        "migrate",
    );
    // The sighting reads pve1; after the move the target node answers.
    case.status = "GET /nodes/pve2/qemu/100/status/current".into();
    case.before = vec![];
    case.lock_is_not_a_result(|host| {
        host.data(&status_of("qemu", 100), vm_100("stopped"));
        host.data(
            "GET /nodes/pve1/qemu/100/migrate",
            json!({"running": 0, "allowed_nodes": ["pve2"], "local_disks": [], "local_resources": []}),
        );
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve2"}]),
        );
        let post = "POST /nodes/pve1/qemu/100/migrate";
        host.data(post, json!(upid("qmigrate", 100)));
        task_ok(host, "pve1", &upid("qmigrate", 100));
    });
}

#[test]
fn convert_to_template_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    let mut after = vm_100("stopped");
    after["template"] = json!(1);
    change("convertToTemplate", json!({}), "stopped", after, "backup").lock_is_not_a_result(
        |host| {
            acted_on(host, "POST /nodes/pve1/qemu/100/template", "qmtemplate");
            host.data(
                "GET /nodes/pve1/qemu",
                json!([{"vmid": 100, "template": 1}]),
            );
            host.data("GET /nodes/pve1/qemu/100/config", json!({"template": 1}));
        },
    );
}

/// VM 100's snapshot list before and after a change.
fn snapshots(host: &ScriptedHost, before: Value, after: Value) {
    host.on(
        "GET /nodes/pve1/qemu/100/snapshot",
        [Answer::Data(before), Answer::Data(after)],
    );
}

/// A chain of snapshots, each the parent of the next, the guest descending from the last.
fn tree(names: &[&str]) -> Value {
    let mut list = vec![];
    let mut parent: Option<&str> = None;
    for name in names.iter().chain(["current"].iter()) {
        list.push(json!({"name": name, "parent": parent, "snaptime": 10, "description": ""}));
        parent = Some(name);
    }
    Value::Array(list)
}

#[test]
fn snapshot_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    change(
        "snapshot",
        json!({"name": "s1"}),
        "stopped",
        vm_100("stopped"),
        "snapshot",
    )
    .lock_is_not_a_result(|host| {
        acted_on(host, "POST /nodes/pve1/qemu/100/snapshot", "qmsnapshot");
        snapshots(host, tree(&["base"]), tree(&["base", "s1"]));
    });
}

#[test]
fn rollback_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    change(
        "rollback",
        json!({"name": "base"}),
        "stopped",
        vm_100("stopped"),
        "rollback",
    )
    .lock_is_not_a_result(|host| {
        acted_on(
            host,
            "POST /nodes/pve1/qemu/100/snapshot/base/rollback",
            "qmrollback",
        );
        snapshots(host, tree(&["base"]), tree(&["base"]));
    });
}

#[test]
fn delete_snapshot_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    change(
        "deleteSnapshot",
        json!({"name": "s1"}),
        "stopped",
        vm_100("stopped"),
        "snapshot-delete",
    )
    .lock_is_not_a_result(|host| {
        acted_on(
            host,
            "DELETE /nodes/pve1/qemu/100/snapshot/s1",
            "qmdelsnapshot",
        );
        snapshots(host, tree(&["base", "s1"]), tree(&["base"]));
    });
}

#[test]
fn resize_disk_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    change(
        "resizeDisk",
        json!({"disk": "scsi0", "size": "+1G"}),
        "stopped",
        vm_100("stopped"),
        "backup",
    )
    .lock_is_not_a_result(|host| {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.on(
            "GET /nodes/pve1/qemu/100/config",
            [
                Answer::Data(json!({"scsi0": "local-lvm:vm-100-disk-0,size=8G"})),
                Answer::Data(json!({"scsi0": "local-lvm:vm-100-disk-0,size=8G"})),
                Answer::Data(json!({"scsi0": "local-lvm:vm-100-disk-0,size=9G"})),
            ],
        );
        host.data(
            "PUT /nodes/pve1/qemu/100/resize",
            json!(upid("resize", 100)),
        );
        task_ok(host, "pve1", &upid("resize", 100));
    });
}

#[test]
fn backup_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    const ARCHIVE: &str = "local:backup/vzdump-qemu-100-2026_12_01-10_00_00.vma.zst";
    change(
        "backup",
        json!({"storage": "local"}),
        "stopped",
        vm_100("stopped"),
        "backup",
    )
    .lock_is_not_a_result(|host| {
        acted_on(host, "POST /nodes/pve1/vzdump", "vzdump");
        host.data(
            "GET /nodes/pve1/storage",
            json!([{"storage": "local", "content": "backup", "enabled": 1, "active": 1}]),
        );
        host.on(
            "GET /nodes/pve1/storage/local/content",
            [
                Answer::Data(json!([])),
                Answer::Data(json!([{"volid": ARCHIVE, "vmid": 100, "size": 4096, "ctime": 1}])),
            ],
        );
    });
}

#[test]
fn start_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    change("start", json!({}), "stopped", vm_100("running"), "backup").lock_is_not_a_result(
        |host| {
            acted_on(host, "POST /nodes/pve1/qemu/100/status/start", "qmstart");
        },
    );
}

#[test]
fn stop_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    change("stop", json!({}), "running", vm_100("stopped"), "backup").lock_is_not_a_result(
        |host| {
            acted_on(host, "POST /nodes/pve1/qemu/100/status/stop", "qmstop");
        },
    );
}

#[test]
fn shutdown_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    change(
        "shutdown",
        json!({}),
        "running",
        vm_100("stopped"),
        "backup",
    )
    .lock_is_not_a_result(|host| {
        acted_on(
            host,
            "POST /nodes/pve1/qemu/100/status/shutdown",
            "qmshutdown",
        );
    });
}

#[test]
fn reboot_waits_out_a_lock_left_after_its_task_and_fails_naming_one_that_stays() {
    let mut rebooted = vm_100("running");
    rebooted["pid"] = json!(11);
    rebooted["uptime"] = json!(1);
    change("reboot", json!({}), "running", rebooted, "backup").lock_is_not_a_result(|host| {
        acted_on(host, "POST /nodes/pve1/qemu/100/status/reboot", "qmreboot");
    });
}
