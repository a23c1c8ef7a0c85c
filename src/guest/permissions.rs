//! Whether the token holds what PVE checks for an endpoint, for one run's arguments.
//!
//! The checks are PVE's own (`pve::privileges`, generated from the API schema's `permissions` and
//! the checks inside the handlers and their workers, on PVE 8 and 9 — the same facts docs/pve.md's
//! endpoint table is made from). This module reads PVE's check expressions (`["perm", path, [privs],
//! "any", 1]`, `["and", …]`, `["or", …]`, as pve-access-control `PVE/RPCEnvironment.pm`
//! `check_api2_permissions` reads them) and the table's own forms — `["when", cond, c]` (only for a
//! request with that parameter), `["pve", major, c]` (only on that version), `["options", path,
//! table]` (each config option's class) — and judges them against the privileges `GET
//! /access/permissions` reported per ACL path. Which endpoints a method calls, and what its
//! arguments name, is `guest::permission_needs`.

use crate::guest::placement::numbered;
use crate::pve::endpoints::GuestKind;
use crate::pve::privileges::{
    check, Requirement, CHECKS, ENDPOINTS, GUEST_ENDPOINTS, NO, ONLY_IN, OPTIONS,
};
use crate::quote::{push_item, Joined};
use serde_json::{Map, Value};

/// A check expression as the table writes it: JSON (`["perm", path, [privs], "any", 1]`, …), read
/// where it is judged. The build checks that every check of the table reads ([`table_reads`]): no
/// tree of its own is built for it at run time, nor dropped (issue 32).
pub type Check = Value;

/// The operator of a check expression and what follows it (`["and", a, b]` → `and`, `[a, b]`).
fn parts(check: &Value) -> Option<(&str, &[Value])> {
    let (op, rest) = check.as_array()?.split_first()?;
    Some((op.as_str()?, rest))
}

/// Check expression `at` of `CHECKS`: a number in a check's place stands for it (the generator
/// writes a part several checks share once).
fn shared(at: u64) -> Option<Value> {
    serde_json::from_str(check(usize::try_from(at).ok()?)?).ok()
}

/// Which guest an endpoint's `{vmid}` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guest {
    /// The guest the method acts on (the template, for `clone`).
    Acted,
    /// The guest a create, clone or restore makes.
    Made,
}

/// What one run's request names, as far as it is known: the values of a check's path placeholders,
/// the parameters its conditions ask about, the config options it sets, PVE's major version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subjects {
    pub node: String,
    /// The guest acted on (`clone`: the template).
    pub vmid: Option<u32>,
    /// The guest made.
    pub newid: Option<u32>,
    /// `{storage}`: each storage the request allocates on (or reads, for a listing).
    pub storages: Vec<String>,
    /// `{source}`: each storage an image, ISO or template is read from.
    pub sources: Vec<String>,
    /// `{archive}`, `{owner}`: a backup archive's storage and guest.
    pub archive: Option<String>,
    pub owner: Option<u32>,
    /// `{bridge}`: each bridge a NIC names (`vmbr0`, or `vmbr0/20` with a VLAN tag).
    pub bridges: Vec<String>,
    /// The config options the request sets.
    pub options: Vec<String>,
    /// The condition parameters the request has (`storage`, `force`, `unprivileged=0`).
    pub given: Vec<String>,
    /// Condition parameters the run may have that are not known here (preflight): their checks
    /// are "may need", not missing.
    pub unknown: Vec<&'static str>,
    /// PVE's major version (8 or 9).
    pub major: u64,
    /// An unknown guest or storage leaves its checks out (the check before one method) instead of
    /// reading them on the parent path, what every one inherits (preflight).
    pub skip_unknown: bool,
}

/// The ACL paths of a path template.
enum Paths {
    Each(Vec<String>),
    /// A list only the method's arguments name (bridges, sources), not given: the template.
    Unknown(String),
}

impl Subjects {
    fn paths(&self, template: &str, guest: Guest, archive_storage: bool) -> Paths {
        let base = template.replace("{node}", &self.node);
        let Some(start) = base.find('{') else {
            return Paths::Each(vec![base]);
        };
        let key = base.get(start..).unwrap_or_default();
        // One value (a guest's id, the archive's storage) or a list borrowed from the subjects: no
        // list is copied to be read (issue 32).
        let (one, list, inherit): (Option<u32>, &[String], bool) = match key {
            "{vmid}" if guest == Guest::Made => (self.newid, &[], true),
            "{vmid}" => (self.vmid, &[], true),
            "{newid}" => (self.newid, &[], true),
            "{owner}" => (self.owner, &[], true),
            "{storage}" if archive_storage => (None, self.archive.as_slice(), true),
            "{storage}" => (None, &self.storages, true),
            "{archive}" => (None, self.archive.as_slice(), true),
            "{source}" => (None, &self.sources, false),
            "{bridge}" => (None, &self.bridges, false),
            _ => (None, &[], false),
        };
        let id = one.map(|id| id.to_string());
        let values = match &id {
            Some(id) => std::slice::from_ref(id),
            None => list,
        };
        let parent = base.get(..start.saturating_sub(1)).unwrap_or_default();
        match (values.is_empty(), self.skip_unknown, inherit) {
            (false, _, _) => {
                let mut each = Vec::with_capacity(values.len());
                for value in values {
                    each.push(base.replace(key, value));
                }
                Paths::Each(each)
            }
            (true, true, _) => Paths::Each(Vec::new()),
            (true, false, true) => Paths::Each(vec![parent.to_string()]),
            (true, false, false) => Paths::Unknown(base),
        }
    }

    /// Whether the request has condition `cond`; `None` when that is not known.
    fn condition(&self, cond: &str) -> Option<bool> {
        let (negated, name) = match cond.strip_prefix('!') {
            Some(name) => (true, name),
            None => (false, cond),
        };
        let param = name.split('=').next().unwrap_or(name);
        let has = match self.given.iter().any(|g| g == name) {
            true => Some(true),
            false if self.unknown.contains(&param) => None,
            false => Some(false),
        };
        has.map(|h| h != negated)
    }
}

/// What a check lacks: for certain (`missing`), and what only some runs need (`may`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judged {
    pub missing: Vec<String>,
    pub may: Vec<String>,
}

impl Judged {
    fn add(&mut self, other: Judged) {
        self.missing.extend(other.missing);
        self.may.extend(other.may);
    }

    fn holds(&self) -> bool {
        self.missing.is_empty() && self.may.is_empty()
    }

    /// Pushes onto `out` everything lacked, with the condition it depends on: "VM.PowerMgmt on
    /// /vms/100 (when the guest runs)". One function for the conditions of a check and of a need.
    pub fn push_when(&self, when: &str, out: &mut Vec<String>) {
        // Over both lists by slices, not a chained iterator: smaller in the module.
        for list in [&self.missing, &self.may] {
            for need in list {
                out.push(format!("{need} ({when})"));
            }
        }
    }
}

/// Whether the token holds `privilege` on `path`.
pub type Has<'a> = &'a mut dyn FnMut(&str, &str) -> bool;

/// An endpoint's check, for one need of a run: its `{vmid}` and whether its `{storage}` is the
/// backup archive's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Role {
    pub guest: Guest,
    pub archive: bool,
}

/// What `check` lacks for `s`; `None` where it does not apply (a condition the request does not
/// meet, another PVE version).
pub fn judge(check: &Check, s: &Subjects, role: Role, has: Has) -> Option<Judged> {
    if let Some(at) = check.as_u64() {
        return judge(&shared(at)?, s, role, has);
    }
    let (op, list) = parts(check)?;
    match (op, list) {
        ("perm", [path, privs, options @ ..]) => {
            // The options are key/value pairs (`any => 1`, `require_param => 'pool'`).
            let mut any = false;
            for pair in options.chunks(2) {
                match pair {
                    [key, v] if key == "any" => any = v.as_i64() == Some(1),
                    // With PVE's `require_param`, false unless that parameter is given.
                    [key, v] if key == "require_param" => {
                        s.condition(v.as_str()?).filter(|given| *given)?;
                    }
                    _ => return None,
                }
            }
            // The privileges one text, as a config option class writes them (`OPTIONS`: `A|B`
            // any, `A&B` all, [`separator`]), judged as the classes are (issue 32).
            let mut text = String::new();
            for p in privs.as_array()? {
                push_item(&mut text, separator(any), p.as_str()?);
            }
            Some(perm(path.as_str()?, &text, any, s, role, has))
        }
        ("and", parts) => judge_all(parts, s, role, has),
        ("or", parts) => {
            // Every part judged (`paths_of` records each one's paths), in one pass: one way held
            // is enough; else the first that is only maybe needed; else each closed way, named.
            let (mut applies, mut held, mut maybe) = (false, false, None);
            let mut ways = String::new();
            for part in parts {
                let Some(one) = judge(part, s, role, has) else {
                    continue;
                };
                applies = true;
                held |= one.holds();
                push_item(&mut ways, ", or ", &one.missing.joined(" and "));
                if maybe.is_none() && one.missing.is_empty() {
                    maybe = Some(one);
                }
            }
            match (applies, held, maybe) {
                (false, _, _) => None,
                (true, true, _) => Some(Judged::default()),
                (true, false, Some(maybe)) => Some(maybe),
                (true, false, None) => Some(Judged {
                    missing: vec![ways],
                    may: Vec::new(),
                }),
            }
        }
        // Applies only to a request with parameter `p` (`p=v`: with that value; `!p`: without it).
        ("when", [cond, inner, ..]) => {
            let cond = cond.as_str()?;
            match s.condition(cond) {
                Some(true) => judge(inner, s, role, has),
                Some(false) => None,
                None => {
                    let found = judge(inner, s, role, has)?;
                    // One format: "with `start`", "without `start`".
                    let shown = cond.trim_start_matches('!');
                    let out = if cond.starts_with('!') { "out" } else { "" };
                    let when = format!("with{out} `{shown}`");
                    let mut may = Vec::new();
                    found.push_when(&when, &mut may);
                    Some(Judged {
                        missing: Vec::new(),
                        may,
                    })
                }
            }
        }
        // Applies only on PVE major version `major`.
        ("pve", [major, inner, ..]) if major.as_u64() == Some(s.major) => {
            judge(inner, s, role, has)
        }
        // Each config option the request sets needs its class's privileges (`OPTIONS` of `table`).
        ("options", [path, table, ..]) => {
            // Each class judged where it is found: no check made of it (issue 32).
            let mut all: Option<Judged> = None;
            let (path, table) = (path.as_str()?, table.as_str()?);
            for &(on, privs) in &option_privileges(table, path, &s.options) {
                let one = perm(on, privs, privs.contains('|'), s, role, has);
                gather(&mut all, one);
            }
            all
        }
        _ => None,
    }
}

/// What a `perm` check of `privs` (`&`- or `|`-separated) on `path` lacks for `s`.
fn perm(path: &str, privs: &str, any: bool, s: &Subjects, role: Role, has: Has) -> Judged {
    match s.paths(path, role.guest, role.archive) {
        Paths::Unknown(template) => {
            let mut words = String::new();
            for privilege in privs.split(separator(any)) {
                push_item(&mut words, joiner(any), privilege);
            }
            Judged {
                missing: Vec::new(),
                may: vec![format!(
                    "{words} on {template} (each one the arguments name)"
                )],
            }
        }
        Paths::Each(paths) => {
            let mut missing = Vec::new();
            for path in paths {
                missing.extend(lacking(&path, privs, any, has));
            }
            Judged {
                missing,
                may: Vec::new(),
            }
        }
    }
}

/// What separates the privileges of a `perm` check, as the config option classes write them:
/// `A|B` any, `A&B` all.
fn separator(any: bool) -> &'static str {
    if any {
        "|"
    } else {
        "&"
    }
}

/// How the privileges of a `perm` check are named together in a message: `A or B` (any), `A and B`
/// (all).
fn joiner(any: bool) -> &'static str {
    if any {
        " or "
    } else {
        " and "
    }
}

/// `one` added to `all` (the first found is `all`).
fn gather(all: &mut Option<Judged>, one: Judged) {
    match all {
        Some(all) => all.add(one),
        None => *all = Some(one),
    }
}

/// Every part that applies, its needs added up; `None` when none applies. A loop, not an
/// iterator chain: smaller in the module (docs/performance.md).
fn judge_all(parts: &[Value], s: &Subjects, role: Role, has: Has) -> Option<Judged> {
    let mut all: Option<Judged> = None;
    for part in parts {
        let Some(one) = judge(part, s, role, has) else {
            continue;
        };
        gather(&mut all, one);
    }
    all
}

/// "`VM.Clone` on /vms/9000" when the privileges are not held there.
fn lacking(path: &str, privs: &str, any: bool, has: Has) -> Option<String> {
    // Written as found: no list of them to join.
    let mut lacking = String::new();
    for privilege in privs.split(separator(any)) {
        match (any, has(path, privilege)) {
            (true, true) => return None,
            (false, true) => {}
            (_, false) => push_item(&mut lacking, joiner(any), privilege),
        }
    }
    (!lacking.is_empty()).then(|| format!("{lacking} on {path}"))
}

/// The privileges the config options `keys` need per the classes of `table` (pve::privileges
/// `OPTIONS`), each with the path it is on (`path`, or the class's own: `/:Sys.Modify`): every class
/// naming a key applies; `*` only to a key no class names; an empty class needs none.
fn option_privileges<'a>(table: &str, path: &'a str, keys: &[String]) -> Vec<(&'a str, &'a str)> {
    let names = |pattern: &str, key: &str| match pattern.strip_suffix('#') {
        Some(prefix) => numbered(key, prefix),
        None => pattern == key,
    };
    let mut found = Vec::new();
    for key in keys {
        // One plain loop over the table's lines, not filtering iterators: smaller in the module.
        let (mut named, mut others) = (Vec::new(), Vec::new());
        for line in OPTIONS.split('\n') {
            let Some((t, class)) = line.split_once(';') else {
                continue; // the opening
            };
            let (privs, list) = class.split_once(';').unwrap_or_default();
            if t != table {
                continue;
            }
            match list == "*" {
                true => others.push(privs),
                false if list.split(' ').any(|p| names(p, key)) => named.push(privs),
                false => {}
            }
        }
        if named.is_empty() {
            named = others;
        }
        for class in named {
            if !class.is_empty() {
                found.push(class.split_once(':').unwrap_or((path, class)));
            }
        }
    }
    found
}

/// The ACL paths judging `check` for `s` reads (every path it would look a privilege up on).
// Inlined into its one caller (issue 32).
#[inline(always)]
pub fn paths_of(check: &Check, s: &Subjects, role: Role, out: &mut AclPaths) {
    let mut record = |path: &str, _: &str| {
        out.insert(path);
        false
    };
    let _ = judge(check, s, role, &mut record);
}

/// ACL paths, sorted and each once: the order they are read in. The keys of a JSON map (the
/// module's one map type, its tree code already there: a `BTreeSet` of its own, or a sorted list's
/// insert, would compile more, issue 32).
#[derive(Debug, Default)]
pub struct AclPaths(Map<String, Value>);

impl AclPaths {
    /// Adds `path` in its place, unless it is there already.
    // Inlined into its one caller (issue 32).
    #[inline(always)]
    pub fn insert(&mut self, path: &str) {
        self.0.insert(path.to_string(), Value::Null);
    }

    // Inlined into its one caller (issue 32).
    #[inline(always)]
    pub fn contains(&self, path: &str) -> bool {
        self.0.contains_key(path)
    }

    pub fn iter(&self) -> serde_json::map::Keys<'_> {
        self.0.keys()
    }
}

impl<'a> IntoIterator for &'a AclPaths {
    type Item = &'a String;
    type IntoIter = serde_json::map::Keys<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.keys()
    }
}

/// PVE's major version from its `version` (`9.1.3` → 9); the table knows 8 and 9, so an older
/// node is held to 8's and a newer one to 9's.
pub fn major_of(version: &str) -> u64 {
    let major = version.split('.').next().and_then(|m| m.parse().ok());
    major.unwrap_or(9).clamp(8, 9)
}

/// PVE's major version as the token's privileges tell it: one only that version has (PVE 9 no
/// longer knows `VM.Monitor`, PVE 8 not yet `VM.GuestAgent.*`, so neither reports it).
pub fn major_held(held: &Held) -> Option<u64> {
    // Loops, not a flat_map/filter_map chain: smaller in the module (docs/performance.md).
    for privs in held.values() {
        for privilege in privs.as_array().map_or(&[][..], Vec::as_slice) {
            for line in ONLY_IN.split('\n') {
                match line.split_once(' ') {
                    Some((major, only)) if Some(only) == privilege.as_str() => {
                        return major.parse().ok()
                    }
                    _ => {}
                }
            }
        }
    }
    None
}

/// What calling an endpoint requires of a VM and of a container ([`requires`]): check n of
/// `CHECKS`, [`ANYONE`] when any token may call it, or `NO` when that kind has no such endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requires([u8; 2]);

/// Any token may call the endpoint: a listing (it shows what the token may audit), or one any
/// authenticated user may call.
const ANYONE: u8 = NO - 1;

/// What calling `endpoint` requires, the endpoint as `guest::permission_needs` writes it (a guest's
/// own path from `/{vmid}`, `{kind}` for `qemu`/`lxc`): its row of [`GUEST_ENDPOINTS`] (each kind
/// its column) or of [`ENDPOINTS`], found as the build compiles. A need keeps what its endpoint
/// requires, not the endpoint's text, and the table's texts are the build's alone (issue 32); an
/// endpoint the table does not have, or a check `CHECKS` does not have, fails the build.
pub const fn requires(endpoint: &str) -> Requires {
    Requires([required(endpoint, b"qemu"), required(endpoint, b"lxc")])
}

/// [`requires`] of the kind of path segment `kind`.
const fn required(endpoint: &str, kind: &[u8]) -> u8 {
    let mut at = 0;
    while at < GUEST_ENDPOINTS.len() {
        let (row, qemu, lxc) = GUEST_ENDPOINTS[at];
        if same(endpoint.as_bytes(), row.as_bytes(), kind) {
            return line(if kind[0] == b'q' { qemu } else { lxc });
        }
        at += 1;
    }
    let mut at = 0;
    while at < ENDPOINTS.len() {
        if same(endpoint.as_bytes(), ENDPOINTS[at].0.as_bytes(), kind) {
            return match ENDPOINTS[at].1 {
                Requirement::Check(at) => line(at),
                Requirement::Listing | Requirement::Anyone => ANYONE,
            };
        }
        at += 1;
    }
    panic!("an endpoint the privilege table does not have")
}

/// The lines `check` reads: one after each newline.
const LINES: usize = {
    let (mut lines, mut i) = (0, 0);
    while i < CHECKS.len() {
        lines += (CHECKS.as_bytes()[i] == b'\n') as usize;
        i += 1;
    }
    lines
};

/// `at`, a line `CHECKS` has (or `NO`).
const fn line(at: u8) -> u8 {
    assert!(LINES < ANYONE as usize, "more checks than a need can name");
    assert!(
        at == NO || (at as usize) < LINES,
        "a check the privilege table does not have"
    );
    at
}

/// Whether `text` has `with` at `at`.
const fn starts(text: &[u8], at: usize, with: &[u8]) -> bool {
    let mut i = 0;
    while i < with.len() {
        if at + i >= text.len() || text[at + i] != with[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `template`, its `{kind}` read as `kind`, is `row`.
const fn same(template: &[u8], row: &[u8], kind: &[u8]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < template.len() {
        if starts(template, i, b"{kind}") {
            if !starts(row, j, kind) {
                return false;
            }
            (i, j) = (i + 6, j + kind.len());
        } else if j < row.len() && template[i] == row[j] {
            (i, j) = (i + 1, j + 1);
        } else {
            return false;
        }
    }
    j == row.len()
}

// Every check of `CHECKS` reads as [`judge`] reads it, found as the build compiles: a check that
// does not fails the build, so none is parsed into a tree of its own to be checked at run time
// (issue 32).
const _: () = assert!(
    table_reads(CHECKS.as_bytes()),
    "a check of the privilege table that does not read"
);

/// Whether each line of the table `t` after its opening is one check expression ([`expr_end`]).
const fn table_reads(t: &[u8]) -> bool {
    let mut at = 1;
    while at < t.len() {
        match expr_end(t, at) {
            Some(end) if end < t.len() && t[end] == b'\n' => at = end + 1,
            _ => return false,
        }
    }
    true
}

/// Where the check expression at `at` of `t` ends, when one starts there as [`judge`] reads it:
/// a number (a check of the table, by its line), `["perm",path,[privs…]` with options `"any",n`
/// and `"require_param",p` `]`, `["and"|"or",check…]`, `["when",condition,check]`,
/// `["pve",major,check]` or `["options",path,table]`, as the generator writes JSON (no spaces).
const fn expr_end(t: &[u8], at: usize) -> Option<usize> {
    if at < t.len() && t[at].is_ascii_digit() {
        let (mut n, mut i) = (0, at);
        while i < t.len() && t[i].is_ascii_digit() {
            (n, i) = (n * 10 + (t[i] - b'0') as usize, i + 1);
        }
        // A check the table has: a line after the opening, before the closing newline.
        return if n + 1 < LINES { Some(i) } else { None };
    }
    if !starts(t, at, b"[") {
        return None;
    }
    let op = at + 1;
    let Some(mut i) = string_end(t, op) else {
        return None;
    };
    if starts(t, op, b"\"perm\",") {
        let Some(end) = string_end(t, i + 1) else {
            return None;
        };
        if !starts(t, end, b",[") {
            return None;
        }
        i = end + 2;
        // The privileges: texts, a comma between each two.
        while !starts(t, i, b"]") {
            i = match string_end(t, i) {
                Some(end) if starts(t, end, b",\"") => end + 1,
                Some(end) => end,
                None => return None,
            };
        }
        i += 1;
        loop {
            i = match (
                starts(t, i, b",\"any\","),
                starts(t, i, b",\"require_param\","),
            ) {
                (true, _) => match number_end(t, i + 7) {
                    Some(end) => end,
                    None => return None,
                },
                (_, true) => match string_end(t, i + 17) {
                    Some(end) => end,
                    None => return None,
                },
                _ => break,
            };
        }
    } else if starts(t, op, b"\"and\"") || starts(t, op, b"\"or\"") {
        while starts(t, i, b",") {
            i = match expr_end(t, i + 1) {
                Some(end) => end,
                None => return None,
            };
        }
    } else if starts(t, op, b"\"when\",") || starts(t, op, b"\"pve\",") {
        let head = match t[op + 1] == b'w' {
            true => string_end(t, i + 1),
            false => number_end(t, i + 1),
        };
        let Some(next) = past_comma(t, head) else {
            return None;
        };
        let Some(end) = expr_end(t, next) else {
            return None;
        };
        i = end;
    } else if starts(t, op, b"\"options\",") {
        let Some(next) = past_comma(t, string_end(t, i + 1)) else {
            return None;
        };
        let Some(end) = string_end(t, next) else {
            return None;
        };
        i = end;
    } else {
        return None;
    }
    match starts(t, i, b"]") {
        true => Some(i + 1),
        false => None,
    }
}

/// Where the part after a comma begins, given where the part before it ended (`None` when it
/// did not parse, or no comma follows): the two-part operands of `when`, `pve` and `options`.
const fn past_comma(t: &[u8], head_end: Option<usize>) -> Option<usize> {
    match head_end {
        Some(end) if starts(t, end, b",") => Some(end + 1),
        _ => None,
    }
}

/// Where the JSON text at `at` of `t` ends (past its closing quote; `\` escapes the next byte).
const fn string_end(t: &[u8], at: usize) -> Option<usize> {
    if !starts(t, at, b"\"") {
        return None;
    }
    let mut i = at + 1;
    while i < t.len() {
        match t[i] {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            b'\n' => return None,
            _ => i += 1,
        }
    }
    None
}

/// Where the number at `at` of `t` ends (one digit at least).
const fn number_end(t: &[u8], at: usize) -> Option<usize> {
    let mut i = at;
    while i < t.len() && t[i].is_ascii_digit() {
        i += 1;
    }
    if i > at {
        Some(i)
    } else {
        None
    }
}

/// What PVE requires to call the endpoint of `requires` on a guest of `kind`: its check, `None`
/// when any token may call it, `Err` when the table has no check of it that reads for `kind`.
///
/// That error cannot come of the table the module is built with: the build found every check a
/// need names, every check of the table reads ([`table_reads`]), and each model's methods call only
/// endpoints of their kind (the unit tests `every_check_of_the_table_parses` and
/// `every_method_of_a_model_has_needs_whose_endpoints_are_in_the_privilege_table`).
// Inlined into its one caller (issue 32).
#[inline(always)]
pub fn requirement(requires: Requires, kind: GuestKind) -> Result<Option<Check>, String> {
    let at = requires.0[kind as usize];
    if at == ANYONE {
        return Ok(None);
    }
    match check(usize::from(at)).and_then(|text| serde_json::from_str(text).ok()) {
        Some(check) => Ok(Some(check)),
        None => Err(format!(
            "the privilege table has no check {at} that reads for a {}",
            kind.segment()
        )),
    }
}

/// The privileges held per ACL path, as `GET /access/permissions` reported them: each path's
/// privileges as a JSON list. A JSON map, as the `preflight` record writes it: the module's one
/// map type, and no second form of it to build (issue 32).
pub type Held = Map<String, Value>;

/// [`Has`] of `held`.
pub fn holds(held: &Held) -> impl Fn(&str, &str) -> bool + '_ {
    |path, privilege| {
        held.get(path)
            .and_then(Value::as_array)
            .is_some_and(|privs| privs.iter().any(|p| p.as_str() == Some(privilege)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pve::privileges::{self, NO};
    use serde_json::json;

    const ACTED: Role = Role {
        guest: Guest::Acted,
        archive: false,
    };

    fn subjects() -> Subjects {
        Subjects {
            vmid: Some(9000),
            newid: Some(123),
            storages: vec!["local-zfs".into()],
            node: "pve1".into(),
            given: vec!["storage".into()],
            major: 9,
            ..Subjects::default()
        }
    }

    fn held(entries: &[(&str, &[&str])]) -> Held {
        entries
            .iter()
            .map(|(path, privs)| (path.to_string(), json!(privs)))
            .collect()
    }

    /// The check of a VM's `endpoint`, named as the privilege table names it.
    fn check(endpoint: &str) -> Check {
        let written = endpoint.replace("/nodes/{node}/qemu/{vmid}", "/{vmid}");
        requirement(requires(&written), GuestKind::Qemu)
            .unwrap()
            .unwrap()
    }

    fn missing(c: &Check, s: &Subjects, h: &Held) -> Vec<String> {
        judge(c, s, ACTED, &mut holds(h))
            .unwrap_or_default()
            .missing
    }

    #[test]
    fn every_check_of_the_table_parses() {
        for (endpoint, _) in ENDPOINTS {
            assert!(
                requirement(requires(endpoint), GuestKind::Qemu).is_ok(),
                "{endpoint}"
            );
        }
        for (endpoint, qemu, lxc) in GUEST_ENDPOINTS {
            for (kind, at) in [(GuestKind::Qemu, qemu), (GuestKind::Lxc, lxc)] {
                let read = requirement(requires(endpoint), kind);
                assert_eq!(read.is_ok(), *at != NO, "{endpoint}");
                assert!(read.is_err() || read.unwrap().is_some(), "{endpoint}");
            }
        }
        for check in privileges::CHECKS.lines().skip(1) {
            assert!(reads(check), "{check}");
            assert!(serde_json::from_str::<Value>(check).is_ok(), "{check}");
        }
        assert!(table_reads(privileges::CHECKS.as_bytes()));
    }

    /// Whether `text` is one check expression as the build reads the table's.
    fn reads(text: &str) -> bool {
        expr_end(text.as_bytes(), 0) == Some(text.len())
    }

    /// `requires` runs as the build compiles (each need is a constant): its refusal of an endpoint
    /// the privilege table lacks is a build error there (`cargo build`, `cargo test`; `cargo check`
    /// does not evaluate the constants), a panic here.
    #[test]
    #[should_panic(expected = "an endpoint the privilege table does not have")]
    fn the_build_refuses_an_endpoint_the_privilege_table_does_not_have() {
        let _ = requires("GET /{vmid}/no-such-endpoint");
    }

    /// Likewise a check line `CHECKS` does not have.
    #[test]
    #[should_panic(expected = "a check the privilege table does not have")]
    fn the_build_refuses_a_check_the_privilege_table_does_not_have() {
        let _ = line(ANYONE);
    }

    /// What a need requires that does not read as a check (none of the shipped table's:
    /// `every_check_of_the_table_parses`) is an error naming the line and the kind: a kind without
    /// the endpoint (`NO`), a line `CHECKS` does not have; one that does not read fails the build
    /// ([`table_reads`]).
    #[test]
    fn a_check_that_does_not_read_is_an_error() {
        let without = requirement(Requires([NO, 0]), GuestKind::Qemu);
        assert_eq!(
            without,
            Err("the privilege table has no check 255 that reads for a qemu".to_string())
        );
        let beyond = privileges::CHECKS.lines().skip(1).count() as u8;
        let read = requirement(Requires([0, beyond]), GuestKind::Lxc);
        let expected = format!("the privilege table has no check {beyond} that reads for a lxc");
        assert_eq!(read, Err(expected));
        assert!(!reads(r#"["perm","/","Sys.Audit"]"#));
        assert!(!reads(r#"["perm","/",["Sys.Audit"]"#));
        assert!(!table_reads(b"\n[\"perm\",\"/\",\"Sys.Audit\"]\n"));
    }

    #[test]
    fn a_number_in_a_checks_place_is_the_shared_check_of_that_index() {
        // Check 0 is `Sys.Audit` on `/`: `["when", "storage", 0]` judges as that check, given
        // `storage`.
        let first: Value = serde_json::from_str(privileges::check(0).unwrap()).unwrap();
        let when = json!(["when", "storage", 0]);
        let s = subjects();
        for held in [held(&[]), held(&[("/", &["Sys.Audit"])])] {
            let direct = judge(&first, &s, ACTED, &mut holds(&held));
            assert_eq!(judge(&when, &s, ACTED, &mut holds(&held)), direct);
        }
        assert_eq!(missing(&when, &s, &held(&[])), ["Sys.Audit on /"]);
        assert!(reads(r#"["when","storage",0]"#));
        let beyond = privileges::CHECKS.lines().count();
        assert!(!reads(&format!(r#"["and",{beyond}]"#)));
        assert!(!reads(r#"["and",-1]"#));
    }

    #[test]
    fn pve_check_expressions_parse_with_their_options() {
        assert!(reads(r#"["perm","/vms/{vmid}",["A","B"],"any",1]"#));
        let any = json!(["perm", "/vms/{vmid}", ["A", "B"], "any", 1]);
        let s = subjects();
        assert!(missing(&any, &s, &held(&[("/vms/9000", &["B"])])).is_empty());
        assert_eq!(missing(&any, &s, &held(&[])), ["A or B on /vms/9000"]);
        assert!(reads(
            r#"["perm","/pool/{pool}",["A"],"require_param","pool"]"#
        ));
        let pool = json!(["perm", "/pool/{pool}", ["A"], "require_param", "pool"]);
        assert_eq!(judge(&pool, &s, ACTED, &mut holds(&held(&[]))), None);
        let given = Subjects {
            given: vec!["pool".into()],
            ..subjects()
        };
        let judged = judge(&pool, &given, ACTED, &mut holds(&held(&[]))).unwrap();
        assert_eq!(
            judged.may,
            ["A on /pool/{pool} (each one the arguments name)"]
        );
        assert!(!reads(r#"["perm","/","A"]"#));
        assert!(!reads(r#"["xor"]"#));
        assert!(!reads(r#"["pve","9",["and"]]"#));
    }

    #[test]
    fn clone_names_each_privilege_it_lacks_on_its_path() {
        let c = check("POST /nodes/{node}/qemu/{vmid}/clone");
        let s = subjects();
        assert_eq!(
            missing(&c, &s, &held(&[])),
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
        assert!(missing(&c, &s, &all).is_empty());
        let mut paths = AclPaths::default();
        paths_of(&c, &s, ACTED, &mut paths);
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        assert_eq!(paths, ["/storage/local-zfs", "/vms/123", "/vms/9000"]);
    }

    #[test]
    fn clone_without_storage_is_not_held_to_a_storage() {
        let c = check("POST /nodes/{node}/qemu/{vmid}/clone");
        let s = Subjects {
            given: Vec::new(),
            ..subjects()
        };
        let held = held(&[("/vms/9000", &["VM.Clone"]), ("/vms/123", &["VM.Allocate"])]);
        assert!(missing(&c, &s, &held).is_empty());
    }

    #[test]
    fn any_of_several_privileges_is_enough_and_all_are_named_when_none_is_held() {
        let c = check("PUT /nodes/{node}/qemu/{vmid}/config");
        let s = subjects();
        let some = held(&[("/vms/9000", &["VM.Config.Options"])]);
        assert!(missing(&c, &s, &some).is_empty());
        let none = missing(&c, &s, &held(&[]));
        assert!(
            none[0].starts_with("VM.Config.Disk or VM.Config.CDROM"),
            "{none:?}"
        );
        assert!(none[0].ends_with("on /vms/9000"), "{none:?}");
    }

    #[test]
    fn create_needs_vm_allocate_on_the_new_vmid_and_each_option_its_class() {
        let c = check("POST /nodes/{node}/qemu");
        let s = Subjects {
            vmid: None,
            options: vec!["name".into(), "cores".into(), "net0".into()],
            ..subjects()
        };
        let made = Role {
            guest: Guest::Made,
            archive: false,
        };
        let lacks = judge(&c, &s, made, &mut holds(&held(&[]))).unwrap().missing;
        assert_eq!(
            lacks,
            [
                "VM.Allocate on /vms/123",
                "Datastore.AllocateSpace on /storage/local-zfs",
                "VM.Config.Options on /vms/123",
                "VM.Config.CPU on /vms/123",
                "VM.Config.Network on /vms/123"
            ]
        );
    }

    /// A class's privileges are all needed or any one is: none mixes `|` and `&` ([`separator`]).
    #[test]
    fn no_option_class_mixes_any_and_all() {
        for class in OPTIONS.lines().skip(1) {
            assert_eq!(class.split(';').count(), 3, "{class}");
            let privs = class.split(';').nth(1).unwrap_or_default();
            assert!(!(privs.contains('|') && privs.contains('&')), "{class}");
        }
    }

    #[test]
    fn an_option_of_two_classes_needs_both_and_startup_needs_sys_modify_on_the_root() {
        let checks = option_privileges("qemu", "/vms/1", &["startup".into()]);
        let paths: Vec<String> = checks
            .iter()
            .map(|(path, privs)| format!("{} {path}", privs.replace(['&', '|'], ",")))
            .collect();
        assert_eq!(paths, ["VM.Config.Options /vms/1", "Sys.Modify /"]);
        // lxc: a key no class names is VM.Config.Options; what create_vm extracts needs none.
        let lxc = option_privileges("lxc", "/vms/1", &["onboot".into(), "ostemplate".into()]);
        assert_eq!(lxc.len(), 1);
        assert_eq!(lxc[0].1, "VM.Config.Options");
    }

    #[test]
    fn a_check_of_one_version_applies_only_on_that_version() {
        let c = check("POST /nodes/{node}/qemu/{vmid}/agent/file-write");
        let nine = subjects();
        let eight = Subjects {
            major: 8,
            ..subjects()
        };
        assert_eq!(
            missing(&c, &nine, &held(&[])),
            ["VM.GuestAgent.FileWrite or VM.GuestAgent.Unrestricted on /vms/9000"]
        );
        assert_eq!(missing(&c, &eight, &held(&[])), ["VM.Monitor on /vms/9000"]);
        let monitor = held(&[("/vms/9000", &["VM.Monitor"])]);
        assert!(missing(&c, &eight, &monitor).is_empty());
        assert!(!missing(&c, &nine, &monitor).is_empty());
        // Whether the version matters: the verdicts on 8 and 9 differ, whatever is held.
        let same = |c: &Check| {
            [held(&[]), monitor.clone()].iter().all(|h| {
                judge(c, &nine, ACTED, &mut holds(h)) == judge(c, &eight, ACTED, &mut holds(h))
            })
        };
        assert!(!same(&c));
        let status = check("POST /nodes/{node}/qemu/{vmid}/status/start");
        assert!(same(&status));
        // create's one PVE 9 check applies only with `start`, which the package never sends.
        assert!(same(&check("POST /nodes/{node}/qemu")));
    }

    #[test]
    fn a_condition_not_known_makes_a_check_one_that_may_be_needed() {
        let c = check("POST /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback");
        let holding = held(&[("/vms/9000", &["VM.Snapshot"])]);
        let known = Subjects {
            given: vec!["start".into()],
            ..subjects()
        };
        assert_eq!(missing(&c, &known, &holding), ["VM.PowerMgmt on /vms/9000"]);
        let preflight = Subjects {
            unknown: vec!["start"],
            ..subjects()
        };
        let judged = judge(&c, &preflight, ACTED, &mut holds(&holding)).unwrap();
        assert!(judged.missing.is_empty());
        assert_eq!(judged.may, ["VM.PowerMgmt on /vms/9000 (with `start`)"]);
        assert!(
            missing(&c, &subjects(), &holding).is_empty(),
            "without start"
        );
    }

    #[test]
    fn an_unknown_guest_or_storage_is_checked_on_what_every_one_inherits() {
        let s = Subjects {
            node: "pve1".into(),
            ..Subjects::default()
        };
        let one = |s: &Subjects, t: &str| match s.paths(t, Guest::Acted, false) {
            Paths::Each(list) => list,
            Paths::Unknown(t) => vec![format!("unknown {t}")],
        };
        assert_eq!(one(&s, "/vms/{vmid}"), ["/vms"]);
        assert_eq!(one(&s, "/storage/{storage}"), ["/storage"]);
        assert_eq!(one(&s, "/nodes/{node}"), ["/nodes/pve1"]);
        assert_eq!(
            one(&s, "/sdn/zones/localnetwork/{bridge}"),
            ["unknown /sdn/zones/localnetwork/{bridge}"]
        );
        let before_one_method = Subjects {
            skip_unknown: true,
            ..s
        };
        assert!(one(&before_one_method, "/vms/{vmid}").is_empty());
        assert_eq!(one(&before_one_method, "/"), ["/"]);
    }

    #[test]
    fn a_privilege_only_one_version_has_tells_the_version() {
        assert_eq!(
            major_held(&held(&[("/vms/1", &["VM.Audit", "VM.Monitor"])])),
            Some(8)
        );
        let nine = held(&[("/", &["Sys.Audit"]), ("/vms/1", &["VM.GuestAgent.Audit"])]);
        assert_eq!(major_held(&nine), Some(9));
        assert_eq!(major_held(&held(&[("/vms/1", &["VM.Audit"])])), None);
    }

    #[test]
    fn the_major_version_is_read_from_pves_version() {
        assert_eq!(major_of("9.1.3"), 9);
        assert_eq!(major_of("8.4.14"), 8);
        assert_eq!(major_of("7.4"), 8);
        assert_eq!(major_of("10.0"), 9);
    }
}
