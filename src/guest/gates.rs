//! Safety gates: which guests a destructive method may touch, decided by the guest's PVE tags.
//! Data, not code, so both models (qemu and lxc) apply the same rules; `force: true` overrides them.

use crate::quote::Joined;

/// The tag that marks a guest as managed by this package (`clone`/`create` add it).
pub const MANAGED_TAG: &str = "swamp";

/// The tags a method requires and the tags it refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// The action as a message says it ("stop", "delete").
    pub action: &'static str,
    /// Every one of these tags must be present.
    pub required: &'static [&'static str],
    /// None of these tags may be present.
    pub refused: &'static [&'static str],
}

/// `stop` (and `shutdown`): only managed guests.
pub const STOP: Gate = Gate {
    action: "stop",
    required: &[MANAGED_TAG],
    refused: &[],
};

/// `shutdown`: the same rule as `stop`.
pub const SHUTDOWN: Gate = Gate {
    action: "shut down",
    ..STOP
};

/// `suspend`: the same rule as `stop` (a paused guest serves nothing).
pub const SUSPEND: Gate = Gate {
    action: "suspend",
    ..STOP
};

/// `reboot`: the same rule as `stop`.
pub const REBOOT: Gate = Gate {
    action: "reboot",
    ..STOP
};

/// `delete`: only managed guests, and never one marked production or protected.
pub const DELETE: Gate = Gate {
    action: "delete",
    required: &[MANAGED_TAG],
    refused: &["production", "protected"],
};

/// `convertToTemplate`: a template cannot run or change its disks again, so delete's rules.
pub const TEMPLATE: Gate = Gate {
    action: "convert (to a template)",
    ..DELETE
};

impl Gate {
    /// Why this gate refuses a guest with these tags (split, any case); `None` when it lets it pass.
    pub fn refusal(&self, tags: &[String]) -> Option<String> {
        let has = |wanted: &str| tags.iter().any(|t| t.eq_ignore_ascii_case(wanted));
        if let Some(missing) = self.required.iter().find(|t| !has(t)) {
            let listed = match tags.is_empty() {
                true => "none".to_string(),
                false => tags.joined(", "),
            };
            return Some(format!(
                "it does not carry the `{missing}` tag (its tags: {listed}), so this model does not manage it — add the tag in PVE"
            ));
        }
        self.refused
            .iter()
            .find(|t| has(t))
            .map(|tag| format!("it carries the `{tag}` tag — remove the tag in PVE"))
    }

    /// `Err` with the full refusal unless the guest passes or `force` overrides (then `Ok` with
    /// the overridden refusal, which the caller logs).
    pub fn check(
        &self,
        noun: &str,
        vmid: u32,
        tags: &[String],
        force: bool,
    ) -> Result<Option<String>, String> {
        let Some(why) = self.refusal(tags) else {
            return Ok(None);
        };
        let message = format!("refusing to {} {noun} {vmid}: {why}", self.action);
        match force {
            true => Ok(Some(format!(
                "force: true overrides the safety gate ({message})"
            ))),
            false => Err(format!("{message}, or pass force: true to override")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn stop_requires_the_managed_tag_in_any_case() {
        assert!(STOP.refusal(&tags(&["web"])).unwrap().contains("`swamp`"));
        assert_eq!(STOP.refusal(&tags(&["SWAMP"])), None);
        assert!(STOP.refusal(&[]).unwrap().contains("its tags: none"));
    }

    #[test]
    fn stop_does_not_care_about_production() {
        assert_eq!(STOP.refusal(&tags(&["swamp", "production"])), None);
    }

    #[test]
    fn delete_refuses_production_and_protected() {
        for tag in ["production", "Protected"] {
            let why = DELETE.refusal(&tags(&["swamp", tag])).unwrap();
            assert!(why.contains(&tag.to_ascii_lowercase()), "{why}");
        }
        assert_eq!(DELETE.refusal(&tags(&["swamp", "web"])), None);
    }

    #[test]
    fn force_overrides_and_says_what_it_overrode() {
        let refused = DELETE.check("VM", 100, &tags(&["web"]), false).unwrap_err();
        assert!(
            refused.starts_with("refusing to delete VM 100:"),
            "{refused}"
        );
        assert!(refused.contains("force: true"));
        let forced = DELETE.check("VM", 100, &tags(&["web"]), true).unwrap();
        assert!(forced.unwrap().contains("overrides the safety gate"));
        assert_eq!(DELETE.check("VM", 100, &tags(&["swamp"]), false), Ok(None));
    }
}
