//! Opening a GGUF file: clear errors for bad input, and typed access to its metadata and tensors.
//! The hyper-parameters read from that metadata live in `config.rs` (re-exported here).

use candle_core::quantized::gguf_file;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub use super::forward::config::{Arch, LlamaConfig};

/// Why a model file could not be used. Each message says what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("model file not found: {0}\n  Run `nexttoken fetch` to get the default model, or pass --model PATH (or set NEXTTOKEN_MODEL).")]
    Missing(PathBuf),
    #[error("{path} is not a GGUF file ({detail}).\n  Pass a llama, qwen2, qwen3 or gemma3 .gguf file with --model PATH.")]
    NotGguf { path: PathBuf, detail: String },
    #[error("{path} is truncated or corrupt: {detail}.\n  Download it again (`nexttoken fetch` for the default model).")]
    Truncated { path: PathBuf, detail: String },
    #[error("unsupported architecture `{0}`: nexttoken runs GGUF models of the architectures llama (Llama, SmolLM, TinyLlama, Mistral-style), qwen2 (Qwen 2.5), qwen3 (Qwen 3) and gemma3 (Gemma 3).\n  Pass one of those with --model PATH.")]
    UnsupportedArchitecture(String),
    #[error("the GGUF metadata lacks `{0}`, which the model needs. The file may be from an old converter.")]
    MissingKey(String),
    #[error("unknown pre-tokenizer `{0}` in tokenizer.ggml.pre (known: smollm, gpt2, llama-bpe, qwen2, default).\n  Pass the model's tokenizer.json with --tokenizer PATH.")]
    UnknownPreTokenizer(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("{0}")]
    Other(String),
}

/// An opened, validated GGUF: its parsed header and the file to read tensors from.
pub struct GgufFile {
    pub path: PathBuf,
    pub content: gguf_file::Content,
    pub file: File,
    pub file_bytes: u64,
}

impl GgufFile {
    /// Opens and checks the file: magic, header, and that every tensor's bytes are present.
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let mut file = File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => LoadError::Missing(path.to_path_buf()),
            _ => LoadError::Other(format!("cannot open {}: {e}", path.display())),
        })?;
        let meta = file
            .metadata()
            .map_err(|e| LoadError::Other(format!("cannot stat {}: {e}", path.display())))?;
        if meta.is_dir() {
            return Err(LoadError::NotGguf {
                path: path.to_path_buf(),
                detail: "it is a folder".into(),
            });
        }
        let file_bytes = meta.len();
        let corrupt = |detail: String| LoadError::Truncated {
            path: path.to_path_buf(),
            detail,
        };
        let mut magic = [0u8; 4];
        use std::io::Read;
        if file.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
            let detail = if file_bytes < 4 {
                format!(
                    "it is only {file_bytes} bytes long, too short for the magic bytes \"GGUF\""
                )
            } else {
                format!("it starts with {magic:02X?}, not the magic bytes \"GGUF\"")
            };
            return Err(LoadError::NotGguf {
                path: path.to_path_buf(),
                detail,
            });
        }
        // candle's reader divides by `general.alignment`: a file declaring 0 must not reach it.
        if declared_alignment(&file, file_bytes) == Some(0) {
            return Err(corrupt(
                "its `general.alignment` is 0; the tensor data's alignment must be a power of two such as 32"
                    .into(),
            ));
        }
        file.seek(SeekFrom::Start(0))
            .map_err(|e| corrupt(format!("it cannot be read ({e})")))?;
        let content = gguf_file::Content::read(&mut file)
            .map_err(|e| corrupt(format!("its header cannot be read ({e})")))?;
        check_extents(&content, file_bytes).map_err(corrupt)?;
        Ok(Self {
            path: path.to_path_buf(),
            content,
            file,
            file_bytes,
        })
    }

    pub fn metadata(&self, key: &str) -> Option<&gguf_file::Value> {
        self.content.metadata.get(key)
    }

    pub fn get_string(&self, key: &str) -> Option<String> {
        self.metadata(key).and_then(|v| v.to_string().ok()).cloned()
    }

    pub fn get_u32(&self, key: &str) -> Option<u32> {
        self.metadata(key).and_then(|v| match v {
            gguf_file::Value::U32(x) => Some(*x),
            gguf_file::Value::I32(x) => Some(*x as u32),
            gguf_file::Value::U64(x) => Some(*x as u32),
            gguf_file::Value::I64(x) => Some(*x as u32),
            gguf_file::Value::U16(x) => Some(*x as u32),
            gguf_file::Value::U8(x) => Some(*x as u32),
            _ => None,
        })
    }

    pub fn get_f32(&self, key: &str) -> Option<f32> {
        self.metadata(key).and_then(|v| match v {
            gguf_file::Value::F32(x) => Some(*x),
            gguf_file::Value::F64(x) => Some(*x as f32),
            _ => None,
        })
    }

    /// An array of strings (`tokenizer.ggml.tokens`); a clear error when absent or of another type.
    pub fn get_string_array(&self, key: &str) -> Result<Vec<String>, LoadError> {
        match self.metadata(key) {
            Some(gguf_file::Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    gguf_file::Value::String(s) => Ok(s.clone()),
                    other => Err(LoadError::Other(format!(
                        "`{key}` holds a {:?}, not a string",
                        other.value_type()
                    ))),
                })
                .collect(),
            Some(_) => Err(LoadError::Other(format!("`{key}` is not an array"))),
            None => Err(LoadError::MissingKey(key.into())),
        }
    }

    /// An array of integers (`tokenizer.ggml.token_type`); `None` when absent or not an integer array.
    pub fn get_i32_array(&self, key: &str) -> Option<Vec<i32>> {
        match self.metadata(key)? {
            gguf_file::Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    gguf_file::Value::I32(x) => Some(*x),
                    gguf_file::Value::U32(x) => Some(*x as i32),
                    gguf_file::Value::I8(x) => Some(*x as i32),
                    gguf_file::Value::U8(x) => Some(*x as i32),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }

    /// An array of floats (`tokenizer.ggml.scores`); `None` when absent or not a float array.
    pub fn get_f32_array(&self, key: &str) -> Option<Vec<f32>> {
        match self.metadata(key)? {
            gguf_file::Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    gguf_file::Value::F32(x) => Some(*x),
                    gguf_file::Value::F64(x) => Some(*x as f32),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }

    /// The architecture named in `general.architecture`.
    pub fn architecture(&self) -> String {
        self.get_string("general.architecture")
            .unwrap_or_else(|| "(none)".into())
    }

    /// Loads one tensor in its stored (possibly quantised) type.
    pub fn tensor(&mut self, name: &str) -> Result<candle_core::quantized::QTensor, LoadError> {
        self.content
            .tensor(&mut self.file, name, &candle_core::Device::Cpu)
            .map_err(|e| {
                let path = self.path.display();
                LoadError::Other(format!("cannot read tensor `{name}` from {path}: {e}"))
            })
    }

    pub fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }
}

/// The header can be whole while the tensor data is cut short: checks every tensor's extent against the
/// file's size. Checked arithmetic: a corrupt header can declare sizes that overflow. A tensor of no
/// elements is refused too (candle cannot read one).
fn check_extents(content: &gguf_file::Content, file_bytes: u64) -> Result<(), String> {
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
fn declared_alignment(file: &File, file_bytes: u64) -> Option<u64> {
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
