//! The join card's QR code, read back by a QR decoder from the characters the terminal draws: each
//! cell is two modules (`▀` top, `▄` bottom, `█` both), dark on light.

use nexttoken::class::qr;

/// The characters as a bitmap, scaled up, with a light border; decoded.
fn decode(lines: &[String]) -> String {
    let scale = 8;
    let border = 4;
    let w = lines.iter().map(|l| l.chars().count()).max().unwrap();
    let h = lines.len() * 2;
    let (iw, ih) = ((w + 2 * border) * scale, (h + 2 * border) * scale);
    let dark = |x: usize, y: usize| -> bool {
        let (mx, my) = (x / scale, y / scale);
        if mx < border || my < border || mx >= w + border || my >= h + border {
            return false;
        }
        let (cx, cy) = (mx - border, my - border);
        let c = lines[cy / 2].chars().nth(cx).unwrap_or(' ');
        match cy % 2 {
            0 => matches!(c, '█' | '▀'),
            _ => matches!(c, '█' | '▄'),
        }
    };
    let mut img =
        rqrr::PreparedImage::prepare_from_greyscale(
            iw,
            ih,
            |x, y| {
                if dark(x, y) {
                    0
                } else {
                    255
                }
            },
        );
    let grids = img.detect_grids();
    assert_eq!(grids.len(), 1, "one QR code");
    grids[0].decode().unwrap().1
}

#[test]
fn the_qr_code_reads_back_as_the_address_with_the_code() {
    for url in [
        "http://127.0.0.1:7878/?code=123456",
        "http://192.168.100.200:65535/?code=987654",
    ] {
        let lines = qr::lines(url);
        assert!(
            lines.len() <= 17,
            "fits an 80x24 card: {} rows",
            lines.len()
        );
        assert_eq!(decode(&lines), url);
    }
}
