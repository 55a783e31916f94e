//! Session files (`docs/SESSIONS.md`): the JSON format, written atomically and read with an error that
//! says what is wrong and what to do. Building a `SavedSession` from a live session and restoring one is
//! `session/save.rs`.

use crate::protocol::{ClassAnswer, PrefillReport, SamplerSettings, TokenRecord, TokenView};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The `format` field of every session file.
pub const FORMAT: &str = "nexttoken-session";
/// The newest format version this build writes and reads.
pub const VERSION: u32 = 1;

/// A whole session: the model it ran on, the settings, the prompt, and the token tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedSession {
    pub format: String,
    pub version: u32,
    /// "nexttoken 0.1.0": the build that wrote it.
    pub saved_by: String,
    pub model: SavedModel,
    /// The `--tokenizer` file it ran with, or "gguf" (the GGUF's own tokenizer).
    pub tokenizer: String,
    /// The sampler settings (and seed) when it was saved.
    pub settings: SamplerSettings,
    /// The prompt as typed (before any chat template), and whether it went through the chat template.
    pub prompt: String,
    pub chat: bool,
    /// Nodes `0..prompt_len` are the prompt tokens, in order.
    pub prompt_len: usize,
    /// The cost of reading the prompt when it was first read.
    pub prefill: PrefillReport,
    /// The node at the tip of the current path (a generated node, or the last prompt token).
    pub current: usize,
    /// Every node of the tree; a node's id is its index, and a parent always comes before its children.
    pub nodes: Vec<SavedNode>,
    /// The class's answers (predict-mode guesses, lesson questions), oldest first. Absent in files
    /// without any, older ones included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<ClassAnswer>,
    /// The speculative rounds run since the prompt was read, oldest first (absent without any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<crate::protocol::RoundReport>,
    /// The speed of light of the machine that ran it, as measured when the model loaded (absent when
    /// it was not measured: `trace`, a served model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::protocol::MachineSpeed>,
}

impl SavedSession {
    /// The settings the sampler chose node `n`'s token under: its own, else the file's.
    pub fn settings_of(&self, n: usize) -> &SamplerSettings {
        self.nodes[n].settings.as_ref().unwrap_or(&self.settings)
    }

    /// The sampler settings along `path` (node ids from the first prompt token), in runs: each run's
    /// first generated step (0-based) and the settings the sampler chose its tokens under. Tokens
    /// chosen by hand take no part; empty when the sampler chose none of the path's tokens.
    pub fn settings_along(&self, path: &[usize]) -> Vec<(usize, &SamplerSettings)> {
        let generated = &path[self.prompt_len.min(path.len())..];
        let mut runs: Vec<(usize, &SamplerSettings)> = Vec::new();
        for (step, &n) in generated.iter().enumerate() {
            if self.nodes[n].record.source.by_hand() {
                continue;
            }
            let s = self.settings_of(n);
            if runs.last().is_none_or(|(_, last)| *last != s) {
                runs.push((step, s));
            }
        }
        runs
    }

    /// The same session, carrying the class's answers.
    pub fn with_answers(mut self, answers: Vec<ClassAnswer>) -> SavedSession {
        self.answers = answers;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedModel {
    /// The GGUF's file name (no folder).
    pub file: String,
    pub sha256: String,
    pub bytes: u64,
}

/// One token of the tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedNode {
    pub id: usize,
    pub token: u32,
    /// `None` only for the first prompt token.
    pub parent: Option<usize>,
    /// The token, its position, how it was chosen (`source`: prompt, greedy, sampled, forced), and its
    /// probability, log-probability, rank and the entropy of the distribution it was chosen from.
    pub record: TokenRecord,
    /// The forward pass that fed it at its step.
    pub pass: Option<SavedPass>,
    /// Generated tokens: the top candidates of the distribution it was chosen from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_from: Option<SavedChoice>,
    /// A token the sampler chose (sampled, greedy): the settings it was chosen under, when they are not
    /// the file's `settings` (absent: the file's; files from before this field hold none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<SamplerSettings>,
}

/// The pass that wrote a token at its step: its time, whether the KV cache was on, and whether it was
/// a speculative round's (then `ms` is the round's time shared among the tokens it wrote).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SavedPass {
    pub ms: f64,
    pub kv_cache: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub round: bool,
}

impl SavedPass {
    /// A plain step's pass (not a round's).
    pub fn step(ms: f64, kv_cache: bool) -> SavedPass {
        SavedPass {
            ms,
            kv_cache,
            round: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedChoice {
    /// Best first, by raw probability (softmax of the logits at temperature 1).
    pub top_k: Vec<SavedCandidate>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedCandidate {
    pub token: TokenView,
    pub prob: f32,
    pub logprob: f32,
    pub rank: usize,
}

/// What can go wrong saving or loading a session; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SessionFileError {
    #[error("no session file at {path}: check the name and folder, or save a session first (S in the TUI, or `nexttoken trace --save FILE`)")]
    Missing { path: PathBuf },
    /// `error` is in the message and not a `source`, so a report of the chain says it once.
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot save to {path}: {source}; the file there, if any, is unchanged")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is truncated (the JSON ends early): it was not written completely; open an older copy, or save the session again")]
    Truncated { path: PathBuf },
    #[error("{path} is not a valid nexttoken session: {detail}; the file is damaged or is not a session file")]
    Corrupt { path: PathBuf, detail: String },
    #[error("{path} is a version {version} session file, newer than this nexttoken reads (version {VERSION}): update nexttoken to open it")]
    FutureVersion { path: PathBuf, version: u64 },
    #[error("{}", mismatch_text(file, saved, loaded_file, loaded))]
    ModelMismatch {
        /// The model the session was saved with (its file name) and its sha256.
        file: String,
        saved: String,
        /// The model loaded now (its file name) and its sha256.
        loaded_file: String,
        loaded: String,
    },
    #[error("the session does not fit this model: {0}")]
    DoesNotFit(String),
    #[error("the session does not know its model file, so it cannot record its sha256 (build it with engine::load::load_session)")]
    NoModelFile,
    #[error("nothing to save yet: read a prompt first")]
    NothingToSave,
    #[error("cannot hash the model file: {0}")]
    Hash(String),
    #[error(transparent)]
    Session(#[from] super::session::SessionError),
}

/// The model-mismatch message: what to do differs when the loaded file has the saved one's name (a
/// re-downloaded or re-quantised copy), where "point --model at it" would name the file already loaded.
fn mismatch_text(file: &str, saved: &str, loaded_file: &str, loaded: &str) -> String {
    let head = format!("this session was saved with the model {file} (sha256 {saved}), but the model loaded is {loaded_file} (sha256 {loaded})");
    if file == loaded_file {
        format!("{head}: a different file with the same name (downloaded again, or quantised anew?); find the file the session was saved with, or add --ignore-model-mismatch to open it with this one anyway")
    } else {
        format!("{head}: start nexttoken with --model pointing at {file}, or add --ignore-model-mismatch to open it with this model anyway")
    }
}

/// Checks that `saved` was made with the model file at `model`: the same size, then the same sha256
/// (hashing only when the sizes agree). A front end calls this before it opens the session, so the
/// mismatch is reported whole; `Session::restore_saved` checks again against the model it has loaded.
pub fn check_model_file(saved: &SavedSession, model: &Path) -> Result<(), SessionFileError> {
    let bytes = fs::metadata(model)
        .map_err(|e| SessionFileError::Hash(format!("{}: {e}", model.display())))?
        .len();
    let loaded = if bytes == saved.model.bytes {
        let sha = crate::engine::fetch::sha256_file(model)
            .map_err(|e| SessionFileError::Hash(format!("{e:#}")))?;
        if sha.eq_ignore_ascii_case(&saved.model.sha256) {
            return Ok(());
        }
        sha
    } else {
        format!("differs: {bytes} bytes, not {}", saved.model.bytes)
    };
    Err(SessionFileError::ModelMismatch {
        file: saved.model.file.clone(),
        saved: saved.model.sha256.clone(),
        loaded_file: file_name(model),
        loaded,
    })
}

/// A path's file name (the whole path when it has none), as a session file records a model.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Reads and checks a session file: JSON, the format name, the version, the fields, the tree's shape.
/// It does not check the model (see `Session::restore_saved`).
pub fn read(path: &Path) -> Result<SavedSession, SessionFileError> {
    let bytes = fs::read(path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => SessionFileError::Missing { path: path.into() },
        _ => SessionFileError::Read {
            path: path.into(),
            error,
        },
    })?;
    let corrupt = |detail: String| SessionFileError::Corrupt {
        path: path.into(),
        detail,
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        if e.is_eof() {
            SessionFileError::Truncated { path: path.into() }
        } else {
            corrupt(format!("not JSON ({e})"))
        }
    })?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(corrupt(format!("its \"format\" is not \"{FORMAT}\"")));
    }
    let version = value.get("version").and_then(|v| v.as_u64());
    match version {
        Some(v) if v > VERSION as u64 => {
            return Err(SessionFileError::FutureVersion {
                path: path.into(),
                version: v,
            })
        }
        Some(v) if v >= 1 => {}
        _ => {
            return Err(corrupt(
                "its \"version\" is missing or not 1 or more".into(),
            ))
        }
    }
    let saved: SavedSession = serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
    check_shape(&saved).map_err(corrupt)?;
    let settings = std::iter::once(&saved.settings)
        .chain(saved.nodes.iter().filter_map(|n| n.settings.as_ref()));
    for s in settings {
        s.validate()
            .map_err(|e| corrupt(format!("its sampler settings are out of range ({e})")))?;
    }
    Ok(saved)
}

/// The tree's shape: ids in order, parents before children, the prompt a chain at the start, the tip a
/// node the current path can end on.
pub fn check_shape(s: &SavedSession) -> Result<(), String> {
    let n = s.nodes.len();
    if s.prompt_len == 0 || s.prompt_len > n {
        return Err(format!("prompt_len {} with {n} nodes", s.prompt_len));
    }
    for (i, node) in s.nodes.iter().enumerate() {
        if node.id != i {
            return Err(format!("node {i} has id {}", node.id));
        }
        let prompt = i < s.prompt_len;
        // Checked: a damaged file can hold any number, usize::MAX included.
        let parent_ok = match node.parent {
            None => i == 0,
            Some(p) if prompt => p.checked_add(1) == Some(i),
            Some(p) => p < i && p + 1 >= s.prompt_len,
        };
        if !parent_ok {
            let parent = node.parent.map_or("none".into(), |p| p.to_string());
            return Err(format!("node {i} has parent {parent}"));
        }
        let is_prompt = node.record.source == crate::protocol::Source::Prompt;
        if is_prompt != prompt || node.record.token.id != node.token {
            return Err(format!("node {i}'s record does not match it"));
        }
    }
    if s.current.saturating_add(1) < s.prompt_len || s.current >= n {
        return Err(format!("the current node {} is not in the tree", s.current));
    }
    Ok(())
}

/// Writes `saved` to `path` atomically: a temporary file in the same folder, written and fsynced, then
/// renamed over `path` (and the folder fsynced where it can be). A failure or a kill at any point leaves
/// the file at `path` as it was. Returns the bytes written.
pub fn write(path: &Path, saved: &SavedSession) -> Result<u64, SessionFileError> {
    write_with_hook(path, saved, &|| Ok(()))
}

/// `write`, calling `before_rename` after the temporary file is written and fsynced: tests inject a
/// failure there.
#[doc(hidden)]
pub fn write_with_hook(
    path: &Path,
    saved: &SavedSession,
    before_rename: &dyn Fn() -> std::io::Result<()>,
) -> Result<u64, SessionFileError> {
    let mut json = serde_json::to_vec_pretty(saved).map_err(|e| SessionFileError::Write {
        path: path.into(),
        source: e.into(),
    })?;
    json.push(b'\n');
    write_bytes(path, &json, before_rename)
}

/// Writes `bytes` to `path` atomically, as [`write`] does (a handout is written the same way);
/// `before_rename` runs after the temporary file is written and fsynced.
pub(crate) fn write_bytes(
    path: &Path,
    bytes: &[u8],
    before_rename: &dyn Fn() -> std::io::Result<()>,
) -> Result<u64, SessionFileError> {
    let err = |source| SessionFileError::Write {
        path: path.into(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| {
        err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path has no file name",
        ))
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = TempFile(dir.join(tmp_name), true);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp.0)
        .map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)?;
    drop(f);
    before_rename().map_err(err)?;
    fs::rename(&tmp.0, path).map_err(err)?;
    tmp.keep();
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(bytes.len() as u64)
}

/// A temporary file removed when dropped unless it was renamed into place.
struct TempFile(PathBuf, bool);

impl TempFile {
    fn keep(mut self) {
        self.1 = false;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.1 {
            let _ = fs::remove_file(&self.0);
        }
    }
}
