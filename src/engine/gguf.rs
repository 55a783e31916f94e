//! Opening a GGUF file: clear errors for bad input, and typed access to its metadata and tensors.
//! The hyper-parameters read from that metadata live in `config.rs` (re-exported here).

use candle_core::quantized::gguf_file;
use candle_core::quantized::GgmlDType;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};

mod extents;
use extents::{check_extents, declared_alignment};

pub use super::forward::config::{Arch, LlamaConfig};

/// Why a model file could not be used. Each message says what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("model file not found: {0}\n  Run `nexttoken fetch` to get the default model, or pass --model PATH (or set NEXTTOKEN_MODEL); the names `fetch` knows are {known}.", known = crate::engine::catalog::known_names())]
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

    /// The stored type and `[rows, cols]` of the 2-D tensor `name` (`None` for another rank or none).
    pub fn matrix(&self, name: &str) -> Option<(GgmlDType, usize, usize)> {
        let info = self.content.tensor_infos.get(name)?;
        let (n, k) = info.shape.dims2().ok()?;
        Some((info.ggml_dtype, n, k))
    }

    /// Rows `rows` of the 2-D tensor `name` as the file stores them (whole blocks), read into `buf`:
    /// a large matrix can be regrouped a band at a time, without ever holding all of it twice.
    pub fn read_rows(
        &mut self,
        name: &str,
        rows: Range<usize>,
        buf: &mut Vec<u8>,
    ) -> Result<(), LoadError> {
        let fail = |detail: String| {
            LoadError::Other(format!(
                "cannot read tensor `{name}` from {}: {detail}",
                self.path.display()
            ))
        };
        let (info, (dtype, _, k)) = match (self.content.tensor_infos.get(name), self.matrix(name)) {
            (Some(info), Some(m)) => (info, m),
            _ => return Err(fail("it is not a matrix in this file".into())),
        };
        let row_bytes = k / dtype.block_size() * dtype.type_size();
        let start = self.content.tensor_data_offset + info.offset + (rows.start * row_bytes) as u64;
        buf.resize(rows.len() * row_bytes, 0);
        self.file
            .seek(SeekFrom::Start(start))
            .and_then(|_| self.file.read_exact(buf))
            .map_err(|e| fail(e.to_string()))
    }

    pub fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }
}
