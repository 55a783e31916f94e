//! Building a session over a served model: connect, learn BOS, EOS and whether BOS is added by asking
//! the server's own tokenizer, and describe the model for the screens (`ModelInfo` with `served`).

use super::{Client, ServedError, ServedOptions, SERVED_TOP_K};
use crate::engine::backend::{Backend, ServedModel};
use crate::engine::forward::config::{Arch, LlamaConfig};
use crate::engine::gguf::LoadError;
use crate::engine::session::{Session, SessionOptions};
use crate::engine::tokenizer::EOT_NAMES;
use crate::engine::tokenizer::{LearntPieces, Vocab};
use crate::protocol::{ModelInfo, SamplerSettings, ServedInfo};
use std::sync::Arc;
use std::time::Instant;

fn load_error(e: ServedError) -> LoadError {
    LoadError::Other(e.to_string())
}

/// Connects to the server and builds a session that steps its model. `progress` hears each phase.
pub fn open_served_session(
    opts: &ServedOptions,
    settings: SamplerSettings,
    session_opts: SessionOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<(Session, ModelInfo), LoadError> {
    let start = Instant::now();
    progress("connecting to the server");
    let client = Arc::new(Client::connect(opts).map_err(load_error)?);
    progress("asking the server's tokenizer for BOS and EOS");
    let (bos, add_bos) = bos_of(&client).map_err(load_error)?;
    let mut eos = Vec::new();
    // The names a local model ends text with: a name the server reads as one token is an EOS id.
    for name in EOT_NAMES {
        if let Some(id) = single_token(&client, name).map_err(load_error)? {
            if !eos.contains(&id) {
                eos.push(id);
            }
        }
    }
    let learnt = LearntPieces::default();
    let vocab = Vocab::served(client.clone(), learnt.clone(), bos, eos.clone(), add_bos);
    let config = served_config(client.n_ctx);
    let served = ServedInfo {
        kind: client.kind.name().into(),
        url: client.base().into(),
        model: client.model.clone(),
        top_k: SERVED_TOP_K,
        tokenizer: "server".into(),
    };
    let info = ModelInfo {
        name: format!("{} · served by {}", client.model, client.kind.name()),
        path: client.base().into(),
        architecture: format!("served ({})", client.kind.name()),
        file_bytes: 0,
        n_layer: 0,
        n_head: 0,
        n_kv_head: 0,
        head_dim: 0,
        n_embd: 0,
        vocab_size: client.n_vocab,
        context_length: client.n_ctx,
        has_chat_template: client.chat_template.is_some(),
        eos_ids: eos,
        load_ms: start.elapsed().as_secs_f64() * 1e3,
        windows: Vec::new(),
        served: Some(served),
        machine: None,
        kv_f16: false,
    };
    let template = client.chat_template.clone();
    let backend = Backend::Served(Box::new(ServedModel::new(client, config, learnt)));
    let mut session = Session::with_backend(backend, vocab, template, settings, session_opts);
    session.set_served(info.served.clone().expect("set above"));
    Ok((session, info))
}

/// The server's BOS (the token its tokenizer adds before text, if any) and whether it adds one.
fn bos_of(client: &Client) -> Result<(Option<u32>, bool), ServedError> {
    let with = client.tokenize("a", true)?;
    let without = client.tokenize("a", false)?;
    if with.len() == without.len() + 1 && with[1..] == without[..] {
        return Ok((Some(with[0].0), true));
    }
    Ok((None, false))
}

/// The id of `name` when the server reads it as one special token.
fn single_token(client: &Client, name: &str) -> Result<Option<u32>, ServedError> {
    let ids = client.tokenize(name, false)?;
    Ok(match ids.as_slice() {
        [(id, _)] => Some(*id),
        _ => None,
    })
}

/// A served model's shape is not known here: only its context is (the rest stays 0, and nothing reads
/// it: a served backend runs no local layers).
fn served_config(context_length: usize) -> LlamaConfig {
    LlamaConfig {
        arch: Arch::Llama,
        n_layer: 0,
        n_head: 0,
        n_kv_head: 0,
        head_dim: 0,
        n_embd: 0,
        n_ff: 0,
        rope_dim: 0,
        rope_base: 0.0,
        rms_eps: 0.0,
        context_length,
        sliding_window: None,
        swa_pattern: 0,
        rope_base_local: 0.0,
    }
}
