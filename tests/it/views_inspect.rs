//! The logit lens (`L`) and the head map (`H`) in the app: asked for on demand, folded, stale after a
//! step, asked again only while a panel is open; a cell of the map opens that head in the attention
//! panel. Snapshots of both panels at the three view sizes, on hand-made data of the default model's
//! shape (30 layers, 9 heads).

use crate::common;

use common::*;
use nexttoken::app::inspect::Score;
use nexttoken::app::keymap::{Key, Mode};
use nexttoken::app::{App, HeadSel, Msg};
use nexttoken::protocol::{
    Command, Event, Failure, HeadMap, HeadScore, Inspection, LensLayer, LensToken, LogitLens,
};

const LAYERS: usize = 30;
const HEADS: usize = 9;
/// The tip: " is", the fifth prompt token.
const TIP: usize = 4;

/// " Paris"'s probability by layer: nothing for twenty layers, then it rises to the model's 78%.
const PARIS_P: [f32; LAYERS] = [
    0.00001, 0.00001, 0.00002, 0.00001, 0.00003, 0.00002, 0.00004, 0.00005, 0.00004, 0.00008,
    0.0001, 0.0002, 0.0002, 0.0004, 0.0006, 0.001, 0.002, 0.003, 0.006, 0.011, 0.02, 0.04, 0.07,
    0.12, 0.21, 0.33, 0.45, 0.58, 0.69, 0.78,
];

fn paris_rank(l: usize) -> usize {
    match l {
        0..=9 => 21_000 - 1_800 * l,
        10..=19 => 900 - 85 * (l - 10),
        20 => 14,
        21 => 6,
        22 => 3,
        23 => 2,
        24 => 1,
        _ => 0,
    }
}

/// The lens after "The capital of France is": function words early, " Paris" on top from layer 25.
fn lens() -> LogitLens {
    let early = [(260, " the", 0.031), (28, ",", 0.024), (314, " is", 0.018)];
    let middle = [
        (253, " a", 0.09),
        (260, " the", 0.07),
        (3532, " located", 0.04),
    ];
    let layers = (0..LAYERS)
        .map(|l| {
            let p = PARIS_P[l];
            let rank = paris_rank(l);
            let mut top: Vec<LensToken> = if l < 15 {
                early
                    .iter()
                    .map(|&(id, t, q)| LensToken {
                        token: tv(id, t),
                        p: q * (1.0 + l as f32 * 0.05),
                    })
                    .collect()
            } else {
                middle
                    .iter()
                    .map(|&(id, t, q)| LensToken {
                        token: tv(id, t),
                        p: q * (1.0 + (l - 15) as f32 * 0.08),
                    })
                    .collect()
            };
            if rank < 3 {
                top.insert(
                    rank,
                    LensToken {
                        token: tv(7042, " Paris"),
                        p,
                    },
                );
                top.truncate(3);
                if rank == 0 {
                    for t in &mut top[1..] {
                        t.p *= 1.0 - p;
                    }
                }
            }
            LensLayer {
                layer: l,
                top,
                chosen_rank: rank,
                chosen_p: p,
            }
        })
        .collect();
    LogitLens {
        position: TIP,
        chosen: tv(7042, " Paris"),
        layers,
    }
}

/// Every head's scores at " is": head 7 of layer 4 looks at the token before, a few heads sit on the
/// first token (low entropy), the rest spread out. No token of the prompt repeats: induction is 0.
fn head_map() -> HeadMap {
    let most = ((TIP + 1) as f32).ln();
    let scores = (0..LAYERS)
        .map(|l| {
            (0..HEADS)
                .map(|h| {
                    let mix = ((l * 7 + h * 13) % 17) as f32 / 16.0;
                    let (prev, entropy) = match (l, h) {
                        (4, 7) => (0.93, 0.31),
                        (3, 1) => (0.71, 0.82),
                        (12, 2) => (0.66, 0.95),
                        _ if h == 0 => (0.02, 0.12),
                        _ => (0.4 * mix, most * (0.3 + 0.7 * mix)),
                    };
                    HeadScore {
                        prev,
                        induction: 0.0,
                        entropy,
                    }
                })
                .collect()
        })
        .collect();
    HeadMap {
        position: TIP,
        scores,
    }
}

fn inspected(lens_: bool, heads: bool) -> Msg {
    Msg::Engine(Event::Inspected(Box::new(Inspection {
        lens: lens_.then(lens),
        heads: heads.then(head_map),
        forward_passes: 0,
    })))
}

fn lens_app(w: u16, h: u16) -> App {
    let mut app = ready_app(w, h);
    let cmds = key(&mut app, 'L');
    assert_eq!(
        cmds,
        vec![Command::Inspect {
            lens: true,
            heads: false
        }]
    );
    app.update(inspected(true, false));
    app
}

fn map_app(w: u16, h: u16) -> App {
    let mut app = ready_app(w, h);
    let cmds = key(&mut app, 'H');
    assert_eq!(
        cmds,
        vec![Command::Inspect {
            lens: false,
            heads: true
        }]
    );
    app.update(inspected(false, true));
    app
}

#[test]
fn the_lens_is_asked_for_on_demand_and_folded() {
    let mut app = ready_app(100, 30);
    assert!(app.inspect.lens.is_none());
    let cmds = key(&mut app, 'L');
    assert_eq!(app.mode, Mode::Lens);
    assert_eq!(
        cmds,
        vec![Command::Inspect {
            lens: true,
            heads: false
        }]
    );
    assert!(app.is_busy());
    assert!(screen_text(&app)
        .join("\n")
        .contains("looking inside the pass…"));
    // The reply closes the command and fills the panel.
    let cmds = app.update(inspected(true, false));
    assert!(cmds.is_empty() && !app.is_busy());
    assert_eq!(app.inspect.lens.as_ref().unwrap().layers.len(), LAYERS);
    assert!(!app.lens_stale());
    // Closing and opening again shows the same lens: no second pass.
    press(&mut app, Key::Esc);
    assert_eq!(app.mode, Mode::Normal);
    assert!(key(&mut app, 'L').is_empty());
    // `r` looks again on request.
    assert_eq!(
        key(&mut app, 'r'),
        vec![Command::Inspect {
            lens: true,
            heads: false
        }]
    );
}

#[test]
fn a_step_makes_the_lens_stale_and_it_is_never_asked_for_behind_the_users_back() {
    let mut app = lens_app(100, 30);
    press(&mut app, Key::Esc);
    // A step on the main screen: no inspection follows it.
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
    let cmds = app.update(Msg::Engine(Event::Stepped(step_after_is(
        0,
        nexttoken::protocol::Source::Sampled,
        true,
        9.0,
    ))));
    assert!(
        cmds.is_empty(),
        "no pass unless the panel is open: {cmds:?}"
    );
    assert!(app.lens_stale());
    // Opening the panel shows the old lens as stale while the new one is computed.
    let cmds = key(&mut app, 'L');
    assert_eq!(
        cmds,
        vec![Command::Inspect {
            lens: true,
            heads: false
        }]
    );
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("stale"), "{screen}");
    assert!(screen.contains("r looks again"), "{screen}");
}

#[test]
fn a_step_in_the_open_panel_looks_again_once_the_engine_is_free() {
    let mut app = lens_app(100, 30);
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
    assert_eq!(app.mode, Mode::Lens);
    let cmds = app.update(Msg::Engine(Event::Stepped(step_after_is(
        0,
        nexttoken::protocol::Source::Sampled,
        true,
        9.0,
    ))));
    assert_eq!(
        cmds,
        vec![Command::Inspect {
            lens: true,
            heads: false
        }]
    );
    // A failed inspection says so and does not ask again by itself.
    let cmds = app.update(Msg::Engine(Event::Failed {
        what: Failure::Inspect,
        reason: "boom".into(),
    }));
    assert!(cmds.is_empty());
    assert!(!app.is_busy());
    let status = app.status.clone().unwrap();
    assert!(status.error && status.text.contains("could not look inside the pass: boom"));
}

#[test]
fn the_lens_shows_paris_rising_through_the_last_layers() {
    for (w, h) in VIEW_SIZES {
        let app = lens_app(w, h);
        let screen = screen_text(&app).join("\n");
        let spark = nexttoken::ui::lens::sparkline(&lens());
        assert!(
            spark.starts_with("▁▁▁▁") && spark.ends_with("▇████"),
            "{spark}"
        );
        assert!(
            screen.contains(&spark),
            "{w}x{h}: no line by layer in\n{screen}"
        );
        for want in [
            "Logit lens",
            "the sampler plans ⟨␣Paris⟩",
            "#1 from layer 26",
            "78.0%",
        ] {
            assert!(screen.contains(want), "{w}x{h}: no {want:?} in\n{screen}");
        }
        // The last layer's row: " Paris" on top at the model's own probability.
        let last = screen
            .lines()
            .find(|l| l.contains("   30 ⟨"))
            .unwrap_or_else(|| panic!("{w}x{h}: no row for layer 30 in\n{screen}"));
        assert!(last.contains("⟨␣Paris⟩") && last.contains("#1"), "{last}");
        if h < 48 {
            assert!(screen.contains("above: ↑ shows them"), "{w}x{h}\n{screen}");
        } else {
            assert!(
                !screen.contains("above:"),
                "{w}x{h}: all 30 layers fit\n{screen}"
            );
        }
        insta::assert_snapshot!(format!("lens_{w}x{h}"), screen);
    }
}

#[test]
fn the_lens_scrolls_to_the_first_layers_and_back() {
    let mut app = lens_app(80, 24);
    for _ in 0..40 {
        press(&mut app, Key::Up);
    }
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("    1 ⟨␣the⟩"), "{screen}");
    assert!(screen.contains("below: ↓ shows them"), "{screen}");
    for _ in 0..40 {
        press(&mut app, Key::Down);
    }
    assert_eq!(app.inspect.scroll_up, 0);
    assert!(screen_text(&app).join("\n").contains("above: ↑ shows them"));
}

#[test]
fn the_head_map_is_asked_for_on_demand_and_its_cell_opens_in_the_attention_panel() {
    let mut app = map_app(100, 30);
    assert_eq!(app.mode, Mode::HeadMap);
    assert!(!app.is_busy() && app.inspect.heads.is_some());
    assert!(app.inspect.lens.is_none(), "the map asks for the map only");
    // Arrows move the cursor: layers across, heads down; it stops at the edges.
    for _ in 0..4 {
        press(&mut app, Key::Right);
    }
    for _ in 0..7 {
        press(&mut app, Key::Down);
    }
    assert_eq!(app.inspect.cell, (4, 7));
    let screen = screen_text(&app).join("\n");
    assert!(
        screen.contains("layer 5 · head 8: prev 0.93 · induction 0.00"),
        "{screen}"
    );
    assert!(screen.contains("highest: L5 H8 0.93 · L4 H2 0.71 · L13 H3 0.66"));
    // Tab cycles the score, and the legend says which.
    assert_eq!(app.inspect.score, Score::Prev);
    press(&mut app, Key::Tab);
    assert_eq!(app.inspect.score, Score::Induction);
    assert!(screen_text(&app)
        .join("\n")
        .contains("shaded by the induction score"));
    press(&mut app, Key::Tab);
    assert!(screen_text(&app).join("\n").contains("how spread out"));
    press(&mut app, Key::Tab);
    assert_eq!(app.inspect.score, Score::Prev);
    // Enter: that head in the attention panel, the map closed.
    let cmds = press(&mut app, Key::Enter);
    assert!(cmds.is_empty());
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.focus.layer, 4);
    assert_eq!(app.focus.head, HeadSel::Head(7));
    assert!(app
        .status
        .as_ref()
        .unwrap()
        .text
        .contains("layer 5, head 8"));
    // Back to the map: the same map, no second pass.
    assert!(key(&mut app, 'H').is_empty());
    for _ in 0..50 {
        press(&mut app, Key::Right);
        press(&mut app, Key::Down);
    }
    assert_eq!(app.inspect.cell, (LAYERS - 1, HEADS - 1));
}

#[test]
fn the_head_map_brings_the_attention_panel_on_screen() {
    let mut app = map_app(80, 24);
    app.screen.side = nexttoken::app::SidePanel::Timing;
    let map = nexttoken::ui::measure(&app);
    update(&mut app, Msg::Measured(map));
    assert!(app.screen.map.areas.attention.is_none());
    press(&mut app, Key::Enter);
    assert_eq!(app.screen.side, nexttoken::app::SidePanel::Attention);
}

#[test]
fn the_head_map_goes_stale_after_a_step() {
    let mut app = map_app(80, 24);
    press(&mut app, Key::Esc);
    key(&mut app, ' ');
    app.update(Msg::Engine(Event::Stepped(step_after_is(
        0,
        nexttoken::protocol::Source::Sampled,
        true,
        9.0,
    ))));
    assert!(app.heads_stale());
    assert_eq!(
        key(&mut app, 'H'),
        vec![Command::Inspect {
            lens: false,
            heads: true
        }]
    );
    assert!(screen_text(&app).join("\n").contains("stale"));
}

#[test]
fn the_head_map_at_each_size() {
    for (w, h) in VIEW_SIZES {
        let mut app = map_app(w, h);
        for _ in 0..4 {
            press(&mut app, Key::Right);
        }
        for _ in 0..7 {
            press(&mut app, Key::Down);
        }
        let screen = screen_text(&app).join("\n");
        for want in ["Head map", "▶head 8", "head 1", "blank <0.08 ░ <0.3"] {
            assert!(screen.contains(want), "{w}x{h}: no {want:?} in\n{screen}");
        }
        // The line under the title drops whole clauses, never cuts one ("(tab: next sc…").
        let line = screen
            .lines()
            .find(|l| l.contains("shaded by the"))
            .unwrap();
        assert!(
            line.contains("next score)") || line.contains("next)"),
            "{w}x{h}: {line}"
        );
        insta::assert_snapshot!(format!("head_map_{w}x{h}"), screen);
    }
}

/// A lens (Gemma's 18 layers) where the chosen token is #1 at some layers but not at the last: the
/// header names those layers, never "never #1", and agrees with the rows.
fn lens_with_ranks(ranks: &[usize]) -> LogitLens {
    let layers = ranks
        .iter()
        .enumerate()
        .map(|(l, &rank)| LensLayer {
            layer: l,
            top: vec![LensToken {
                token: tv(if rank == 0 { 7042 } else { 260 }, " x"),
                p: 0.5,
            }],
            chosen_rank: rank,
            chosen_p: if rank == 0 { 0.5 } else { 0.01 },
        })
        .collect();
    LogitLens {
        position: TIP,
        chosen: tv(7042, " French"),
        layers,
    }
}

#[test]
fn the_lens_header_agrees_with_its_rows() {
    use nexttoken::ui::lens::top_note;
    // #1 at layers 13–17 (1-based), #3 at the last: as the issue saw on Gemma.
    let mut ranks = vec![40; 18];
    for r in &mut ranks[12..17] {
        *r = 0;
    }
    ranks[17] = 2;
    let note = top_note(&lens_with_ranks(&ranks));
    assert_eq!(note, "#1 at layers 13–17, not at the last");
    ranks[3] = 0;
    let note = top_note(&lens_with_ranks(&ranks));
    assert_eq!(note, "#1 at layers 4, 13–17, not at the last");
    // On top from layer 13 to the end.
    ranks[3] = 40;
    ranks[17] = 0;
    assert_eq!(top_note(&lens_with_ranks(&ranks)), "#1 from layer 13");
    assert_eq!(
        top_note(&lens_with_ranks(&[5; 18])),
        "never #1 at any layer"
    );
    let mut one = vec![5; 18];
    one[9] = 0;
    assert_eq!(
        top_note(&lens_with_ranks(&one)),
        "#1 at layer 10, not at the last"
    );
    // On screen, the header says it, and the rows it names show #1.
    let mut ranks = vec![40; 18];
    for r in &mut ranks[12..17] {
        *r = 0;
    }
    ranks[17] = 2;
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = lens_app(w, h);
        app.inspect.lens = Some(lens_with_ranks(&ranks));
        let screen = screen_text(&app).join("\n");
        let want = if w < 100 {
            "#1 at L13–17, not last"
        } else {
            "#1 at layers 13–17, not at the last"
        };
        assert!(screen.contains(want), "{w}x{h}:\n{screen}");
        // The rows it names: layer 13's reads #1, the last layer's #3.
        let row = |l: usize| {
            let lead = format!("│{l:>5} ⟨");
            screen
                .lines()
                .find(|x| x.contains(&lead))
                .unwrap_or_else(|| panic!("{w}x{h}: no row for layer {l} in\n{screen}"))
                .to_string()
        };
        assert!(row(13).contains("│      #1"), "{}", row(13));
        assert!(row(18).contains("│      #3"), "{}", row(18));
        assert!(!screen.contains("never #1"), "{w}x{h}:\n{screen}");
    }
}

/// The lens's pass counts among the passes at once: the status bar had read "passes 35" after `L`
/// and jumped by two at the next step.
#[test]
fn the_status_bar_counts_the_lens_pass_when_it_runs() {
    let mut app = ready_app(100, 30);
    let before = app.forward_passes();
    key(&mut app, 'L');
    app.update(Msg::Engine(Event::Inspected(Box::new(Inspection {
        lens: Some(lens()),
        heads: None,
        forward_passes: before + 1,
    }))));
    assert_eq!(app.forward_passes(), before + 1);
    let status = screen_text(&app).join("\n");
    assert!(
        status.contains(&format!("passes {}", before + 1)),
        "{status}"
    );
}

/// The head map's line under its title gives way by whole clauses: with a longer token at the
/// position it looks at, 80 columns had cut it to "(tab: next sc…".
#[test]
fn the_head_maps_first_line_never_cuts_a_clause() {
    let mut app = map_app(80, 24);
    let mut view = app.session.clone().unwrap();
    view.tokens[TIP].token = tv(4242, " Constantinople");
    app.update(Msg::Engine(Event::Synced(view)));
    app.update(inspected(false, true));
    let screen = screen_text(&app).join("\n");
    let line = screen
        .lines()
        .find(|l| l.contains("shaded by the"))
        .unwrap();
    assert!(!line.contains('…'), "{line}");
    assert!(line.contains("(tab: next score)"), "{line}");
}

/// The passes on the status bar never go back: a view carries the count at its last text pass, and a
/// sampler change's view after the lens had taken "passes 5" back to 3. They count from the prompt:
/// a prompt read again (a lesson gone back to its first step) shows the one pass beside "the one
/// pass", where it had shown 95.
#[test]
fn the_status_bars_passes_never_go_back_and_count_from_the_prompt() {
    let mut app = ready_app(100, 30);
    let before = app.forward_passes();
    let stale = app.session.clone().unwrap();
    key(&mut app, 'L');
    app.update(Msg::Engine(Event::Inspected(Box::new(Inspection {
        lens: Some(lens()),
        heads: None,
        forward_passes: before + 2,
    }))));
    app.update(Msg::Engine(Event::Synced(stale.clone())));
    assert_eq!(app.forward_passes(), before + 2, "a stale view");
    let mut read_again = stale;
    read_again.passes_before_prompt = 94;
    read_again.last_pass.forward_passes = 95;
    app.update(Msg::Engine(Event::Synced(read_again)));
    assert_eq!(app.forward_passes(), 1);
    assert!(screen_text(&app).join("\n").contains("passes 1 "));
}
