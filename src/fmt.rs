//! How the front ends write things as plain text (the views, the handouts, the replay command): token text
//! made visible, percentages, times, bars, the forced mark and the probability bands. Below `ui` and
//! `export`, so neither reaches into the other.

use crate::protocol::{Candidate, TokenKind, TokenView};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Token text with invisible characters made visible (newline ↵, tab ⇥, other controls as `\xNN`).
/// Spaces stay spaces here (running text); [`quoted`] marks them.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('↵'),
            '\t' => out.push('⇥'),
            '\r' => out.push('␍'),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Opens and closes a quoted token. Mathematical angle brackets do not occur in ordinary text, so a
/// token's edges stay unambiguous even when it holds quote marks (`⟨."⟩`, not `".""`).
pub const QUOTE_OPEN: char = '⟨';
pub const QUOTE_CLOSE: char = '⟩';
/// How a space shows inside a quoted token: the leading space of most words must be seen.
pub const SPACE_MARK: char = '␣';

/// A token as a list quotes it: between `⟨ ⟩`, every space shown as `␣`, newlines and other invisible
/// characters made visible (`⟨␣Paris⟩`, `⟨↵⟩`, `⟨."⟩`). The help's legend explains the convention.
pub fn quoted(text: &str) -> String {
    let body: String = visible(text)
        .chars()
        .map(|c| if c == ' ' { SPACE_MARK } else { c })
        .collect();
    format!("{QUOTE_OPEN}{body}{QUOTE_CLOSE}")
}

/// A token quoted as [`quoted`] does, except that the display form of partial UTF-8 bytes
/// (`<E2 80>`) keeps its inner space: it is not a space of the text. The text before the bytes is the
/// text's own, its space marked `␣` as everywhere (`⟨␣<C3>⟩`, not `⟨ <C3>⟩`).
pub fn quoted_token(t: &TokenView) -> String {
    match t.kind {
        TokenKind::Bytes => {
            let (text, bytes) = t.text.split_at(t.text.find('<').unwrap_or(0));
            let text: String = quoted(text)
                .chars()
                .filter(|&c| c != QUOTE_OPEN && c != QUOTE_CLOSE)
                .collect();
            format!("{QUOTE_OPEN}{text}{bytes}{QUOTE_CLOSE}")
        }
        _ => quoted(&t.text),
    }
}

/// The widest candidate as [`quoted_token`] shows it, in display cells (6 when there is none): the
/// token column of the bars and chain views starts from it.
pub fn widest_token(candidates: &[Candidate]) -> usize {
    candidates
        .iter()
        .map(|c| quoted_token(&c.token).width())
        .max()
        .unwrap_or(6)
}

/// A probability as a percentage that stays readable for tiny values.
pub fn pct(p: f32) -> String {
    let x = p * 100.0;
    if x >= 99.95 {
        "100%".into()
    } else if x >= 0.95 {
        format!("{x:.1}%")
    } else if x >= 0.01 {
        format!("{x:.2}%")
    } else if x > 0.0 {
        "<.01%".into()
    } else {
        "0%".into()
    }
}

/// A quoted token (`⟨␣equation⟩`) in at most `width` columns: cut inside its brackets (`⟨␣equa…⟩`),
/// so it still reads as one token; anything else as [`fit`] cuts it.
pub fn fit_quoted(q: &str, width: usize) -> String {
    match q.strip_suffix('⟩') {
        Some(inner) if q.width() > width && width >= 4 => format!("{}⟩", fit(inner, width - 1)),
        _ => fit(q, width),
    }
}

/// Cuts `s` to at most `width` columns, ending with `…` when cut.
pub fn fit(s: &str, width: usize) -> String {
    if s.width() <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        out.push(c);
        w += cw;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// The first of `forms` (longest first) that fits `width` columns, else the last: a line that gives
/// way by whole clauses, never a word cut.
pub fn first_fitting(forms: &[String], width: usize) -> String {
    let fits = forms.iter().find(|f| f.width() <= width);
    fits.or(forms.last()).cloned().unwrap_or_default()
}

/// `s` cut or padded with spaces to exactly `width` columns.
pub fn pad(s: &str, width: usize) -> String {
    let s = fit(s, width);
    let w = s.width();
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
}

/// `s` cut to `width` columns and right-aligned in them, by display width (an emoji takes two columns;
/// `format!("{:>w$}")` counts characters and would misalign it).
pub fn pad_left(s: &str, width: usize) -> String {
    let s = fit(s, width);
    format!("{}{s}", " ".repeat(width.saturating_sub(s.width())))
}

/// Milliseconds with a precision that suits their size.
pub fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0} ms")
    } else if x >= 10.0 {
        format!("{x:.1} ms")
    } else {
        format!("{x:.2} ms")
    }
}

/// `n` tokens in words: "1 token", "5 tokens".
pub fn tokens(n: usize) -> String {
    crate::protocol::words::count(n, "token")
}

/// Bytes in KiB/MiB.
pub fn bytes(n: usize) -> String {
    let n = n as f64;
    if n >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", n / (1024.0 * 1024.0))
    } else if n >= 1024.0 {
        format!("{:.0} KiB", n / 1024.0)
    } else {
        format!("{n:.0} B")
    }
}

/// A horizontal bar of `frac` × `width` cells, with eighth-blocks for the fractional end.
pub fn bar(frac: f32, width: usize) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let cells = frac.clamp(0.0, 1.0) * width as f32;
    let full = cells.floor() as usize;
    let rest = ((cells - full as f32) * 8.0).round() as usize;
    let mut s = "█".repeat(full);
    if full < width && rest > 0 {
        s.push(if rest >= 8 { '█' } else { EIGHTHS[rest] });
    }
    s
}

/// A solid bar for `solid` with a light-shade "ghost" behind it reaching `ghost` (both fractions of
/// `width`): the ghost shows a second value where it is longer than the solid bar. Returns both parts,
/// to be styled apart; the ghost shows at least one cell when `ghost > 0` and nothing else does.
pub fn ghost_bar(solid: f32, ghost: f32, width: usize) -> (String, String) {
    let s = bar(solid, width);
    let used = s.chars().count();
    let cells = (ghost.clamp(0.0, 1.0) * width as f32).round() as usize;
    let cells = cells.max(usize::from(ghost > 0.0 && used == 0));
    (s, "░".repeat(cells.min(width).saturating_sub(used)))
}

/// A generated step as the screen counts it, from the 0-based index the data carries (JSON keeps it):
/// the first generated token is step 1, as in the status bar.
pub fn shown_step(step: usize) -> usize {
    step + 1
}

/// The most a Jensen–Shannon divergence can be, in nats: ln 2, two distributions with nothing in
/// common. JS bars and charts are drawn on this fixed scale, so the same length means the same value
/// on every row and every screen.
pub const JS_MAX: f64 = std::f64::consts::LN_2;

/// Ends a bar whose value passed the top of its fixed scale.
pub const OVER_MARK: &str = "▸";

/// A bar `width` cells long for `value` on the fixed scale `0..=top`; a value past `top` fills the
/// bar, its last cell replaced by [`OVER_MARK`].
pub fn scaled_bar(value: f64, top: f64, width: usize) -> String {
    if width == 0 {
        return String::new();
    }
    if value > top {
        return format!("{}{OVER_MARK}", "█".repeat(width - 1));
    }
    bar((value / top) as f32, width)
}

/// Marks a token the user chose instead of the sampler (the transcript, the handouts, the compare table).
pub const FORCED_MARK: &str = "⚑";

/// The probability bands, most likely first: the transcript's colours and the handouts' classes hold
/// from each step up to the one before; below the last is the lowest band. The legends are built from
/// this.
pub const PROB_STEPS: [f32; 4] = [0.5, 0.2, 0.05, 0.01];
