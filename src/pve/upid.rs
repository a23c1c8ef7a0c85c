//! PVE task identifiers: `UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:`.

use std::fmt;

/// A parsed UPID. The node is where the task runs, and so where its status must be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upid {
    raw: String,
    pub node: String,
    pub task_type: String,
    pub id: String,
    pub user: String,
    /// When the task started (Unix seconds): what the task list's `since` filter compares.
    pub starttime: u64,
}

impl Upid {
    /// Parses a UPID; `None` when the text is not one.
    pub fn parse(text: &str) -> Option<Upid> {
        let raw = text.trim();
        let body = raw.strip_prefix("UPID:")?;
        // node, pid, pstart, starttime, type, id, user, and the empty tail after the final ':'.
        // Read into a fixed array, not collected: a collect brought its own copy of the code.
        let mut fields = [""; 8];
        let mut parts = body.split(':');
        for field in &mut fields {
            *field = parts.next()?;
        }
        if parts.next().is_some() || !fields[7].is_empty() {
            return None;
        }
        let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
        if fields[0].is_empty()
            || !hex(fields[1])
            || !hex(fields[2])
            || !hex(fields[3])
            || fields[4].is_empty()
        {
            return None;
        }
        if fields[0].contains(['/', '?', '#', '%']) {
            return None;
        }
        Some(Upid {
            raw: raw.to_string(),
            node: fields[0].to_string(),
            task_type: fields[4].to_string(),
            id: fields[5].to_string(),
            user: fields[6].to_string(),
            starttime: u64::from_str_radix(fields[3], 16).ok()?,
        })
    }

    /// `<node>-<pid>-<starttime>`: what names the task uniquely, for a record's or a file's name.
    pub fn key(&self) -> String {
        let mut parts = self.raw.split(':');
        let pid = parts.nth(2).unwrap_or_default();
        let starttime = parts.nth(1).unwrap_or_default();
        format!("{}-{pid}-{starttime}", self.node)
    }

    /// Whether `caller` (a user, or a token `user@realm!name`) owns the task, as pve-manager
    /// `PVE/API2/Tasks.pm` $check_task_user decides: the task's user is the caller, or the task was
    /// started by a token and the caller is that token's user (a token never owns its user's tasks).
    /// Another user's task is read only with Sys.Audit on its node.
    pub fn started_by(&self, caller: &str) -> bool {
        self.user == caller
            || self
                .user
                .split_once('!')
                .is_some_and(|(user, _)| user == caller)
    }

    /// The UPID exactly as PVE wrote it.
    pub fn as_str(&self) -> &str {
        &self.raw
    }
}

impl fmt::Display for Upid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_its_users_and_a_tokens_task_also_its_users_but_not_the_other_way() {
        let by = |user: &str| Upid::parse(&format!("UPID:pve:1:2:3:qmstart:100:{user}:")).unwrap();
        assert!(by("alice@pve").started_by("alice@pve"));
        assert!(by("alice@pve!ci").started_by("alice@pve!ci"));
        assert!(by("alice@pve!ci").started_by("alice@pve"));
        assert!(!by("alice@pve").started_by("alice@pve!ci"));
        assert!(!by("alice@pve!ci").started_by("alice@pve!other"));
        assert!(!by("root@pam").started_by("alice@pve"));
    }

    #[test]
    fn parses_node_type_and_id() {
        let u = Upid::parse("UPID:pve2:000A1B2C:0012D687:6571E3A1:qmstart:100:root@pam!swamp:")
            .unwrap();
        assert_eq!(u.node, "pve2");
        assert_eq!(u.task_type, "qmstart");
        assert_eq!(u.id, "100");
        assert_eq!(u.user, "root@pam!swamp");
    }

    #[test]
    fn rejects_text_that_is_not_a_upid() {
        for bad in [
            "",
            "UPID:",
            "null",
            "UPID:pve:zz:1:1:qmstart:100:root@pam:",
            "UPID:pve:1:1:1:qmstart:100:root@pam",
            "UPID:pve:1:1:1:qmstart:100:root@pam::",
            "UPID:pve:1:1:1:qmstart:100:root@pam:x",
            "UPID:pve:1:1:1:qmstart:root@pam:",
        ] {
            assert!(Upid::parse(bad).is_none(), "{bad}");
        }
    }
}
