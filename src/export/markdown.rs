//! The handout as Markdown: the header facts, the text with forced tokens marked `**[⚑tok]**`, the
//! class's answers when there are any, and the per-step, branches and timings tables, every cell
//! escaped.

use super::facts::{answer_rows, answers_note, Handout, ANSWER_COLUMNS, TOP_SHOWN};
use crate::engine::session_file::SavedNode;
use crate::fmt::FORCED_MARK;
use crate::fmt::{pct, quoted_token, visible};
use crate::protocol::{Group, SamplerSettings, Setting, Source};
use std::fmt::Write;

/// Text that Markdown shows as it is: the characters that could start markup backslash-escaped (`|`
/// and backticks included), newlines made visible (↵) so that a table cell stays on one line.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in visible(s).chars() {
        if "\\`*_[]<>|~&#".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The sampler settings in one line: greedy, or the draw's settings; every other setting that acts
/// on the next token, named and shown as the sampler panel names and shows it (`protocol::settings`);
/// and which stages are off.
pub fn settings_summary(s: &SamplerSettings) -> String {
    let mut parts = vec![];
    if s.is_greedy() {
        parts.push("greedy (always the most likely token)".to_string());
    }
    let acting = s.in_effect();
    for &setting in acting.iter().filter(|&&g| g != Setting::Greedy) {
        parts.push(format!("{} {}", setting.names().label, s.shown(setting)));
    }
    for (group, off) in [(Group::Penalty, "no penalties"), (Group::Dry, "DRY off")] {
        if !acting.iter().any(|g| g.names().group == group) {
            parts.push(off.into());
        }
    }
    parts.join(" · ")
}

fn source_name(n: &SavedNode) -> String {
    match n.record.source {
        Source::Prompt => "prompt".into(),
        Source::Sampled => "sampled".into(),
        Source::Greedy => "greedy".into(),
        Source::Forced => format!("{FORCED_MARK} forced"),
        Source::Class => format!("{FORCED_MARK} the class's choice"),
    }
}

/// The whole document.
pub fn render(h: &Handout) -> String {
    let s = h.saved;
    let mut o = String::new();
    let _ = writeln!(o, "# nexttoken handout\n");
    let _ = writeln!(
        o,
        "What a language model wrote after “{}”, one token at a time.\n",
        escape(&s.prompt)
    );
    let short = s.model.sha256.get(..12).unwrap_or(&s.model.sha256);
    let forced = h.steps.iter().filter(|n| n.record.source.by_hand()).count();
    let facts = [
        (
            "model",
            format!(
                "{} (sha256 {}…, {:.1} MB)",
                escape(&s.model.file),
                escape(short),
                s.model.bytes as f64 / 1e6
            ),
        ),
        ("tokenizer", escape(&s.tokenizer)),
        ("prompt", escape(&s.prompt)),
        (
            "chat template",
            if s.chat { "yes" } else { "no: plain text" }.into(),
        ),
        ("sampler", escape(&h.sampler)),
        ("seed", escape(&h.seed)),
        (
            "tokens",
            format!(
                "{} prompt + {} generated ({forced} forced)",
                h.prompt.len(),
                h.steps.len()
            ),
        ),
    ];
    o.push_str("| | |\n|---|---|\n");
    for (k, v) in facts {
        let _ = writeln!(o, "| {k} | {v} |");
    }
    o.push_str("\n## To repeat this run\n\n");
    match &h.command {
        Ok(cmd) => {
            let _ = writeln!(o, "{}\n", code_block(cmd));
            o.push_str("The same model, settings and seed give the same tokens. Add `--save FILE` to keep the session.\n");
        }
        Err(why) => {
            let _ = writeln!(o, "No command line repeats it: {}.", escape(why));
        }
    }
    text(&mut o, h);
    answers(&mut o, h);
    steps(&mut o, h);
    branches(&mut o, h);
    timings(&mut o, h);
    speculation(&mut o, h);
    let _ = writeln!(
        o,
        "\n---\nMade by `nexttoken export` from {} (saved by {}).",
        escape(&h.source_name),
        escape(&s.saved_by)
    );
    o
}

fn text(o: &mut String, h: &Handout) {
    o.push_str("\n## The text\n\n");
    let _ = writeln!(
        o,
        "The prompt, then ▶ and what was generated; a forced token (chosen by hand, not by the sampler) is marked **\\[{FORCED_MARK}token\\]**, its spaces shown as ␣.\n"
    );
    let mut t = String::new();
    for n in &h.prompt {
        t.push_str(&escape(&n.record.token.text));
    }
    t.push_str(" ▶ ");
    for n in &h.steps {
        let tok = &n.record.token;
        if n.record.source.by_hand() {
            // The token's leading spaces stay outside the mark, so that `**` opens after a space.
            let shown = quoted_token(tok);
            let inner = shown.trim_start_matches('⟨').trim_end_matches('⟩');
            let body = inner.trim_start_matches('␣');
            t.push_str(&" ".repeat(inner.chars().count() - body.chars().count()));
            let _ = write!(t, "**\\[{FORCED_MARK}{}\\]**", escape(body));
        } else {
            t.push_str(&escape(&tok.text));
        }
    }
    // A newline in the text is shown (↵) and breaks the quoted line.
    let _ = writeln!(o, "> {}", t.replace('↵', "↵\\\n> "));
}

/// The class's answers and the model's, when the session kept any.
fn answers(o: &mut String, h: &Handout) {
    if h.saved.answers.is_empty() {
        return;
    }
    o.push_str("\n## The class's answers\n\n");
    let _ = writeln!(o, "{}\n", answers_note(&h.saved.answers));
    let _ = writeln!(o, "| {} |", ANSWER_COLUMNS.join(" | "));
    o.push_str("|---:|---|---|---|---|---|\n");
    for row in answer_rows(h.saved) {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
}

fn top(n: &SavedNode) -> String {
    let Some(choice) = &n.chosen_from else {
        return "(not kept)".into();
    };
    let items: Vec<String> = choice
        .top_k
        .iter()
        .take(TOP_SHOWN)
        .map(|c| {
            let item = format!("{} {}", escape(&quoted_token(&c.token)), pct(c.prob));
            if c.token.id == n.token {
                format!("**{item}**")
            } else {
                item
            }
        })
        .collect();
    items.join(" · ")
}

fn steps(o: &mut String, h: &Handout) {
    o.push_str("\n## Step by step\n\n");
    o.push_str("Steps are counted from 1, as on screen (a command's `--force STEP:` counts from 0, as `trace` does). p, rank and entropy are the raw model's (softmax at temperature 1); rank #1 is its favourite; entropy is in nats. In the top 5, the chosen token is in bold.\n\n");
    o.push_str("| step | token | source | p | rank | entropy | pass | top 5 |\n");
    o.push_str("|---:|---|---|---:|---:|---:|---:|---|\n");
    for (i, n) in h.steps.iter().enumerate() {
        // Counted from 1, as the screen counts; the session file keeps 0-based positions.
        let step = i + 1;
        let r = &n.record;
        let pass = n
            .pass
            .map_or("—".to_string(), |p| format!("{:.2} ms", p.ms));
        let _ = writeln!(
            o,
            "| {step} | {} | {} | {} | #{} | {:.2} | {pass} | {} |",
            escape(&quoted_token(&r.token)),
            source_name(n),
            pct(r.prob),
            r.rank + 1,
            r.entropy,
            top(n)
        );
    }
}

fn logprob(x: Option<f64>) -> String {
    x.map_or("—".into(), |x| format!("{x:.3}"))
}

fn branches(o: &mut String, h: &Handout) {
    o.push_str("\n## Branches\n\n");
    o.push_str("Every path of the tree; log-probabilities in nats, summed over the generated tokens (forced ones included). A forced token costs its path a lot, yet the model often carries on from it with confidence: compare the mean over the tokens it chose itself.\n\n");
    o.push_str("| path | fork at step | tokens | forced | total log p | mean log p | mean log p, not forced | text after the fork |\n");
    o.push_str("|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (i, b) in h.branches.iter().enumerate() {
        let name = match (b.current, b.inner) {
            (true, false) => format!("**▶ {} (current)**", i + 1),
            (true, true) => format!("**▶ {} (current, rewound)**", i + 1),
            _ => format!("{}", i + 1),
        };
        let _ = writeln!(
            o,
            "| {name} | {} | {} | {} | {:.3} | {} | {} | {} |",
            b.fork_step + 1,
            b.len,
            b.forced,
            b.total_logprob,
            logprob(b.mean_logprob),
            logprob(b.mean_unforced_logprob),
            escape(&b.text_after_fork)
        );
    }
    o.push_str("\nCommands that repeat each path:\n");
    for (i, b) in h.branches.iter().enumerate() {
        match &b.command {
            Ok(c) => {
                let _ = writeln!(o, "\nPath {}:\n\n{}", i + 1, code_block(c));
            }
            Err(why) => {
                let _ = writeln!(o, "\nPath {}: none, {}.", i + 1, escape(why));
            }
        }
    }
}

/// A fenced shell block whose fence is longer than any run of backticks in `text`.
fn code_block(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}sh\n{text}\n{fence}")
}

fn timings(o: &mut String, h: &Handout) {
    let t = &h.timings;
    o.push_str("\n## Timings\n\n");
    o.push_str("| phase | tokens | total | mean per token | median per token |\n");
    o.push_str("|---|---:|---:|---:|---:|\n");
    let _ = writeln!(
        o,
        "| prefill: the prompt read in one pass | {} | {:.2} ms | {:.3} ms | — |",
        t.prefill_tokens, t.prefill_ms, t.prefill_ms_per_token
    );
    for (name, d) in [
        ("decode, KV cache on", &t.cached),
        ("decode, KV cache off", &t.uncached),
    ] {
        if let Some(d) = d {
            let _ = writeln!(
                o,
                "| {name} | {} | {:.2} ms | {:.3} ms | {:.3} ms |",
                d.passes,
                d.mean_ms * d.passes as f64,
                d.mean_ms,
                d.median_ms
            );
        }
    }
    for p in super::timing_text::sentences(t, |s| format!("**{s}**")) {
        let _ = writeln!(o, "\n{p}");
    }
    for p in super::rounds_text::light_sentences(h.saved, t, h.prompt.len() + h.steps.len()) {
        let _ = writeln!(o, "\n{}", escape(&p));
    }
}

fn speculation(o: &mut String, h: &Handout) {
    use super::rounds_text::{round_rows, rounds_summary, ROUND_COLUMNS};
    let Some(summary) = rounds_summary(h.saved) else {
        return;
    };
    let _ = writeln!(o, "\n## Speculative decoding\n\n{}\n", escape(&summary));
    let _ = writeln!(o, "| {} |", ROUND_COLUMNS.join(" | "));
    let _ = writeln!(o, "|{}", "---|".repeat(ROUND_COLUMNS.len()));
    for row in round_rows(h.saved) {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
}
