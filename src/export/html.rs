//! The handout as one self-contained HTML page: inline styles, no script, no link out, a top-5 popup on
//! every generated token (hover or focus), the class's answers when there are any, and a print
//! stylesheet that keeps everything on paper.

use super::facts::{
    answer_rows, answers_note, band, Branch, Handout, ANSWER_COLUMNS, BAND_LABELS, TOP_SHOWN,
};
use crate::engine::session_file::SavedNode;
use crate::fmt::FORCED_MARK;
use crate::fmt::{pct, quoted_token, visible};
use crate::protocol::{Source, TokenKind};
use std::fmt::Write;

/// The page's styles: the bands' colours with an underline style each, so that colour is never alone.
const CSS: &str = include_str!("handout.css");

/// Text with `&`, `<`, `>`, `"` and `'` escaped, for an element or an attribute.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The whole page.
pub fn render(h: &Handout) -> String {
    let s = h.saved;
    let mut o = String::new();
    let title = format!("nexttoken handout: {}", visible(&s.prompt));
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(o, "<title>{}</title>", escape(&title));
    let _ = writeln!(o, "<style>\n{CSS}</style>\n</head>\n<body>");
    header(&mut o, h);
    text(&mut o, h);
    answers(&mut o, h);
    steps(&mut o, h);
    branches(&mut o, &h.branches);
    super::html_costs::timings(&mut o, h);
    super::html_costs::speculation(&mut o, h);
    let _ = writeln!(
        o,
        "<footer>Made by <code>nexttoken export</code> from <code>{}</code> (saved by {}).</footer>\n</body>\n</html>",
        escape(&h.source_name),
        escape(&s.saved_by)
    );
    o
}

fn row(o: &mut String, name: &str, value_html: &str) {
    let _ = writeln!(
        o,
        "<tr><th scope=\"row\">{name}</th><td>{value_html}</td></tr>"
    );
}

fn header(o: &mut String, h: &Handout) {
    let s = h.saved;
    let _ = writeln!(o, "<header>\n<h1>nexttoken handout</h1>");
    let _ = writeln!(
        o,
        "<p class=\"lead\">What a language model wrote after <q>{}</q>, one token at a time.</p>",
        escape(&visible(&s.prompt))
    );
    o.push_str("<table class=\"facts\">\n");
    let short = s.model.sha256.get(..12).unwrap_or(&s.model.sha256);
    let model = format!(
        "<code>{}</code> (sha256 <code title=\"{}\">{}</code>, {:.1} MB)",
        escape(&s.model.file),
        escape(&s.model.sha256),
        escape(short),
        s.model.bytes as f64 / 1e6
    );
    row(o, "model", &model);
    row(o, "tokenizer", &escape(&s.tokenizer));
    let prompt = format!("<code class=\"prompt-text\">{}</code>", escape(&s.prompt));
    row(o, "prompt", &prompt);
    row(
        o,
        "chat template",
        if s.chat {
            "yes: the prompt was a user's turn"
        } else {
            "no: plain text"
        },
    );
    row(o, "sampler", &escape(&h.sampler));
    row(o, "seed", &escape(&h.seed));
    let tokens = format!(
        "{} prompt + {} generated ({} forced)",
        h.prompt.len(),
        h.steps.len(),
        forced_count(&h.steps)
    );
    row(o, "tokens", &tokens);
    o.push_str("</table>\n");
    o.push_str("<h2>To repeat this run</h2>\n");
    match &h.command {
        Ok(cmd) => {
            let _ = writeln!(
                o,
                "<pre class=\"command\"><code>{}</code></pre>",
                command_words(cmd)
            );
            o.push_str("<p class=\"note\">The same model, settings and seed give the same tokens: the draw at each position depends only on the seed and the position. Add <code>--save FILE</code> to keep the session.</p>\n");
        }
        Err(why) => {
            let _ = writeln!(
                o,
                "<p class=\"note\">No command line repeats it: {}.</p>",
                escape(why)
            );
        }
    }
    o.push_str("</header>\n");
}

/// The class's answers and the model's, when the session kept any.
fn answers(o: &mut String, h: &Handout) {
    if h.saved.answers.is_empty() {
        return;
    }
    o.push_str("<section id=\"answers\">\n<h2>The class's answers</h2>\n");
    let note = escape(&answers_note(&h.saved.answers));
    let _ = writeln!(o, "<p class=\"note\">{note}</p>");
    let head: Vec<String> = ANSWER_COLUMNS
        .iter()
        .map(|c| match *c {
            "step" => format!("<th class=\"num\">{c}</th>"),
            c => format!("<th>{c}</th>"),
        })
        .collect();
    let _ = writeln!(
        o,
        "<table class=\"answers\">\n<thead><tr>{}</tr></thead>\n<tbody>",
        head.concat()
    );
    for [step, question, class, model, right, detail] in answer_rows(h.saved) {
        let _ = writeln!(
            o,
            "<tr><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            escape(&step),
            escape(&question),
            escape(&class),
            escape(&model),
            right,
            escape(&detail)
        );
    }
    o.push_str("</tbody>\n</table>\n</section>\n");
}

fn forced_count(steps: &[&SavedNode]) -> usize {
    steps.iter().filter(|n| n.record.source.by_hand()).count()
}

fn legend(o: &mut String) {
    o.push_str("<p class=\"legend\">Generated tokens by the model's probability: ");
    for (b, label) in BAND_LABELS.iter().enumerate() {
        let _ = write!(o, "<span class=\"tok b{b}\">{}</span> ", escape(label));
    }
    let _ = writeln!(
        o,
        "· <span class=\"tok prompt\">prompt</span> · <span class=\"tok forced\"><b class=\"flag\">{FORCED_MARK}</b>forced</span> (chosen by hand, or by the class in class mode, not by the sampler). Hover over a token, or tab to it, to see the five candidates it was chosen from.</p>"
    );
}

/// A token's text for running text: leading spaces kept, a newline shown as ↵ and then broken.
fn running(text: &str, forced: bool) -> String {
    let shown = visible(text);
    let lead = shown.len() - shown.trim_start_matches(' ').len();
    let (spaces, rest) = shown.split_at(lead);
    let mut out = escape(spaces);
    if forced {
        // As in the TUI: the flag goes against the token's first character, after its spaces.
        let _ = write!(out, "<b class=\"flag\">{FORCED_MARK}</b>");
    }
    out.push_str(&escape(rest).replace('↵', "↵<br>"));
    out
}

fn source_name(source: Source) -> &'static str {
    match source {
        Source::Prompt => "prompt",
        Source::Sampled => "sampled",
        Source::Greedy => "greedy",
        Source::Forced => "forced",
        Source::Class => "the class's choice",
    }
}

fn text(o: &mut String, h: &Handout) {
    o.push_str("<section id=\"text\">\n<h2>The text</h2>\n");
    legend(o);
    o.push_str("<p class=\"text\">");
    for n in &h.prompt {
        let _ = write!(
            o,
            "<span class=\"tok prompt\" title=\"prompt token {}\">{}</span>",
            escape(&quoted_token(&n.record.token)),
            running(&n.record.token.text, false)
        );
    }
    for (i, n) in h.steps.iter().enumerate() {
        // Counted from 1, as the screen counts; the session file keeps 0-based positions.
        let step = i + 1;
        let r = &n.record;
        let forced = r.source.by_hand();
        let mut class = format!("tok gen b{}", band(r.prob));
        if forced {
            class.push_str(" forced");
        }
        if r.token.kind == TokenKind::Special {
            class.push_str(" special");
        }
        let title = format!(
            "step {step} · {} · p {} · rank #{}",
            source_name(r.source),
            pct(r.prob),
            r.rank + 1
        );
        let _ = write!(
            o,
            "<span class=\"{class}\" tabindex=\"0\" title=\"{}\">{}{}</span>",
            escape(&title),
            running(&r.token.text, forced),
            popup(step, n)
        );
    }
    o.push_str("</p>\n</section>\n");
}

/// The top candidates of a step, shown on hover or focus.
fn popup(step: usize, n: &SavedNode) -> String {
    let r = &n.record;
    let mut o = format!(
        "<span class=\"pop\" role=\"tooltip\"><span class=\"pop-head\">step {step}: {} {} · p {} · rank #{} · entropy {:.2} nats</span>",
        escape(&quoted_token(&r.token)),
        source_name(r.source),
        pct(r.prob),
        r.rank + 1,
        r.entropy
    );
    o.push_str(&top_list(n, "pop-row"));
    o.push_str("</span>");
    o
}

/// The top candidates, best first, the chosen one marked; `class` is each row's class.
fn top_list(n: &SavedNode, class: &str) -> String {
    let Some(choice) = &n.chosen_from else {
        return format!("<span class=\"{class} none\">(not kept)</span>");
    };
    let mut o = String::new();
    for c in choice.top_k.iter().take(TOP_SHOWN) {
        let chosen = c.token.id == n.token;
        let _ = write!(
            o,
            "<span class=\"{class}{}\">{}<span class=\"p\">{}</span>{}</span>",
            if chosen { " chosen" } else { "" },
            escape(&quoted_token(&c.token)),
            pct(c.prob),
            if chosen { " ◂ chosen" } else { "" }
        );
    }
    o
}

fn steps(o: &mut String, h: &Handout) {
    o.push_str("<section id=\"steps\">\n<h2>Step by step</h2>\n");
    o.push_str("<p class=\"note\">Steps are counted from 1, as on screen (a command's <code>--force STEP:</code> counts from 0, as <code>trace</code> does). p, rank and entropy are the raw model's (softmax at temperature 1), before the sampler. Rank #1 is the model's favourite. Entropy is in nats: 0 is certain, higher is more spread.</p>\n");
    o.push_str("<table class=\"steps\">\n<thead><tr><th class=\"num\">step</th><th>token</th><th>source</th><th class=\"num\">p</th><th class=\"num\">rank</th><th class=\"num\">entropy</th><th class=\"num\">pass</th><th>top 5 candidates</th></tr></thead>\n<tbody>\n");
    for (i, n) in h.steps.iter().enumerate() {
        // Counted from 1, as the screen counts; the session file keeps 0-based positions.
        let step = i + 1;
        let r = &n.record;
        let forced = r.source.by_hand();
        let source = if forced {
            format!("<b class=\"flag\">{FORCED_MARK}</b> forced")
        } else {
            source_name(r.source).to_string()
        };
        let pass = n
            .pass
            .map_or("—".to_string(), |p| format!("{:.2} ms", p.ms));
        let _ = writeln!(
            o,
            "<tr{}><td class=\"num\">{step}</td><td><span class=\"tok b{}{}\">{}</span></td><td class=\"source\">{source}</td><td class=\"num\">{}</td><td class=\"num\">#{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{pass}</td><td class=\"top\">{}</td></tr>",
            if forced { " class=\"forced-row\"" } else { "" },
            band(r.prob),
            if forced { " forced" } else { "" },
            escape(&quoted_token(&r.token)),
            pct(r.prob),
            r.rank + 1,
            r.entropy,
            top_list(n, "top-row")
        );
    }
    o.push_str("</tbody>\n</table>\n</section>\n");
}

fn logprob(x: Option<f64>) -> String {
    x.map_or("—".into(), |x| format!("{x:.3}"))
}

fn branches(o: &mut String, bs: &[Branch]) {
    o.push_str("<section id=\"branches\">\n<h2>Branches</h2>\n");
    o.push_str("<p class=\"note\">Every path of the tree. Log-probabilities are in nats (natural log); the total is the sum over the generated tokens, forced ones included. A forced token is unlikely, so it costs its path a lot, yet the model often carries on from it with confidence: compare the mean over the tokens it chose itself.</p>\n");
    o.push_str("<table class=\"branches\">\n<thead><tr><th>path</th><th class=\"num\">fork at step</th><th class=\"num\">tokens</th><th class=\"num\">forced</th><th class=\"num\">total log p</th><th class=\"num\">mean log p</th><th class=\"num\">mean log p, not forced</th><th>text after the fork</th></tr></thead>\n<tbody>\n");
    for (i, b) in bs.iter().enumerate() {
        let name = match (b.current, b.inner) {
            (true, false) => format!("<b>▶ {} (current)</b>", i + 1),
            (true, true) => format!("<b>▶ {} (current, rewound)</b>", i + 1),
            _ => format!("{}", i + 1),
        };
        let _ = writeln!(
            o,
            "<tr{}><td>{name}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.3}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"branch-text\">{}</td></tr>",
            if b.current { " class=\"current\"" } else { "" },
            b.fork_step + 1,
            b.len,
            b.forced,
            b.total_logprob,
            logprob(b.mean_logprob),
            logprob(b.mean_unforced_logprob),
            escape(&visible(&b.text_after_fork))
        );
    }
    o.push_str(
        "</tbody>\n</table>\n<h3>Commands that repeat each path</h3>\n<ol class=\"commands\">\n",
    );
    for b in bs {
        match &b.command {
            Ok(c) => {
                let _ = writeln!(
                    o,
                    "<li><code class=\"command\">{}</code></li>",
                    command_words(c)
                );
            }
            Err(why) => {
                let _ = writeln!(o, "<li>none: {}</li>", escape(why));
            }
        }
    }
    o.push_str("</ol>\n</section>\n");
}

/// A command line, escaped, each space-separated word kept whole (`.w`): a line breaks only at a
/// space, never inside `--seed` or `smollm2-135m`, where a reader typing it from paper would copy the
/// break.
fn command_words(cmd: &str) -> String {
    let words: Vec<String> = cmd
        .split(' ')
        .map(|w| format!("<span class=\"w\">{}</span>", escape(w)))
        .collect();
    words.join(" ")
}
