//! Small text helpers shared by the views: token text made visible, percentages, fitting to a width.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Token text with invisible characters made visible (newline ↵, tab ⇥, other controls as `\xNN`).
/// Spaces stay spaces: the quotes around a candidate show them.
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

/// A candidate as a list shows it: quoted so that a leading space is visible (`" Paris"`).
pub fn quoted(text: &str) -> String {
    format!("\"{}\"", visible(text))
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

/// `s` cut or padded with spaces to exactly `width` columns.
pub fn pad(s: &str, width: usize) -> String {
    let s = fit(s, width);
    let w = s.width();
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
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

/// A bar of whole light-shade cells, for probability the sampler cut (visible without colour).
pub fn cut_bar(frac: f32, width: usize) -> String {
    let cells = (frac.clamp(0.0, 1.0) * width as f32).round() as usize;
    "░".repeat(cells.max(usize::from(frac > 0.0)))
}
