//! Reading PVE answers into types. Each type names its fields once through [`Obj`]: the tolerant
//! readers of [`super::flex`] for what PVE formats loosely (a metric that cannot be read is left
//! out), and strict ones where a wrong type means the answer is not what it claims (then the
//! whole answer is unreadable, and the error says which field). Written over `serde_json::Value`
//! rather than derived: serde's derived readers were about 40 KB of the shipped module for what
//! these few lines say (issue 32).

use super::flex;
use serde_json::{Map, Value};

/// A JSON value (a PVE answer, an argument) read into a type; `Err` says why it does not fit.
pub trait FromJson: Sized {
    fn from_json(value: &Value) -> Result<Self, String>;
}

impl FromJson for Value {
    fn from_json(value: &Value) -> Result<Self, String> {
        Ok(value.clone())
    }
}

impl FromJson for Map<String, Value> {
    fn from_json(value: &Value) -> Result<Self, String> {
        Ok(object(value)?.0.clone())
    }
}

impl FromJson for String {
    fn from_json(value: &Value) -> Result<Self, String> {
        value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("expected a string, got {}", crate::quote::value(value)))
    }
}

impl FromJson for bool {
    fn from_json(value: &Value) -> Result<Self, String> {
        value
            .as_bool()
            .ok_or_else(|| format!("expected a boolean, got {}", crate::quote::value(value)))
    }
}

impl FromJson for i64 {
    fn from_json(value: &Value) -> Result<Self, String> {
        value
            .as_i64()
            .ok_or_else(|| format!("expected an integer, got {}", crate::quote::value(value)))
    }
}

impl<T: FromJson> FromJson for Vec<T> {
    // Inlined into its one caller per list type (`client::shaped`, `Obj::required`): a list
    // type's reader is then one function, not two that move the result between them (issue 32).
    #[inline(always)]
    fn from_json(value: &Value) -> Result<Self, String> {
        // Only the loop and the reading of one entry are instantiated for every type read as a
        // list; the list's check and the messages are one copy ([`entries`], [`entry_error`]), and
        // no closure is handed over per type (issue 32).
        let mut read = Vec::new();
        for (at, item) in entries(value)?.iter().enumerate() {
            match T::from_json(item) {
                Ok(entry) => read.push(entry),
                Err(e) => return Err(entry_error(at, e)),
            }
        }
        Ok(read)
    }
}

/// The entries of the list `value`, or why it is not one.
fn entries(value: &Value) -> Result<&Vec<Value>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("expected a list, got {}", crate::quote::value(value)))
}

/// The error of the entry at `at` that could not be read, named by its place.
fn entry_error(at: usize, why: String) -> String {
    format!("entry {at}: {why}")
}

/// An answer's object, read field by field.
pub struct Obj<'a>(pub &'a Map<String, Value>);

/// `value` as an object to read, or why it is not one.
pub fn object(value: &Value) -> Result<Obj<'_>, String> {
    value
        .as_object()
        .map(Obj)
        .ok_or_else(|| format!("expected an object, got {}", crate::quote::value(value)))
}

impl Obj<'_> {
    /// A field read tolerantly: missing, `null` or unreadable is `None`.
    // Inlined: a lookup and one call, for each type read loosely (issue 32).
    #[inline(always)]
    pub fn opt<T>(&self, key: &str, read: fn(&Value) -> Option<T>) -> Option<T> {
        self.0.get(key).and_then(read)
    }

    pub fn opt_string(&self, key: &str) -> Option<String> {
        self.opt(key, flex::string_of)
    }

    pub fn opt_u64(&self, key: &str) -> Option<u64> {
        self.opt(key, flex::u64_of)
    }

    pub fn opt_bool(&self, key: &str) -> Option<bool> {
        self.opt(key, flex::bool_of)
    }

    /// A field that must be there, read strictly as `T`.
    pub fn required<T: FromJson>(&self, key: &str) -> Result<T, String> {
        match self.0.get(key) {
            Some(value) => T::from_json(value).map_err(|e| field_error(key, Some(e))),
            None => Err(field_error(key, None)),
        }
    }

    /// A field read strictly as `T` when present, else `T`'s default. Inlined: each `T` has one
    /// or two readers calling it (issue 32).
    #[inline(always)]
    pub fn or_default<T: FromJson + Default>(&self, key: &str) -> Result<T, String> {
        match self.0.get(key) {
            Some(_) => self.required(key),
            None => Ok(T::default()),
        }
    }

    /// [`Obj::or_default`] of the first of `keys` present (PVE spells some keys two ways).
    /// Inlined into its one reader per `T` (issue 32).
    #[inline(always)]
    pub fn either<T: FromJson + Default>(&self, keys: [&str; 2]) -> Result<T, String> {
        match keys.iter().find(|k| self.0.contains_key(**k)) {
            Some(key) => self.required(key),
            None => Ok(T::default()),
        }
    }
}

/// Why field `key` could not be read: missing (`None`) or not readable as asked. One copy for
/// every type `Obj::required` reads.
fn field_error(key: &str, why: Option<String>) -> String {
    match why {
        None => format!("missing field `{key}`"),
        Some(why) => format!("`{key}`: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_loose_field_that_cannot_be_read_is_left_out_not_an_error() {
        let answer = json!({"mem": "lots", "maxmem": "1024", "agent": 1});
        let o = object(&answer).unwrap();
        assert_eq!(o.opt_u64("mem"), None);
        assert_eq!(o.opt_u64("maxmem"), Some(1024));
        assert_eq!(o.opt_bool("agent"), Some(true));
        assert_eq!(o.opt_string("missing"), None);
    }

    #[test]
    fn a_strict_field_of_another_type_names_the_field() {
        let answer = json!({"status": 7});
        let error = object(&answer)
            .unwrap()
            .required::<String>("status")
            .unwrap_err();
        assert!(error.starts_with("`status`: expected a string"), "{error}");
        let missing = object(&answer).unwrap().required::<String>("volid");
        assert_eq!(missing.unwrap_err(), "missing field `volid`");
    }

    #[test]
    fn a_list_with_one_entry_of_another_shape_says_which() {
        let error = Vec::<String>::from_json(&json!(["a", 2])).unwrap_err();
        assert!(error.starts_with("entry 1: expected a string"), "{error}");
        assert!(Vec::<String>::from_json(&json!({"a": 1})).is_err());
    }

    #[test]
    fn a_key_pve_spells_two_ways_is_read_under_either() {
        let answer = json!({"allowed-nodes": ["pve2"]});
        let o = object(&answer).unwrap();
        let nodes: Vec<String> = o.either(["allowed_nodes", "allowed-nodes"]).unwrap();
        assert_eq!(nodes, ["pve2"]);
        let none: Vec<String> = o.either(["a", "b"]).unwrap();
        assert!(none.is_empty());
    }
}
