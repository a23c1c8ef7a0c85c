//! Tolerant readers for PVE's loosely typed JSON: booleans as 0/1, numbers as strings, and so on.
//!
//! Each reader yields `None` for a value it cannot read, instead of failing the whole answer:
//! a metric PVE formats differently must not hide the power state next to it.

use serde_json::Value;

/// `true`/`false`, `0`/`1`, `"0"`/`"1"`.
pub fn bool_of(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_f64().map(|f| f != 0.0),
        Value::String(s) => match s.as_str() {
            "1" | "true" => Some(true),
            "0" | "false" | "" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// A number, or a string holding one.
pub fn f64_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => number_in(s),
        _ => None,
    }
    .filter(|f: &f64| f.is_finite())
}

/// A decimal written as text (`1.5`, `-2`, `007`, `2e3`), read by serde_json's number reader: the
/// core carries no second float parser (std's, with its tables, weighed about 15 KB of the module;
/// issue 32). JSON forbids leading zeros, which PVE's text may carry: they are dropped first.
pub fn number_in(text: &str) -> Option<f64> {
    let text = text.trim();
    let (sign, digits) = match text.strip_prefix('-') {
        Some(digits) => ("-", digits),
        None => ("", text),
    };
    let unpadded = digits.trim_start_matches('0');
    let zero = match unpadded.chars().next() {
        None if !digits.is_empty() => "0",
        Some('.' | 'e' | 'E') => "0",
        _ => "",
    };
    let json = format!("{sign}{zero}{unpadded}");
    serde_json::from_str::<Value>(&json)
        .ok()?
        .as_f64()
        .filter(|f| f.is_finite())
}

/// A non-negative integer, or a string holding one.
pub fn u64_of(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An integer (may be negative), or a string holding one.
pub fn i64_of(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => signed_in(s.trim()),
        _ => None,
    }
}

/// `text` read as `i64`'s parser reads it (an optional `+` or `-`, then digits, within range),
/// through the `u64` parser the core has anyway: `i64`'s own weighed about 500 bytes of the module
/// for the agent's exit code and signal alone (issue 32).
fn signed_in(text: &str) -> Option<i64> {
    match text.strip_prefix('-') {
        // `u64`'s parser takes a `+` of its own, which `i64`'s refuses after a `-`.
        Some(digits) if digits.starts_with('+') => None,
        // i64::MIN's magnitude is one more than i64::MAX.
        Some(digits) => 0i64.checked_sub_unsigned(digits.parse().ok()?),
        None => i64::try_from(text.parse::<u64>().ok()?).ok(),
    }
}

/// A string; numbers are rendered (PVE config values may be either).
pub fn string_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A fraction as a percentage with two decimals; `None` when it is not a finite number (PVE may send
/// `1e308`): a record holds a number or leaves the field out, never `null`.
pub fn pct(fraction: f64) -> Option<f64> {
    Some((fraction * 10_000.0).round() / 100.0).filter(|p| p.is_finite())
}

/// `part` of `whole` as a percentage ([`pct`]); `None` without both or for an empty whole.
pub fn percent(part: Option<u64>, whole: Option<u64>) -> Option<f64> {
    match (part, whole) {
        (Some(p), Some(w)) if w > 0 => pct(p as f64 / w as f64),
        _ => None,
    }
}

/// What separates PVE's tags in its list: `;`, and `,` and spaces also seen.
const TAG_SEPARATORS: [char; 3] = [';', ',', ' '];

/// Splits PVE's tag list (`;`-separated; `,` and spaces also seen) into lowercase tags.
pub fn split_tags(text: &str) -> Vec<String> {
    let mut tags = Vec::new();
    for tag in text.split(TAG_SEPARATORS) {
        let tag = tag.trim();
        if !tag.is_empty() {
            tags.push(tag.to_ascii_lowercase());
        }
    }
    tags
}

/// Whether PVE's tag list holds `tag` (not empty), without case: [`split_tags`]'s answer without
/// building the list (a sync asks it of every listed guest).
pub fn has_tag(text: &str, tag: &str) -> bool {
    for listed in text.split(TAG_SEPARATORS) {
        if listed.trim().eq_ignore_ascii_case(tag) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn booleans_arrive_as_numbers() {
        assert_eq!(bool_of(&json!(1)), Some(true));
        assert_eq!(bool_of(&json!(0)), Some(false));
        assert_eq!(bool_of(&json!("1")), Some(true));
        assert_eq!(bool_of(&json!([])), None);
    }

    #[test]
    fn numbers_arrive_as_strings() {
        assert_eq!(u64_of(&json!("42")), Some(42));
        assert_eq!(f64_of(&json!("0.5")), Some(0.5));
        assert_eq!(u64_of(&json!(-1)), None);
        assert_eq!(i64_of(&json!(-9)), Some(-9));
    }

    #[test]
    fn a_signed_integer_in_text_is_read_as_i64s_parser_reads_it() {
        let texts = [
            "0",
            "-0",
            "+0",
            "7",
            "+7",
            "-7",
            "",
            "+",
            "-",
            "+-5",
            "-+5",
            "--5",
            "++5",
            "5-",
            "1 2",
            "0x10",
            "007",
            "-007",
            "1e3",
            "1.0",
            "9223372036854775807",
            "9223372036854775808",
            "+9223372036854775807",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "-18446744073709551616",
            "٣",
        ];
        for text in texts {
            assert_eq!(signed_in(text), text.parse::<i64>().ok(), "{text:?}");
        }
        // Every text of up to four signs and digits.
        let mut short = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = short
                .iter()
                .flat_map(|t| ["+", "-", "0", "9"].map(|c| format!("{t}{c}")))
                .collect();
            for text in &longer {
                assert_eq!(signed_in(text), text.parse::<i64>().ok(), "{text:?}");
            }
            short = longer;
        }
        assert_eq!(i64_of(&json!(" -9 ")), Some(-9));
    }

    #[test]
    fn decimals_written_as_text_are_read_as_pve_writes_them() {
        assert_eq!(number_in("1.5"), Some(1.5));
        assert_eq!(number_in(" 007 "), Some(7.0));
        assert_eq!(number_in("-0.25"), Some(-0.25));
        assert_eq!(number_in("0"), Some(0.0));
        assert_eq!(number_in("00.5"), Some(0.5));
        assert_eq!(number_in("2e3"), Some(2000.0));
        for text in [
            "", "-", "abc", "1.5G", "inf", "NaN", "1e999", "[1]", "\"1\"", "true",
        ] {
            assert_eq!(number_in(text), None, "{text:?}");
        }
    }

    #[test]
    fn percentages_are_finite_numbers_or_nothing() {
        assert_eq!(pct(0.123456), Some(12.35));
        assert_eq!(pct(1e308), None);
        assert_eq!(percent(Some(1), Some(4)), Some(25.0));
        assert_eq!(
            percent(Some(u64::MAX), Some(1)),
            Some(1.8446744073709552e21)
        );
        assert_eq!(percent(Some(1), Some(0)), None);
    }

    #[test]
    fn tags_split_on_semicolons_and_commas() {
        assert_eq!(split_tags("swamp;Prod,web "), vec!["swamp", "prod", "web"]);
        assert!(split_tags("").is_empty());
    }

    #[test]
    fn a_tag_is_held_exactly_when_the_split_list_holds_it() {
        for text in ["swamp;Prod,web ", "", " ;a b;;A+b.c-d,", "\tweb\t;prod"] {
            for tag in ["web", "prod", "a", "a+b.c-d", "swamp", "we", "b"] {
                let split = split_tags(text).iter().any(|t| t.eq_ignore_ascii_case(tag));
                assert_eq!(has_tag(text, tag), split, "{text:?} {tag:?}");
            }
        }
    }
}
