//! Checks of a GGUF header that candle's reader does not make: every tensor's extent against the
//! file's size, and a declared alignment of zero (walked without trusting any length).

use candle_core::quantized::gguf_file;
use std::fs::File;
use std::io::{Seek, SeekFrom};

/// The header can be whole while the tensor data is cut short: checks every tensor's extent against the
/// file's size. Checked arithmetic: a corrupt header can declare sizes that overflow. A tensor of no
/// elements is refused too (candle cannot read one).
pub(super) fn check_extents(content: &gguf_file::Content, file_bytes: u64) -> Result<(), String> {
    for (name, info) in content.tensor_infos.iter() {
        let block = info.ggml_dtype.block_size() as u64;
        let elems = info
            .shape
            .dims()
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
        let tensor_end = elems
            .and_then(|elems| (elems / block).checked_mul(info.ggml_dtype.type_size() as u64))
            .and_then(|bytes| {
                content
                    .tensor_data_offset
                    .checked_add(info.offset)?
                    .checked_add(bytes)
            });
        let shape = info.shape.dims();
        match tensor_end {
            _ if elems == Some(0) => {
                return Err(format!("tensor `{name}` has no elements (shape {shape:?})"))
            }
            Some(end) if end <= file_bytes => {}
            Some(end) => {
                return Err(format!(
                    "tensor `{name}` ends at byte {end} but the file has only {file_bytes} bytes"
                ))
            }
            None => {
                return Err(format!(
                    "tensor `{name}` declares an impossible size (shape {shape:?}, offset {})",
                    info.offset
                ))
            }
        }
    }
    Ok(())
}

/// `general.alignment` as the metadata declares it, in the integer types candle's reader takes it from
/// (the last one when the key is repeated, as there); `None` when absent, negative, of another type, or
/// when the header cannot be walked (candle's reader then says what is wrong). Seeks past every other
/// value without reading it; every length is checked against the file's size.
pub(super) fn declared_alignment(file: &File, file_bytes: u64) -> Option<u64> {
    let mut w = MetaWalk {
        r: std::io::BufReader::new(file),
        pos: 0,
        size: file_bytes,
        wide: true,
    };
    w.r.seek(SeekFrom::Start(0)).ok()?;
    w.skip(4)?;
    let version = w.u32()?;
    if !(1..=3).contains(&version) {
        return None;
    }
    w.wide = version >= 2;
    w.len()?;
    let mut found = None;
    for _ in 0..w.len()? {
        let key = w.len()?;
        let is_alignment = w.key_is(key, ALIGNMENT_KEY)?;
        let ty = w.u32()?;
        if !is_alignment {
            w.skip_value(ty, 0)?;
            continue;
        }
        found = match ty {
            0 => w.bytes::<1>().map(|b| Some(b[0] as u64))?,
            1 => w.bytes::<1>().map(|b| u64::try_from(b[0] as i8).ok())?,
            2 => w.bytes().map(|b| Some(u16::from_le_bytes(b) as u64))?,
            3 => w
                .bytes()
                .map(|b| u64::try_from(i16::from_le_bytes(b)).ok())?,
            4 => w.u32().map(|v| Some(v as u64))?,
            5 => w
                .bytes()
                .map(|b| u64::try_from(i32::from_le_bytes(b)).ok())?,
            _ => w.skip_value(ty, 0).map(|_| None)?,
        };
    }
    found
}

const ALIGNMENT_KEY: &[u8; 17] = b"general.alignment";

/// A forward walk over a GGUF header that reads only what it must.
struct MetaWalk<R> {
    r: R,
    pos: u64,
    size: u64,
    /// Lengths are 64-bit from version 2 on, 32-bit in version 1.
    wide: bool,
}

impl<R: std::io::Read + std::io::Seek> MetaWalk<std::io::BufReader<R>> {
    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        std::io::Read::read_exact(&mut self.r, &mut b).ok()?;
        self.pos += N as u64;
        Some(b)
    }

    fn u32(&mut self) -> Option<u32> {
        self.bytes().map(u32::from_le_bytes)
    }

    fn len(&mut self) -> Option<u64> {
        if self.wide {
            self.bytes().map(u64::from_le_bytes)
        } else {
            self.u32().map(u64::from)
        }
    }

    /// Whether the key of `len` bytes ahead is `key` as candle's reader reads it: trailing NUL bytes
    /// dropped. Reads past it either way.
    fn key_is(&mut self, len: u64, key: &[u8; 17]) -> Option<bool> {
        let Some(mut rest) = len.checked_sub(17) else {
            self.skip(len)?;
            return Some(false);
        };
        if self.bytes::<17>()? != *key {
            self.skip(rest)?;
            return Some(false);
        }
        while rest > 0 {
            rest -= 1;
            if self.bytes::<1>()? != [0] {
                self.skip(rest)?;
                return Some(false);
            }
        }
        Some(true)
    }

    /// Skips `n` bytes; `None` past the end of the file.
    fn skip(&mut self, n: u64) -> Option<()> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.size)?;
        self.r.seek_relative(i64::try_from(n).ok()?).ok()?;
        self.pos = end;
        Some(())
    }

    fn skip_value(&mut self, ty: u32, depth: u32) -> Option<()> {
        if let Some(size) = fixed_size(ty) {
            return self.skip(size);
        }
        match ty {
            8 => {
                let n = self.len()?;
                self.skip(n)
            }
            // As deep as candle's reader goes (it refuses a value below depth 64).
            9 if depth <= 64 => {
                let elem = self.u32()?;
                let n = self.len()?;
                match fixed_size(elem) {
                    Some(size) => self.skip(n.checked_mul(size)?),
                    None => (0..n).try_for_each(|_| self.skip_value(elem, depth + 1)),
                }
            }
            _ => None,
        }
    }
}

/// The size of a GGUF value of a fixed-size type (not a string or an array).
fn fixed_size(ty: u32) -> Option<u64> {
    match ty {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}
