//! The engine thread: loads the model, owns the session, turns each `Command` into `Event`s.

use crate::protocol::{Command, Event, SamplerSettings};
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

/// Starts the engine thread. It answers `Loaded` or `Failed` first, then serves commands until `Quit`.
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

fn run(_config: EngineConfig, _cmd_rx: Receiver<Command>, event_tx: Sender<Event>) {
    let _ = event_tx.send(Event::Failed("engine not built yet".into()));
}
