//! The bars view under a repetition penalty, as snapshots at 80x24, 100x30 and 160x48 with targeted
//! asserts: the fixture runs the real sampler chain on hand-made logits, so every number is the chain's.

use crate::common;

use common::*;
use nexttoken::app::{App, Msg};
use nexttoken::protocol::*;

fn screen(app: &App) -> String {
    screen_text(app).join("\n")
}
use nexttoken::engine::sampler::run_chain;

/// The vocabulary of the loop fixture, `(text, logit)`, its index the token id: " dogs" leads by far
/// (98% raw); 40 filler tokens make the long tail.
fn loop_vocab() -> Vec<(String, f32)> {
    let named: [(&str, f32); 15] = [
        (" dogs", 22.0),
        (" cats", 17.0),
        (" to", 16.0),
        (" it", 15.6),
        (" the", 15.2),
        (" my", 15.0),
        (" birds", 14.9),
        ("'ve", 14.5),
        (" fish", 14.4),
        ("I", 14.2),
        (" like", 14.0),
        (".", 13.8),
        (" horses", 13.7),
        (" them", 13.5),
        (" I", 13.0),
    ];
    let mut vocab: Vec<(String, f32)> = named.iter().map(|&(t, l)| (t.to_string(), l)).collect();
    vocab.extend((0..40).map(|i| (format!(" w{i}"), 10.0 + (i % 8) as f32 * 0.25)));
    vocab
}

/// Token records for `texts` (ids from `loop_vocab`); the first `prompt_len` are the prompt.
fn records(texts: &[&str], prompt_len: usize) -> Vec<TokenRecord> {
    let vocab = loop_vocab();
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let id = vocab.iter().position(|v| v.0 == *t).unwrap() as u32;
            let prompt = i < prompt_len;
            TokenRecord {
                token: tv(id, t),
                position: i,
                source: if prompt {
                    Source::Prompt
                } else {
                    Source::Greedy
                },
                prob: if prompt { 1.0 } else { 0.9 },
                logprob: if prompt { 0.0 } else { 0.9f32.ln() },
                rank: 0,
                entropy: 0.4,
            }
        })
        .collect()
}

/// "I like cats. I like dogs. I like" looping on " dogs": the path the issue reproduces.
const LOOP: [&str; 16] = [
    "I", " like", " cats", ".", " I", " like", " dogs", ".", " I", " like", " dogs", ".", " I",
    " like", " dogs", ".",
];

/// The next distribution after the loop, from the real sampler chain on `loop_vocab`'s logits. A
/// repetition penalty of 1.5 pushes every token of the loop down, so the list opens with tokens the
/// raw model gives well under 1%.
fn penalised(settings: &SamplerSettings, tokens: &[TokenRecord]) -> Distribution {
    let vocab = loop_vocab();
    let logits: Vec<f32> = vocab.iter().map(|v| v.1).collect();
    let history: Vec<u32> = tokens.iter().map(|t| t.token.id).collect();
    let out = run_chain(&logits, &history, settings, 10, 0.3);
    let view = |id: u32| tv(id, &vocab[id as usize].0);
    let candidates = out
        .shown
        .iter()
        .zip(&out.final_probs)
        .map(|(&id, &fp)| Candidate {
            token: view(id),
            prob: out.raw_prob(&logits, id),
            logprob: logits[id as usize] - out.lse,
            sampled_prob: fp,
            rank: nexttoken::engine::sampler::rank_of(&logits, id),
        })
        .collect();
    Distribution {
        position: tokens.len(),
        candidates,
        entropy: out.entropy,
        eos_prob: 0.0,
        stages: out.stages.clone(),
        planned: view(out.planned),
        planned_prob: out.planned_prob,
        draw: out.draw.clone(),
        loop_next: None,
        // As the session finds it: the raw argmax, when the chain moved it off the first row.
        model_top: Some(nexttoken::engine::sampler::top_n(&logits, 1)[0])
            .filter(|top| out.shown.first() != Some(top))
            .map(|top| {
                let none = nexttoken::engine::sampler::DryBreakers::none();
                let f = nexttoken::engine::sampler::fate(&logits, &history, settings, &none, top);
                TokenFate {
                    token: view(top),
                    prob: f.prob,
                    rank: f.rank,
                    sampled_prob: f.sampled_prob,
                    sampled_rank: f.sampled_rank,
                }
            }),
        known_mass: None,
    }
}

fn penalty_app(w: u16, h: u16) -> App {
    let settings = SamplerSettings {
        repeat_penalty: 1.5,
        ..SamplerSettings::default()
    };
    loop_app(w, h, settings)
}

/// The loop fixture with the next distribution from the chain under `settings`.
fn loop_app(w: u16, h: u16, settings: SamplerSettings) -> App {
    let mut app = ready_app(w, h);
    let mut view = prefilled();
    view.tokens = records(&LOOP, 10);
    view.prompt_len = 10;
    view.decode_ms = vec![9.0; 6];
    view.decode_kv = vec![true; 6];
    view.next = penalised(&settings, &view.tokens);
    view.attention = attention(LOOP.len().min(16));
    view.settings = settings.clone();
    app.sampler.settings = settings;
    app.update(Msg::Engine(Event::Synced(view)));
    app
}

#[test]
fn bars_show_what_the_sampler_draws_from_with_the_model_beside() {
    for (w, h) in VIEW_SIZES {
        let app = penalty_app(w, h);
        let dist = &app.session.as_ref().unwrap().next;
        let s = screen(&app);
        // The top row is the sampler's favourite, and its number is the sampler's probability, not the
        // model's fraction of a percent.
        let top = &dist.candidates[0];
        assert!(top.prob < 0.01 && top.sampled_prob > 0.2, "{top:?}");
        let row = s.lines().find(|l| l.contains("⟨␣to⟩")).unwrap();
        let sampled = nexttoken::fmt::pct(top.sampled_prob);
        let raw = nexttoken::fmt::pct(top.prob);
        assert!(row.contains(&sampled) && row.contains(&raw), "{row}");
        assert!(row.find(&sampled) < row.find(&raw), "sampler first: {row}");
        // Both columns are labelled.
        assert!(s.contains("sampler") && s.contains("model"), "{s}");
        // The model's 98% token is pushed down the list, its raw probability beside the sampler's.
        let dogs = s.lines().find(|l| l.contains("⟨␣dogs⟩")).unwrap();
        assert!(dogs.contains("98."), "{dogs}");
        assert!(s.contains("cut by top-p"), "cut rows say so");
        assert!(s.contains("◀"), "the planned token is marked");
        insta::assert_snapshot!(format!("bars_penalty_{w}x{h}"), s);
    }
}

/// Greedy draws nothing, yet the bars still say how sure the model is: each row's bar and number are
/// the distribution greedy takes the top of (the model's own here, no penalty on), and the pick line
/// says greedy always takes the top row. No row reads "cut by greedy", and the model's number is not
/// printed twice: the key had read "model █ ░ model", two columns of the same figures.
#[test]
fn under_greedy_the_bars_show_the_models_own_distribution() {
    for (w, h) in [(80, 24), (100, 30)] {
        let settings = SamplerSettings {
            greedy: true,
            ..SamplerSettings::default()
        };
        let app = loop_app(w, h, settings);
        let dist = &app.session.as_ref().unwrap().next;
        let s = screen(&app);
        let dogs = s.lines().find(|l| l.contains("⟨␣dogs⟩")).unwrap();
        let raw = nexttoken::fmt::pct(dist.candidates[0].prob);
        assert!(raw.starts_with("98."), "{raw}");
        assert_eq!(
            dogs.matches(&raw).count(),
            1,
            "bar number = model's, once: {dogs}"
        );
        assert!(!dogs.contains("100%"), "not 100% sure: {dogs}");
        let cats = s.lines().find(|l| l.contains("⟨␣cats⟩")).unwrap();
        let cats_p = nexttoken::fmt::pct(dist.candidates[1].prob);
        assert_eq!(cats.matches(&cats_p).count(), 1, "{cats}");
        assert!(!s.contains("cut by"), "greedy cuts nothing: {s}");
        assert!(s.contains("model █"), "the bars are the model's: {s}");
        assert!(!s.contains("░ model"), "no second column of the same: {s}");
        assert!(s.contains("greedy → ⟨␣dogs⟩ (always the top row"), "{s}");
        insta::assert_snapshot!(format!("bars_greedy_{w}x{h}"), s);
    }
}

/// The loop fixture under greedy, no penalty.
fn loop_app_greedy(w: u16, h: u16) -> App {
    let settings = SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    };
    loop_app(w, h, settings)
}

/// The columns are fitted to the rows on screen: a long token further down the list, out of view on a
/// short screen (80x20 here; a lesson's narration leaves 80x24 six rows), had narrowed the bars and
/// cut the `◀ next` mark to a bare `◀`.
#[test]
fn a_long_token_out_of_view_does_not_narrow_the_bars() {
    let mut app = loop_app_greedy(80, 20);
    let before = screen(&app);
    let next = &mut app.session.as_mut().unwrap().next;
    let last = next.candidates.last_mut().unwrap();
    last.token.text = " extraordinarily".into();
    let s = screen(&app);
    assert!(!s.contains("extraordinarily"), "out of view: {s}");
    assert!(s.contains("◀ next"), "{s}");
    assert_eq!(s, before, "the same screen as without the long token");
}

/// Under greedy the chain view ends with the stage greedy ranks by, then `greedy`, which keeps the top
/// row alone: it had gone on through temp, top-k, top-p and min-p, cutting rows with ✂ that greedy
/// never draws from (the class read "min-p cut London" of a pick no stage after the penalties made).
/// The mass left after greedy is the pick's own probability.
#[test]
fn under_greedy_the_chain_ends_at_the_stage_greedy_ranks_by() {
    let mut app = loop_app_greedy(80, 24);
    let dist = app.session.as_ref().unwrap().next.clone();
    assert!(
        dist.stages.iter().any(|st| st.name == "min-p"),
        "the engine reports every stage"
    );
    key(&mut app, 't');
    let s = screen(&app);
    let names = s.lines().find(|l| l.contains("stage →")).unwrap();
    let cols: Vec<&str> = names
        .split_whitespace()
        .skip_while(|w| *w != "→")
        .skip(1)
        .filter(|w| *w != "│")
        .collect();
    assert_eq!(cols, ["raw", "pen", "greedy"], "{names}");
    let kept = s.lines().find(|l| l.contains("kept")).unwrap();
    assert!(kept.trim_end_matches(['│', ' ']).ends_with(" 1"), "{kept}");
    let top = dist
        .candidates
        .iter()
        .position(|c| c.token.id == dist.planned.id)
        .unwrap();
    let rows: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.contains("kept"))
        .skip(1)
        .take_while(|l| !l.contains("mass left"))
        .collect();
    assert!(rows.len() > top + 1, "{s}");
    assert!(rows[top].contains("100%"), "{}", rows[top]);
    assert!(rows
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != top)
        .all(|(_, r)| r.contains('✂')));
    let mass = nexttoken::ui::chain::mass_left(&dist);
    let ranked = nexttoken::ui::distribution::greedy_ranks(&dist).unwrap();
    assert_eq!(mass.len(), 3);
    assert_eq!(*mass.last().unwrap(), ranked.probs[top]);
}

/// Greedy under a repetition penalty: the bars are the penalised distribution greedy ranks by, the
/// model's own beside them, the column says so, and the status bar names the penalty (it said only
/// "greedy" before).
#[test]
fn greedy_with_a_penalty_shows_the_penalised_bars_and_the_penalty() {
    for (w, h) in [(80, 24), (160, 48)] {
        let settings = SamplerSettings {
            greedy: true,
            repeat_penalty: 1.75,
            ..SamplerSettings::default()
        };
        let app = loop_app(w, h, settings);
        let dist = &app.session.as_ref().unwrap().next;
        let s = screen(&app);
        let status = s.lines().rev().nth(1).unwrap();
        assert!(status.contains("greedy rep 1.75"), "{status}");
        assert!(s.contains("penal. █"), "{s}");
        // The top row is the penalised favourite; its bar number is what greedy ranks by, not 100%.
        let top = &dist.candidates[0];
        assert_eq!(top.token.id, dist.planned.id);
        let ranked = nexttoken::ui::distribution::greedy_ranks(dist).unwrap();
        assert_eq!(ranked.name, "penalties");
        let row = s
            .lines()
            .find(|l| l.contains(&nexttoken::fmt::quoted(&top.token.text)))
            .unwrap();
        assert!(row.contains(&nexttoken::fmt::pct(ranked.probs[0])), "{row}");
        assert!(row.contains(&nexttoken::fmt::pct(top.prob)), "{row}");
        assert!(!row.contains("100%"), "{row}");
        insta::assert_snapshot!(format!("bars_greedy_penalty_{w}x{h}"), s);
    }
}

#[test]
fn numbers_shown_follow_the_order_of_the_rows() {
    let app = penalty_app(100, 30);
    let dist = &app.session.as_ref().unwrap().next;
    let sampled: Vec<f32> = dist.candidates.iter().map(|c| c.sampled_prob).collect();
    assert!(sampled.windows(2).all(|w| w[0] >= w[1]), "{sampled:?}");
    let raw: Vec<f32> = dist.candidates.iter().map(|c| c.prob).collect();
    assert!(
        !raw.windows(2).all(|w| w[0] >= w[1]),
        "the fixture re-ranks"
    );
}

#[test]
fn raising_the_temperature_moves_the_bars() {
    let bar_of = |temperature: f32| {
        let settings = SamplerSettings {
            temperature,
            repeat_penalty: 1.5,
            top_p: 1.0,
            min_p: 0.0,
            ..SamplerSettings::default()
        };
        let mut app = penalty_app(100, 30);
        let mut view = app.session.clone().unwrap();
        view.next = penalised(&settings, &view.tokens);
        app.update(Msg::Engine(Event::Synced(view)));
        let s = screen(&app);
        let row = s.lines().find(|l| l.contains("⟨␣to⟩")).unwrap().to_string();
        row.matches('█').count()
    };
    assert!(
        bar_of(2.0) < bar_of(0.5),
        "a hotter sampler flattens the top bar"
    );
}

#[test]
fn cut_rows_say_which_stage_cut_them() {
    let app = penalty_app(160, 48);
    let dist = &app.session.as_ref().unwrap().next;
    let s = screen(&app);
    for (i, c) in dist.candidates.iter().enumerate() {
        let row = s
            .lines()
            .find(|l| l.contains(&nexttoken::fmt::quoted(&c.token.text)))
            .unwrap();
        let stage = nexttoken::ui::distribution::cut_by(dist, i);
        assert_eq!(row.contains("cut by"), stage.is_some(), "{row}");
        if let Some(stage) = stage {
            assert!(row.contains(&format!("cut by {stage}")), "{row}");
        }
    }
}

/// The status bar names every penalty that acts on the next token, under greedy too, in full where it
/// fits and in short where it does not: never left out.
#[test]
fn the_status_bar_shows_active_penalties() {
    use nexttoken::ui::status::sampler_forms;
    let d = SamplerSettings::default();
    assert_eq!(
        sampler_forms(&d)[0],
        "T 0.80 top-k 40 top-p 0.95 min-p 0.05"
    );
    let greedy = SamplerSettings {
        greedy: true,
        repeat_penalty: 1.75,
        ..d.clone()
    };
    assert_eq!(sampler_forms(&greedy)[0], "greedy rep 1.75");
    // A window of 0 turns the penalties off: nothing to show.
    let off = SamplerSettings {
        penalty_last_n: 0,
        ..greedy.clone()
    };
    assert_eq!(sampler_forms(&off)[0], "greedy");
    let busy = SamplerSettings {
        frequency_penalty: 0.5,
        presence_penalty: 0.25,
        penalty_last_n: 128,
        dry_multiplier: 0.8,
        ..d.clone()
    };
    let [long, short] = sampler_forms(&busy);
    assert_eq!(
        long,
        "T 0.80 top-k 40 top-p 0.95 min-p 0.05 freq 0.50 pres 0.25 over last 128 DRY 0.80"
    );
    assert_eq!(
        short,
        "T0.80 k40 p0.95 m0.05 freq0.50 pres0.25 last128 DRY0.80"
    );
    // At 80 columns the short form shows, whole.
    let app = loop_app(80, 24, busy);
    let s = screen(&app);
    let status = s.lines().rev().nth(1).unwrap();
    assert!(status.contains(&short), "{status}");
}

/// The chain view's mass line is the share of the distribution left after each stage: it can only
/// fall. Each stage's own `kept_mass` is a share of the stage before it, so read alone it rises here
/// (top-k keeps 80% of the whole, top-p 97% of what top-k kept).
#[test]
fn the_chain_shows_the_mass_left_which_only_falls() {
    use nexttoken::ui::chain::mass_left;
    let settings = SamplerSettings::default();
    let mut app = loop_app(100, 30, settings.clone());
    let mut view = app.session.clone().unwrap();
    let kept = [1.0, 1.0, 1.0, 0.80, 0.97, 0.99];
    for (st, &m) in view.next.stages.iter_mut().zip(&kept) {
        st.kept_mass = m;
    }
    assert_eq!(
        view.next.stages.len(),
        kept.len(),
        "raw, pen, temp, k, p, min-p"
    );
    let left = mass_left(&view.next);
    let want = [1.0, 1.0, 1.0, 0.80, 0.80 * 0.97, 0.80 * 0.97 * 0.99];
    for (l, w) in left.iter().zip(want) {
        assert!((l - w).abs() < 1e-6, "{left:?}");
    }
    assert!(left.windows(2).all(|p| p[1] <= p[0]), "{left:?}");
    app.update(Msg::Engine(Event::Synced(view)));
    key(&mut app, 't');
    let s = screen(&app);
    let line = s.lines().find(|l| l.contains("mass left")).unwrap();
    assert!(
        line.contains("80.0%") && line.contains("77.6%") && line.contains("76.8%"),
        "{line}"
    );
    assert!(!line.contains("97.0%"), "{line}");
}

/// A row the penalties took below half the model's own probability, then cut by a later stage, says
/// so: with a repeat penalty a 28% token read only "cut by top-p", ranked under tokens of 2%, and the
/// reason was the penalty, seen only in the chain view.
#[test]
fn a_cut_row_the_penalties_pushed_down_says_penalised() {
    let mut app = ready_app(100, 30);
    let mut view = app.session.clone().unwrap();
    let d = &mut view.next;
    let cut = (0..d.candidates.len())
        .find(|&i| nexttoken::ui::distribution::cut_by(d, i).is_some())
        .expect("a cut row");
    let pen = d.stages.iter_mut().find(|s| s.name == "penalties").unwrap();
    pen.probs[cut] *= 0.1;
    let (text, other) = (d.candidates[cut].token.text.clone(), cut + 1);
    app.update(Msg::Engine(Event::Synced(view)));
    let s = screen(&app);
    let row = |t: &str| {
        let q = nexttoken::fmt::quoted(t);
        s.lines().find(|l| l.contains(&q)).unwrap().to_string()
    };
    assert!(row(&text).contains("penalised"), "{s}");
    let next = &app.session.as_ref().unwrap().next.candidates[other]
        .token
        .text;
    assert!(!row(next).contains("penalised"), "{s}");
}

/// A penalty strong enough to push the model's own first token (" dogs", 98% raw) off the rows on
/// screen: a row pinned under them names it with its own probability and what the chain left it, in
/// the bars and in the chain, at every size; greedy's pick is then called the top after the penalties.
#[test]
fn the_models_first_token_pushed_off_the_rows_is_pinned_under_them() {
    let strong = SamplerSettings {
        repeat_penalty: 2.0,
        ..SamplerSettings::default()
    };
    for (w, h) in VIEW_SIZES {
        let mut app = loop_app(w, h, strong.clone());
        let top = app.session.as_ref().unwrap().next.model_top.clone();
        let top = top.expect("the penalty moved dogs");
        assert_eq!(top.token.text, " dogs");
        let raw = nexttoken::fmt::pct(top.prob);
        for chain in [false, true] {
            if chain {
                key(&mut app, 't');
            }
            let s = screen(&app);
            let pinned = s
                .lines()
                .find(|l| l.contains("#1 ⟨␣dogs⟩"))
                .unwrap_or_else(|| panic!("{s}"));
            assert!(
                pinned.contains(&raw) && pinned.contains("→ cut"),
                "{pinned}"
            );
        }
    }
    // Under a mild penalty dogs stays on screen: nothing is pinned.
    let app = penalty_app(80, 24);
    assert!(!screen(&app).contains("#1 ⟨␣dogs⟩"), "{}", screen(&app));
}
