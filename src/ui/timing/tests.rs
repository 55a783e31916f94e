//! The timing panel's text: its lines break between figures, never inside one.

use super::{labelled, read_text, LABEL};
use crate::protocol::PrefillReport;

/// The narrow form keeps "tok/s" where it fits and gives way to "/s" where it does not; narrower
/// still, it breaks before the rate. The figures stay whole every way.
#[test]
fn the_prefill_line_fits_its_room() {
    let p = PrefillReport {
        tokens: 38,
        ms: 27.7,
        tok_per_s: 1374.0,
        ttft_ms: 28.0,
    };
    assert_eq!(read_text(&p, false, 40), ["38 tok · 27.7 ms · 1374 tok/s"]);
    assert_eq!(read_text(&p, false, 28), ["38 tok · 27.7 ms · 1374/s"]);
    assert!(read_text(&p, true, 10)[0].starts_with("prefill 38 tok in 27.7 ms"));
    let theme = crate::ui::theme::Theme::new(crate::app::ThemeKind::Default);
    let rows: Vec<String> = labelled("read  ", &read_text(&p, false, 19), 19, &theme)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert_eq!(rows, ["read  38 tok · 27.7 ms", "      1374 tok/s"]);
    assert!(rows.iter().all(|r| r.chars().count() <= 19 + LABEL));
}

/// The write line breaks between its figures and their counts, never inside one: at 60 columns it
/// had read "TPOT 9.30 ms (4 wit".
#[test]
fn the_write_line_breaks_between_its_figures() {
    let step = |ms, kv| super::StepTime {
        ms,
        kv: Some(kv),
        round: false,
    };
    let steps = [step(9.3, true), step(9.3, true), step(31.2, false)];
    let on = super::mean(steps.iter().filter(|t| t.kv == Some(true)).map(|t| t.ms));
    let theme = crate::ui::theme::Theme::new(crate::app::ThemeKind::Default);
    let rows = |room| -> Vec<String> {
        let pieces = super::write_text(&steps, on, true, false);
        labelled("write ", &pieces, room, &theme)
            .iter()
            .map(|l| l.to_string())
            .collect()
    };
    assert_eq!(
        rows(60),
        ["write TPOT 9.30 ms (2 with cache) · 31.2 ms (1 without)"]
    );
    assert_eq!(
        rows(19),
        [
            "write TPOT 9.30 ms",
            "      (2 with cache)",
            "      31.2 ms (1 without)"
        ]
    );
}
