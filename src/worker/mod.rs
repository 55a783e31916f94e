//! The engine thread: loads the model, owns the session, and turns each `Command` into `Event`s by the
//! rule of one reply (`protocol`). It never panics out: a failure, or a caught panic, becomes
//! `Event::Failed`, the session stays as it was, and the thread goes on.

mod ab;
mod ab_text;
mod load;

use crate::engine::draft::DraftSpec;
use crate::engine::panic_text;
use crate::engine::session::{Choice, Session};
use crate::engine::twin::TwinSpec;
use crate::lesson::Track;
use crate::protocol::{Command, Event, Failure, LessonStepView, SamplerSettings};
pub use ab::AbTracker;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// How many of the model's likeliest tokens a class reveal shows beside the class's guesses.
const CLASS_TOP: usize = 10;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
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
    /// What the model's KV cache stores (`--kv`).
    pub kv_precision: crate::engine::forward::kv_cache::KvPrecision,
    /// Model B for the A/B view (`--model-b`, `--requant-b`), loaded after model A.
    pub twin: Option<TwinSpec>,
    /// `--server`: step a served model instead of `model_path` (see `engine/served/`).
    pub server: Option<crate::engine::served::ServedOptions>,
    /// The draft of speculative decoding (`--draft`) and its tokens per round, loaded after the model.
    pub draft: Option<(DraftSpec, usize)>,
    /// Send the whole vocabulary (`Event::Vocabulary`) before `Loaded`: class mode's room needs it.
    pub vocabulary: bool,
}

/// The front end's hold on the engine thread: where commands go, the cancel flag, and the thread to
/// join on quit.
pub struct EngineHandle {
    pub cmd_tx: Sender<Command>,
    cancel: Arc<AtomicBool>,
    join: JoinHandle<()>,
}

impl EngineHandle {
    /// Sends a command; `Command::Cancel` raises the cancel flag instead of waiting in the queue.
    pub fn send(&self, cmd: Command) -> Result<(), std::sync::mpsc::SendError<Command>> {
        if cmd == Command::Cancel {
            self.cancel.store(true, Ordering::Relaxed);
            return Ok(());
        }
        self.cmd_tx.send(cmd)
    }

    /// Asks the engine to stop and waits for it. A prompt being read stops at the next chunk (the
    /// cancel flag is raised first, as `Cancel` does); any other command in hand finishes first.
    pub fn quit(self) {
        self.cancel.store(true, Ordering::Relaxed);
        let _ = self.cmd_tx.send(Command::Quit);
        let _ = self.join.join();
    }

    /// Asks the engine to stop, as `quit` does, without waiting: for quitting while a long prompt is
    /// read, whose chunk in hand can take seconds and whose result nobody will see. The thread ends
    /// after that chunk, or with the process.
    pub fn quit_now(self) {
        self.cancel.store(true, Ordering::Relaxed);
        let _ = self.cmd_tx.send(Command::Quit);
    }
}

/// Starts the engine thread. Every event goes straight to `sink`, on the engine thread (the TUI's sink
/// sends it on the UI's own channel, so there is no forwarding thread). It answers `Loaded` or `Failed`
/// first, then serves commands until `Quit` or until the front end drops its sender.
pub fn spawn(config: EngineConfig, sink: impl Fn(Event) + Send + 'static) -> EngineHandle {
    let (cmd_tx, cmd_rx) = std::sync::mpsc::channel::<Command>();
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let join = std::thread::Builder::new()
        .name("engine".into())
        .spawn(move || run(config, cmd_rx, &flag, &sink))
        .expect("spawn engine thread");
    EngineHandle {
        cmd_tx,
        cancel,
        join,
    }
}

fn run(config: EngineConfig, cmd_rx: Receiver<Command>, cancel: &AtomicBool, send: &dyn Fn(Event)) {
    let Some((mut session, mut ab)) = load::load(&config, send) else {
        return;
    };
    let mut lesson = None;
    while let Ok(cmd) = cmd_rx.recv() {
        if cmd == Command::Quit {
            break;
        }
        serve(&mut session, &mut lesson, ab.as_mut(), cmd, cancel, send);
    }
}

/// Puts model B's view of the current path on a closing event that carries the session's view or a
/// step (`ab` stays `None` on the others).
fn attach_ab(event: &mut Event, ab: &mut AbTracker, session: &mut Session) {
    let slot = match event {
        Event::Synced(v) => &mut v.ab,
        Event::Rounded { view, .. } => &mut view.ab,
        Event::Stepped(r) => &mut r.ab,
        Event::LessonStep(l) => &mut l.view.ab,
        Event::Compared { view: Some(v), .. } => &mut v.ab,
        _ => return,
    };
    *slot = Some(ab.view(session));
}

/// Carries out one command and sends its events: any progress, then exactly one closing event. A
/// prefill stops between chunks once `cancel` is raised (it is lowered when the prefill starts).
/// `lesson` is the lesson the TUI has open, if any (`OpenLesson` sets it). With model B (`ab`), the
/// closing event that carries a view or a step also carries B's view of the path.
pub fn serve(
    session: &mut Session,
    lesson: &mut Option<Track>,
    ab: Option<&mut AbTracker>,
    cmd: Command,
    cancel: &AtomicBool,
    send: &dyn Fn(Event),
) {
    if matches!(cmd, Command::Quit | Command::Cancel) {
        return;
    }
    let what = Failure::of(&cmd);
    let result = catch_unwind(AssertUnwindSafe(|| match cmd {
        Command::OpenLesson(l) => {
            // A lesson that cannot open leaves the one before (if any) open.
            let mut track = Track::new(*l);
            let event = lesson_step(session, &mut track, 0)?;
            *lesson = Some(track);
            Ok(event)
        }
        Command::LessonGoto { step } => match lesson.as_mut() {
            Some(track) => lesson_step(session, track, step),
            None => anyhow::bail!("no lesson is open: start one with --lesson NAME"),
        },
        Command::LessonReveal => {
            let track = lesson
                .as_mut()
                .ok_or_else(|| anyhow::anyhow!("no lesson is open"))?;
            let run = track.reveal(session).ok_or_else(|| {
                anyhow::anyhow!("no lesson question waits here (the session was changed by hand since it was asked?): go back to the lesson first")
            })?;
            Ok(Event::LessonStep(Box::new(LessonStepView {
                run,
                replayed: 0,
                earlier_failure: None,
                written_for: track.written_for(session),
                view: session.view()?,
            })))
        }
        cmd => handle(session, cmd, cancel, send),
    }));
    let reason = match result {
        Ok(Ok(mut closing)) => {
            if let Some(ab) = ab {
                // B failing never fails A's command: `AbTracker::view` reports it inside the view.
                let _ = catch_unwind(AssertUnwindSafe(|| attach_ab(&mut closing, ab, session)));
            }
            return send(closing);
        }
        Ok(Err(e)) => e.to_string(),
        Err(panic) => format!("internal error: {}", panic_text(&panic)),
    };
    send(Event::Failed { what, reason });
}

/// Shows one step of a lesson: the closing `LessonStep` event.
fn lesson_step(session: &mut Session, track: &mut Track, step: usize) -> anyhow::Result<Event> {
    let reached = track.goto(session, step)?;
    Ok(Event::LessonStep(Box::new(LessonStepView {
        run: reached.run,
        replayed: reached.replayed,
        earlier_failure: reached.earlier_failure,
        written_for: reached.written_for,
        view: session.view()?,
    })))
}

/// One command: sends progress events through `send` and returns the closing event.
fn handle(
    session: &mut Session,
    cmd: Command,
    cancel: &AtomicBool,
    send: &dyn Fn(Event),
) -> anyhow::Result<Event> {
    Ok(match cmd {
        Command::Prefill { prompt, chat } => prefill(session, &prompt, chat, cancel, send)?,
        Command::Step => Event::Stepped(session.step(Choice::Sample)?),
        Command::Speculate { k } => {
            let (round, view) = session.speculate_then_view(k)?;
            Event::Rounded {
                round: Box::new(round),
                view: Box::new(view),
            }
        }
        Command::Force { token_id } => Event::Stepped(session.step(Choice::Force(token_id))?),
        Command::ClassChoice { token_id } => Event::Stepped(session.step(Choice::Class(token_id))?),
        Command::RankTokens { position, tokens } => {
            Event::TokensRanked(Box::new(session.rank_tokens(position, &tokens, CLASS_TOP)?))
        }
        Command::ForceText { text } => {
            session.force_text(&text, &mut |_, done, total| {
                send(Event::Forcing { done, total })
            })?;
            Event::Synced(session.view()?)
        }
        Command::Rewind { n } => {
            Event::Synced(session.change_then_view(|s| s.rewind(n).map(|_| ()))?)
        }
        Command::SwitchBranch { id } => {
            session.switch_branch(id)?;
            Event::Synced(session.view()?)
        }
        Command::SetSampler(settings) => Event::Synced(session.change_then_view(|s| {
            s.set_settings(settings);
            Ok(())
        })?),
        Command::SetKvCache { on } => {
            session.set_kv_cache(on)?;
            Event::Synced(session.view()?)
        }
        other => answer(session, other, send)?,
    })
}

/// Reads a prompt in chunks, saying how far it got, until done or cancelled.
fn prefill(
    session: &mut Session,
    prompt: &str,
    chat: bool,
    cancel: &AtomicBool,
    send: &dyn Fn(Event),
) -> anyhow::Result<Event> {
    let ids = session.prompt_ids(prompt, chat)?;
    cancel.store(false, Ordering::Relaxed);
    let total = ids.len();
    send(Event::Prefilling { done: 0, total });
    session.prefill_ids_with(&ids, &mut |done, total| {
        if done < total {
            send(Event::Prefilling { done, total });
        }
        !cancel.load(Ordering::Relaxed)
    })?;
    session.note_prompt(prompt, chat);
    Ok(Event::Synced(session.view()?))
}

/// The commands that read the session, or lay a second path beside it (search, guesses, comparisons,
/// inspection, saving and loading).
fn answer(session: &mut Session, cmd: Command, send: &dyn Fn(Event)) -> anyhow::Result<Event> {
    Ok(match cmd {
        Command::Search { query, limit } => {
            let hits = session.search(&query, limit)?;
            Event::SearchResults { query, hits }
        }
        Command::ScoreGuess { text } => Event::GuessScored(Box::new(session.score_guess(&text)?)),
        Command::Tokenize { text } => {
            let tokens = session.encode(&text)?;
            let tokens = tokens.into_iter().map(|t| session.token_view(t)).collect();
            Event::Tokenized { text, tokens }
        }
        Command::Compare { a, b } => Event::Compared {
            comparison: Box::new(session.compare(a, b)?),
            view: None,
        },
        Command::Reference { text } => {
            let comparison = session.reference_run(&text, None, &mut |done, total| {
                send(Event::Forcing { done, total })
            })?;
            Event::Compared {
                comparison: Box::new(comparison),
                view: Some(session.view()?),
            }
        }
        // The lens follows the sampler's planned token, the one a step would take.
        Command::Inspect { lens, heads } => {
            Event::Inspected(Box::new(session.inspect(lens, heads, None)?))
        }
        Command::Save { path, answers } => {
            let saved = session.to_saved()?.with_answers(answers);
            let bytes = crate::engine::session_file::write(&path, &saved)?;
            Event::Saved { path, bytes }
        }
        Command::Load {
            path,
            ignore_model_mismatch,
        } => {
            let saved = crate::engine::session_file::read(&path)?;
            // A mismatch the caller chose to ignore: the front end that asked says so (never stderr,
            // which the TUI's screen owns).
            session.restore_saved(&saved, ignore_model_mismatch)?;
            Event::Synced(session.view()?)
        }
        _ => anyhow::bail!("not a command the engine answers here"),
    })
}
