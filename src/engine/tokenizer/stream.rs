//! `StreamDecoder`: token ids in, only complete UTF-8 text out, so a character split across tokens is
//! never shown in halves.

use super::Vocab;

/// Pushes token ids in, hands back only complete UTF-8 text: a character split across tokens comes out
/// whole once its last byte arrives.
#[derive(Debug, Default, Clone)]
pub struct StreamDecoder {
    pending: Vec<u8>,
}

impl StreamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one token; returns the text that is now complete (possibly empty).
    pub fn push(&mut self, vocab: &Vocab, id: u32) -> String {
        self.push_bytes(&vocab.token_bytes(id))
    }

    /// Adds raw bytes; returns the text that is now complete. Bytes that can never become valid UTF-8
    /// come out as U+FFFD at once.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        // An incomplete character at the end: wait for more bytes.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// Bytes held back, waiting for the rest of a character.
    pub fn pending(&self) -> &[u8] {
        &self.pending
    }

    /// Ends the stream: whatever is held back comes out (incomplete bytes as U+FFFD).
    pub fn flush(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}
