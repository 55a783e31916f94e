//! Loading a session from files: the GGUF's model, its tokenizer (or a tokenizer.json) and chat template.

use super::gguf::{GgufFile, LoadError};
use super::linear::MatmulPath;
use super::model::Model;
use super::session::{Session, SessionOptions};
use super::tokenizer::Vocab;
use crate::protocol::{ModelInfo, SamplerSettings};
use std::path::Path;
use std::time::Instant;

/// Everything needed to open a model. The default is what the app runs: the GGUF's own tokenizer and the
/// fast matmul path.
#[derive(Debug, Clone)]
pub struct LoadOptions<'a> {
    pub tokenizer_json: Option<&'a Path>,
    pub matmul: MatmulPath,
}

impl Default for LoadOptions<'_> {
    fn default() -> Self {
        Self {
            tokenizer_json: None,
            matmul: MatmulPath::Fast,
        }
    }
}

/// Opens `path`, checks it, and builds the model, tokenizer and session. `progress` hears each phase.
pub fn load_session(
    path: &Path,
    load: &LoadOptions,
    settings: SamplerSettings,
    opts: SessionOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<(Session, ModelInfo), LoadError> {
    let start = Instant::now();
    progress("checking the GGUF file");
    let mut g = GgufFile::open(path)?;
    let arch = g.architecture();
    progress("building the tokenizer");
    let vocab = match load.tokenizer_json {
        Some(p) => Vocab::from_tokenizer_json(p, &g)?,
        None => Vocab::from_gguf(&g)?,
    };
    progress("reading the weights");
    let model = Model::load(&mut g, load.matmul)?;
    let chat_template = super::chat::chat_template(&g);
    let c = &model.config;
    let name = g.get_string("general.name").unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let info = ModelInfo {
        name,
        path: path.display().to_string(),
        architecture: arch,
        file_bytes: g.file_bytes,
        n_layer: c.n_layer,
        n_head: c.n_head,
        n_kv_head: c.n_kv_head,
        head_dim: c.head_dim,
        n_embd: c.n_embd,
        vocab_size: model.vocab_size,
        context_length: c.context_length,
        has_chat_template: chat_template.is_some(),
        eos_ids: vocab.eos_ids().to_vec(),
        load_ms: 0.0,
    };
    let mut session = Session::new(model, vocab, settings, opts);
    session.chat_template = chat_template;
    let info = ModelInfo {
        load_ms: start.elapsed().as_secs_f64() * 1e3,
        ..info
    };
    Ok((session, info))
}
