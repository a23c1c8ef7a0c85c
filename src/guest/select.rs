//! `where`: which guests a fleet-wide method selects, as an expression over each guest's fields
//! that the host evaluates — in swamp, CEL in the environment swamp gives extensions
//! (`ctx.createCelEnvironment()`, js/_lib/host.ts). The core decides which fields an expression
//! sees, when it is checked and what a failure means; the host only evaluates.

use crate::args::ArgError;
use crate::host::Host;
use serde_json::Value;
use std::mem::discriminant;

/// The fields an expression sees, named as a guest's record names them.
const FIELDS: &str =
    "vmid, name, node, status, tags, lock, template, cpus, maxMemBytes, maxDiskBytes";

/// Every field of [`FIELDS`] at the value it has when a record lacks it: an expression is then
/// total over any record (`lock == ""` is a guest without a lock, `tags` an empty list).
fn blank() -> Value {
    // Parsed, not built with `json!`: the parser is in the module anyway.
    let text = r#"{"vmid":0,"name":"","node":"","status":"","tags":[],"lock":"",
        "template":false,"cpus":0,"maxMemBytes":0,"maxDiskBytes":0}"#;
    serde_json::from_str(text).unwrap_or_default()
}

/// The fields of a guest's record (one just listed, or one stored) an expression sees: a field
/// the record lacks, or holds as another JSON type, keeps its blank value.
fn fields_of(record: &Value) -> Value {
    let mut fields = blank();
    if let Value::Object(out) = &mut fields {
        for (key, value) in out.iter_mut() {
            let held = record.get(key.as_str());
            if let Some(held) = held.filter(|h| discriminant(*h) == discriminant(&*value)) {
                value.clone_from(held);
            }
        }
    }
    fields
}

/// Refuses an expression that cannot select, before anything is sent: it does not compile, or
/// over a guest with every field blank it fails or yields no bool (an unknown field, a type
/// mismatch, a number for a verdict).
pub fn check<H: Host>(host: &H, expression: &str) -> Result<(), ArgError> {
    // Only the failure matters: `.err()` keeps one Option, where `.map(drop)` built a second
    // Result (issue 32).
    match selects(host, expression, &blank()).err() {
        None => Ok(()),
        Some(e) => Err(ArgError::new(
            "where",
            format!("must be a CEL expression over the guest's fields ({FIELDS}) that yields a bool: {e}"),
        )),
    }
}

/// Whether the guest a record describes satisfies the expression; `Err` with the evaluator's
/// words when it cannot be evaluated over this guest.
pub fn selects<H: Host>(host: &H, expression: &str, record: &Value) -> Result<bool, String> {
    host.select(expression, &crate::quote::json(&fields_of(record)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_a_record_lacks_or_holds_in_another_type_is_blank() {
        let fields = fields_of(&json!({"vmid": 101, "name": "web", "lock": null,
                                        "tags": "a;b", "node": "pve2", "pending": {}}));
        assert_eq!(fields["vmid"], 101);
        assert_eq!(fields["name"], "web");
        assert_eq!(fields["node"], "pve2");
        assert_eq!(fields["lock"], "");
        assert_eq!(fields["tags"], json!([]));
        assert_eq!(fields.get("pending"), None);
    }

    #[test]
    fn the_fields_named_in_the_rule_are_the_fields_an_expression_sees() {
        let mut named: Vec<&str> = FIELDS.split(", ").collect();
        named.sort_unstable();
        let blank = blank();
        let seen: Vec<&str> = blank
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(named, seen);
    }
}
