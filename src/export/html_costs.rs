//! The HTML handout's cost sections: prefill against decode with the speed of light, and the
//! speculative rounds (the figures are `facts.rs`'s and `rounds_text.rs`'s; this only lays them out).

use super::facts::Handout;
use super::html::escape;
use std::fmt::Write;

pub(super) fn timings(o: &mut String, h: &Handout) {
    let t = &h.timings;
    o.push_str("<section id=\"timings\">\n<h2>Timings</h2>\n");
    o.push_str("<table class=\"timings\">\n<thead><tr><th>phase</th><th class=\"num\">tokens</th><th class=\"num\">total</th><th class=\"num\">mean per token</th><th class=\"num\">median per token</th></tr></thead>\n<tbody>\n");
    let _ = writeln!(
        o,
        "<tr><td>prefill: the prompt read in one pass</td><td class=\"num\">{}</td><td class=\"num\">{:.2} ms</td><td class=\"num\">{:.3} ms</td><td class=\"num\">—</td></tr>",
        t.prefill_tokens, t.prefill_ms, t.prefill_ms_per_token
    );
    for (name, d) in [
        ("decode, KV cache on: one pass per token", &t.cached),
        (
            "decode, KV cache off: each pass re-reads the sequence",
            &t.uncached,
        ),
    ] {
        if let Some(d) = d {
            let _ = writeln!(
                o,
                "<tr><td>{name}</td><td class=\"num\">{}</td><td class=\"num\">{:.2} ms</td><td class=\"num\">{:.3} ms</td><td class=\"num\">{:.3} ms</td></tr>",
                d.passes,
                d.mean_ms * d.passes as f64,
                d.mean_ms,
                d.median_ms
            );
        }
    }
    o.push_str("</tbody>\n</table>\n");
    for p in super::timing_text::sentences(t, |s| format!("<b>{s}</b>")) {
        let _ = writeln!(o, "<p>{p}</p>");
    }
    for p in super::rounds_text::light_sentences(h.saved, t, h.prompt.len() + h.steps.len()) {
        let _ = writeln!(o, "<p>{}</p>", escape(&p));
    }
    o.push_str("</section>\n");
}

pub(super) fn speculation(o: &mut String, h: &Handout) {
    use super::rounds_text::{round_rows, rounds_summary, ROUND_COLUMNS};
    let Some(summary) = rounds_summary(h.saved) else {
        return;
    };
    o.push_str("<section id=\"rounds\">\n<h2>Speculative decoding</h2>\n");
    let _ = writeln!(
        o,
        "<p>{}</p>\n<table class=\"rounds\">\n<thead><tr>",
        escape(&summary)
    );
    for c in ROUND_COLUMNS {
        let _ = write!(o, "<th>{}</th>", escape(c));
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for row in round_rows(h.saved) {
        o.push_str("<tr>");
        for c in row {
            let _ = write!(o, "<td>{}</td>", escape(&c));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table>\n</section>\n");
}
