//! The text `{:?}` prints for the few non-string shapes messages quote (an optional text, a list
//! of texts, a list of pairs, a char), written out by hand. std's `Debug` for these goes through
//! core's `DebugTuple`/`DebugList`/`DebugSet` builders and their `PadAdapter`, about 2 KB of the
//! module for a handful of messages (issue 32). Each writer's test holds it equal to std's output.
//! A text itself is still quoted with std's `{:?}` of `str` (its escapes need Unicode's tables).

use std::fmt::Write;

/// `Some("x")` or `None`, as `{:?}` prints an `Option<String>`.
pub fn option(value: Option<&str>) -> String {
    match value {
        Some(text) => format!("Some({text:?})"),
        None => "None".to_string(),
    }
}

/// `["a", "b"]`, as `{:?}` prints a `Vec<String>`.
pub fn list(items: &[String]) -> String {
    let mut text = String::from("[");
    for (at, item) in items.iter().enumerate() {
        let comma = if at > 0 { ", " } else { "" };
        let _ = write!(text, "{comma}{item:?}");
    }
    text.push(']');
    text
}

/// `[("a", "b")]`, as `{:?}` prints a `Vec<(String, String)>`.
pub fn pairs(items: &[(String, String)]) -> String {
    let mut text = String::from("[");
    for (at, (key, value)) in items.iter().enumerate() {
        let comma = if at > 0 { ", " } else { "" };
        let _ = write!(text, "{comma}({key:?}, {value:?})");
    }
    text.push(']');
    text
}

/// `'c'`, as `{:?}` prints a `char`: its one-character text as `{:?}` prints it, requoted. That
/// is the `str` formatter the module carries anyway: `char::escape_debug` written out here
/// carried a second copy of the escapes and their Unicode tables (issue 32). The two quotes are
/// the escapes that differ: a `char` escapes `'` and leaves `"` as it is.
pub fn char(c: char) -> String {
    let quoted = match c {
        '\'' => return "'\\''".to_string(),
        '"' => return "'\"'".to_string(),
        _ => format!("{:?}", c.encode_utf8(&mut [0; 4])),
    };
    let inner = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"'));
    format!("'{}'", inner.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    /// Texts with every kind of escape `{:?}` writes: quotes, backslash, control, non-ASCII
    /// (printable, grapheme-extending, unassigned) and an empty text.
    const TEXTS: [&str; 8] = [
        "",
        "plain",
        "say \"hi\" it's",
        "back\\slash",
        "tab\tnl\ncr\r nul\0 bell\u{7}",
        "ünïcødé — ✓ 日本",
        "\u{301}combining e\u{301}",
        "\u{10ffff} \u{200b} \u{feff}",
    ];

    #[test]
    fn option_prints_as_debug() {
        assert_eq!(super::option(None), format!("{:?}", None::<String>));
        for text in TEXTS {
            let value = Some(text.to_string());
            assert_eq!(super::option(value.as_deref()), format!("{value:?}"));
        }
    }

    #[test]
    fn list_prints_as_debug() {
        let mut items: Vec<String> = Vec::new();
        assert_eq!(super::list(&items), format!("{items:?}"));
        for text in TEXTS {
            items.push(text.to_string());
            assert_eq!(super::list(&items), format!("{items:?}"));
        }
    }

    #[test]
    fn pairs_print_as_debug() {
        let mut items: Vec<(String, String)> = Vec::new();
        assert_eq!(super::pairs(&items), format!("{items:?}"));
        for (at, text) in TEXTS.iter().enumerate() {
            items.push((text.to_string(), TEXTS[TEXTS.len() - 1 - at].to_string()));
            assert_eq!(super::pairs(&items), format!("{items:?}"));
        }
    }

    #[test]
    fn char_prints_as_debug() {
        let odd = [
            '\'',
            '"',
            '\\',
            '\t',
            '\n',
            '\r',
            '\0',
            '\u{7}',
            '\u{7f}',
            ' ',
            'é',
            '✓',
            '\u{301}',
            '\u{200b}',
            '\u{10ffff}',
        ];
        for c in TEXTS.iter().flat_map(|t| t.chars()).chain(odd) {
            assert_eq!(super::char(c), format!("{c:?}"));
        }
    }
}
