//! The `nexttoken trace` command line that repeats a path of a saved session: pasted in any folder, it
//! gives the same tokens. The model is named as `--model` finds it from anywhere (a known model's name,
//! else a path), and a forced token is given as its text when that text reads back as the same one
//! token, else by id.

use crate::engine::catalog::KNOWN;
use crate::engine::session_file::SavedSession;
use crate::protocol::{SamplerSettings, Source, TokenKind};

/// What the command needs beyond the session file: how to name the model, and which forced tokens can
/// be written as text.
pub struct Replay<'a> {
    /// `--model`'s value.
    pub model: String,
    /// Whether `text` tokenises to exactly the one token `id` under the session's tokenizer, as
    /// `trace --force STEP:text` reads it. `None` (no vocabulary at hand): every forced token by id.
    pub reads_back: Option<&'a dyn Fn(u32, &str) -> bool>,
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
    let s = &saved.settings;
    let d = SamplerSettings::default();
    if s.frequency_penalty != d.frequency_penalty || s.presence_penalty != d.presence_penalty {
        return Err("the frequency and presence penalties have no command-line flag".into());
    }
    if s.penalty_last_n != d.penalty_last_n {
        return Err("the penalty window has no command-line flag".into());
    }
    let generated = &path[saved.prompt_len.min(path.len())..];
    let records: Vec<_> = generated.iter().map(|&n| &saved.nodes[n].record).collect();
    let other = if s.greedy {
        Source::Sampled
    } else {
        Source::Greedy
    };
    if records.iter().any(|r| r.source == other) {
        return Err(format!(
            "the sampler settings changed during the session (a token here was {}, but the saved settings are {}); only the last settings are saved",
            if s.greedy { "sampled" } else { "greedy" },
            if s.greedy { "greedy" } else { "sampled" },
        ));
    }
    let before_last = records.len().saturating_sub(1);
    let special = records[..before_last]
        .iter()
        .find(|r| r.token.kind == TokenKind::Special && r.source != Source::Forced);
    if let Some(r) = special {
        return Err(format!(
            "the path goes on after the special token {}, where `trace` stops if it ends the sequence",
            crate::fmt::quoted_token(&r.token)
        ));
    }
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
    sampler_flags(s, &mut flag);
    flag("seed", Some(s.seed.to_string()));
    flag("steps", Some(records.len().to_string()));
    for (step, r) in records.iter().enumerate() {
        if r.source == Source::Forced {
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

/// The sampler flags whose values differ from the defaults.
fn sampler_flags(s: &SamplerSettings, flag: &mut dyn FnMut(&str, Option<String>)) {
    let d = SamplerSettings::default();
    if s.greedy {
        flag("greedy", None);
    } else if s.temperature != d.temperature {
        flag("temperature", Some(s.temperature.to_string()));
    }
    let numbers = [
        ("sample-top-k", s.top_k as f32, d.top_k as f32),
        ("top-p", s.top_p, d.top_p),
        ("min-p", s.min_p, d.min_p),
        ("repeat-penalty", s.repeat_penalty, d.repeat_penalty),
    ];
    for (name, v, def) in numbers {
        if v != def {
            flag(name, Some(v.to_string()));
        }
    }
    if s.dry_multiplier != 0.0 && s.dry_penalty_last_n != 0 {
        flag("dry-multiplier", Some(s.dry_multiplier.to_string()));
        flag("dry-base", Some(s.dry_base.to_string()));
        flag("dry-allowed-length", Some(s.dry_allowed_length.to_string()));
        flag("dry-penalty-last-n", Some(s.dry_penalty_last_n.to_string()));
        if s.dry_sequence_breakers != d.dry_sequence_breakers {
            if s.dry_sequence_breakers.is_empty() {
                flag("dry-sequence-breaker", Some("none".into()));
            }
            for b in &s.dry_sequence_breakers {
                flag("dry-sequence-breaker", Some(escape_breaker(b)));
            }
        }
    }
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

/// A DRY breaker as `--dry-sequence-breaker` reads it back (`\n`, `\t`, `\r`, `\\`, `\"`).
fn escape_breaker(b: &str) -> String {
    let mut out = String::new();
    for c in b.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
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
