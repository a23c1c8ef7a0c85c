//! What a method needs the token to hold, and whether it holds it.
//!
//! The privileges each endpoint requires are PVE's own (`pve::privileges`, generated from the API
//! schema's `permissions` and the handlers' extra checks — the same facts the README's endpoint table
//! is made from). What this module adds is which endpoints each method calls ([`needs`]) and the
//! evaluation of PVE's check expressions (`["perm", path, [privs], "any", 1]`, `["and", …]`,
//! `["or", …]`, as pve-access-control `PVE/RPCEnvironment.pm` `check_api2_permissions` reads them)
//! against the privileges `GET /access/permissions` reported for each path.

use crate::pve::endpoints::GuestKind;
use crate::pve::privileges::{Requirement, ENDPOINTS};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// PVE's check expression, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// `["perm", path, [privs], "any", 1, "require_param", "p"]`: all (or, with `any`, one) of
    /// `privs` on `path`; with PVE's `require_param`, false unless that parameter is given; with
    /// `when_param` (the handlers' checks the table adds), true unless it is given.
    Perm {
        path: String,
        privs: Vec<String>,
        any: bool,
        require_param: Option<String>,
        when_param: Option<String>,
    },
    And(Vec<Check>),
    Or(Vec<Check>),
}

impl Check {
    /// Reads PVE's JSON expression; `None` for a shape it does not have.
    pub fn parse(value: &Value) -> Option<Check> {
        let list = value.as_array()?;
        let op = list.first()?.as_str()?;
        match op {
            "perm" => {
                let path = list.get(1)?.as_str()?.to_string();
                let privs = list
                    .get(2)?
                    .as_array()?
                    .iter()
                    .map(|p| p.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()?;
                // The options are key/value pairs (`any => 1`, `require_param => 'pool'`).
                let options: Vec<&Value> = list.iter().skip(3).collect();
                let mut any = false;
                let mut require_param = None;
                let mut when_param = None;
                for pair in options.chunks(2) {
                    match (pair[0].as_str(), pair.get(1)) {
                        (Some("any"), Some(v)) => {
                            any = v.as_i64() == Some(1) || v.as_str() == Some("1")
                        }
                        (Some("require_param"), Some(v)) => {
                            require_param = Some(v.as_str()?.to_string())
                        }
                        (Some("when_param"), Some(v)) => when_param = Some(v.as_str()?.to_string()),
                        _ => return None,
                    }
                }
                Some(Check::Perm {
                    path,
                    privs,
                    any,
                    require_param,
                    when_param,
                })
            }
            "and" | "or" => {
                let parts = list
                    .iter()
                    .skip(1)
                    .map(Check::parse)
                    .collect::<Option<Vec<_>>>()?;
                Some(match op {
                    "and" => Check::And(parts),
                    _ => Check::Or(parts),
                })
            }
            _ => None,
        }
    }
}

/// The values a method's paths are made of: `{vmid}`, `{newid}`, `{storage}`, `{node}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subjects {
    /// The guest the endpoint acts on (for `clone`: the template). `None`: `/vms`.
    pub vmid: Option<u32>,
    /// The guest a clone or create makes. `None`: `/vms`.
    pub newid: Option<u32>,
    /// The storage a method allocates on. `None`: `/storage`.
    pub storage: Option<String>,
    pub node: String,
    /// An unknown guest or storage leaves its checks out (`path` is `None`) instead of reading
    /// them on the parent path: for a check before one method, whose `vmName` names no VMID yet.
    pub skip_unknown: bool,
}

impl Subjects {
    /// The ACL path of a check's path template: an unknown guest or storage is its parent
    /// (`/vms`, `/storage`: what every guest or storage inherits), or, with `skip_unknown`, `None`.
    pub fn path(&self, template: &str, guest: Guest) -> Option<String> {
        let vmid = match guest {
            Guest::Acted => self.vmid,
            Guest::Made => self.newid,
        };
        let id = |v: Option<u32>| v.map(|v| v.to_string());
        let mut path = template.replace("{node}", &self.node);
        for (key, value) in [
            ("{vmid}", id(vmid)),
            ("{newid}", id(self.newid)),
            ("{storage}", self.storage.clone()),
        ] {
            if !path.contains(key) {
                continue;
            }
            path = match value {
                Some(v) => path.replace(key, &v),
                None if self.skip_unknown => return None,
                None => path.replace(&format!("/{key}"), ""),
            };
        }
        Some(path)
    }

    /// Whether a request parameter a check's `require_param` names is given (the package never
    /// sends `pool`).
    fn given(&self, param: &str) -> bool {
        match param {
            "storage" => self.storage.is_some(),
            _ => false,
        }
    }
}

/// Which guest an endpoint's `{vmid}` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guest {
    /// The guest the method acts on (the template, for `clone`).
    Acted,
    /// The guest a clone makes.
    Made,
}

/// One endpoint a method calls: always, or only in some runs (`when`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// `"<METHOD> <template>"` with `{kind}` for `qemu`/`lxc`.
    pub endpoint: &'static str,
    pub guest: Guest,
    /// `None`: every run calls it; else when (e.g. "when the guest runs").
    pub when: Option<&'static str>,
}

const fn always(endpoint: &'static str) -> Need {
    Need {
        endpoint,
        guest: Guest::Acted,
        when: None,
    }
}

const fn sometimes(endpoint: &'static str, when: &'static str) -> Need {
    Need {
        endpoint,
        guest: Guest::Acted,
        when: Some(when),
    }
}

const fn made(endpoint: &'static str, when: Option<&'static str>) -> Need {
    Need {
        endpoint,
        guest: Guest::Made,
        when,
    }
}

const STATUS: &str = "GET /nodes/{node}/{kind}/{vmid}/status/current";
const CONFIG: &str = "GET /nodes/{node}/{kind}/{vmid}/config";
const PENDING: &str = "GET /nodes/{node}/{kind}/{vmid}/pending";
const SET_CONFIG: &str = "PUT /nodes/{node}/{kind}/{vmid}/config";
const STOP: &str = "POST /nodes/{node}/{kind}/{vmid}/status/stop";
const SNAPSHOTS: &str = "GET /nodes/{node}/{kind}/{vmid}/snapshot";
const EXEC: &str = "POST /nodes/{node}/qemu/{vmid}/agent/exec";
const EXEC_STATUS: &str = "GET /nodes/{node}/qemu/{vmid}/agent/exec-status";
const FILE_READ: &str = "GET /nodes/{node}/qemu/{vmid}/agent/file-read";
const INTERFACES: &str = "GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces";

/// The endpoints method `method` of `kind` guests calls; `None` for a method the model lacks.
/// `Some(&[])` for one that needs no privilege (lists filter by what the token may audit).
pub fn needs(kind: GuestKind, method: &str) -> Option<Vec<Need>> {
    use GuestKind::{Lxc, Qemu};
    let list: &[Need] = match (kind, method) {
        (_, "lookup") => &[always(STATUS), always(CONFIG)],
        (_, "sync") => &[always("GET /nodes/{node}/{kind}")],
        (_, "getConfig") => &[always(PENDING)],
        (_, "setConfig") => &[always(STATUS), always(SET_CONFIG), always(PENDING)],
        (Qemu, "start") => &[
            always(STATUS),
            always("POST /nodes/{node}/{kind}/{vmid}/status/start"),
            sometimes(INTERFACES, "with waitForIp or waitReady"),
        ],
        (Lxc, "start") => &[
            always(STATUS),
            always("POST /nodes/{node}/{kind}/{vmid}/status/start"),
        ],
        (_, "stop") => &[always(STATUS), always(STOP)],
        (_, "shutdown") => &[
            always(STATUS),
            always("POST /nodes/{node}/{kind}/{vmid}/status/shutdown"),
            sometimes(STOP, "with forceStopAfter"),
        ],
        (_, "reboot") => &[
            always(STATUS),
            always("POST /nodes/{node}/{kind}/{vmid}/status/reboot"),
        ],
        (_, "delete") => &[
            always(STATUS),
            always("DELETE /nodes/{node}/{kind}/{vmid}"),
            sometimes(STOP, "when the guest runs"),
        ],
        (_, "convertToTemplate") => &[
            always(STATUS),
            always("POST /nodes/{node}/{kind}/{vmid}/template"),
        ],
        (_, "migrate") => &[
            always(STATUS),
            always("GET /nodes/{node}/{kind}/{vmid}/migrate"),
            always("POST /nodes/{node}/{kind}/{vmid}/migrate"),
        ],
        (_, "snapshot") => &[
            always(SNAPSHOTS),
            always("POST /nodes/{node}/{kind}/{vmid}/snapshot"),
        ],
        (_, "rollback") => &[
            always(SNAPSHOTS),
            always("POST /nodes/{node}/{kind}/{vmid}/snapshot/{snapname}/rollback"),
        ],
        (_, "deleteSnapshot") => &[
            always(SNAPSHOTS),
            always("DELETE /nodes/{node}/{kind}/{vmid}/snapshot/{snapname}"),
        ],
        (_, "listSnapshots") => &[always(SNAPSHOTS)],
        (_, "nodeStatus") => &[
            always("GET /nodes/{node}/status"),
            sometimes(
                "GET /nodes/{node}/disks/list",
                "for the disks (without it they are recorded unavailable)",
            ),
            always("GET /nodes/{node}/subscription"),
            sometimes(
                "GET /nodes/{node}/apt/repositories",
                "for the enterprise repository (without it recorded unavailable)",
            ),
        ],
        (_, "nodeConfig") => &[
            always("GET /nodes/{node}/storage"),
            always("GET /nodes/{node}/network"),
        ],
        (_, "preflight") => &[always("GET /version"), always("GET /access/permissions")],
        (Qemu, "guestExec") => &[always(EXEC), always(EXEC_STATUS)],
        (Qemu, "clone") => &[
            always(STATUS),
            always("POST /nodes/{node}/qemu/{vmid}/clone"),
            made(CONFIG, None),
            made(SET_CONFIG, Some("when the template lacks the swamp tag")),
        ],
        (Qemu, "cloudInit") => &[
            always(SET_CONFIG),
            always("PUT /nodes/{node}/qemu/{vmid}/cloudinit"),
            always("GET /nodes/{node}/qemu/{vmid}/cloudinit/dump"),
            always("GET /nodes/{node}/qemu/{vmid}/cloudinit"),
        ],
        (Qemu, "waitReady") => &[
            always("GET /nodes/{node}/qemu/{vmid}/agent/info"),
            always(INTERFACES),
            sometimes(EXEC, "with cloudInit"),
        ],
        (Qemu, "resizeDisk") | (Lxc, "resize") => &[
            always(CONFIG),
            always("PUT /nodes/{node}/{kind}/{vmid}/resize"),
        ],
        (Qemu, "fileWrite") => &[
            always("POST /nodes/{node}/qemu/{vmid}/agent/file-write"),
            always(FILE_READ),
            sometimes(EXEC, "for a file over 46,080 bytes or a mode"),
        ],
        (Qemu, "fileRead") => &[always(FILE_READ)],
        (Lxc, "create") => &[
            made("POST /nodes/{node}/lxc", None),
            always("GET /nodes/{node}/storage/{storage}/content"),
            always("GET /nodes/{node}/network"),
        ],
        // `pct exec` over ssh runs as root@pam: no API privilege (preflight says it needs ssh).
        (Lxc, "guestExec") => &[],
        (Qemu, "create") => &[
            made("POST /nodes/{node}/qemu", None),
            always("GET /nodes/{node}/storage/{storage}/content"),
            always("GET /nodes/{node}/network"),
        ],
        (_, "downloadUrl") => &[
            always("GET /nodes/{node}/storage"),
            always("GET /nodes/{node}/storage/{storage}/content"),
            always("POST /nodes/{node}/storage/{storage}/download-url"),
        ],
        (_, "backup") => &[
            always(STATUS),
            always("POST /nodes/{node}/vzdump"),
            always("GET /nodes/{node}/storage/{storage}/content"),
        ],
        (_, "listBackups") => &[always("GET /nodes/{node}/storage/{storage}/content")],
        (_, "deleteBackup") => &[
            always("GET /nodes/{node}/storage/{storage}/content"),
            always("DELETE /nodes/{node}/storage/{storage}/content/{volume}"),
        ],
        (_, "restore") => &[
            always("GET /nodes/{node}/storage/{storage}/content"),
            always("GET /nodes/{node}/vzdump/extractconfig"),
            made("POST /nodes/{node}/{kind}", None),
        ],
        _ => return None,
    };
    let prefix = kind.segment();
    Some(
        list.iter()
            .map(|need| Need {
                endpoint: table_endpoint(need.endpoint, prefix),
                ..*need
            })
            .collect(),
    )
}

/// `{kind}` replaced by `qemu`/`lxc`, as one of the table's own `'static` strings.
fn table_endpoint(template: &'static str, kind: &str) -> &'static str {
    let wanted = template.replace("{kind}", kind);
    ENDPOINTS
        .iter()
        .find(|(endpoint, _, _)| *endpoint == wanted)
        .map_or(template, |(endpoint, _, _)| endpoint)
}

/// What PVE requires to call `endpoint`: its check, `None` when any token may call it, `Err` for an
/// endpoint the table does not have.
pub fn requirement(endpoint: &str) -> Result<Option<Check>, String> {
    let (_, kind, check) = ENDPOINTS
        .iter()
        .find(|(e, _, _)| *e == endpoint)
        .ok_or_else(|| format!("{endpoint} is not in the privilege table"))?;
    match kind {
        Requirement::Check => serde_json::from_str::<Value>(check)
            .ok()
            .as_ref()
            .and_then(Check::parse)
            .map(Some)
            .ok_or_else(|| format!("the check of {endpoint} cannot be read: {check}")),
        Requirement::Listing | Requirement::Anyone => Ok(None),
    }
}

/// The ACL paths a check reads, for `subjects`.
pub fn paths_of(check: &Check, subjects: &Subjects, guest: Guest, out: &mut BTreeSet<String>) {
    match check {
        Check::Perm {
            path,
            require_param,
            when_param,
            ..
        } => {
            let given = |p: &Option<String>| p.as_deref().is_none_or(|p| subjects.given(p));
            if given(require_param) && given(when_param) {
                out.extend(subjects.path(path, guest));
            }
        }
        Check::And(parts) | Check::Or(parts) => {
            for part in parts {
                paths_of(part, subjects, guest, out);
            }
        }
    }
}

/// The privileges held per ACL path, as `GET /access/permissions` reported them.
pub type Held = BTreeMap<String, BTreeSet<String>>;

/// What `check` lacks on `held`, in words ("`VM.Clone` on /vms/9000"); empty when it holds.
pub fn missing(check: &Check, subjects: &Subjects, guest: Guest, held: &Held) -> Vec<String> {
    match check {
        Check::Perm {
            path,
            privs,
            any,
            require_param,
            when_param,
        } => {
            if let Some(param) = require_param {
                if !subjects.given(param) {
                    return vec![format!("`{param}` (not given)")];
                }
            }
            if when_param.as_deref().is_some_and(|p| !subjects.given(p)) {
                return Vec::new();
            }
            let Some(path) = subjects.path(path, guest) else {
                return Vec::new();
            };
            let has = held.get(&path);
            let holds = |p: &String| has.is_some_and(|set| set.contains(p));
            let ok = match any {
                true => privs.iter().any(holds),
                false => privs.iter().all(holds),
            };
            match ok {
                true => Vec::new(),
                false => {
                    let lacking: Vec<&String> = match any {
                        true => privs.iter().collect(),
                        false => privs.iter().filter(|p| !holds(p)).collect(),
                    };
                    let words: Vec<String> = lacking.iter().map(|p| p.to_string()).collect();
                    let joined = words.join(if *any { " or " } else { " and " });
                    vec![format!("{joined} on {path}")]
                }
            }
        }
        Check::And(parts) => parts
            .iter()
            .flat_map(|part| missing(part, subjects, guest, held))
            .collect(),
        Check::Or(parts) => {
            let each: Vec<Vec<String>> = parts
                .iter()
                .map(|part| missing(part, subjects, guest, held))
                .collect();
            match each.iter().any(Vec::is_empty) {
                true => Vec::new(),
                false => {
                    // Every way is closed: name the first, the one PVE's own message names.
                    let alternatives: Vec<String> = each
                        .iter()
                        .filter(|m| !m.iter().any(|w| w.ends_with("(not given)")))
                        .map(|m| m.join(" and "))
                        .collect();
                    vec![alternatives.join(", or ")]
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::method_names;
    use serde_json::json;

    fn subjects() -> Subjects {
        Subjects {
            vmid: Some(9000),
            newid: Some(123),
            storage: Some("local-zfs".into()),
            node: "pve1".into(),
            skip_unknown: false,
        }
    }

    fn held(entries: &[(&str, &[&str])]) -> Held {
        entries
            .iter()
            .map(|(path, privs)| {
                let set = privs.iter().map(|p| p.to_string()).collect();
                (path.to_string(), set)
            })
            .collect()
    }

    #[test]
    fn every_method_of_a_model_has_needs_whose_endpoints_are_in_the_privilege_table() {
        for kind in [GuestKind::Qemu, GuestKind::Lxc] {
            for method in method_names(kind) {
                let Some(list) = needs(kind, method) else {
                    panic!("{kind:?} {method}: a method of the model with no permission needs");
                };
                for need in list {
                    assert!(
                        requirement(need.endpoint).is_ok(),
                        "{kind:?} {method}: {}",
                        need.endpoint
                    );
                }
            }
        }
    }

    #[test]
    fn pve_check_expressions_parse_with_their_options() {
        let check = Check::parse(&json!(["perm", "/vms/{vmid}", ["A", "B"], "any", 1])).unwrap();
        assert!(matches!(check, Check::Perm { any: true, .. }));
        let pool = Check::parse(&json!([
            "perm",
            "/pool/{pool}",
            ["A"],
            "require_param",
            "pool"
        ]));
        assert!(
            matches!(pool, Some(Check::Perm { require_param: Some(ref p), .. }) if p == "pool")
        );
        assert_eq!(Check::parse(&json!(["perm", "/", "A"])), None);
        assert_eq!(Check::parse(&json!(["xor"])), None);
    }

    #[test]
    fn clone_names_each_privilege_it_lacks_on_its_path() {
        let check = requirement("POST /nodes/{node}/qemu/{vmid}/clone")
            .unwrap()
            .unwrap();
        let s = subjects();
        let none = missing(&check, &s, Guest::Acted, &held(&[]));
        assert_eq!(
            none,
            [
                "VM.Clone on /vms/9000",
                "VM.Allocate on /vms/123",
                "Datastore.AllocateSpace on /storage/local-zfs"
            ]
        );
        let all = held(&[
            ("/vms/9000", &["VM.Clone"]),
            ("/vms/123", &["VM.Allocate"]),
            ("/storage/local-zfs", &["Datastore.AllocateSpace"]),
        ]);
        assert!(missing(&check, &s, Guest::Acted, &all).is_empty());
        let mut paths = BTreeSet::new();
        paths_of(&check, &s, Guest::Acted, &mut paths);
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        assert_eq!(paths, ["/storage/local-zfs", "/vms/123", "/vms/9000"]);
    }

    #[test]
    fn clone_without_storage_is_not_held_to_a_storage() {
        let check = requirement("POST /nodes/{node}/qemu/{vmid}/clone")
            .unwrap()
            .unwrap();
        let s = Subjects {
            storage: None,
            ..subjects()
        };
        let held = held(&[("/vms/9000", &["VM.Clone"]), ("/vms/123", &["VM.Allocate"])]);
        assert!(missing(&check, &s, Guest::Acted, &held).is_empty());
    }

    #[test]
    fn any_of_several_privileges_is_enough_and_all_are_named_when_none_is_held() {
        let check = requirement("PUT /nodes/{node}/qemu/{vmid}/config")
            .unwrap()
            .unwrap();
        let s = subjects();
        let some = held(&[("/vms/9000", &["VM.Config.Options"])]);
        assert!(missing(&check, &s, Guest::Acted, &some).is_empty());
        let none = missing(&check, &s, Guest::Acted, &held(&[]));
        assert!(
            none[0].starts_with("VM.Config.Disk or VM.Config.CDROM"),
            "{none:?}"
        );
        assert!(none[0].ends_with("on /vms/9000"), "{none:?}");
    }

    #[test]
    fn an_unknown_guest_or_storage_is_checked_on_what_every_one_inherits() {
        let s = Subjects {
            node: "pve1".into(),
            ..Subjects::default()
        };
        assert_eq!(s.path("/vms/{vmid}", Guest::Acted).unwrap(), "/vms");
        assert_eq!(
            s.path("/storage/{storage}", Guest::Acted).unwrap(),
            "/storage"
        );
        assert_eq!(
            s.path("/nodes/{node}", Guest::Acted).unwrap(),
            "/nodes/pve1"
        );
        let before_one_method = Subjects {
            skip_unknown: true,
            ..s
        };
        assert_eq!(before_one_method.path("/vms/{vmid}", Guest::Acted), None);
        assert!(before_one_method.path("/", Guest::Acted).is_some());
    }

    #[test]
    fn a_method_the_model_lacks_has_no_needs() {
        assert!(needs(GuestKind::Lxc, "clone").is_none());
        assert!(needs(GuestKind::Lxc, "cloudInit").is_none());
        assert!(needs(GuestKind::Qemu, "lookup").is_some());
    }
}
