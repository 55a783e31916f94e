//! Loading a session from files: the GGUF's model, its tokenizer (or a tokenizer.json) and chat template.

use super::forward::linear::MatmulPath;
use super::forward::model::Model;
use super::gguf::{GgufFile, LoadError};
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
    let name = display_name(&g, path);
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
        windows: (0..c.n_layer).map(|l| c.window(l)).collect(),
        served: None,
        machine: None,
        kv_f16: opts.kv_precision == super::forward::kv_cache::KvPrecision::F16,
    };
    let mut session = Session::new(model, vocab, chat_template, settings, opts);
    session.set_model_file(path, load.tokenizer_json);
    let info = ModelInfo {
        load_ms: start.elapsed().as_secs_f64() * 1e3,
        ..info
    };
    Ok((session, info))
}

/// ggml's `general.file_type` numbers for the weight types people share.
const FILE_TYPES: &[(u32, &str)] = &[
    (0, "F32"),
    (1, "F16"),
    (2, "Q4_0"),
    (3, "Q4_1"),
    (7, "Q8_0"),
    (8, "Q5_0"),
    (9, "Q5_1"),
    (10, "Q2_K"),
    (11, "Q3_K_S"),
    (12, "Q3_K_M"),
    (13, "Q3_K_L"),
    (14, "Q4_K_S"),
    (15, "Q4_K_M"),
    (16, "Q5_K_S"),
    (17, "Q5_K_M"),
    (18, "Q6_K"),
    (32, "BF16"),
];

/// A name a class can read: "SmolLM2 135M Instruct · Q4_1". The file name usually has the right
/// casing and the variant (`general.basename` is often lower case, and `general.name` can be a training
/// run's label); the metadata is the fallback when the file name does not name the model.
pub fn display_name(g: &GgufFile, path: &Path) -> String {
    let quant = g
        .get_u32("general.file_type")
        .and_then(|t| FILE_TYPES.iter().find(|(n, _)| *n == t))
        .map(|(_, name)| *name);
    let mut stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(q) = quant {
        if stem.to_ascii_uppercase().ends_with(q) {
            stem.truncate(stem.len() - q.len());
        }
    }
    let stem = stem
        .replace(['-', '_', '.'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let squash = |s: &str| s.to_lowercase().replace([' ', '-', '_'], "");
    let basename = g.get_string("general.basename");
    let model = match basename {
        Some(b) if squash(&stem).contains(&squash(&b)) => stem,
        Some(b) => [Some(b), g.get_string("general.size_label")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" "),
        None => g.get_string("general.name").unwrap_or(stem),
    };
    match quant {
        Some(q) => format!("{model} · {q}"),
        None => model,
    }
}
