//! Model B beside the session's model A, for the A/B view: it reads the same token path and gives its
//! own next-token logits, with its own KV cache (a new ask re-reads only what changed since the last).
//! B is the same file re-quantised (`requant`), or another file with the same vocabulary, so the two
//! align token by token.

use super::gguf::{GgufFile, LoadError};
use super::linear::MatmulPath;
use super::model::{ForwardOptions, Model};
use super::requant::Requant;
use std::path::Path;

/// Which model B is.
#[derive(Debug, Clone)]
pub enum TwinSpec<'a> {
    /// Model A's own file, re-quantised.
    Requant(Requant),
    /// Another GGUF with the same vocabulary.
    File(&'a Path),
}

pub struct Twin {
    model: Model,
    /// What B calls itself on screen and in JSON: `"q2_k"`, or the other file's name.
    pub label: String,
    /// For a re-quantised B: which types its matrices got.
    pub detail: Option<String>,
    fed: Vec<u32>,
    logits: Vec<f32>,
}

impl Twin {
    /// Loads model B for model A at `a_path`.
    pub fn load(a_path: &Path, spec: &TwinSpec, matmul: MatmulPath) -> Result<Twin, LoadError> {
        let (model, label, detail) = match spec {
            TwinSpec::Requant(to) => {
                let mut g = GgufFile::open(a_path)?;
                let (model, report) = Model::load_requantized(&mut g, matmul, *to)?;
                (model, to.name().to_string(), Some(report.summary(*to)))
            }
            TwinSpec::File(b_path) => {
                let (a, mut b) = (GgufFile::open(a_path)?, GgufFile::open(b_path)?);
                let tokens = |g: &GgufFile| g.get_string_array("tokenizer.ggml.tokens");
                if tokens(&a)? != tokens(&b)? {
                    return Err(LoadError::Other(format!(
                        "{} has another vocabulary than {}: model B must share model A's tokenizer \
                         (the same family, or a re-quantisation with --requant-b) to be compared token \
                         by token",
                        b_path.display(),
                        a_path.display()
                    )));
                }
                let model = Model::load(&mut b, matmul)?;
                let name = b_path.file_name().unwrap_or_default();
                (model, name.to_string_lossy().into_owned(), None)
            }
        };
        Ok(Twin {
            model,
            label,
            detail,
            fed: vec![],
            logits: vec![],
        })
    }

    /// B's logits for the token after `ids` (which must not be empty).
    pub fn logits_after(&mut self, ids: &[u32]) -> candle_core::Result<&[f32]> {
        if ids.is_empty() {
            candle_core::bail!("model B needs at least one token to read");
        }
        if self.fed != ids {
            // Keep the cache for the common prefix, but always feed at least the last token.
            let common = self
                .fed
                .iter()
                .zip(ids)
                .take_while(|(a, b)| a == b)
                .count()
                .min(ids.len() - 1);
            let out = self
                .model
                .forward(&ids[common..], common, ForwardOptions::default())?;
            self.fed = ids.to_vec();
            self.logits = out.logits;
        }
        Ok(&self.logits)
    }
}
