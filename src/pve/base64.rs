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
    // A piece ends with its padded quad (or with the text): each is decoded on its own.
    let mut start = 0;
    for (i, quad) in clean.chunks(4).enumerate() {
        let end = (i + 1) * 4;
        if quad.ends_with(b"=") || end == clean.len() {
            AGENT.decode_vec(&clean[start..end], &mut out).ok()?;
            start = end;
        }
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
    fn refuses_what_is_not_base64() {
        for bad in ["a", "ab=c", "a===", "####", "Zm9v!A==", "Zg==Zm8=x="] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
