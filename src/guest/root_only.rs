//! What PVE lets only root@pam do, refused up front when the transport authenticates with an API
//! token. An API token is never root@pam to these checks, even a token of root@pam (PVE compares
//! `$rpcenv->get_user()`, the token id); over the ssh transport pvesh runs as root@pam, and they all
//! pass. The rules are PVE's Perl:
//! - qemu-server `PVE/API2/Qemu.pm` `$check_vm_modify_config_perm`: a config key outside every
//!   privilege group (`args`, `hookscript`, `arch`, `affinity`, `hugepages`, `vmgenid`, `lock`, …)
//!   dies "only root can set '<key>' config", for setting and for deleting it;
//! - pve-container `PVE/LXC.pm` `check_ct_modify_config_perm`: any feature flag on a privileged
//!   container, any flag but `nesting` on an unprivileged one, a bind or device mount point, device
//!   passthrough (`devN`) and the hookscript are 403 for a token.

use crate::global_args::TransportSettings;
use crate::guest::placement::numbered;
use crate::quote::Joined;
use std::fmt;

/// Who PVE sees behind the configured transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The api transport: an API token.
    Token,
    /// The ssh transport: pvesh as root@pam.
    RootPam,
}

impl Caller {
    pub fn of(transport: &TransportSettings) -> Self {
        match transport {
            TransportSettings::Api(_) => Caller::Token,
            TransportSettings::Ssh(_) => Caller::RootPam,
        }
    }
}

/// The qemu config keys of PVE 9's schema that `$check_vm_modify_config_perm` maps to no privilege
/// group, so only root@pam may set or delete them (every other key of the schema has a group; a key
/// the schema does not know is PVE's to refuse, with a 400).
const QEMU_ROOT_ONLY: &[&str] = &[
    "affinity",
    "amd-sev",
    "arch",
    "args",
    "hookscript",
    "hugepages",
    "intel-tdx",
    "ivshmem",
    "keephugepages",
    "lock",
    "spice_enhancements",
    "vmgenid",
];

fn qemu_root_only(key: &str) -> bool {
    QEMU_ROOT_ONLY.contains(&key) || numbered(key, "parallel")
}

const USE_SSH: &str = "use the ssh transport, where pvesh runs as root@pam";

/// What of `method` only root@pam may do, for `preflight` to say before it is tried: `None` when
/// the caller is root@pam (the ssh transport) or the method has no such part. (The refusals
/// themselves are [`qemu_refusal`] and [`ct_refusal`], applied to the actual arguments.)
pub fn root_only_note(caller: Caller, qemu: bool, method: &str) -> Option<String> {
    if caller == Caller::RootPam {
        return None;
    }
    let what = match (qemu, method) {
        (true, "setConfig") => format!(
            "the config keys outside every privilege group ({}, parallelN) need root@pam",
            QEMU_ROOT_ONLY.joined(", ")
        ),
        (false, "setConfig" | "create") => "feature flags other than nesting (any on a privileged container), bind and device mount points, devN and hookscript need root@pam".to_string(),
        _ => return None,
    };
    Some(format!(
        "{what}, and an API token never is, not even one of root@pam: {USE_SSH}"
    ))
}

/// The first qemu config key (set or deleted) a token may not touch, as the refusal to report.
pub fn qemu_refusal(caller: Caller, keys: &[&str]) -> Option<String> {
    if caller == Caller::RootPam {
        return None;
    }
    let key = keys.iter().find(|k| qemu_root_only(k))?;
    Some(format!(
        "config key `{key}`: PVE lets only root@pam change it (qemu-server refuses an API token, even one of root@pam: \"only root can set '{key}' config\"); {USE_SSH}"
    ))
}

/// The feature flags of a `features` value (`nesting=1,keyctl=1`), borrowed from it.
fn feature_flags(text: &str) -> Vec<(&str, &str)> {
    let mut flags = Vec::new();
    for (key, value) in text.split(',').filter_map(|part| part.split_once('=')) {
        let key = key.trim();
        if !key.is_empty() {
            flags.push((key, value.trim()));
        }
    }
    flags
}

/// Whether going from `old` to `new` features changes a flag other than `nesting`
/// (check_ct_modify_config_perm's comparison).
fn changes_more_than_nesting(old: Option<&str>, new: &str) -> bool {
    let old = feature_flags(old.unwrap_or(""));
    let new = feature_flags(new);
    if old.is_empty() {
        return !(new.is_empty() || new.len() == 1 && new[0].0 == "nesting");
    }
    fn value<'a>(list: &[(&str, &'a str)], key: &str) -> &'a str {
        list.iter().find(|(k, _)| *k == key).map_or("", |(_, v)| *v)
    }
    // Over both lists by slices, not a chained iterator: smaller in the module.
    for list in [&old, &new] {
        for (key, _) in list {
            if *key != "nesting" && value(&old, key) != value(&new, key) {
                return true;
            }
        }
    }
    false
}

/// The mount point type of an lxc `rootfs`/`mpN` value: `volume`, `bind` or `device`.
fn mount_type(value: &str) -> &'static str {
    let volume = value.split(',').next().unwrap_or_default();
    let volume = volume.strip_prefix("volume=").unwrap_or(volume);
    match volume {
        v if v.starts_with("/dev/") => "device",
        v if v.starts_with('/') => "bind",
        _ => "volume",
    }
}

/// A container's current settings that the rules depend on.
#[derive(Debug, Clone, Copy)]
pub struct CtState<'a> {
    pub unprivileged: bool,
    pub features: Option<&'a str>,
}

/// The first container option a token may not set (or delete), as the refusal to report.
pub fn ct_refusal(
    caller: Caller,
    options: &[(String, String)],
    deleted: &[&str],
    state: CtState<'_>,
) -> Option<String> {
    if caller == Caller::RootPam {
        return None;
    }
    for (key, value) in options {
        let key = key.as_str();
        let is_mount = key == "rootfs" || numbered(key, "mp");
        if is_mount && mount_type(value) != "volume" {
            let kind = mount_type(value);
            return flagged(
                format_args!("{key} {value:?}"),
                format_args!("mount point type {kind} is only allowed for root@pam"),
                "give a storage volume (`<storage>:<GiB>`) instead, or ",
            );
        }
        if let Some(refusal) = ct_key_refusal(key, Some(value), state) {
            return Some(refusal);
        }
    }
    deleted
        .iter()
        .find_map(|key| ct_key_refusal(key, None, state))
}

/// A container refusal: `what` PVE refuses a token, PVE's own words for it, and what to do
/// `instead`; the parts are `format_args!`, written straight into the message (issue 32).
fn flagged(what: fmt::Arguments<'_>, pve: fmt::Arguments<'_>, instead: &str) -> Option<String> {
    Some(format!(
        "{what}: with an API token PVE refuses it (pve-container: \"{pve}\"); {instead}{USE_SSH}"
    ))
}

fn ct_key_refusal(key: &str, value: Option<&str>, state: CtState<'_>) -> Option<String> {
    if numbered(key, "dev") {
        return flagged(
            format_args!("`{key}`"),
            format_args!("configuring device passthrough is only allowed for root@pam"),
            "",
        );
    }
    if key == "hookscript" {
        return flagged(
            format_args!("`hookscript`"),
            format_args!("changing the hookscript is only allowed for root@pam"),
            "",
        );
    }
    if key != "features" {
        return None;
    }
    if !state.unprivileged {
        return flagged(
            format_args!("features on a privileged container"),
            format_args!(
                "changing feature flags for privileged container is only allowed for root@pam"
            ),
            "make the container unprivileged (unprivileged: true), or ",
        );
    }
    let more = match value {
        Some(new) => changes_more_than_nesting(state.features, new),
        None => changes_more_than_nesting(None, state.features.unwrap_or("")),
    };
    more.then(|| {
        flagged(
            format_args!("features {:?}", value.unwrap_or("(deleted)")),
            format_args!("changing feature flags (except nesting) is only allowed for root@pam"),
            "set only `nesting` (features: \"nesting=1\"), or ",
        )
    })
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const UNPRIV: CtState<'static> = CtState {
        unprivileged: true,
        features: None,
    };

    #[test]
    fn a_token_may_not_set_root_only_qemu_keys_but_root_pam_may() {
        for key in [
            "args",
            "hookscript",
            "arch",
            "affinity",
            "hugepages",
            "vmgenid",
            "lock",
        ] {
            let refusal = qemu_refusal(Caller::Token, &[key]).unwrap();
            assert!(
                refusal.contains(&format!("only root can set '{key}' config")),
                "{refusal}"
            );
            assert!(refusal.contains("ssh transport"), "{refusal}");
            assert_eq!(qemu_refusal(Caller::RootPam, &[key]), None);
        }
    }

    #[test]
    fn a_token_may_set_keys_with_a_privilege_and_unknown_keys_are_left_to_pve() {
        let keys = [
            "nosuchoption",
            "cores",
            "memory",
            "net0",
            "scsi1",
            "ipconfig0",
            "tags",
            "name",
            "agent",
            "efidisk0",
        ];
        assert_eq!(qemu_refusal(Caller::Token, &keys), None);
    }

    #[test]
    fn features_on_a_privileged_container_are_root_only() {
        let state = CtState {
            unprivileged: false,
            features: None,
        };
        let r = ct_refusal(
            Caller::Token,
            &opts(&[("features", "nesting=1")]),
            &[],
            state,
        )
        .unwrap();
        assert!(r.contains("privileged container"), "{r}");
        assert_eq!(
            ct_refusal(
                Caller::RootPam,
                &opts(&[("features", "nesting=1")]),
                &[],
                state
            ),
            None
        );
    }

    #[test]
    fn nesting_alone_passes_any_other_flag_is_root_only() {
        assert_eq!(
            ct_refusal(
                Caller::Token,
                &opts(&[("features", "nesting=1")]),
                &[],
                UNPRIV
            ),
            None
        );
        let r = ct_refusal(
            Caller::Token,
            &opts(&[("features", "nesting=1,keyctl=1")]),
            &[],
            UNPRIV,
        )
        .unwrap();
        assert!(r.contains("except nesting"), "{r}");
        assert!(r.contains("nesting=1"), "{r}");
    }

    #[test]
    fn changing_only_nesting_of_existing_features_passes() {
        let state = CtState {
            unprivileged: true,
            features: Some("keyctl=1,nesting=0"),
        };
        assert_eq!(
            ct_refusal(
                Caller::Token,
                &opts(&[("features", "keyctl=1,nesting=1")]),
                &[],
                state
            ),
            None
        );
        assert!(ct_refusal(
            Caller::Token,
            &opts(&[("features", "nesting=1")]),
            &[],
            state
        )
        .is_some());
        assert!(ct_refusal(Caller::Token, &[], &["features"], state).is_some());
    }

    #[test]
    fn bind_mounts_devices_and_hookscripts_are_root_only() {
        let cases = [
            ("mp0", "/srv/data,mp=/data"),
            ("dev0", "/dev/ttyUSB0"),
            ("hookscript", "local:snippets/h.pl"),
        ];
        for (key, value) in cases {
            assert!(
                ct_refusal(Caller::Token, &opts(&[(key, value)]), &[], UNPRIV).is_some(),
                "{key}"
            );
        }
        assert_eq!(
            ct_refusal(
                Caller::Token,
                &opts(&[("mp0", "local-lvm:8,mp=/data")]),
                &[],
                UNPRIV
            ),
            None
        );
    }
}
