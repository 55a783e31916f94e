//! The `nexttoken trace` command line that repeats a path of a saved session: pasted in any folder, it
//! gives the same tokens. The model is named as `--model` finds it from anywhere (a known model's name,
//! else a path), and a forced token is given as its text when that text reads back as the same one
//! token, else by id.

use crate::engine::catalog::KNOWN;
use crate::engine::session_file::SavedSession;
use crate::protocol::{Source, TokenKind};

/// Whether `text` tokenises to exactly the one token `id` (`Replay::reads_back`).
pub type ReadsBack<'a> = &'a dyn Fn(u32, &str) -> bool;

/// What the command needs beyond the session file: how to name the model, and which forced tokens can
/// be written as text.
pub struct Replay<'a> {
    /// `--model`'s value.
    pub model: String,
    /// Whether `text` tokenises to exactly the one token `id` under the session's tokenizer, as
    /// `trace --force STEP:text` reads it. `None` (no vocabulary at hand): every forced token by id.
    pub reads_back: Option<ReadsBack<'a>>,
}

impl Replay<'static> {
    /// From the file alone: the model by [`model_name`], found from any folder when it is a known
    /// model; every forced token by id.
    pub fn from_file(saved: &SavedSession) -> Self {
        Replay {
            model: model_name(saved, None),
            reads_back: None,
        }
    }
}

/// The model as `--model` takes it: the name of the known model with the saved sha256 (found in the
/// models directory from any folder, fetched when missing); else `found`, a copy located on this
/// machine (an absolute path); else the bare file name, which works only in the model's folder.
pub fn model_name(saved: &SavedSession, found: Option<&std::path::Path>) -> String {
    let sha = &saved.model.sha256;
    if let Some(m) = KNOWN.iter().find(|m| m.sha256.eq_ignore_ascii_case(sha)) {
        return m.name.to_string();
    }
    match found {
        Some(p) => p.display().to_string(),
        None => saved.model.file.clone(),
    }
}

/// `nexttoken trace` flags that repeat `path` (node ids from the first prompt token): the model, the
/// prompt, the sampler settings, the seed, one `--force` per forced token (`STEP:text` when the text
/// reads back as that token, else `STEP:ID`), as many steps as were generated. An error says why the
/// command line cannot repeat it.
pub fn trace_command(
    saved: &SavedSession,
    path: &[usize],
    replay: &Replay,
) -> Result<String, String> {
    let generated = &path[saved.prompt_len.min(path.len())..];
    let records: Vec<_> = generated.iter().map(|&n| &saved.nodes[n].record).collect();
    let s = path_settings(saved, path)?;
    refuse_unrepeatable(saved, generated, &records, s)?;
    let mut a: Vec<String> = vec!["nexttoken".into(), "trace".into()];
    let mut flag = |name: &str, value: Option<String>| {
        a.push(format!("--{name}"));
        a.extend(value.map(|v| shell_quote(&v)));
    };
    flag("model", Some(replay.model.clone()));
    if saved.tokenizer != "gguf" {
        flag("tokenizer", Some(saved.tokenizer.clone()));
    }
    flag("prompt", Some(saved.prompt.clone()));
    if saved.chat {
        flag("chat", None);
    }
    let sampler = s.flags();
    let seeded = sampler.iter().any(|(f, _)| *f == "seed");
    for (name, value) in sampler {
        flag(name, value);
    }
    // The seed always, so that the command reads as the draw it repeats.
    if !seeded {
        flag("seed", Some(s.seed.to_string()));
    }
    flag("steps", Some(records.len().to_string()));
    for (step, r) in records.iter().enumerate() {
        if r.source.by_hand() {
            flag("force", Some(force_spec(step, &r.token, replay)));
        }
    }
    let passes: Vec<bool> = generated
        .iter()
        .filter_map(|&n| saved.nodes[n].pass.map(|p| p.kv_cache))
        .collect();
    if !passes.is_empty() && passes.iter().all(|on| !on) {
        flag("no-kv-cache", None);
    }
    Ok(a.join(" "))
}

/// Why `trace` cannot repeat the path's `generated` nodes (their `records`) under settings `s`, if it cannot: a
/// greedy token among sampled ones (a file from before each token kept its settings), a sampled
/// speculative round's tokens, a special token it goes on after.
fn refuse_unrepeatable(
    saved: &SavedSession,
    generated: &[usize],
    records: &[&crate::protocol::TokenRecord],
    s: &crate::protocol::SamplerSettings,
) -> Result<(), String> {
    let other = if s.is_greedy() {
        Source::Sampled
    } else {
        Source::Greedy
    };
    if records.iter().any(|r| r.source == other) {
        return Err(format!(
            "the sampler settings changed during the session (a token here was {}, but the saved settings are {}); this file did not record each token's settings",
            if s.is_greedy() { "sampled" } else { "greedy" },
            if s.is_greedy() { "greedy" } else { "sampled" },
        ));
    }
    let round_drew = generated.iter().any(|&n| {
        let node = &saved.nodes[n];
        node.record.source == Source::Sampled && node.pass.is_some_and(|p| p.round)
    });
    if round_drew {
        return Err(
            "speculative rounds drew some of its tokens, and a round's draw (accepting or rejecting the draft's guesses) is not a plain step's; `trace` repeats plain steps"
                .into(),
        );
    }
    let before_last = records.len().saturating_sub(1);
    let special = records[..before_last]
        .iter()
        .find(|r| r.token.kind == TokenKind::Special && !r.source.by_hand());
    if let Some(r) = special {
        return Err(format!(
            "the path goes on after the special token {}, where `trace` stops if it ends the sequence",
            crate::fmt::quoted_token(&r.token)
        ));
    }
    Ok(())
}

/// The settings the sampler chose `path`'s tokens under (the file's when it chose none); an error
/// naming what changed when they changed along it.
fn path_settings<'a>(
    saved: &'a SavedSession,
    path: &[usize],
) -> Result<&'a crate::protocol::SamplerSettings, String> {
    match saved.settings_along(path).as_slice() {
        [] => Ok(&saved.settings),
        [(_, s)] => Ok(s),
        [(_, a), (step, b), ..] => Err(format!(
            "the sampler settings changed along this path ({} from step {} on), and one command line runs one set of settings",
            settings_change(a, b),
            step + 1
        )),
    }
}

/// What differs between two settings, as the panel shows them: "temperature 0.80 → 0.30".
pub fn settings_change(
    a: &crate::protocol::SamplerSettings,
    b: &crate::protocol::SamplerSettings,
) -> String {
    use crate::protocol::settings::Setting;
    let changed: Vec<String> = Setting::ALL
        .iter()
        .filter(|&&g| a.shown(g) != b.shown(g))
        .map(|&g| format!("{} {} → {}", g.names().label, a.shown(g), b.shown(g)))
        .collect();
    changed.join(", ")
}

/// `STEP:text` when the token's text reads back as it (and `trace` would not take the text for an
/// id), else `STEP:ID`.
fn force_spec(step: usize, token: &crate::protocol::TokenView, replay: &Replay) -> String {
    let text = &token.text;
    let as_text = token.kind == TokenKind::Text
        && !text.is_empty()
        && text.parse::<u32>().is_err()
        && !text.chars().any(char::is_control)
        && replay.reads_back.is_some_and(|f| f(token.id, text));
    if as_text {
        format!("{step}:{text}")
    } else {
        format!("{step}:{}", token.id)
    }
}

/// A word as a POSIX shell reads it back unchanged: bare when it is plain, else in single quotes.
pub fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
