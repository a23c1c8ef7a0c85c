//! A node's storages as the methods that place something on one see them (lxc `create`'s volumes
//! and template, `downloadUrl`'s file): whether a storage can take a content type, named as the
//! node lists it, and list answers read tolerantly.

use crate::explain::hint;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::responses::{list_of, NodeStorage};
use serde_json::Value;

/// A list answer as `T`s, or why it could not be read.
pub fn listed<T: crate::pve::read::FromJson>(
    answer: Result<Value, PveError>,
) -> Result<Vec<T>, String> {
    match answer {
        Ok(data) => list_of(&data).ok_or_else(|| {
            format!(
                "PVE answered {data} where a list was expected — {}",
                hint(ErrorKind::Malformed)
            )
        }),
        Err(e) => Err(format!("{e} — {}", hint(e.kind))),
    }
}

/// Why a storage cannot take content of type `content`; `None` when it can.
pub fn storage_refusal(store: &NodeStorage, content: &str) -> Option<String> {
    if store.enabled == Some(false) {
        return Some("is disabled".to_string());
    }
    if store.active == Some(false) {
        return Some("is not active (offline?)".to_string());
    }
    if !store.offers(content) {
        let offered = store.content_types();
        let listed = match offered.is_empty() {
            true => "none".to_string(),
            false => offered.join(", "),
        };
        return Some(format!(
            "does not allow content {content} (its content: {listed})"
        ));
    }
    None
}

/// A storage the node's list does not hold: it does not exist there, or the token may not audit it.
pub fn missing_storage(id: &str, node: &str, storages: &[NodeStorage]) -> String {
    let listed: Vec<&str> = storages.iter().map(|s| s.storage.as_str()).collect();
    format!(
        "storage {id} does not exist on node {node}, or the token may not audit it (storages listed: {})",
        if listed.is_empty() { "none".to_string() } else { listed.join(", ") }
    )
}
