//! Argument rules, applied again in the core (zod applies them in the wrapper; a test proves they agree).
//!
//! Every error names the field and the rule, and is raised before any request is sent.

use crate::pve::read::FromJson;
use crate::quote::Joined;
use serde_json::{Map, Value};
use std::fmt;

/// A rejected argument: which field, and which rule it broke. Boxed: every parser passes its
/// refusals up through several `?`, and a pointer is one word to move where the two strings were
/// six (issue 32). Reads as the [`Refusal`] it holds.
#[derive(Clone, PartialEq, Eq)]
pub struct ArgError(Box<Refusal>);

/// What an [`ArgError`] says.
#[derive(Clone, PartialEq, Eq)]
pub struct Refusal {
    pub field: String,
    pub rule: String,
}

impl std::ops::Deref for ArgError {
    type Target = Refusal;

    fn deref(&self) -> &Refusal {
        &self.0
    }
}

/// As the struct of two fields it was before it was boxed: `ArgError { field: …, rule: … }`.
impl fmt::Debug for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgError")
            .field("field", &self.field)
            .field("rule", &self.rule)
            .finish()
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid argument `{}`: {}", self.field, self.rule)
    }
}

impl ArgError {
    /// Not inlined: inlined, every refusal in every parser carried its own copy of the two
    /// conversions to `String` (issue 32: 825,927 → 824,599 bytes of module).
    #[inline(never)]
    pub fn new(field: impl Into<String>, rule: impl Into<String>) -> Self {
        ArgError(Box::new(Refusal {
            field: field.into(),
            rule: rule.into(),
        }))
    }
}

/// How [`Fields::read_all`] reads one field of its table.
#[derive(Clone, Copy)]
pub enum Kind {
    /// An optional string ([`Fields::text`]).
    Text,
    /// A required string ([`Fields::required_text`]).
    RequiredText,
    /// [`Fields::line_str`].
    Line,
    /// [`Fields::optional_line_str`].
    OptionalLine,
    /// [`Fields::segment_str`].
    Segment,
    /// [`Fields::optional_segment_str`].
    OptionalSegment,
    /// A boolean with its default ([`Fields::flag_or`]).
    Flag(bool),
    /// An integer within `min..=max` with its default ([`Fields::int_in_or`]).
    IntOr(i32, i32, i32),
    /// An optional count within `min..=max` ([`Fields::optional_count_in`]); absent reads as -1,
    /// so [`Read::count`] is `None`. Unsigned, so a bound can be `u32::MAX` (a time in seconds).
    CountIn(u32, u32),
    /// An optional boolean ([`Fields::flag`]); absent reads as -1, so [`Read::flag`] is `None`.
    OptionalFlag,
}

/// One field of a parser's table: its key, how it is read and, for text, the method's own rule
/// (the rule it breaks, if any).
#[derive(Clone, Copy)]
pub struct Spec {
    pub key: &'static str,
    pub kind: Kind,
    pub rule: Option<fn(&str) -> Option<&'static str>>,
}

impl Spec {
    pub const fn new(key: &'static str, kind: Kind) -> Self {
        Spec {
            key,
            kind,
            rule: None,
        }
    }

    pub const fn rule(self, rule: fn(&str) -> Option<&'static str>) -> Self {
        Spec {
            rule: Some(rule),
            ..self
        }
    }
}

/// What [`Fields::read_all`] read of one field: its text, or its number (a flag is 0 or 1).
#[derive(Clone, Copy, Default)]
pub struct Read<'a> {
    pub text: Option<&'a str>,
    pub int: i64,
}

impl Read<'_> {
    /// The text, copied (`None` when absent).
    pub fn owned(&self) -> Option<String> {
        self.text.map(str::to_string)
    }

    /// The count read by [`Kind::CountIn`] (`None` when absent).
    pub fn count(&self) -> Option<u64> {
        u64::try_from(self.int).ok()
    }

    /// The boolean read by [`Kind::OptionalFlag`] (`None` when absent).
    pub fn flag(&self) -> Option<bool> {
        (self.int >= 0).then_some(self.int != 0)
    }

    /// The text, copied, or `default` when absent.
    pub fn owned_or(&self, default: &str) -> String {
        self.text.unwrap_or(default).to_string()
    }
}

/// The most fields one [`Fields::read_table`] walk reads (the ssh transport's 13).
pub const MOST: usize = 13;

/// What [`Fields::read_table`] read: one entry per field of its table, then defaults.
pub type Reads<'a> = [Read<'a>; MOST];

/// Reads the fields of one JSON object, naming each field (with its path) in errors. The path is
/// borrowed, a nested object's as its parent and its key: a `Fields` owns nothing, so no parser
/// drops one on each way out (issue 32); the path is made only for an error.
#[derive(Clone, Copy)]
pub struct Fields<'a> {
    object: &'a Map<String, Value>,
    parent: Option<&'a Fields<'a>>,
    /// The object's own name: its key in the parent, or the path given to [`Fields::of`].
    name: &'a str,
}

impl<'a> Fields<'a> {
    /// Reads `value` as an object; `path` names it in errors (empty for the top level).
    pub fn of(value: &'a Value, path: &'a str) -> Result<Self, ArgError> {
        match value.as_object() {
            Some(object) => Ok(Fields {
                object,
                parent: None,
                name: path,
            }),
            None => Err(ArgError::new(display_path(path), "must be an object")),
        }
    }

    /// The full path of a field, for error messages.
    pub fn path(&self, key: &str) -> String {
        let mut path = match self.parent {
            Some(parent) => parent.path(self.name),
            None => self.name.to_string(),
        };
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        path
    }

    /// A nested object.
    pub fn object(&'a self, key: &'a str) -> Result<Fields<'a>, ArgError> {
        match self.object.get(key) {
            Some(value) => match value.as_object() {
                Some(object) => Ok(Fields {
                    object,
                    parent: Some(self),
                    name: key,
                }),
                None => Err(ArgError::new(self.path(key), "must be an object")),
            },
            None => Err(self.missing(key)),
        }
    }

    /// An optional field of any deserializable type. `null` is refused, as zod refuses it: an
    /// absent field is omitted, not null.
    pub fn optional<T: FromJson>(&self, key: &str) -> Result<Option<T>, ArgError> {
        // The generic part is the read alone: the rest is one copy for every type (issue 32).
        match self.present(key)? {
            None => Ok(None),
            Some(value) => match T::from_json(value) {
                Ok(read) => Ok(Some(read)),
                Err(why) => Err(self.wrong_type(key, why)),
            },
        }
    }

    /// An optional string that must be one of `values`.
    pub fn optional_one_of(&self, key: &str, values: &[&str]) -> Result<Option<String>, ArgError> {
        let value = self.text(key)?;
        if value.is_some_and(|v| !values.contains(&v)) {
            let rule = format!("must be one of {}", values.joined(", "));
            return Err(ArgError::new(self.path(key), rule));
        }
        Ok(value.map(str::to_string))
    }

    /// The field's value, borrowed, unless it is absent; `null` is refused ([`Fields::optional`]).
    pub fn present(&self, key: &str) -> Result<Option<&'a Value>, ArgError> {
        match self.object.get(key) {
            Some(Value::Null) => Err(ArgError::new(
                self.path(key),
                "must not be null (omit the field instead)",
            )),
            found => Ok(found),
        }
    }

    fn wrong_type(&self, key: &str, why: String) -> ArgError {
        ArgError::new(self.path(key), format!("has the wrong type ({why})"))
    }

    fn missing(&self, key: &str) -> ArgError {
        ArgError::new(self.path(key), "is required")
    }

    /// A required field.
    pub fn required<T: FromJson>(&self, key: &str) -> Result<T, ArgError> {
        match self.optional(key)? {
            Some(read) => Ok(read),
            None => Err(self.missing(key)),
        }
    }

    /// An optional field with a default.
    pub fn or<T: FromJson>(&self, key: &str, default: T) -> Result<T, ArgError> {
        Ok(self.optional(key)?.unwrap_or(default))
    }

    /// A required string that is non-empty and single-line (no newline, carriage return or NUL).
    pub fn line(&self, key: &str) -> Result<String, ArgError> {
        self.line_str(key).map(str::to_string)
    }

    /// An optional single-line string.
    pub fn optional_line(&self, key: &str) -> Result<Option<String>, ArgError> {
        Ok(self.optional_line_str(key)?.map(str::to_string))
    }

    /// A required string that becomes one segment of an API path (node names, storage ids, disk keys).
    pub fn segment(&self, key: &str) -> Result<String, ArgError> {
        self.segment_str(key).map(str::to_string)
    }

    /// An optional [`Fields::segment`]: absent is `None`, `null` refused ([`Fields::optional`]).
    pub fn optional_segment(&self, key: &str) -> Result<Option<String>, ArgError> {
        Ok(self.optional_segment_str(key)?.map(str::to_string))
    }

    // The readers below borrow from the arguments: one copy each, whatever the caller builds, and a
    // parser that checks every field before it copies any holds nothing to drop on a refusal
    // (issue 32: each `?` after an owned value costs the module its drop code).

    /// An optional string, borrowed.
    pub fn text(&self, key: &str) -> Result<Option<&'a str>, ArgError> {
        match self.present(key)? {
            None => Ok(None),
            Some(value) => match value.as_str() {
                Some(text) => Ok(Some(text)),
                None => Err(self.wrong_kind(key, "a string", value)),
            },
        }
    }

    /// A required string, borrowed.
    pub fn required_text(&self, key: &str) -> Result<&'a str, ArgError> {
        match self.text(key)? {
            Some(text) => Ok(text),
            None => Err(self.missing(key)),
        }
    }

    /// An optional list, borrowed.
    pub fn list(&self, key: &str) -> Result<Option<&'a [Value]>, ArgError> {
        match self.present(key)? {
            None => Ok(None),
            Some(value) => match value.as_array() {
                Some(list) => Ok(Some(list)),
                None => Err(self.wrong_kind(key, "a list", value)),
            },
        }
    }

    /// A required list, borrowed.
    pub fn required_list(&self, key: &str) -> Result<&'a [Value], ArgError> {
        match self.list(key)? {
            Some(list) => Ok(list),
            None => Err(self.missing(key)),
        }
    }

    /// An optional boolean.
    pub fn flag(&self, key: &str) -> Result<Option<bool>, ArgError> {
        match self.present(key)? {
            None => Ok(None),
            Some(value) => match value.as_bool() {
                Some(flag) => Ok(Some(flag)),
                None => Err(self.wrong_kind(key, "a boolean", value)),
            },
        }
    }

    /// An optional boolean with a default.
    pub fn flag_or(&self, key: &str, default: bool) -> Result<bool, ArgError> {
        Ok(self.flag(key)?.unwrap_or(default))
    }

    /// An optional integer.
    pub fn int(&self, key: &str) -> Result<Option<i64>, ArgError> {
        match self.present(key)? {
            None => Ok(None),
            Some(value) => match value.as_i64() {
                Some(int) => Ok(Some(int)),
                None => Err(self.wrong_kind(key, "an integer", value)),
            },
        }
    }

    /// [`Fields::line`], borrowed.
    pub fn line_str(&self, key: &str) -> Result<&'a str, ArgError> {
        let value = self.required_text(key)?;
        self.rule(key, line_fault(value))?;
        Ok(value)
    }

    /// [`Fields::optional_line`], borrowed.
    pub fn optional_line_str(&self, key: &str) -> Result<Option<&'a str>, ArgError> {
        match self.present(key)? {
            Some(_) => self.line_str(key).map(Some),
            None => Ok(None),
        }
    }

    /// [`Fields::segment`], borrowed.
    pub fn segment_str(&self, key: &str) -> Result<&'a str, ArgError> {
        let value = self.line_str(key)?;
        self.rule(key, segment_fault(value))?;
        Ok(value)
    }

    /// [`Fields::optional_segment`], borrowed.
    pub fn optional_segment_str(&self, key: &str) -> Result<Option<&'a str>, ArgError> {
        match self.present(key)? {
            Some(_) => self.segment_str(key).map(Some),
            None => Ok(None),
        }
    }

    /// Reads the fields of `table` in its order into `out` (one entry each), stopping at the
    /// first refusal. A parser is then mostly its table: one walk here instead of a call and a
    /// refusal path per field in every parser (issue 32).
    pub fn read_all(&self, table: &[Spec], out: &mut [Read<'a>]) -> Result<(), ArgError> {
        for (spec, read) in table.iter().zip(out) {
            let key = spec.key;
            match spec.kind {
                Kind::Text => read.text = self.text(key)?,
                Kind::RequiredText => read.text = Some(self.required_text(key)?),
                Kind::Line => read.text = Some(self.line_str(key)?),
                Kind::OptionalLine => read.text = self.optional_line_str(key)?,
                Kind::Segment => read.text = Some(self.segment_str(key)?),
                Kind::OptionalSegment => read.text = self.optional_segment_str(key)?,
                Kind::Flag(default) => read.int = self.flag_or(key, default)? as i64,
                Kind::IntOr(min, max, default) => {
                    read.int = self.int_in_or(key, min.into(), max.into(), default.into())?
                }
                Kind::OptionalFlag => read.int = self.flag(key)?.map_or(-1, i64::from),
                Kind::CountIn(min, max) => {
                    let count = self.optional_count_in(key, min.into(), max.into())?;
                    read.int = count.map_or(-1, |c| c as i64)
                }
            }
            if let (Some(rule), Some(text)) = (spec.rule, read.text) {
                self.rule(key, rule(text))?;
            }
        }
        Ok(())
    }

    /// [`Fields::read_all`] of a whole table, its reads in table order, then defaults: a caller
    /// names as many as its table has fields (`let [a, b, ..] = …`). The array is made by one
    /// function for every table, not zeroed in each parser (issue 32).
    #[inline(always)]
    pub fn read_table<const N: usize>(&self, table: &[Spec; N]) -> Result<Reads<'a>, ArgError> {
        const { assert!(N <= MOST, "a table longer than MOST would be read in part") };
        self.read_most(table)
    }

    #[inline(never)]
    fn read_most(&self, table: &[Spec]) -> Result<Reads<'a>, ArgError> {
        let mut read = [Read::default(); MOST];
        self.read_all(table, &mut read)?;
        Ok(read)
    }

    /// `Err` naming the field when `fault` names a broken rule. The path is built only then.
    pub fn rule(&self, key: &str, fault: Option<&str>) -> Result<(), ArgError> {
        match fault {
            Some(rule) => Err(ArgError::new(self.path(key), rule)),
            None => Ok(()),
        }
    }

    fn wrong_kind(&self, key: &str, expected: &str, value: &Value) -> ArgError {
        let why = format!("expected {expected}, got {}", crate::quote::value(value));
        self.wrong_type(key, why)
    }

    /// An optional bag of PVE options (`config`: key → string or number), as text in key order.
    /// Keys follow PVE's option names (`^[a-zA-Z][a-zA-Z0-9_-]*$`: PVE's schema has `allow-ksm`,
    /// `amd-sev`, `intel-tdx`, …); `refused` names keys the bag may not hold, with the reason.
    pub fn options(
        &self,
        key: &str,
        refused: &[(&str, &str)],
    ) -> Result<Option<Vec<(String, String)>>, ArgError> {
        let Some(value) = self.present(key)? else {
            return Ok(None);
        };
        let Some(bag) = value.as_object() else {
            return Err(self.wrong_kind(key, "an object", value));
        };
        let mut options = Vec::with_capacity(bag.len());
        for (name, value) in bag {
            let field = format!("{}.{name}", self.path(key));
            let mut chars = name.chars();
            let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !well_formed {
                return Err(ArgError::new(
                    field,
                    "keys must match ^[a-zA-Z][a-zA-Z0-9_-]*$",
                ));
            }
            if let Some((_, why)) = refused.iter().find(|(k, _)| k == name) {
                return Err(ArgError::new(field, *why));
            }
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Number(number) => number.to_string(),
                // A flag as PVE's wire takes it; which keys are flags is the method's to check.
                Value::Bool(on) => if *on { "1" } else { "0" }.to_string(),
                _ => {
                    return Err(ArgError::new(
                        field,
                        "must be a string, a number or a boolean",
                    ))
                }
            };
            options.push((name.clone(), text));
        }
        Ok(Some(options))
    }

    /// A required integer within `min..=max`.
    pub fn int_in(&self, key: &str, min: i64, max: i64) -> Result<i64, ArgError> {
        match self.int(key)? {
            Some(value) => self.in_range(key, value, min, max),
            None => Err(self.missing(key)),
        }
    }

    /// An optional integer within `min..=max` (at least 0), as a count.
    pub fn optional_count_in(
        &self,
        key: &str,
        min: i64,
        max: i64,
    ) -> Result<Option<u64>, ArgError> {
        match self.int(key)? {
            Some(value) => Ok(Some(self.in_range(key, value, min.max(0), max)? as u64)),
            None => Ok(None),
        }
    }

    /// An optional integer within `min..=max`, with a default.
    pub fn int_in_or(&self, key: &str, min: i64, max: i64, default: i64) -> Result<i64, ArgError> {
        let value = self.int(key)?.unwrap_or(default);
        self.in_range(key, value, min, max)
    }

    /// `value`, unless it is outside `min..=max`.
    fn in_range(&self, key: &str, value: i64, min: i64, max: i64) -> Result<i64, ArgError> {
        if value < min || value > max {
            return Err(ArgError::new(
                self.path(key),
                format!("must be between {min} and {max} (got {value})"),
            ));
        }
        Ok(value)
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "arguments"
    } else {
        path
    }
}

/// Refuses empty strings and strings that could break a line-oriented protocol or log.
pub fn check_line(field: &str, value: &str) -> Result<(), ArgError> {
    match line_fault(value) {
        Some(rule) => Err(ArgError::new(field, rule)),
        None => Ok(()),
    }
}

/// The rule of [`check_line`] that `value` breaks, if any.
pub fn line_fault(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return Some("must not be empty");
    }
    if value.contains(['\n', '\r', '\0']) {
        return Some("must not contain a newline, carriage return or NUL");
    }
    None
}

/// Refuses a credential with any control character (a header value cannot carry one, and a
/// terminal would act on it). The rule is stated without echoing the value: it may be a secret.
pub fn check_credential(field: &str, value: &str) -> Result<(), ArgError> {
    match credential_fault(value) {
        Some(rule) => Err(ArgError::new(field, rule)),
        None => Ok(()),
    }
}

/// The rule of [`check_credential`] that `value` breaks, if any.
pub fn credential_fault(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return Some("must not be empty");
    }
    if value.chars().any(char::is_control) {
        return Some("must not contain a control character (newline, tab, NUL, DEL, …)");
    }
    None
}

/// Refuses values that could change the API path they are placed in: a path segment is a name made
/// of ASCII letters, digits, `.`, `_` and `-`, starting with a letter or digit (so never `.` or `..`).
pub fn check_segment(field: &str, value: &str) -> Result<(), ArgError> {
    match segment_fault(value) {
        Some(rule) => Err(ArgError::new(field, rule)),
        None => Ok(()),
    }
}

/// The rule of [`check_segment`] that `value` breaks, if any.
pub fn segment_fault(value: &str) -> Option<&'static str> {
    let mut chars = value.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    if !starts_well || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        return Some("must be a name of letters, digits, `.`, `_` and `-` starting with a letter or digit (it becomes part of an API path)");
    }
    None
}

/// PVE's `pve-storage-id` (pve-common `PVE/JSONSchema.pm` parse_storage_id):
/// `^[a-z][a-z0-9\-_.]*[a-z0-9]$`, case-insensitive.
pub fn is_storage_id(id: &str) -> bool {
    let b = id.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            b.len() >= 2
                && first.is_ascii_alphabetic()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Whether every byte of `text` is `ok`: one loop for every byte check of the firewall and HA
/// methods, not an iterator adapter compiled for each check (issue 32).
pub fn every_byte(text: &str, ok: fn(u8) -> bool) -> bool {
    for &b in text.as_bytes() {
        if !ok(b) {
            return false;
        }
    }
    true
}

/// An ASCII digit, as [`every_byte`] takes it.
pub fn digit(b: u8) -> bool {
    b.is_ascii_digit()
}

/// A byte of a name PVE takes (`[A-Za-z0-9\-_]`).
pub fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')
}

/// Whether `text` starts with an ASCII letter (its first byte: a letter is one byte).
pub fn starts_alphabetic(text: &str) -> bool {
    text.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
}

/// A group, IP set or alias name: PVE's `[A-Za-z][A-Za-z0-9\-_]+`, 2 to `max` characters
/// (`PVE/Firewall.pm` $security_group_name_pattern, $ipset_name_pattern, $ip_alias_pattern); an
/// HA rule id is the same pattern unbounded (pve-common `pve-configid`).
pub fn is_name(text: &str, max: usize) -> bool {
    let b = text.as_bytes();
    (2..=max).contains(&b.len()) && starts_alphabetic(text) && every_byte(text, name_byte)
}

/// PVE's `dns-name` format (pve-common `pve_verify_dns_name`): labels of letters, digits and inner
/// hyphens, joined by dots. The 255-character bound is a container hostname's `maxLength`.
pub fn is_dns_name(text: &str) -> bool {
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                first.is_ascii_alphanumeric()
                    && last.is_ascii_alphanumeric()
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            }
            _ => false,
        }
    };
    text.len() <= 255 && text.split('.').all(label_ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_field_is_named_with_its_path() {
        let v = json!({"transport": {}});
        let top = Fields::of(&v, "").unwrap();
        let t = top.object("transport").unwrap();
        assert_eq!(t.line("node").unwrap_err().field, "transport.node");
    }

    #[test]
    fn wrong_type_names_the_field() {
        let v = json!({"vmid": "abc"});
        let err = Fields::of(&v, "")
            .unwrap()
            .int_in("vmid", 100, 999_999_999)
            .unwrap_err();
        assert_eq!(err.field, "vmid");
        assert!(err.rule.contains("wrong type"), "{}", err.rule);
    }

    #[test]
    fn newline_and_nul_are_refused_in_lines() {
        assert!(check_line("node", "pve\n1").is_err());
        assert!(check_line("node", "pve\u{0}").is_err());
        assert!(check_line("node", "pve1").is_ok());
    }

    #[test]
    fn path_changing_characters_are_refused_in_segments() {
        for bad in ["a/b", "..", ".", "a?b", "a#b", "a%2f", "a b", "-x", "ü", ""] {
            assert!(check_segment("node", bad).is_err(), "{bad}");
        }
        assert!(check_segment("node", "pve-1.example").is_ok());
    }

    #[test]
    fn range_error_states_bounds_and_value() {
        let v = json!({"vmid": 99});
        let err = Fields::of(&v, "")
            .unwrap()
            .int_in("vmid", 100, 999_999_999)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid argument `vmid`: must be between 100 and 999999999 (got 99)"
        );
    }
}
