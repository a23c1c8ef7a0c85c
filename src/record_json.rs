//! One builder of the records written as JSON: a record's fields put into a `serde_json` map key by
//! key, an absent optional left out. One copy of each insertion for every record, where a derived
//! `Serialize` per record type costs its own serializer, its drop glue and a `to_value` of its own
//! (issue 32). `serde_json`'s map keeps its keys sorted, so a record comes out as its derived
//! serializer wrote it through `to_value`: same keys, same values, same order.

use serde_json::{Map, Value};

/// `key: value` into a record: one copy of the insertion for every field.
#[inline(never)]
pub fn set(record: &mut Map<String, Value>, key: &str, value: Value) {
    record.insert(key.to_string(), value);
}

/// `key: text` into a record, left out when there is no text.
pub fn put(record: &mut Map<String, Value>, key: &str, text: Option<&str>) {
    if let Some(text) = text {
        set(record, key, Value::from(text));
    }
}

/// `key: value` into a record, left out when there is none (`skip_serializing_if = "Option::is_none"`).
#[inline(never)]
pub fn opt(record: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        set(record, key, value);
    }
}

/// `key: [texts]` into a record, left out when empty (`skip_serializing_if = "Vec::is_empty"`).
#[inline(never)]
pub fn list(record: &mut Map<String, Value>, key: &str, items: &[String]) {
    if !items.is_empty() {
        set(record, key, Value::from(items.to_vec()));
    }
}

/// `key: count` into a record, left out when there is none.
#[inline(never)]
pub fn count(record: &mut Map<String, Value>, key: &str, value: Option<u64>) {
    opt(record, key, value.map(Value::from));
}

/// `key: number` into a record, left out when there is none.
#[inline(never)]
pub fn number(record: &mut Map<String, Value>, key: &str, value: Option<f64>) {
    opt(record, key, value.map(Value::from));
}

/// `key: value` into a record, left out when null (`skip_serializing_if = "Value::is_null"`).
#[inline(never)]
pub fn value(record: &mut Map<String, Value>, key: &str, value: &Value) {
    if !value.is_null() {
        set(record, key, value.clone());
    }
}
