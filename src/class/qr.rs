//! The join address as a QR code in terminal characters: the QR crate encodes it; each character
//! cell here draws two modules one above the other (`▀`, `▄`, `█`, space; dark modules in the
//! foreground), inside a quiet zone of two modules, which readers accept and which lets the code fit
//! on an 80x24 terminal.

use qrcode::{Color, EcLevel, QrCode};

/// Light modules around the code.
const QUIET: usize = 2;

/// The QR code of `text` as rows of characters; empty if it cannot be encoded (too long).
pub fn lines(text: &str) -> Vec<String> {
    let Ok(code) = QrCode::with_error_correction_level(text, EcLevel::L) else {
        return vec![];
    };
    let n = code.width();
    let colors = code.to_colors();
    let side = n + 2 * QUIET;
    let dark = |x: usize, y: usize| {
        let inside = (QUIET..QUIET + n).contains(&x) && (QUIET..QUIET + n).contains(&y);
        inside && colors[(y - QUIET) * n + (x - QUIET)] == Color::Dark
    };
    (0..side)
        .step_by(2)
        .map(|y| {
            (0..side)
                .map(|x| match (dark(x, y), dark(x, y + 1)) {
                    (true, true) => '█',
                    (true, false) => '▀',
                    (false, true) => '▄',
                    (false, false) => ' ',
                })
                .collect()
        })
        .collect()
}
