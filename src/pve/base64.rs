//! Base64 (RFC 4648, standard alphabet, padded), as the guest agent and PVE's `encode=0`/`decode=0`
//! file endpoints speak it. Decoding accepts a concatenation of padded pieces: PVE's file-read
//! joins the agent's per-read answers (1 MiB each) without re-encoding them.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes bytes.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn value(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes padded base64, pieces joined or not; whitespace is skipped. `None` for anything else.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let clean: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if clean.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    for quad in clean.chunks(4) {
        let pad = quad.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || quad[..4 - pad].contains(&b'=') {
            return None;
        }
        let mut n = 0u32;
        for (i, c) in quad.iter().enumerate() {
            let v = if i < 4 - pad { value(*c)? } else { 0 };
            n |= v << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// Decodes one padded base64 text as an argument must be: no whitespace, padding only at the end.
pub fn decode_strict(text: &str) -> Option<Vec<u8>> {
    let body = text.trim_end_matches('=');
    if body.contains('=') || text.bytes().any(|c| c.is_ascii_whitespace()) {
        return None;
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
        for bad in ["a", "ab=c", "a===", "####", "Zm9v!A=="] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
