//! Starting the engine thread's session: the model (local or served), then this machine measured,
//! the draft and model B when the config names them, each announced as a `Loading` event; one
//! `Loaded`, or `Failed` and no session.

use super::{AbTracker, EngineConfig};
use crate::engine::forward::linear::MatmulPath;
use crate::engine::load::{load_session, LoadOptions};
use crate::engine::panic_text;
use crate::engine::session::{Session, SessionOptions};
use crate::engine::twin::{Twin, TwinSpec};
use crate::protocol::{Event, Failure};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub(super) fn load(
    config: &EngineConfig,
    send: &dyn Fn(Event),
) -> Option<(Session, Option<AbTracker>)> {
    let opts = SessionOptions {
        top_k_shown: config.top_k_shown,
        attention_window: config.attention_window,
        kv_cache: config.kv_cache,
        kv_precision: config.kv_precision,
        ..SessionOptions::default()
    };
    let load = LoadOptions {
        tokenizer_json: config.tokenizer_path.as_deref(),
        matmul: MatmulPath::Fast,
    };
    let loaded = catch_unwind(AssertUnwindSafe(|| {
        let mut progress = |what: &str| send(Event::Loading(what.to_string()));
        if let Some(server) = &config.server {
            return crate::engine::served::open_served_session(
                server,
                config.sampler.clone(),
                opts.clone(),
                &mut progress,
            );
        }
        // Before the model: the measuring buffer is freed before the model's memory exists.
        progress("measuring this machine's memory bandwidth");
        let bytes = crate::engine::machine::file_bytes(&config.model_path);
        crate::engine::machine::bandwidth_gb_s(crate::engine::threads(), bytes);
        load_session(
            &config.model_path,
            &load,
            config.sampler.clone(),
            opts,
            &mut progress,
        )
    }));
    let reason = match loaded.map(|l| {
        l.map_err(anyhow::Error::from)
            .and_then(|a| load_b(config, send, a))
    }) {
        Ok(Ok((mut session, mut info, ab))) => {
            send(Event::Loading(
                "measuring this machine: the kernels' arithmetic".into(),
            ));
            let machine = session.measure_machine();
            info.machine = machine.ok().flatten();
            if let Err(e) = load_draft(config, send, &mut session) {
                send(Event::Failed {
                    what: Failure::Load,
                    reason: e.to_string(),
                });
                return None;
            }
            if config.vocabulary {
                send(Event::Vocabulary(std::sync::Arc::new(session.vocabulary())));
            }
            send(Event::Loaded(info));
            return Some((session, ab));
        }
        Ok(Err(e)) => e.to_string(),
        Err(panic) => format!("internal error: {}", panic_text(&panic)),
    };
    send(Event::Failed {
        what: Failure::Load,
        reason,
    });
    None
}

/// Model B, when the config names one, loaded once model A is.
fn load_b(
    config: &EngineConfig,
    send: &dyn Fn(Event),
    (session, info): (Session, crate::protocol::ModelInfo),
) -> anyhow::Result<(Session, crate::protocol::ModelInfo, Option<AbTracker>)> {
    let Some(spec) = &config.twin else {
        return Ok((session, info, None));
    };
    if config.server.is_some() {
        anyhow::bail!(
            "--model-b and --requant-b need model A on this machine: a served model A has no \
             weights here to re-quantise or to read beside; drop --server or the model B flag"
        );
    }
    send(Event::Loading(match spec {
        TwinSpec::Requant(r) => format!("model B: re-quantising to {}", r.name()),
        TwinSpec::File(p) => format!("model B: {}", p.display()),
    }));
    let twin = Twin::load(&config.model_path, spec, MatmulPath::Fast)
        .map_err(|e| anyhow::anyhow!("model B: {e}"))?;
    Ok((
        session,
        info,
        Some(AbTracker::new(twin, config.top_k_shown)),
    ))
}

/// The draft, when the config names one, loaded once the model is (every view names it).
fn load_draft(
    config: &EngineConfig,
    send: &dyn Fn(Event),
    session: &mut Session,
) -> anyhow::Result<()> {
    let Some((spec, k)) = &config.draft else {
        return Ok(());
    };
    if config.server.is_some() {
        anyhow::bail!("--draft needs the model's own passes: drop --server, or drop --draft");
    }
    send(Event::Loading(format!("the draft: {}", spec.label())));
    session
        .load_draft(spec, *k)
        .map_err(|e| anyhow::anyhow!("the draft: {e}"))
}
