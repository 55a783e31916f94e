//! The round's cost beside the plain steps it replaced, and the rounds so far with the acceptance at
//! which they would pay. Every figure is the engine's, measured.

use crate::analysis::speculation::{acceptance_words, break_even_acceptance, Tally};
use crate::fmt::ms;
use crate::protocol::{DraftInfo, RoundReport};
use crate::ui::theme::Theme;
use ratatui::style::Style;
use ratatui::text::Line;

/// The round's cost beside the plain steps it replaced.
pub(super) fn cost_lines(
    r: &RoundReport,
    wide: bool,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let ratio = r.plain_equivalent_ms() / r.ms();
    let verdict = if ratio >= 1.0 { "faster" } else { "slower" };
    let lines = if wide {
        vec![
            format!(
                "this round: {} for {} draft passes{} ({}) + 1 check of {} positions ({}) = {}",
                tokens(r.tokens()),
                r.draft_passes,
                match r.draft_read {
                    0..=2 => String::new(),
                    n => format!(", the first reading {n} tokens"),
                },
                ms(r.draft_ms),
                r.verify_positions,
                ms(r.verify_ms),
                ms(r.ms())
            ),
            format!(
                "as plain steps: {} × {} = {} → this round ran {ratio:.2}× ({verdict})",
                r.tokens(),
                ms(r.plain_ms),
                ms(r.plain_equivalent_ms())
            ),
        ]
    } else {
        // The plain figure is the same tokens' plain steps, said on the round's line: alone on its
        // own line, "plain: 24.4 ms" read as one plain step's time.
        vec![
            format!(
                "{}: {}, plain {}",
                tokens(r.tokens()),
                ms(r.ms()),
                ms(r.plain_equivalent_ms())
            ),
            format!("→ this round ran {ratio:.2}× ({verdict})"),
        ]
    };
    wrapped(lines, width, theme.text)
}

fn rounds(n: usize) -> String {
    match n {
        1 => "1 round".into(),
        n => format!("{n} rounds"),
    }
}

fn tokens(n: usize) -> String {
    match n {
        1 => "1 token".into(),
        n => format!("{n} tokens"),
    }
}

/// The rounds so far, and when a draft like this one would pay here.
pub(super) fn tally_lines(
    t: &Tally,
    d: &DraftInfo,
    k: usize,
    wide: bool,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    if t.rounds == 0 {
        return vec![];
    }
    let plain = t.plain_ms / t.tokens as f64;
    let per_round = t.round_ms / t.rounds as f64;
    let draft_pass = t.draft_ms / (t.rounds * k.max(1)) as f64;
    let even = match break_even_acceptance(per_round, plain, k) {
        Some(a) if a > 0.0 => pays_above(a),
        Some(_) => "rounds pay even with nothing kept".into(),
        None if wide => format!("no acceptance pays: {k} + 1 plain steps cost less than a round"),
        None => "no acceptance pays here".into(),
    };
    let lines = if wide {
        vec![
            format!(
                "so far {}: {:.0}% of checked drafts kept · {:.2} tokens per check pass · {:.2}× plain speed",
                rounds(t.rounds),
                t.acceptance() * 100.0,
                t.tokens_per_pass(),
                t.speedup()
            ),
            format!(
                "a draft pass costs {:.2} of a plain step (it reads {:.0}% of the bytes); {even}",
                draft_pass / plain,
                d.bytes_ratio * 100.0
            ),
        ]
    } else {
        vec![
            format!(
                "{}: {:.0}% kept, {:.2}×",
                rounds(t.rounds),
                t.acceptance() * 100.0,
                t.speedup()
            ),
            even,
        ]
    };
    // The status bar counts two passes a round (a class had read "passes 7" for 4 tokens beside
    // "1.33 tokens per pass"): the check, and one that reads the round's last token to show what
    // comes after it, which a decoder would fold into its next check (outside the round's cost).
    // Wide only: at 80x24 the line would push the tally off the panel.
    let mut out = wrapped(lines, width, theme.info);
    if wide {
        let passes = "passes on the status bar: 2 a round, the check and 1 to show the next token";
        out.extend(wrapped(vec![passes.to_string()], width, theme.dim));
    }
    out
}

/// "rounds pay above 97% kept", or, past 99.95%, no figure ("above 100% kept" had been shown, which
/// no round can reach).
fn pays_above(a: f64) -> String {
    match acceptance_words(a) {
        Some(p) => format!("rounds pay above {p} kept"),
        None => "rounds pay only if almost every draft is kept".into(),
    }
}

/// Lines wrapped at `width`, the continuation indented.
pub(super) fn wrapped(lines: Vec<String>, width: usize, style: Style) -> Vec<Line<'static>> {
    let opts = textwrap::Options::new(width.max(10)).subsequent_indent("  ");
    lines
        .iter()
        .flat_map(|l| textwrap::wrap(l, &opts))
        .map(|l| Line::styled(l.into_owned(), style))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_break_even_near_the_top_never_reads_100_per_cent() {
        assert_eq!(super::pays_above(0.97), "rounds pay above 97% kept");
        assert_eq!(super::pays_above(0.9962), "rounds pay above 99.6% kept");
        assert_eq!(
            super::pays_above(0.9998),
            "rounds pay only if almost every draft is kept"
        );
        for a in [0.5, 0.99, 0.994, 0.995, 0.9994, 0.9995, 0.99999] {
            assert!(!super::pays_above(a).contains("100"), "{a}");
        }
    }
}
