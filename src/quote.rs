//! PVE's text as messages quote it: whole when short, else its beginning (where PVE puts the
//! reason) and a marker saying how much was cut. A 200 KB error page must not become a 200 KB
//! error, log line or record field.

use serde_json::Value;

/// The most characters of one piece of PVE text an error or log line quotes.
pub const MAX_QUOTED_CHARS: usize = 2_000;

/// `text`, cut to [`MAX_QUOTED_CHARS`] with a marker when longer.
pub fn bounded(text: &str) -> String {
    bounded_to(text, MAX_QUOTED_CHARS)
}

/// `text`, cut to `max` characters with a marker when longer.
pub fn bounded_to(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => {
            let rest = text[end..].chars().count();
            format!("{}… [cut: {rest} more characters]", &text[..end])
        }
    }
}

/// Appends `item` to a list a message names (`a, b, c`), `separator` between items. Built in
/// place rather than collected and joined: each collected chain costs the module its own copy of
/// the collecting code (issue 32).
pub fn push_item(list: &mut String, separator: &str, item: &str) {
    if !list.is_empty() {
        list.push_str(separator);
    }
    list.push_str(item);
}

/// `join` of a list of texts, as std's, but by one non-generic loop ([`join`]): std's own is a
/// generic copy for every item type joined, each larger than this (issue 32).
pub trait Joined {
    fn joined(&self, separator: &str) -> String;
}

impl<S: AsRef<str>> Joined for [S] {
    fn joined(&self, separator: &str) -> String {
        join(&mut self.iter().map(AsRef::as_ref), separator)
    }
}

/// The items, `separator` between each two.
fn join(items: &mut dyn Iterator<Item = &str>, separator: &str) -> String {
    let mut joined = String::new();
    for (at, item) in items.enumerate() {
        if at > 0 {
            joined.push_str(separator);
        }
        joined.push_str(item);
    }
    joined
}

/// A JSON answer as messages quote it (compact JSON, bounded).
pub fn value(data: &Value) -> String {
    bounded(&json(data))
}

/// `data` as compact JSON text, as its `Display` prints it, but through the serializer the
/// outcome's hand-over carries anyway: `Display` writes through a serializer of its own (with a
/// pretty one for `{:#}`), about 2 KB of the module (issue 32). A `Value` always serializes.
pub fn json(data: &Value) -> String {
    serde_json::to_string(data).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_is_what_display_prints() {
        let data = serde_json::json!({
            "name": "a \"quoted\" é\n\u{1}", "n": [1, -2, 1.5, 1e300, u64::MAX],
            "empty": {}, "none": null, "flag": true
        });
        assert_eq!(json(&data), data.to_string());
        assert_eq!(json(&Value::String("x".into())), "\"x\"");
    }

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(
            bounded("VM 100 is locked (backup)"),
            "VM 100 is locked (backup)"
        );
    }

    #[test]
    fn long_text_keeps_its_beginning_and_says_it_was_cut() {
        let text = format!("reason first: {}", "é".repeat(200_000));
        let quoted = bounded(&text);
        assert!(quoted.starts_with("reason first: é"));
        assert!(
            quoted.ends_with("… [cut: 198014 more characters]"),
            "{}",
            &quoted[quoted.len() - 60..]
        );
        assert!(quoted.chars().count() < MAX_QUOTED_CHARS + 40);
    }
}
