//! Base64 (RFC 4648, standard alphabet, padded), as the guest agent and PVE's `encode=0`/`decode=0`
//! file endpoints speak it. Decoding accepts a concatenation of padded pieces: PVE's file-read
//! joins the agent's per-read answers (1 MiB each) without re-encoding them.

use base64::alphabet::STANDARD;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;

/// Padded on the way out and required padded on the way in. Stray low bits in a last quad are
/// tolerated, as the hand-written decoder this replaced tolerated them (it dropped them).
const AGENT: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// Encodes bytes.
pub fn encode(bytes: &[u8]) -> String {
    AGENT.encode(bytes)
}

/// Decodes padded base64, pieces joined or not; whitespace is skipped. `None` for anything else.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let mut clean = Vec::with_capacity(text.len());
    for byte in text.bytes() {
        if !byte.is_ascii_whitespace() {
            clean.push(byte);
        }
    }
    if clean.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    // Quad by quad, each a whole text to the engine: a padded quad ends its piece, so joined
    // pieces decode as their concatenation without a search for where each piece ends (issue 32).
    for quad in clean.chunks_exact(4) {
        let mut bytes = [0; 3];
        let len = AGENT.decode_slice(quad, &mut bytes).ok()?;
        out.extend_from_slice(bytes.get(..len)?);
    }
    Some(out)
}

/// Decodes one padded base64 text as an argument must be: no whitespace, padding only at the end.
pub fn decode_strict(text: &str) -> Option<Vec<u8>> {
    let body = text.trim_end_matches('=');
    if body.contains('=') {
        return None;
    }
    for c in text.bytes() {
        if c.is_ascii_whitespace() {
            return None;
        }
    }
    decode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_length_and_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        for len in 0..all.len() {
            assert_eq!(decode(&encode(&all[..len])).as_deref(), Some(&all[..len]));
        }
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(b"fo"), "Zm8=");
    }

    #[test]
    fn joined_padded_pieces_decode_as_their_concatenation() {
        let joined = format!("{}{}", encode(b"ab"), encode(b"cde"));
        assert_eq!(decode(&joined).unwrap(), b"abcde");
    }

    #[test]
    fn whitespace_is_skipped_and_stray_low_bits_are_dropped() {
        assert_eq!(decode("Zm9v\nYmFy\r\n").unwrap(), b"foobar");
        assert_eq!(decode(" Zh== Zm9=").unwrap(), b"ffo");
        assert_eq!(decode_strict("Zm9v Zg=="), None);
    }

    #[test]
    fn refuses_what_is_not_base64() {
        for bad in ["a", "ab=c", "a===", "####", "Zm9v!A==", "Zg==Zm8=x="] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
