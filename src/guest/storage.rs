//! A node's storages as the methods that place something on one see them (lxc `create`'s volumes
//! and template, `downloadUrl`'s file): whether a storage can take a content type, named as the
//! node lists it, and list answers read tolerantly.

use crate::explain::hint;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::responses::{list_of, NodeStorage};
use crate::quote::Joined;
use serde_json::Value;

/// A list answer as `T`s, or why it could not be read.
pub fn listed<T: crate::pve::read::FromJson>(
    answer: Result<Value, PveError>,
) -> Result<Vec<T>, String> {
    match answer {
        Ok(data) => list_of(&data).ok_or_else(|| not_a_list(&data)),
        Err(e) => Err(unanswered(e)),
    }
}

/// Why a list was not had: the error with its hint, one copy for every type `listed` reads.
fn unanswered(e: PveError) -> String {
    format!("{e} — {}", hint(e.kind))
}

/// Why an answer is not the list asked for: one copy for every type `listed` reads.
fn not_a_list(data: &Value) -> String {
    format!(
        "PVE answered {data} where a list was expected — {}",
        hint(ErrorKind::Malformed),
        data = crate::quote::json(data)
    )
}

/// Why a storage cannot take content of type `content`; `None` when it can.
pub fn storage_refusal(store: &NodeStorage, content: &str) -> Option<String> {
    if let Some(why) = unusable(store) {
        return Some(why);
    }
    if !store.offers(content) {
        let offered = store.content_types();
        let listed = match offered.is_empty() {
            true => "none".to_string(),
            false => offered.joined(", "),
        };
        return Some(format!(
            "does not allow content {content} (its content: {listed})"
        ));
    }
    None
}

/// Why a storage can take nothing now (disabled, or not active on the node); `None` when it can.
pub fn unusable(store: &NodeStorage) -> Option<String> {
    match (store.enabled, store.active) {
        (Some(false), _) => Some("is disabled".to_string()),
        (_, Some(false)) => Some("is not active (offline?)".to_string()),
        _ => None,
    }
}

/// Storage `id` as `node` lists it, judged on `answer` to `GET /nodes/{node}/storage` (sent by
/// the course itself), or why it cannot be used: the list could not be read, or it does not hold
/// the storage.
pub fn storage_in(
    answer: Result<Value, PveError>,
    node: &str,
    id: &str,
) -> Result<NodeStorage, String> {
    let mut storages: Vec<NodeStorage> = listed(answer).map_err(|why| {
        format!(
            "the storages of node {node} could not be listed (GET /nodes/{node}/storage): {why}"
        )
    })?;
    match storages.iter().position(|s| s.storage == id) {
        Some(at) => Ok(storages.swap_remove(at)),
        None => Err(missing_storage(id, node, &storages)),
    }
}

/// A storage the node's list does not hold: it does not exist there, or the token may not audit it.
pub fn missing_storage(id: &str, node: &str, storages: &[NodeStorage]) -> String {
    let mut listed = String::new();
    for storage in storages {
        crate::quote::push_item(&mut listed, ", ", &storage.storage);
    }
    if listed.is_empty() {
        listed.push_str("none");
    }
    format!(
        "storage {id} does not exist on node {node}, or the token may not audit it (storages listed: {listed})"
    )
}
