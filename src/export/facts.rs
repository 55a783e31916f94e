//! The figures a handout shows in both formats, computed once from a saved session: the current path's
//! steps, every branch's totals, the timings of prefill against decode, and the `nexttoken trace`
//! command that repeats a path.

pub use super::replay::{shell_quote, trace_command, Replay};
use crate::engine::session_file::{SavedNode, SavedSession};
use crate::protocol::{ClassAnswer, TokenKind};

/// The probability bands a token is coloured by, most likely first: the TUI's transcript steps
/// (`ui::theme::PROB_STEPS`); below the last step is the fifth band.
pub const BAND_STEPS: [f32; 4] = crate::fmt::PROB_STEPS;
/// Each band's label, in the order of [`band`].
pub const BAND_LABELS: [&str; 5] = ["≥ 50%", "20–50%", "5–20%", "1–5%", "< 1%"];
/// How many candidates a handout lists per step.
pub const TOP_SHOWN: usize = 5;

/// The band of a probability: 0 (at least 50%) to 4 (under 1%).
pub fn band(p: f32) -> usize {
    BAND_STEPS
        .iter()
        .position(|&s| p >= s)
        .unwrap_or(BAND_STEPS.len())
}

/// Everything both formats show, borrowed from the saved session.
pub struct Handout<'a> {
    pub saved: &'a SavedSession,
    /// The session file's name (no folder), for the footer.
    pub source_name: String,
    /// The prompt's nodes, in order.
    pub prompt: Vec<&'a SavedNode>,
    /// The generated nodes of the current path: step `i` is `steps[i]`.
    pub steps: Vec<&'a SavedNode>,
    pub branches: Vec<Branch>,
    pub timings: Timings,
    /// The command that repeats the current path, or why there is none.
    pub command: Result<String, String>,
    /// The sampler settings the current path's tokens were chosen under, in one line: one set, or
    /// each run of steps with its own ("steps 1-5: temperature 0.80 …; from step 6: …").
    pub sampler: String,
    /// The seeds of those settings ("7", or "7, then 8" when it changed).
    pub seed: String,
}

/// One path of the tree: a leaf, or the current tip when a rewind left it inside a longer branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The node the path ends on.
    pub end: usize,
    /// The current path ends here.
    pub current: bool,
    /// The path ends on an inner node (the current tip after a rewind), not on a leaf.
    pub inner: bool,
    /// Generated tokens this path shares with its nearest sibling before it parts from it.
    pub fork_step: usize,
    /// Generated tokens on the path.
    pub len: usize,
    /// The text of the tokens after the fork.
    pub text_after_fork: String,
    /// Generated tokens that were forced.
    pub forced: usize,
    /// Sum of the generated tokens' log-probabilities (nats).
    pub total_logprob: f64,
    /// `total_logprob / len`; `None` for an empty path.
    pub mean_logprob: Option<f64>,
    /// Mean log-probability of the tokens the model chose itself; `None` when there are none.
    pub mean_unforced_logprob: Option<f64>,
    /// The command that repeats this path, or why there is none.
    pub command: Result<String, String>,
}

/// Prefill against decode.
#[derive(Debug, Clone, PartialEq)]
pub struct Timings {
    pub prefill_tokens: usize,
    pub prefill_ms: f64,
    /// `prefill_ms / prefill_tokens` (0 for no tokens).
    pub prefill_ms_per_token: f64,
    pub ttft_ms: f64,
    /// Decode passes with the KV cache on, over every generated token of the tree that had one.
    pub cached: Option<Decode>,
    /// The same with the KV cache off (each pass re-read the whole sequence).
    pub uncached: Option<Decode>,
}

impl Timings {
    /// Median decode pass (cache on) over prefill per token: what one generated token costs against
    /// one prompt token.
    pub fn decode_over_prefill(&self) -> Option<f64> {
        let d = self.cached.as_ref()?;
        (self.prefill_ms_per_token > 0.0).then(|| d.median_ms / self.prefill_ms_per_token)
    }

    /// Median decode pass with the cache off over one with it on.
    pub fn uncached_over_cached(&self) -> Option<f64> {
        let (on, off) = (self.cached.as_ref()?, self.uncached.as_ref()?);
        (on.median_ms > 0.0).then(|| off.median_ms / on.median_ms)
    }
}

/// Decode passes of one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Decode {
    pub passes: usize,
    pub mean_ms: f64,
    pub median_ms: f64,
}

impl<'a> Handout<'a> {
    /// The figures of `saved`; `source_name` is the file it was read from. The commands name the
    /// model as [`Replay::from_file`] does and force tokens by id.
    pub fn new(saved: &'a SavedSession, source_name: &str) -> Self {
        Self::with_replay(saved, source_name, &Replay::from_file(saved))
    }

    /// As [`Handout::new`], with the commands written as `replay` says (the model's path, forced
    /// tokens as text).
    pub fn with_replay(saved: &'a SavedSession, source_name: &str, replay: &Replay) -> Self {
        let path = path_to(saved, saved.current);
        let prompt_len = saved.prompt_len;
        let nodes = |ids: &[usize]| ids.iter().map(|&i| &saved.nodes[i]).collect::<Vec<_>>();
        Handout {
            saved,
            source_name: source_name.to_string(),
            prompt: nodes(&path[..prompt_len.min(path.len())]),
            steps: nodes(&path[prompt_len.min(path.len())..]),
            branches: branches(saved, replay),
            timings: timings(saved),
            command: trace_command(saved, &path, replay),
            sampler: sampler_line(saved, &path),
            seed: seed_line(saved, &path),
        }
    }
}

/// [`Handout::sampler`] for `path`.
fn sampler_line(saved: &SavedSession, path: &[usize]) -> String {
    use super::markdown::settings_summary;
    let runs = saved.settings_along(path);
    if runs.len() < 2 {
        let s = runs.first().map_or(&saved.settings, |r| r.1);
        return settings_summary(s);
    }
    let parts: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(i, (from, s))| {
            let steps = match runs.get(i + 1) {
                Some((next, _)) if *next == from + 1 => format!("step {}", from + 1),
                Some((next, _)) => format!("steps {}-{next}", from + 1),
                None => format!("from step {}", from + 1),
            };
            format!("{steps}: {}", settings_summary(s))
        })
        .collect();
    parts.join("; ")
}

/// [`Handout::seed`] for `path`.
fn seed_line(saved: &SavedSession, path: &[usize]) -> String {
    let mut seeds: Vec<u64> = saved
        .settings_along(path)
        .iter()
        .map(|r| r.1.seed)
        .collect();
    seeds.dedup();
    match seeds.as_slice() {
        [] => saved.settings.seed.to_string(),
        [one] => one.to_string(),
        many => {
            let all: Vec<String> = many.iter().map(u64::to_string).collect();
            all.join(", then ")
        }
    }
}

/// Node ids from the first prompt token to `end`.
pub fn path_to(saved: &SavedSession, end: usize) -> Vec<usize> {
    let mut path = vec![];
    let mut at = Some(end);
    while let Some(n) = at {
        path.push(n);
        at = saved.nodes[n].parent;
    }
    path.reverse();
    path
}

/// Each node's children, in the order they were made.
fn children(saved: &SavedSession) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]; saved.nodes.len()];
    for n in &saved.nodes {
        if let Some(p) = n.parent {
            out[p].push(n.id);
        }
    }
    out
}

/// Every leaf below the prompt (and the current tip when it is not one), in node order.
pub fn branches(saved: &SavedSession, replay: &Replay) -> Vec<Branch> {
    let kids = children(saved);
    let last_prompt = saved.prompt_len - 1;
    let ends = (last_prompt..saved.nodes.len())
        .filter(|&n| kids[n].is_empty() || n == saved.current)
        .filter(|&n| n >= saved.prompt_len || n == saved.current);
    ends.map(|end| {
        let path = path_to(saved, end);
        let generated = &path[saved.prompt_len..];
        // The deepest node before the end where the tree splits: the path parts from its nearest
        // sibling after it.
        let fork = (last_prompt..path.len().saturating_sub(1))
            .rev()
            .find(|&i| kids[path[i]].len() > 1)
            .map_or(0, |i| i + 1 - saved.prompt_len);
        let records = generated.iter().map(|&n| &saved.nodes[n].record);
        let logprobs: Vec<(f64, bool)> = records
            .map(|r| (r.logprob as f64, r.source.by_hand()))
            .collect();
        let total: f64 = logprobs.iter().map(|x| x.0).sum();
        let unforced: Vec<f64> = logprobs.iter().filter(|x| !x.1).map(|x| x.0).collect();
        Branch {
            end,
            current: end == saved.current,
            inner: !kids[end].is_empty(),
            fork_step: fork,
            len: generated.len(),
            text_after_fork: decode(saved, &generated[fork..]),
            forced: logprobs.iter().filter(|x| x.1).count(),
            total_logprob: total,
            mean_logprob: mean(&logprobs.iter().map(|x| x.0).collect::<Vec<_>>()),
            mean_unforced_logprob: mean(&unforced),
            command: trace_command(saved, &path, replay),
        }
    })
    .collect()
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// The text of some nodes, partial UTF-8 bytes (shown as `<E6 97>`) joined back into characters.
pub fn decode(saved: &SavedSession, nodes: &[usize]) -> String {
    let mut bytes = vec![];
    for &n in nodes {
        let t = &saved.nodes[n].record.token;
        if t.kind == TokenKind::Bytes {
            token_bytes(&t.text, &mut bytes);
        } else {
            bytes.extend(t.text.as_bytes());
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A bytes token's display text (valid text with `<HH HH>` groups for the invalid bytes) as bytes.
fn token_bytes(text: &str, out: &mut Vec<u8>) {
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.extend(&rest.as_bytes()[..open]);
        let after = &rest[open + 1..];
        let group = after.find('>').and_then(|close| {
            let hex: Option<Vec<u8>> = after[..close]
                .split(' ')
                .map(|b| (b.len() == 2).then(|| u8::from_str_radix(b, 16).ok())?)
                .collect();
            Some((hex?, close))
        });
        match group {
            Some((hex, close)) => {
                out.extend(hex);
                rest = &after[close + 1..];
            }
            None => {
                out.push(b'<');
                rest = after;
            }
        }
    }
    out.extend(rest.as_bytes());
}

fn timings(saved: &SavedSession) -> Timings {
    let p = &saved.prefill;
    let mut on = vec![];
    let mut off = vec![];
    for n in &saved.nodes[saved.prompt_len..] {
        match n.pass {
            Some(pass) if pass.kv_cache => on.push(pass.ms),
            Some(pass) => off.push(pass.ms),
            None => {}
        }
    }
    let decode = |xs: &mut Vec<f64>| {
        (!xs.is_empty()).then(|| Decode {
            passes: xs.len(),
            mean_ms: xs.iter().sum::<f64>() / xs.len() as f64,
            median_ms: median(xs),
        })
    };
    Timings {
        prefill_tokens: p.tokens,
        prefill_ms: p.ms,
        prefill_ms_per_token: if p.tokens > 0 {
            p.ms / p.tokens as f64
        } else {
            0.0
        },
        ttft_ms: p.ttft_ms,
        cached: decode(&mut on),
        uncached: decode(&mut off),
    }
}

/// The step an answer was about, counted from 1 as the status bar counts generated tokens.
pub fn answer_step(saved: &SavedSession, a: &ClassAnswer) -> usize {
    (a.position + 1).saturating_sub(saved.prompt_len)
}

/// The columns of the answers table, in order.
pub const ANSWER_COLUMNS: [&str; 6] = ["step", "question", "class", "model", "right", "detail"];

/// The sentence above the answers table: how many were right, and what right means.
pub fn answers_note(answers: &[ClassAnswer]) -> String {
    let right = answers.iter().filter(|a| a.correct).count();
    let mut note = format!(
        "{right} of {} right. A guess at the next token is right when it is exactly the model's own (greedy) choice, rank 1 being its favourite; an answer to a lesson's question is right when it matches what the model then did.",
        answers.len()
    );
    if answers.iter().any(|a| a.kind == "class") {
        note += " What the class predicted from its devices (class mode) is one row per reveal: the class's most popular guess, right when it was the model's top choice, and its guesses with the model's probability of each.";
    }
    note
}

/// One row per answer, as plain text in [`ANSWER_COLUMNS`]' order (each format escapes it).
pub fn answer_rows(saved: &SavedSession) -> Vec<[String; 6]> {
    saved
        .answers
        .iter()
        .map(|a| {
            [
                format!("step {}", answer_step(saved, a)),
                a.question.clone(),
                a.class.clone(),
                a.model.clone(),
                if a.correct { "✓ yes" } else { "✗ no" }.to_string(),
                a.detail.clone(),
            ]
        })
        .collect()
}
