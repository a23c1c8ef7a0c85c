//! Reading pvesh's stdout: a task-creating call prints the worker's progress lines first, then the JSON.

use serde_json::Value;

/// How many line starts (from the end) are tried as the start of the JSON document.
const MAX_CANDIDATES: usize = 64;

/// The JSON document that ends pvesh's stdout; `Null` for empty output (pvesh prints nothing for null).
pub fn extract_json(stdout: &str) -> Option<Value> {
    let text = stdout.trim();
    if text.is_empty() {
        return Some(Value::Null);
    }
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    // The JSON starts at some line start; the progress lines before it are free text.
    let mut starts = Vec::new();
    for (newline, _) in text.match_indices('\n') {
        starts.push(newline + 1);
    }
    // A loop, not `find_map`: its fold was a copy of code of its own (issue 32).
    for &start in starts.iter().rev().take(MAX_CANDIDATES) {
        if let Ok(value) = serde_json::from_str(text.get(start..).unwrap_or_default()) {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_json_is_read() {
        assert_eq!(extract_json("{\"pid\":5}\n"), Some(json!({"pid": 5})));
    }

    #[test]
    fn progress_lines_before_the_json_are_skipped() {
        let out = "create full clone of drive scsi0 (local-zfs:base-9000-disk-0)\ntransferred 1.0 GiB of 32.0 GiB (3.12%)\n\"UPID:pve1:00001234:00005678:65AABBCC:qmclone:9000:root@pam:\"\n";
        assert_eq!(
            extract_json(out),
            Some(json!(
                "UPID:pve1:00001234:00005678:65AABBCC:qmclone:9000:root@pam:"
            ))
        );
    }

    #[test]
    fn multi_line_json_after_progress_is_read_whole() {
        let out = "progress 50%\n{\n  \"a\": [1,\n 2]\n}\n";
        assert_eq!(extract_json(out), Some(json!({"a": [1, 2]})));
    }

    #[test]
    fn empty_output_is_null() {
        assert_eq!(extract_json("  \n"), Some(Value::Null));
    }

    #[test]
    fn output_without_json_is_refused() {
        assert_eq!(extract_json("starting worker\nno json here"), None);
    }
}
