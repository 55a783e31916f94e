//! The join address as a QR code in terminal characters: two modules per character cell (`▀`, `▄`,
//! `█`, space), dark modules in the foreground, with the quiet zone a reader needs.

use qrcode::render::unicode::Dense1x2;
use qrcode::{EcLevel, QrCode};

/// The QR code of `text` as rows of characters; empty if it cannot be encoded (too long).
pub fn lines(text: &str) -> Vec<String> {
    let Ok(code) = QrCode::with_error_correction_level(text, EcLevel::L) else {
        return vec![];
    };
    code.render::<Dense1x2>()
        .dark_color(Dense1x2::Dark)
        .light_color(Dense1x2::Light)
        .quiet_zone(true)
        .build()
        .lines()
        .map(str::to_string)
        .collect()
}
