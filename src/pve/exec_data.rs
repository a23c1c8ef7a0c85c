//! How bytes cross PVE's guest-agent exec API (qemu-server `PVE/QemuServer/Agent.pm`).
//!
//! Input: PVE base64-encodes the *decoded* `input-data` string (`qemu_exec`: `encode_base64`), which
//! takes each character as one byte. A character U+0080–U+00FF reaches the guest as one Latin-1
//! byte, and one above U+00FF makes Perl die (a 500; nothing runs). So to hand the guest the exact
//! UTF-8 bytes of a text, each byte is sent as the character with that code.
//!
//! Output: `qemu_exec_status` base64-decodes `out-data`/`err-data` to raw bytes and PVE's JSON
//! encoder writes each byte as one character. Read back, each character's code is one guest byte;
//! those bytes are then decoded as UTF-8. pvesh prints the same JSON (`to_json` with `utf8`), so
//! both transports carry the same characters.

/// `text`'s UTF-8 bytes, one character per byte: what `input-data` must be for the guest to read
/// exactly `text` encoded as UTF-8.
pub fn input_for_pve(text: &str) -> String {
    let mut input = String::with_capacity(text.len());
    for byte in text.bytes() {
        input.push(char::from(byte));
    }
    input
}

/// One output stream of a command, as the guest wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestOutput {
    /// The bytes decoded as UTF-8; an invalid sequence is replaced by U+FFFD (see `invalid_utf8`).
    pub text: String,
    /// How many bytes the guest wrote (what the agent's capture limit counts).
    pub bytes: usize,
    /// Whether the bytes were not valid UTF-8, so `text` holds replacement characters.
    pub invalid_utf8: bool,
    /// Whether the answer was not in PVE's one-byte-per-character form (a character above U+00FF):
    /// then it is kept as the text it already is, and `bytes` counts its UTF-8 encoding.
    pub already_text: bool,
}

/// Each character's code as one byte; `None` when one is above U+00FF (not one byte per character).
fn byte_per_char(data: &str) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(data.len());
    for c in data.chars() {
        bytes.push(u8::try_from(u32::from(c)).ok()?);
    }
    Some(bytes)
}

/// Reads an `out-data`/`err-data` value of `exec-status` back into the guest's output.
pub fn output_from_pve(data: &str) -> GuestOutput {
    let Some(bytes) = byte_per_char(data) else {
        return GuestOutput {
            text: data.to_string(),
            bytes: data.len(),
            invalid_utf8: false,
            already_text: true,
        };
    };
    let count = bytes.len();
    match String::from_utf8(bytes) {
        Ok(text) => GuestOutput {
            text,
            bytes: count,
            invalid_utf8: false,
            already_text: false,
        },
        Err(e) => GuestOutput {
            text: String::from_utf8_lossy(e.as_bytes()).into_owned(),
            bytes: count,
            invalid_utf8: true,
            already_text: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_sends_each_utf8_byte_as_one_character() {
        assert_eq!(input_for_pve("a"), "a");
        assert_eq!(input_for_pve("ü"), "\u{c3}\u{bc}");
        assert_eq!(input_for_pve("€").chars().count(), 3);
        assert!(input_for_pve("🚀 ü €")
            .chars()
            .all(|c| u32::from(c) <= 0xff));
    }

    #[test]
    fn output_of_utf8_bytes_reads_back_as_the_text() {
        let out = output_from_pve("gr\u{c3}\u{bc}\u{c3}\u{9f}e");
        assert_eq!(out.text, "grüße");
        assert_eq!(out.bytes, 7);
        assert!(!out.invalid_utf8);
    }

    #[test]
    fn output_round_trips_every_input() {
        for text in ["ü", "€", "🚀", "a\nb", "plain"] {
            assert_eq!(output_from_pve(&input_for_pve(text)).text, text);
        }
    }

    #[test]
    fn output_with_a_nul_keeps_it() {
        let out = output_from_pve("a\u{0}b");
        assert_eq!(out.text, "a\0b");
        assert_eq!(out.bytes, 3);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_flagged() {
        let out = output_from_pve("ok \u{ff}\u{fe}");
        assert_eq!(out.text, "ok \u{fffd}\u{fffd}");
        assert_eq!(out.bytes, 5);
        assert!(out.invalid_utf8);
    }

    #[test]
    fn output_already_text_is_kept_and_said_so() {
        let out = output_from_pve("5 €");
        assert_eq!(out.text, "5 €");
        assert!(out.already_text);
        assert_eq!(out.bytes, "5 €".len());
    }
}
