//! JSON text written field by field, for what crosses to JavaScript as text (the outcome, the
//! host's requests): the same text serde_json's derived serializers write, without a copy of
//! serde_json's serializer code for every type and field type that crosses (issue 32). Strings
//! and JSON values are still written by serde_json, so their escapes and numbers are its own.

use serde_json::Value;

/// A JSON object being written, its fields in the order they are added.
pub struct Object(String);

impl Object {
    pub fn new() -> Self {
        Object(String::from("{"))
    }

    /// The next field's key (a Rust identifier's camelCase name: nothing to escape).
    fn key(&mut self, key: &str) -> &mut String {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push('"');
        self.0.push_str(key);
        self.0.push_str("\":");
        &mut self.0
    }

    /// A field whose value is already JSON text.
    pub fn raw(mut self, key: &str, json: &str) -> Self {
        self.key(key).push_str(json);
        self
    }

    pub fn str(self, key: &str, value: &str) -> Self {
        self.raw(key, &string(value))
    }

    /// A string, or `null` without one.
    pub fn opt_str(self, key: &str, value: Option<&str>) -> Self {
        match value {
            Some(value) => self.str(key, value),
            None => self.raw(key, "null"),
        }
    }

    pub fn u64(self, key: &str, value: u64) -> Self {
        self.raw(key, &value.to_string())
    }

    pub fn bool(self, key: &str, value: bool) -> Self {
        self.raw(key, if value { "true" } else { "false" })
    }

    pub fn value(self, key: &str, value: &Value) -> Self {
        self.raw(key, &crate::quote::json(value))
    }

    pub fn end(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

impl Default for Object {
    fn default() -> Self {
        Object::new()
    }
}

/// `text` as a JSON string, quoted and escaped.
pub fn string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// A JSON array of items already JSON text.
pub fn array(items: &mut dyn Iterator<Item = String>) -> String {
    let mut out = String::from("[");
    for (at, item) in items.enumerate() {
        if at > 0 {
            out.push(',');
        }
        out.push_str(&item);
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_written_in_order_with_serde_json_escapes() {
        let text = Object::new()
            .str("a", "x \"y\" é\n")
            .opt_str("b", None)
            .u64("c", u64::MAX)
            .bool("d", false)
            .value("e", &serde_json::json!({"z": 1.5, "a": [null]}))
            .raw("f", &array(&mut ["1", "2"].iter().map(|s| s.to_string())))
            .end();
        assert_eq!(
            text,
            r#"{"a":"x \"y\" é\n","b":null,"c":18446744073709551615,"d":false,"e":{"a":[null],"z":1.5},"f":[1,2]}"#
        );
        assert_eq!(Object::new().end(), "{}");
        assert_eq!(array(&mut std::iter::empty()), "[]");
    }
}
