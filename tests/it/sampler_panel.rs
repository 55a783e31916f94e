//! The sampler panel: every row steps within the range the command line accepts
//! (`SamplerSettings::validate`, one table of `Bounds`), and a limit is said with the range.

use crate::common;

use common::*;
use nexttoken::app::keymap::Key;
use nexttoken::app::sampler_panel::FIELDS;
use nexttoken::app::App;
use nexttoken::protocol::Setting as Field;
use nexttoken::protocol::{self as p, Command, SamplerSettings};

/// Opens the sampler panel with `field` highlighted.
fn panel_on(app: &mut App, field: Field) {
    key(app, 's');
    let i = FIELDS.iter().position(|&f| f == field).unwrap();
    for _ in 0..i {
        press(app, Key::Down);
    }
    assert_eq!(app.sampler.field, i);
}

/// The app after the engine answered the settings last sent, so the next change is sent at once.
fn settled(app: &mut App) {
    let mut view = prefilled();
    view.settings = app.sampler.settings.clone();
    app.update(nexttoken::app::Msg::Engine(p::Event::Synced(view)));
}

#[test]
fn the_penalty_window_is_shown_and_set_in_the_sampler_panel() {
    let mut app = ready_app(100, 30);
    panel_on(&mut app, Field::PenaltyLastN);
    assert!(screen_text(&app).join("\n").contains("penalty window"));
    let cmds = press(&mut app, Key::Right);
    assert_eq!(app.sampler.settings.penalty_last_n, 128, "64 → 128");
    assert!(matches!(cmds.as_slice(), [Command::SetSampler(s)] if s.penalty_last_n == 128));
}

#[test]
fn from_temperature_zero_left_stays_at_zero_and_says_the_range() {
    let mut app = ready_app(100, 30);
    app.sampler.settings.temperature = 0.0;
    panel_on(&mut app, Field::Temperature);
    assert_eq!(
        press(&mut app, Key::Left),
        vec![],
        "nothing changed, nothing sent"
    );
    assert_eq!(app.sampler.settings.temperature, 0.0, "← never raises it");
    let said = app.status.clone().unwrap().text;
    assert_eq!(said, "temperature stops at 0: use 0 to 5 (0 means greedy)");
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains(&said), "the range is on screen:\n{screen}");
    press(&mut app, Key::Right);
    assert_eq!(app.sampler.settings.temperature, 0.1);

    // From 4 (allowed on the command line), → goes up to 5, never down to the old 3.
    let mut app = ready_app(100, 30);
    app.sampler.settings.temperature = 4.0;
    panel_on(&mut app, Field::Temperature);
    press(&mut app, Key::Right);
    assert_eq!(app.sampler.settings.temperature, 4.1);
}

#[test]
fn every_row_reaches_the_command_lines_limits_and_no_further() {
    // (field, lowest, highest) as `SamplerSettings::validate` holds them.
    type Get = fn(&SamplerSettings) -> f64;
    let rows: [(Field, Get, f64, f64); 10] = [
        (Field::Temperature, |s| s.temperature as f64, 0.0, 5.0),
        (Field::TopP, |s| s.top_p as f64, 0.01, 1.0),
        (Field::MinP, |s| s.min_p as f64, 0.0, 0.99),
        (Field::RepeatPenalty, |s| s.repeat_penalty as f64, 1.0, 3.0),
        (
            Field::FrequencyPenalty,
            |s| s.frequency_penalty as f64,
            -2.0,
            2.0,
        ),
        (
            Field::PresencePenalty,
            |s| s.presence_penalty as f64,
            -2.0,
            2.0,
        ),
        (
            Field::PenaltyLastN,
            |s| s.penalty_last_n as f64,
            0.0,
            131072.0,
        ),
        (Field::DryMultiplier, |s| s.dry_multiplier as f64, 0.0, 5.0),
        (Field::DryBase, |s| s.dry_base as f64, 1.0, 5.0),
        (
            Field::DryAllowedLength,
            |s| s.dry_allowed_length as f64,
            1.0,
            20.0,
        ),
    ];
    for (field, get, lo, hi) in rows {
        let mut app = ready_app(100, 30);
        panel_on(&mut app, field);
        for (k, end) in [(Key::Right, hi), (Key::Left, lo)] {
            for _ in 0..200 {
                press(&mut app, k);
                settled(&mut app);
                let s = &app.sampler.settings;
                assert_eq!(s.validate(), Ok(()), "{field:?} left the valid range");
            }
            let s = &app.sampler.settings;
            assert_eq!(
                get(s) as f32,
                end as f32,
                "{field:?} stops at the end of its range"
            );
            let said = app.status.clone().unwrap().text;
            assert!(
                said.contains(" stops at ") && said.contains(" to "),
                "{field:?}: {said}"
            );
        }
    }
}

/// The range a row says when it stops is the one the command line refuses with.
#[test]
fn a_rows_stop_says_the_range_the_command_line_refuses_with() {
    let s = SamplerSettings {
        repeat_penalty: 3.5,
        ..SamplerSettings::default()
    };
    let refused = s.validate().unwrap_err();
    assert!(
        refused.ends_with(&p::REPEAT_PENALTY.range_text()),
        "{refused}"
    );
    let mut app = ready_app(100, 30);
    panel_on(&mut app, Field::RepeatPenalty);
    for _ in 0..60 {
        press(&mut app, Key::Right);
        settled(&mut app);
    }
    let said = app.status.clone().unwrap().text;
    assert_eq!(
        said,
        "repeat-penalty stops at 3: use 1 to 3 (1 turns it off)"
    );
}

/// Temperature notched down to 0.00 in the panel: the engine is greedy (`is_greedy`), and so the panel
/// says greedy on and the status bar says greedy, not "T 0.00"; turning greedy off then samples again.
#[test]
fn temperature_notched_to_zero_reads_greedy_everywhere() {
    let mut app = ready_app(120, 36);
    app.sampler.settings.temperature = 0.1;
    panel_on(&mut app, Field::Temperature);
    let cmds = press(&mut app, Key::Left);
    let sent = match cmds.as_slice() {
        [Command::SetSampler(s)] => s.clone(),
        other => panic!("one SetSampler, got {other:?}"),
    };
    assert_eq!(sent.temperature, 0.0);
    assert!(sent.is_greedy(), "the engine takes the top token");
    settled(&mut app);
    assert_eq!(app.sampler.settings.shown(Field::Greedy), "on");
    let screen = screen_text(&app).join("\n");
    let greedy_row = screen
        .lines()
        .find(|l| l.contains("greedy "))
        .unwrap_or_default();
    assert!(
        greedy_row.contains("on"),
        "the panel's greedy row:\n{screen}"
    );
    assert!(!screen.contains("T 0.00"), "{screen}");
    key(&mut app, 's');
    let status = screen_text(&app)[34..].join("\n");
    assert!(status.contains("greedy"), "the status bar:\n{status}");

    // Greedy off from there means a draw: the temperature goes back to the default.
    panel_on(&mut app, Field::Greedy);
    let cmds = press(&mut app, Key::Right);
    assert!(
        matches!(cmds.as_slice(), [Command::SetSampler(s)] if !s.is_greedy() && s.temperature == 0.8),
        "{cmds:?}"
    );
}

/// What acts on the next token is one rule (`SamplerSettings::acts`), and the handout's summary and
/// the status bar say exactly that: the draw's settings vanish under greedy, a penalty window shows
/// only with a penalty, DRY's parameters only with DRY on.
#[test]
fn the_summaries_name_exactly_the_settings_that_act() {
    use nexttoken::export::markdown::settings_summary;
    use nexttoken::ui::status::sampler_forms;
    let greedy = SamplerSettings {
        greedy: true,
        repeat_penalty: 1.3,
        ..SamplerSettings::default()
    };
    assert_eq!(
        greedy.in_effect(),
        vec![Field::RepeatPenalty, Field::PenaltyLastN, Field::Greedy]
    );
    assert_eq!(
        settings_summary(&greedy),
        "greedy (always the most likely token) · repeat penalty 1.30 · penalty window 64 · DRY off"
    );
    assert_eq!(sampler_forms(&greedy)[0], "greedy rep 1.30");

    let dry = SamplerSettings {
        dry_multiplier: 0.8,
        penalty_last_n: 0,
        repeat_penalty: 1.3,
        ..SamplerSettings::default()
    };
    assert!(
        !dry.acts(Field::RepeatPenalty),
        "a window of 0 turns the penalties off"
    );
    assert!(dry.acts(Field::DryBase) && dry.acts(Field::Seed));
    let summary = settings_summary(&dry);
    assert!(
        summary.contains("DRY base 1.75 · DRY allowed len 2 · DRY window all"),
        "{summary}"
    );
    assert!(summary.ends_with("no penalties"), "{summary}");
    assert!(!SamplerSettings::default().acts(Field::DryBase));
    assert_eq!(sampler_forms(&dry)[1], "T0.80 k40 p0.95 m0.05 DRY0.80");
}

/// At 80x24 the chain (`t`) with the sampler panel open beside it: the chain keeps the left side and
/// leaves stage columns out whole, with a `…` for each run left out. Every cell is a whole figure (a
/// cut "82.0%" had read "8"), and the column of the setting being changed stays on screen.
#[test]
fn the_chain_beside_the_sampler_panel_leaves_stages_out_whole_and_keeps_the_one_being_changed() {
    for (field, column) in [
        (Field::Temperature, "temp"),
        (Field::TopP, "top-p"),
        (Field::MinP, "min-p"),
    ] {
        let mut app = ready_app(80, 24);
        key(&mut app, 't');
        panel_on(&mut app, field);
        let screen = screen_text(&app);
        let header = screen
            .iter()
            .find(|l| l.contains("stage →"))
            .expect("the chain's header");
        let left = |l: &str| l.split("││").next().unwrap().to_string();
        assert!(left(header).contains('…'), "{}", screen.join("\n"));
        let names: Vec<String> = left(header)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        assert!(
            names.iter().any(|n| n == column),
            "{column}: {}",
            screen.join("\n")
        );
        assert_eq!(
            names.last().map(String::as_str),
            Some("min-p"),
            "the last stage stays"
        );
        let paris = screen.iter().find(|l| l.contains("⟨␣Paris⟩")).unwrap();
        let row = left(paris);
        let cells: Vec<&str> = row.split_whitespace().skip(3).collect();
        for c in &cells {
            let whole = *c == "…"
                || *c == "✂"
                || *c == "·"
                || (c.ends_with('%') && c[..c.len() - 1].parse::<f32>().is_ok());
            assert!(whole, "a cut cell {c:?} in {paris}");
        }
        assert!(
            screen.iter().any(|l| l.contains("Sampler")),
            "the panel is open"
        );
    }
}
