//! The lesson file format (TOML, documented in docs/LESSONS.md): plain data, parsed with serde.
//!
//! A lesson is a title, a one-line summary, an estimated length, optional settings, and `[[step]]`s;
//! each step has narration and a list of actions. Everything here is pure data: nothing touches the
//! engine, so the TUI can hold a `Lesson` as it is.

pub use super::expect::{AttentionExpect, Expect};
pub use crate::protocol::SamplerPatch;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// Most steps one `step`, `autoplay` or `rewind` may ask for: a lesson is a short class, and a typo
/// (`step = 5000`) should be an error, not an hour of waiting.
pub const MAX_COUNT: u32 = 1000;

/// A whole lesson.
#[derive(Debug, Clone, PartialEq)]
pub struct Lesson {
    /// The built-in's name, or the file's stem.
    pub name: String,
    pub title: String,
    /// One line.
    pub summary: String,
    /// Estimated length of the class, in minutes.
    pub minutes: u32,
    /// The models its claims were written for and checked on (names `fetch` knows, e.g.
    /// `smollm2-135m`), with their titles; empty when the lesson names none. Opened on another
    /// model, the lesson says so on every step (`LessonStepView::written_for`).
    pub models: Vec<String>,
    pub settings: LessonSettings,
    pub steps: Vec<Step>,
}

/// How the lesson would like to be shown; the headless checker only parses these.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LessonSettings {
    /// Open in presenter mode (large type, fewer panels).
    #[serde(default)]
    pub presenter: bool,
    /// Turn predict-then-reveal on for the whole lesson.
    #[serde(default)]
    pub predict: bool,
    /// `"default"` or `"projector"` (presenter mode's default).
    #[serde(default)]
    pub theme: Option<ThemeName>,
    /// In predict mode, autoplay stops for a guess where the entropy (nats) is at least this.
    #[serde(default)]
    pub pause_above: Option<f32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThemeName {
    Default,
    Projector,
}

/// One step of a lesson: what the teacher says, and what happens.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Optional short heading.
    pub title: Option<String>,
    /// Markdown-light text: paragraphs separated by blank lines, `**bold**`, `` `code` ``.
    pub narration: String,
    pub actions: Vec<Action>,
    /// The line in the file where each action starts (1-based), for messages.
    pub action_lines: Vec<usize>,
}

/// A step's narration split at its line `---`: what the class reads while the step's question
/// waits, and what the answer shows after it (`None` without a `---`: all of it is read first).
pub fn split_at_reveal(narration: &str) -> (&str, Option<&str>) {
    match narration.split_once("\n---\n") {
        Some((before, after)) => (before, Some(after)),
        None => (narration, None),
    }
}

/// One thing a step does. In a file, each is a table with one key: `{ step = 5 }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Read this text as the prompt (starts a new tree).
    Prompt(String),
    /// Read this text as a user's chat message, through the model's chat template.
    Chat(String),
    /// Sampler settings over the defaults (any subset of the fields), seed included.
    Sampler(SamplerPatch),
    /// Step this many times with the sampler (stops early at an end of text the sampler chose).
    Step(Count),
    /// Step until a condition holds, at most `max` times.
    Autoplay(Autoplay),
    /// Force one token, given by its text, which must be exactly one token.
    Force(String),
    /// Force one token by id.
    ForceId(u32),
    /// Teacher-force a text: every one of its tokens.
    ForceText(String),
    /// Drop this many generated tokens (the dropped path stays as a branch).
    Rewind(Count),
    /// Switch to another branch: `"previous"` or an index into the branch list (oldest first).
    Branch(BranchTarget),
    /// Open a panel (TUI only).
    Panel(PanelSpec),
    /// Turn the KV cache on or off.
    KvCache(bool),
    /// Load a draft for speculative decoding: `draft = "layers:20"`, or `draft = { name = "q8_0",
    /// k = 6 }` (k drafted tokens per round, 1 to 16, 4 unless given).
    Draft(DraftAction),
    /// Run this many speculative rounds with the loaded draft (stops early at an end of text).
    Rounds(Count),
    /// A question for the class: the actions before it run when the step opens, the ones after it
    /// when the answer is revealed; then the model's answer is computed (`question.rs`).
    Ask(super::question::Question),
    /// An assertion about what the model just did (boxed: it is by far the largest action).
    Expect(Box<Expect>),
}

impl Action {
    /// Whether only the TUI acts on this (the headless checker validates it and moves on).
    pub fn tui_only(&self) -> bool {
        matches!(self, Action::Panel(_))
    }
}

/// A count of steps: a whole number from 1 to [`MAX_COUNT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub u32);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        if n < 1 || n > MAX_COUNT as i64 {
            return Err(de::Error::custom(format!(
                "{n} is not a step count: expected a whole number from 1 to {MAX_COUNT}"
            )));
        }
        Ok(Count(n as u32))
    }
}

/// Step until a condition holds; `max` is always the hard cap. With no condition, exactly `max`
/// steps. Stops early at an end of text the sampler chose.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Autoplay {
    pub max: Count,
    /// Stop after committing a token with exactly this text.
    #[serde(default)]
    pub until_token: Option<String>,
    /// Stop when a loop is found at the tip (as the loop alert finds one).
    #[serde(default)]
    pub until_loop: bool,
    /// Stop when the next distribution's entropy (nats) is above this.
    #[serde(default)]
    pub until_entropy_above: Option<f32>,
}

/// Which branch `branch` switches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchTarget {
    /// The path that was current before the last rewind or branch switch.
    Previous,
    /// The n-th branch in the branch list, oldest first (0 = the first path generated).
    Index(usize),
}

impl<'de> Deserialize<'de> for BranchTarget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BranchTarget;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"previous\" or a branch index (0 = the oldest branch)")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<BranchTarget, E> {
                match s {
                    "previous" => Ok(BranchTarget::Previous),
                    _ => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<BranchTarget, E> {
                usize::try_from(n)
                    .map(BranchTarget::Index)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<BranchTarget, E> {
                Ok(BranchTarget::Index(n as usize))
            }
        }
        d.deserialize_any(V)
    }
}

/// A draft to load: its name (as `--draft` takes it) and the tokens it proposes per round.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftAction {
    pub name: String,
    pub k: Option<usize>,
}

impl<'de> Deserialize<'de> for DraftAction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Name(String),
            Table { name: String, k: Option<usize> },
        }
        Ok(match Raw::deserialize(d)? {
            Raw::Name(name) => DraftAction { name, k: None },
            Raw::Table { name, k } => DraftAction { name, k },
        })
    }
}

/// The panels a lesson may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Panel {
    Attention,
    Timing,
    Chain,
    Compare,
    Repetition,
    Branches,
    Sampler,
    Distribution,
    /// The newest speculative round.
    Round,
}

impl Panel {
    /// Whether the panel takes the keyboard while it is open (its keys edit it), as the sampler and
    /// the branch list do: a question asked after it could not be answered.
    pub fn takes_keys(self) -> bool {
        matches!(self, Panel::Sampler | Panel::Branches)
    }
}

/// `panel = "timing"`, or `panel = { name = "attention", layer = 3, head = 5 }` (counted from 1 in
/// the file, as on screen), or `panel = { name = "chain", at = "last" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PanelSpec {
    pub panel: Panel,
    /// 0-based inside (the file counts from 1).
    pub layer: Option<usize>,
    /// 0-based inside (the file counts from 1).
    pub head: Option<usize>,
    /// Which decision the chain or bars show.
    pub at: At,
}

/// The decision a distribution panel shows: the next token's (what the model will write), or the
/// one that chose the last token (the draw the narration is about).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum At {
    #[default]
    Next,
    Last,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PanelTable {
    name: Panel,
    #[serde(default)]
    layer: Option<usize>,
    #[serde(default)]
    head: Option<usize>,
    #[serde(default)]
    at: At,
}

/// A layer or head number as written in a file (from 1) to its index (from 0).
fn from_one<E: de::Error>(n: Option<usize>, what: &str) -> Result<Option<usize>, E> {
    match n {
        Some(0) => Err(E::custom(format!(
            "{what} 0: {what}s are counted from 1, as on screen"
        ))),
        n => Ok(n.map(|n| n - 1)),
    }
}

impl<'de> Deserialize<'de> for PanelSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PanelSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a panel name or a table { name = ..., layer = ..., head = ... }")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<PanelSpec, E> {
                let panel = Panel::deserialize(de::value::StrDeserializer::<E>::new(s))?;
                Ok(PanelSpec {
                    panel,
                    layer: None,
                    head: None,
                    at: At::Next,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PanelSpec, A::Error> {
                let t = PanelTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(PanelSpec {
                    panel: t.name,
                    layer: from_one(t.layer, "layer")?,
                    head: from_one(t.head, "head")?,
                    at: t.at,
                })
            }
        }
        d.deserialize_any(V)
    }
}
