//! Bringing a new guest into being — qemu `clone` and lxc `create` alike.
//!
//! - A VMID that is already taken counts as done only when it holds the requested guest: the same
//!   name (a VM's `name`, a container's `hostname`) AND the managed `swamp` tag, i.e. a re-run. Any
//!   other occupant fails: "VMID <n> is in use by another guest".
//! - After the creating task, the new guest must be seen (located and its status read) with the
//!   requested name, and carry the managed tag — added and read back when it is missing.

use super::config::{key_type, shows};
use super::evidence::Evidence;
use super::gates::MANAGED_TAG;
use super::placement::note;
use super::settle::lock_of;
use crate::host::Host;
use crate::pve::endpoints::GuestKind;
use crate::pve::flex;
use crate::pve::flex::has_tag;
use crate::pve::responses::GuestStatus;
use crate::quote::Joined;
use crate::run::Run;

pub fn is_requested(status: &GuestStatus, name: &str) -> bool {
    status.name.as_deref() == Some(name) && has_managed_tag(status)
}

/// Whether the guest carries the managed tag.
pub fn has_managed_tag(status: &GuestStatus) -> bool {
    // Without case, as split_tags lowercases: no list built to ask one tag (issue 32).
    status
        .tags
        .as_deref()
        .is_some_and(|tags| has_tag(tags, MANAGED_TAG))
}

/// `named "db", tags "prod", locked (create)`, for messages.
pub fn occupant(status: &GuestStatus) -> String {
    let mut text = format!(
        "named {:?}, tags {:?}",
        status.name.as_deref().unwrap_or(""),
        status.tags.as_deref().unwrap_or("")
    );
    if let Some(lock) = lock_of(status) {
        for part in [", locked (", lock, ": an operation on it is still running)"] {
            text.push_str(part);
        }
    }
    text
}

/// Every resource setting the request asked for (`key`, `value` as sent) reads back as requested,
/// by the read-back rule of `guest::config` (exact, typed by PVE's schema), in the config read when
/// the new guest was found after its task (`tags` in its last status, which the managed tag may have
/// changed since). `Err` names each setting that does not, with both values.
pub fn verify_settings<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    settings: &[(String, String)],
    task: &str,
) -> Result<(), String> {
    let mut missed = Vec::new();
    for (key, wanted) in settings {
        let observed = match key.as_str() {
            "tags" => ev.status.tags.clone(),
            _ => ev.config.get(key).and_then(flex::string_of),
        };
        match &observed {
            Some(seen) if shows(run.kind, key, wanted, seen) => {}
            Some(seen) => note(
                &mut missed,
                format_args!("`{key}` is {seen:?}, not the requested {wanted:?}"),
            ),
            None => note(
                &mut missed,
                format_args!("`{key}` is not set (requested {wanted:?})"),
            ),
        }
    }
    match missed.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{} exists, but not as requested: {} — check the {task} task's log and the storage/template defaults",
            ev.label(run),
            missed.joined("; ")
        )),
    }
}

/// The value of option `key` in a create's `config` bag.
pub fn option<'a>(config: &'a [(String, String)], key: &str) -> Option<&'a str> {
    for (k, value) in config {
        if k == key {
            return Some(value);
        }
    }
    None
}

/// Appends a create request's numbers that were given, then its `config` bag with the managed tag
/// added to its tags (one `tags` parameter).
pub fn push_create_options(
    params: &mut Vec<(String, String)>,
    numbers: &[(&str, Option<u64>)],
    config: &[(String, String)],
) {
    for (key, value) in numbers {
        if let Some(value) = value {
            params.push((key.to_string(), value.to_string()));
        }
    }
    let tags = option(config, "tags").unwrap_or_default();
    params.push(("tags".into(), with_managed_tag(tags)));
    for (key, value) in config {
        if key != "tags" {
            params.push((key.clone(), value.clone()));
        }
    }
}

/// The create parameters that are config keys of `kind`'s schema and must read back as requested,
/// but those checked on their own (`skip`: the name, a password PVE keeps only hashed).
pub fn settings_of(
    kind: GuestKind,
    params: Vec<(String, String)>,
    skip: &[&str],
) -> Vec<(String, String)> {
    let mut settings = Vec::new();
    for (key, value) in params {
        if !skip.contains(&key.as_str()) && key_type(kind, &key).is_some() {
            settings.push((key, value));
        }
    }
    settings
}

/// `tags` with the managed tag added (PVE's `;`-separated list), unless it is there already.
pub fn with_managed_tag(tags: &str) -> String {
    // Written in place, not collected and joined (issue 32).
    let (mut list, mut managed) = (String::new(), false);
    for tag in tags.split([';', ',', ' ']) {
        if !tag.is_empty() {
            managed |= tag.eq_ignore_ascii_case(MANAGED_TAG);
            crate::quote::push_item(&mut list, ";", tag);
        }
    }
    if !managed {
        crate::quote::push_item(&mut list, ";", MANAGED_TAG);
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_managed_tag_is_added_once_keeping_the_others() {
        assert_eq!(with_managed_tag(""), "swamp");
        assert_eq!(with_managed_tag("base,web"), "base;web;swamp");
        assert_eq!(with_managed_tag("SWAMP;web"), "SWAMP;web");
    }
}
