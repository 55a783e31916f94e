//! Plain data that crosses the channel between the engine thread and its front ends (TUI, trace, bench).
//!
//! Nothing here holds a tensor or a tokenizer: every value is owned, cloneable data, so `app/` and `ui/`
//! can read it without knowing about candle. Commands go *to* the engine (imperative names), events come
//! *from* it (past tense).
//!
//! # The rule of one reply
//! Every command but `Quit` and `Cancel` is answered by exactly one reply: a *closing* event
//! (`Synced`, `Stepped`, `Rounded`, `SearchResults`, `GuessScored`, `TokensRanked`, `Compared`, `Inspected`,
//! `Saved`, `LessonStep` or `Failed`), or, for `Tokenize`, one `Tokenized`: a preview asked for while text is typed, which holds
//! no command in flight and so closes none. Before its reply a command may send *progress* events (`Prefilling`,
//! `Forcing`), which change nothing. `tests/it/worker.rs` holds each command to its sequence below.

mod ab;
mod answers;
mod attention;
pub mod class;
mod data;
mod fold;
mod inspect;
mod lab;
pub mod lesson;
mod round;
mod served;
pub mod settings;
pub mod words;

pub use ab::*;
pub use answers::*;
pub use attention::*;
pub use data::*;
pub use inspect::*;
pub use lab::*;
pub use round::*;
pub use served::*;
pub use settings::*;

/// Sent to the engine thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Tokenise and prefill a new prompt; `chat` wraps it in the model's chat template. Answered by one
    /// `Prefilling` per chunk read, then `Synced`; or by `Failed` (the old tree stays), also when
    /// cancelled.
    Prefill { prompt: String, chat: bool },
    /// Commit the sampler's planned token, then run the next forward pass. Answered by one `Stepped`.
    Step,
    /// One round of speculative decoding with the loaded draft (`--draft`): `k` drafted tokens, one
    /// check by the model. Answered by one `Rounded`; or by `Failed` (no draft, a served model, no room
    /// in the context), the session as it was.
    Speculate { k: usize },
    /// Commit this token (a picked candidate or a search hit). Answered by one `Stepped`; it is marked
    /// forced only if it differs from what the sampler would have taken.
    Force { token_id: u32 },
    /// Tokenise the text and teacher-force each token in turn: all of them or none. Answered by one
    /// `Forcing` per token, then one `Synced`.
    ForceText { text: String },
    /// Drop the last `n` generated tokens (never the prompt). Answered by `Synced`; no forward pass.
    Rewind { n: usize },
    /// Make the path to this leaf current. Answered by `Synced`.
    SwitchBranch { id: usize },
    /// Re-rank the current distribution with new settings. No forward pass. Answered by `Synced`.
    SetSampler(SamplerSettings),
    /// Turn the KV cache on or off. Answered by `Synced`.
    SetKvCache { on: bool },
    /// Vocabulary search for the `/` prompt. Answered by `SearchResults`.
    Search { query: String, limit: usize },
    /// How text would tokenise, for the `i` box's preview before forcing. Answered by `Tokenized`.
    Tokenize { text: String },
    /// Score the class's guess (predict-then-reveal) as the next tokens: `text` exactly (the app puts
    /// in the word boundary a typed word needs: `as_continuation`), tokenised, and each token's
    /// probability and rank read with the ones before it teacher-forced aside, beside the model's own
    /// greedy continuation of the same length. Answered by one `GuessScored`; the session is unchanged (its
    /// tip, tree, reports and KV cache), or by `Failed` (empty text, no room in the context).
    ScoreGuess { text: String },
    /// Rank the class's guesses (class mode, at the reveal): each token's raw probability and rank at
    /// `position` of the current path, beside the model's ten likeliest there. Answered by one
    /// `TokensRanked`; the session is unchanged. Or `Failed` (a position off the path, a bad id).
    RankTokens { position: usize, tokens: Vec<u32> },
    /// Commit this token as the class's choice (class mode, `C`): its most popular guess. Answered by
    /// one `Stepped`; the token is marked as the class's (`Source::Class`) even where the sampler
    /// would have taken it too.
    ClassChoice { token_id: u32 },
    /// Compare the paths to two leaves (`BranchInfo::id`; A first) step by step over the whole
    /// vocabulary. Answered by one `Compared` without a view: the session is unchanged.
    Compare { a: usize, b: usize },
    /// Teacher-force `text` from the tip as one branch, then run free as far from the same start as
    /// another, leave the free path current, and compare them (A free, B the reference). All or nothing.
    /// Answered by one `Forcing` per token of both runs, then one `Compared` with the new view.
    Reference { text: String },
    /// Look inside one forward pass of the tip: the logit lens (following the sampler's planned token)
    /// and/or the map of every head. Answered by one `Inspected`; the session is unchanged.
    Inspect { lens: bool, heads: bool },
    /// Save the whole session to a JSON file (`docs/SESSIONS.md`), atomically, with the class's
    /// answers the app kept (the engine does not keep them: the app does). Answered by one `Saved`; the
    /// session is unchanged either way.
    Save {
        path: std::path::PathBuf,
        answers: Vec<ClassAnswer>,
    },
    /// Replace the session with one saved to a file, re-feeding its current path. Answered by one
    /// `Synced`, or by `Failed` (the session as it was). A file saved with another model (its sha256
    /// differs) fails unless `ignore_model_mismatch`.
    Load {
        path: std::path::PathBuf,
        ignore_model_mismatch: bool,
    },
    /// Open a lesson (`lesson/`) and show its first step. Answered by one `LessonStep`, or `Failed`.
    OpenLesson(Box<lesson::Lesson>),
    /// Show step `step` (0-based) of the open lesson: the step alone when the session is as the lesson
    /// left it, else a replay of the lesson from its start up to that step (the draws are seeded, so the
    /// replay gives the same tokens): "back to the lesson" after exploring, or a step back. Answered by
    /// one `LessonStep`, or `Failed` (no lesson open, no such step; the session as it was).
    LessonGoto { step: usize },
    /// Run the rest of the lesson step that waits at its question, then compute the model's answer.
    /// Answered by one `LessonStep` (its `run` the whole step, `answer` set); or `Failed` (no step
    /// waits, or the session was changed by hand since: the session as it was).
    LessonReveal,
    /// Stop reading a long prompt. Never queued: `EngineHandle::send` raises the engine's cancel flag
    /// instead, which a prefill checks between chunks; that prefill then answers `Failed`. No reply of
    /// its own.
    Cancel,
    /// Stop the engine thread. No reply. `EngineHandle::quit` raises the cancel flag before it sends
    /// this, so a prompt being read stops at the next chunk instead of being read to the end.
    Quit,
}

impl Command {
    /// Whether the command changes the session (its tree, its path, its settings or its cache), as
    /// opposed to reading it (search, compare, inspect, save) or running a lesson step.
    pub fn changes_session(&self) -> bool {
        matches!(
            self,
            Command::Prefill { .. }
                | Command::Step
                | Command::Speculate { .. }
                | Command::Force { .. }
                | Command::ClassChoice { .. }
                | Command::ForceText { .. }
                | Command::Rewind { .. }
                | Command::SwitchBranch { .. }
                | Command::SetSampler(_)
                | Command::SetKvCache { .. }
                | Command::Reference { .. }
                | Command::Load { .. }
        )
    }
}

/// Sent from the engine thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Progress while the model loads ("reading the weights"); `Loaded` or `Failed` follows.
    Loading(String),
    /// The model's whole vocabulary as the screen shows it, sent once during the load when the
    /// config asks (`EngineConfig::vocabulary`: class mode's room looks guesses up in it). Progress:
    /// it changes nothing in the app.
    Vocabulary(std::sync::Arc<Vec<TokenView>>),
    Loaded(ModelInfo),
    /// `done` of a prompt's `total` tokens have been read (progress before `Synced`; first with
    /// `done` 0).
    Prefilling {
        done: usize,
        total: usize,
    },
    /// Teacher forcing has forced `done` of `total` tokens (progress before `Synced`).
    Forcing {
        done: usize,
        total: usize,
    },
    /// The whole session after a prefill, rewind, branch switch, setting change or teacher forcing.
    Synced(SessionView),
    /// One step: fold it into the previous view with `SessionView::apply`.
    Stepped(StepReport),
    /// One speculative round, and the whole session after it (the view reads the round's last
    /// token: one more pass of the model, which a server leaves to the next round's check and the
    /// round's cost leaves out).
    Rounded {
        round: Box<RoundSteps>,
        view: Box<SessionView>,
    },
    /// The tokens `text` becomes, in order.
    Tokenized {
        text: String,
        tokens: Vec<TokenView>,
    },
    SearchResults {
        query: String,
        hits: Vec<Candidate>,
    },
    /// The class's guess, scored (boxed: a list of tokens twice).
    GuessScored(Box<GuessScore>),
    /// The class's guesses ranked (`RankTokens`).
    TokensRanked(Box<class::TokenRanks>),
    /// Two paths compared; `view` is the whole session when the command changed it (`Reference`).
    Compared {
        comparison: Box<Comparison>,
        view: Option<SessionView>,
    },
    /// What `Inspect` saw at the tip (boxed: the lens carries a list per layer).
    Inspected(Box<Inspection>),
    /// The session was saved to `path` (`bytes` long).
    Saved {
        path: std::path::PathBuf,
        bytes: u64,
    },
    /// A lesson step was shown: what it did, and the whole session after it.
    LessonStep(Box<LessonStepView>),
    /// A command could not be carried out; the session is unchanged.
    Failed {
        what: Failure,
        reason: String,
    },
}

impl Event {
    /// Whether this event closes the command it answers (see the rule of one reply).
    pub fn is_closing(&self) -> bool {
        matches!(
            self,
            Event::Synced(_)
                | Event::Stepped(_)
                | Event::Rounded { .. }
                | Event::SearchResults { .. }
                | Event::GuessScored(_)
                | Event::TokensRanked(_)
                | Event::Compared { .. }
                | Event::Inspected(_)
                | Event::Saved { .. }
                | Event::LessonStep(_)
                | Event::Failed { .. }
        )
    }
}

/// A lesson step as the TUI shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct LessonStepView {
    /// What the step did: each action's outcome, and what is left to the TUI (panels, questions).
    pub run: lesson::StepRun,
    /// Steps run again to get here (0 when it followed on from the step before).
    pub replayed: usize,
    /// An earlier step that did not go as the lesson says, found while replaying.
    pub earlier_failure: Option<lesson::StepRun>,
    /// The models the lesson was written for (their titles), when the model loaded is none of them:
    /// the narration panel says so on every step.
    pub written_for: Option<String>,
    pub view: SessionView,
}

/// What failed, so that a front end can say it in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Loading the model: the engine stops.
    Load,
    Prefill,
    Step,
    Round,
    ForceText,
    Rewind,
    SwitchBranch,
    Settings,
    KvCache,
    Search,
    Guess,
    Compare,
    Reference,
    Inspect,
    Save,
    LoadSession,
    Lesson,
    /// The engine thread is gone.
    Engine,
}

impl Failure {
    /// The failed command, for the start of an error line.
    pub fn headline(self) -> &'static str {
        match self {
            Failure::Load => "could not load the model",
            Failure::Prefill => "could not read the prompt",
            Failure::Step => "could not step",
            Failure::Round => "could not run a speculative round",
            Failure::ForceText => "could not force the text",
            Failure::Rewind => "could not rewind",
            Failure::SwitchBranch => "could not switch branch",
            Failure::Settings => "could not change the sampler",
            Failure::KvCache => "could not switch the KV cache",
            Failure::Search => "could not search",
            Failure::Guess => "could not score the guess",
            Failure::Compare => "could not compare the paths",
            Failure::Reference => "could not teacher-force the reference",
            Failure::Inspect => "could not look inside the pass",
            Failure::Save => "could not save the session",
            Failure::LoadSession => "could not load the session",
            Failure::Lesson => "could not run the lesson",
            Failure::Engine => "the engine stopped",
        }
    }

    /// Which failure a command's error is.
    pub fn of(cmd: &Command) -> Failure {
        match cmd {
            Command::Prefill { .. } => Failure::Prefill,
            Command::Step | Command::Force { .. } | Command::ClassChoice { .. } => Failure::Step,
            Command::Speculate { .. } => Failure::Round,
            Command::ForceText { .. } => Failure::ForceText,
            Command::Rewind { .. } => Failure::Rewind,
            Command::SwitchBranch { .. } => Failure::SwitchBranch,
            Command::SetSampler(_) => Failure::Settings,
            Command::SetKvCache { .. } => Failure::KvCache,
            Command::Search { .. } | Command::Tokenize { .. } => Failure::Search,
            Command::ScoreGuess { .. } | Command::RankTokens { .. } => Failure::Guess,
            Command::Compare { .. } => Failure::Compare,
            Command::Reference { .. } => Failure::Reference,
            Command::Inspect { .. } => Failure::Inspect,
            Command::Save { .. } => Failure::Save,
            Command::Load { .. } => Failure::LoadSession,
            Command::OpenLesson(_) | Command::LessonGoto { .. } | Command::LessonReveal => {
                Failure::Lesson
            }
            Command::Cancel | Command::Quit => Failure::Engine,
        }
    }
}
