//! The engine thread: loads the model, owns the session, and turns each `Command` into `Event`s.
//! It never panics out: a failure (or a caught panic) becomes `Event::Failed` and the session goes on.

use super::linear::MatmulPath;
use super::load::{load_session, LoadOptions};
use super::session::{Choice, Session, SessionOptions};
use crate::protocol::{Command, Event, SamplerSettings};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

/// What the engine thread needs to start.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub model_path: PathBuf,
    pub tokenizer_path: Option<PathBuf>,
    pub sampler: SamplerSettings,
    /// Candidates per distribution.
    pub top_k_shown: usize,
    /// Positions in the attention window sent with each step.
    pub attention_window: usize,
    pub kv_cache: bool,
}

/// The UI's ends of the two channels.
pub struct EngineHandle {
    pub cmd_tx: Sender<Command>,
    pub event_rx: Receiver<Event>,
    pub join: JoinHandle<()>,
}

/// Starts the engine thread. It answers `Loaded` or `Failed` first, then serves commands until `Quit` or
/// until the UI drops its sender.
pub fn spawn(config: EngineConfig) -> EngineHandle {
    let (cmd_tx, cmd_rx) = std::sync::mpsc::channel::<Command>();
    let (event_tx, event_rx) = std::sync::mpsc::channel::<Event>();
    let join = std::thread::Builder::new()
        .name("engine".into())
        .spawn(move || run(config, cmd_rx, event_tx))
        .expect("spawn engine thread");
    EngineHandle {
        cmd_tx,
        event_rx,
        join,
    }
}

fn run(config: EngineConfig, cmd_rx: Receiver<Command>, event_tx: Sender<Event>) {
    let opts = SessionOptions {
        top_k_shown: config.top_k_shown,
        attention_window: config.attention_window,
        kv_cache: config.kv_cache,
    };
    let load = LoadOptions {
        tokenizer_json: config.tokenizer_path.as_deref(),
        matmul: MatmulPath::Fast,
    };
    let loaded = catch_unwind(AssertUnwindSafe(|| {
        let mut progress = |what: &str| {
            let _ = event_tx.send(Event::Loading(what.to_string()));
        };
        load_session(
            &config.model_path,
            &load,
            config.sampler.clone(),
            opts,
            &mut progress,
        )
    }));
    let mut session = match loaded {
        Ok(Ok((session, info))) => {
            let _ = event_tx.send(Event::Loaded(info));
            session
        }
        Ok(Err(e)) => {
            let _ = event_tx.send(Event::Failed(e.to_string()));
            return;
        }
        Err(panic) => {
            let _ = event_tx.send(Event::Failed(format!(
                "internal error while loading: {}",
                panic_text(&panic)
            )));
            return;
        }
    };
    while let Ok(cmd) = cmd_rx.recv() {
        if cmd == Command::Quit {
            break;
        }
        let send = |e: Event| {
            let _ = event_tx.send(e);
        };
        match catch_unwind(AssertUnwindSafe(|| handle(&mut session, cmd, &send))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => send(Event::Failed(e.to_string())),
            Err(panic) => send(Event::Failed(format!(
                "internal error: {}",
                panic_text(&panic)
            ))),
        }
    }
}

/// Carries out one command, sending its events as they happen (typed text sends one `Stepped` per token).
pub fn handle(session: &mut Session, cmd: Command, send: &dyn Fn(Event)) -> anyhow::Result<()> {
    match cmd {
        Command::Prefill { prompt, chat } => {
            send(Event::Loading(if chat {
                "reading the chat prompt".into()
            } else {
                "reading the prompt".into()
            }));
            session.prefill_text(&prompt, chat)?;
            send(Event::Synced(session.view()?));
        }
        Command::Step => send(Event::Stepped(session.step(Choice::Sample)?)),
        Command::Force { token_id } => send(Event::Stepped(session.step(Choice::Force(token_id))?)),
        Command::ForceText { text } => {
            let ids = session.vocab.encode(&text)?;
            if ids.is_empty() {
                anyhow::bail!("nothing to force: the text is empty");
            }
            for id in ids {
                send(Event::Stepped(session.step(Choice::Force(id))?));
            }
        }
        Command::Rewind { n } => {
            session.rewind(n)?;
            send(Event::Synced(session.view()?));
        }
        Command::SwitchBranch { id } => {
            session.switch_branch(id)?;
            send(Event::Synced(session.view()?));
        }
        Command::SetSampler(settings) => {
            session.set_settings(settings);
            send(Event::Synced(session.view()?));
        }
        Command::SetKvCache { on } => {
            session.set_kv_cache(on);
            send(Event::Synced(session.view()?));
        }
        Command::Search { query, limit } => {
            let hits = session
                .vocab
                .search(&query, limit)
                .into_iter()
                .map(|id| session.candidate(id))
                .collect::<Result<Vec<_>, _>>()?;
            send(Event::SearchResults { query, hits });
        }
        Command::Quit => {}
    }
    Ok(())
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}
