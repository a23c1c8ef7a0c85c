//! Guests as both models see them: how a guest is named, found, fingerprinted and recorded.

pub mod config;
pub mod evidence;
pub mod exec;
pub mod files;
pub mod gates;
pub mod identity;
pub mod locate;
pub mod permissions;
pub mod power;
pub mod provision;
pub mod readiness;
pub mod reboot;
pub mod record;
pub mod reference;
pub mod root_only;
pub mod settle;
pub mod snapshot_change;
pub mod snapshots;
pub mod upstream;
pub mod vmid_claim;
