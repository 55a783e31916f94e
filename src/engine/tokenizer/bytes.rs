//! From token strings to the bytes they stand for (GPT-2 byte-level or SentencePiece `<0xE6>` forms),
//! and from those bytes to the display entry of each id.

use super::Piece;
use crate::protocol::{TokenKind, TokenView};
use std::collections::HashMap;

/// GPT-2's byte-to-character table: printable Latin-1 bytes stand for themselves, the other 68 bytes
/// are shifted to U+0100 and up (so space 0x20 is `Ġ` U+0120).
fn byte_level_char_to_byte() -> HashMap<char, u8> {
    let mut map = HashMap::with_capacity(256);
    let mut shifted = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let c = if printable {
            b as char
        } else {
            shifted += 1;
            char::from_u32(255 + shifted).unwrap_or(char::REPLACEMENT_CHARACTER)
        };
        map.insert(c, b);
    }
    map
}

/// The bytes a byte-level BPE token stands for.
pub(super) fn byte_level_bytes(token: &str) -> Vec<u8> {
    thread_local!(static MAP: HashMap<char, u8> = byte_level_char_to_byte());
    MAP.with(|map| {
        let mut out = Vec::with_capacity(token.len());
        for c in token.chars() {
            match map.get(&c) {
                Some(b) => out.push(*b),
                None => out.extend_from_slice(c.to_string().as_bytes()),
            }
        }
        out
    })
}

/// The bytes of a SentencePiece-style token: `<0xE6>` is one byte, `▁` is a space.
pub(super) fn sentencepiece_bytes(token: &str) -> Vec<u8> {
    if let Some(hex) = token.strip_prefix("<0x").and_then(|t| t.strip_suffix('>')) {
        if let Ok(b) = u8::from_str_radix(hex, 16) {
            return vec![b];
        }
    }
    token.replace('\u{2581}', " ").into_bytes()
}

/// A display entry: special tokens by name, text when the bytes are valid UTF-8, else the invalid
/// bytes in hex (`<E6 97>`) with any valid text around them kept.
pub(super) fn make_view(id: u32, p: &Piece) -> TokenView {
    if p.special {
        let text = String::from_utf8_lossy(&p.bytes).into_owned();
        return TokenView {
            id,
            text,
            kind: TokenKind::Special,
        };
    }
    if let Ok(s) = std::str::from_utf8(&p.bytes) {
        return TokenView {
            id,
            text: s.to_string(),
            kind: TokenKind::Text,
        };
    }
    let mut text = String::new();
    for chunk in p.bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            let hex: Vec<String> = chunk.invalid().iter().map(|b| format!("{b:02X}")).collect();
            text.push_str(&format!("<{}>", hex.join(" ")));
        }
    }
    TokenView {
        id,
        text,
        kind: TokenKind::Bytes,
    }
}
