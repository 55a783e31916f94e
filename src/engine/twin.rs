//! Model B beside the session's model A, for the A/B view: it reads the same token path and gives its
//! own next-token logits, with its own KV cache (a new ask re-reads only what changed since the last).
//! B is the same file re-quantised (`requant`) or another file with the same vocabulary, and the two
//! align token by token; or a model with its own vocabulary, which reads the text of A's path through
//! its own tokenizer (`Twin::vocab`), and the two align by text.

use super::forward::linear::MatmulPath;
use super::forward::model::{ForwardOptions, Model};
use super::gguf::{GgufFile, LoadError};
use super::requant::Requant;
use super::tokenizer::Vocab;
use std::path::{Path, PathBuf};

/// Which model B is.
#[derive(Debug, Clone, PartialEq)]
pub enum TwinSpec {
    /// Model A's own file, re-quantised.
    Requant(Requant),
    /// Another GGUF: the same vocabulary, or its own (then aligned by text).
    File(PathBuf),
}

/// Positions model B reads in one pass when it scores many at once (`rows_from`).
pub const ROWS_PER_PASS: usize = 64;

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

pub struct Twin {
    model: Model,
    /// What B calls itself on screen and in JSON: `"q2_k"`, or the other file's name.
    pub label: String,
    /// For a re-quantised B: which types its matrices got, as the engine's note
    /// (`RequantReport::summary`) and as data (`RequantReport::matrix_types`).
    pub detail: Option<String>,
    pub matrix_types: Vec<(String, usize)>,
    fed: Vec<u32>,
    logits: Vec<f32>,
    /// Tokens the last `rows_from` fed through B.
    last_read: usize,
    /// B's own tokenizer, when its vocabulary is not A's: B then reads the text of A's path.
    pub vocab: Option<Vocab>,
}

impl Twin {
    /// Loads model B for model A at `a_path`.
    pub fn load(a_path: &Path, spec: &TwinSpec, matmul: MatmulPath) -> Result<Twin, LoadError> {
        let mut vocab = None;
        let (model, label, detail, matrix_types) = match spec {
            TwinSpec::Requant(to) => {
                let mut g = GgufFile::open(a_path)?;
                let (model, report) = Model::load_requantized(&mut g, matmul, *to)?;
                let types = report.matrix_types();
                (
                    model,
                    to.name().to_string(),
                    Some(report.summary(*to)),
                    types,
                )
            }
            TwinSpec::File(b_path) => {
                let (a, mut b) = (GgufFile::open(a_path)?, GgufFile::open(b_path)?);
                let tokens = |g: &GgufFile| g.get_string_array("tokenizer.ggml.tokens");
                if tokens(&a)? != tokens(&b)? {
                    vocab = Some(Vocab::from_gguf(&b)?);
                }
                let model = Model::load(&mut b, matmul)?;
                let name = b_path.file_stem().unwrap_or_default();
                (model, name.to_string_lossy().into_owned(), None, vec![])
            }
        };
        Ok(Twin {
            model,
            label,
            detail,
            matrix_types,
            fed: vec![],
            logits: vec![],
            last_read: 0,
            vocab,
        })
    }

    /// B's logits after each prefix `ids[..p]` for `p` in `first..=ids.len()` (`first >= 1`), one
    /// row per prefix, oldest first. Re-reads from the longest prefix its cache already holds (never
    /// later than `first - 1`), in chunks of [`ROWS_PER_PASS`] so that a long path with a large
    /// vocabulary does not hold every row's logits twice.
    pub fn rows_from(&mut self, ids: &[u32], first: usize) -> candle_core::Result<Vec<Vec<f32>>> {
        if first == 0 || first > ids.len() {
            candle_core::bail!("model B reads prefixes 1..={}, not from {first}", ids.len());
        }
        let mut from = common_prefix(&self.fed, ids).min(first - 1);
        let vocab = self.model.vocab_size;
        let mut rows = Vec::with_capacity(ids.len() + 1 - first);
        self.last_read = ids.len() - from;
        while from < ids.len() {
            let to = (from + ROWS_PER_PASS).min(ids.len());
            let opts = ForwardOptions {
                all_logits: true,
                ..ForwardOptions::default()
            };
            let out = self.model.forward(&ids[from..to], from, opts)?;
            // Row r is the prefix ids[..from + r + 1].
            for (r, row) in out.logits.chunks_exact(vocab).enumerate() {
                if from + r + 1 >= first {
                    rows.push(row.to_vec());
                }
            }
            self.fed = ids[..to].to_vec();
            from = to;
        }
        if let Some(last) = rows.last() {
            self.logits = last.clone();
        }
        Ok(rows)
    }

    /// Tokens the last `rows_from` or `logits_after` fed through B (what it re-read).
    pub fn last_read(&self) -> usize {
        self.last_read
    }

    /// B's logits for the token after `ids` (which must not be empty).
    pub fn logits_after(&mut self, ids: &[u32]) -> candle_core::Result<&[f32]> {
        if ids.is_empty() {
            candle_core::bail!("model B needs at least one token to read");
        }
        self.last_read = 0;
        if self.fed != ids {
            // Keep the cache for the common prefix, but always feed at least the last token.
            let common = common_prefix(&self.fed, ids).min(ids.len() - 1);
            let out = self
                .model
                .forward(&ids[common..], common, ForwardOptions::default())?;
            self.last_read = ids.len() - common;
            self.fed = ids.to_vec();
            self.logits = out.logits;
        }
        Ok(&self.logits)
    }
}
