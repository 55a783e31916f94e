//! The A/B view on the engine thread: model B's figures ride on every closing event that carries a
//! view or a step, cover every position from the first generated token to the tip, fold like the rest
//! of a step, and agree with the headless `nexttoken compare --requant-b` on the real model.

use crate::support;

use nexttoken::engine::forward::linear::MatmulPath;
use nexttoken::engine::requant::Requant;
use nexttoken::engine::session::Session;
use nexttoken::engine::twin::{Twin, TwinSpec};
use nexttoken::protocol::{
    AbView, Command, Event, SamplerSettings, SessionView, StepReport, TokenKind,
};
use nexttoken::worker::AbTracker;
use serde_json::Value;
use support::events_ab;

const PROMPT: &str = "The capital of France is";

fn greedy() -> SamplerSettings {
    SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    }
}

fn tracker(to: Requant) -> AbTracker {
    let twin = Twin::load(
        &support::real_model(),
        &TwinSpec::Requant(to),
        MatmulPath::Fast,
    )
    .unwrap();
    AbTracker::new(twin, 10)
}

fn session(settings: SamplerSettings) -> Session {
    let mut s = support::real_session();
    s.set_settings(settings);
    s
}

fn synced(events: Vec<Event>) -> SessionView {
    match events.into_iter().last() {
        Some(Event::Synced(v)) => v,
        other => panic!("expected Synced, got {other:?}"),
    }
}

fn stepped(events: Vec<Event>) -> StepReport {
    match events.into_iter().last() {
        Some(Event::Stepped(r)) => r,
        other => panic!("expected Stepped, got {other:?}"),
    }
}

/// The view without B's timing, which differs from run to run.
fn figures(ab: Option<AbView>) -> Option<AbView> {
    ab.map(|ab| AbView {
        b_pass: (0, 0.0),
        ..ab
    })
}

/// One step per position from the first generated token to the tip, in order; a filled position
/// knows B's probability of the token the path took there, the tip does not.
fn check_whole(ab: &AbView, view: &SessionView) {
    assert_eq!(ab.error, None);
    let positions: Vec<usize> = ab.steps.iter().map(|s| s.position).collect();
    let want: Vec<usize> = (view.prompt_len..=view.tokens.len()).collect();
    assert_eq!(positions, want);
    for s in &ab.steps {
        assert_eq!(s.b_chosen.is_some(), s.position < view.tokens.len());
        assert_eq!(s.same_top1, s.a_top.id == s.b_top.id);
    }
    assert_eq!(ab.next.len(), 10);
    assert_eq!(ab.next[0].token, ab.tip().unwrap().b_top);
    assert_eq!(ab.tip().unwrap().a_top, view.next.candidates[0].token);
}

/// The TUI's A/B figures are the headless comparison's, step for step, on a 2-bit model B.
#[test]
fn the_ab_view_agrees_with_the_headless_comparison() {
    let mut s = session(greedy());
    let mut ab = tracker(Requant::Q2K);
    let prefill = Command::Prefill {
        prompt: PROMPT.into(),
        chat: false,
    };
    synced(events_ab(&mut s, &mut ab, prefill));
    let mut last = None;
    for _ in 0..8 {
        last = Some(stepped(events_ab(&mut s, &mut ab, Command::Step)));
    }
    let report = last.unwrap();
    let view = s.view().unwrap();
    let tui = report.ab.expect("B's view rides on the step");
    check_whole(&tui, &view);

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .args(["compare", "--prompt", PROMPT, "--steps", "8", "--greedy"])
        .args(["--requant-b", "q2_k"])
        .env("NEXTTOKEN_MODEL", support::real_model())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let steps: Vec<&Value> = lines.iter().filter(|l| l["type"] == "step").collect();
    assert_eq!(steps.len(), 8);
    for (line, step) in steps.iter().zip(&tui.steps) {
        assert_eq!(line["a"]["top"][0]["id"], step.a_top.id, "{line}");
        assert_eq!(line["b"]["top"][0]["id"], step.b_top.id, "{line}");
        assert_eq!(line["same_top1"], step.same_top1);
        assert_eq!(line["js"].as_f64().unwrap(), step.js, "{line}");
        assert_eq!(line["kl_ab"].as_f64().unwrap(), step.kl_ab);
    }
    let flips_8: usize = tui.steps[..8].iter().filter(|s| !s.same_top1).count();
    assert_eq!(steps[7]["top1_flips"], flips_8);
    assert!(tui.detail.as_deref().unwrap().contains("q2_k on"));
    eprintln!("q2_k: {flips_8} flips in 8 steps");
}

/// Stepping, forcing text, rewinding and switching back keep the view whole; a folded step equals a
/// full view; figures kept from before a rewind are the bits a fresh model B reads in one pass.
#[test]
fn every_edit_keeps_the_ab_view_whole() {
    let mut s = session(SamplerSettings {
        seed: 7,
        ..SamplerSettings::default()
    });
    let mut ab = tracker(Requant::Q4_0);
    let prefill = Command::Prefill {
        prompt: PROMPT.into(),
        chat: false,
    };
    let mut app = synced(events_ab(&mut s, &mut ab, prefill));
    check_whole(app.ab.as_ref().unwrap(), &app);
    assert_eq!(app.ab.as_ref().unwrap().steps.len(), 1);
    for _ in 0..3 {
        let report = stepped(events_ab(&mut s, &mut ab, Command::Step));
        assert_eq!(
            report.ab.as_ref().unwrap().b_pass.0,
            1,
            "a step costs B one token"
        );
        app.apply(&report);
    }
    // The folded copy equals the full view the engine sends (a no-op settings change syncs it,
    // and B reads nothing for it).
    let same = Command::SetSampler(s.settings().clone());
    let full = synced(events_ab(&mut s, &mut ab, same));
    assert_eq!(full.ab.as_ref().unwrap().b_pass, (0, 0.0));
    app.ab.as_mut().unwrap().b_pass = (0, 0.0);
    assert_eq!(app, full);
    check_whole(full.ab.as_ref().unwrap(), &full);

    let forced = Command::ForceText {
        text: " and a city".into(),
    };
    let long = synced(events_ab(&mut s, &mut ab, forced));
    check_whole(long.ab.as_ref().unwrap(), &long);
    let short = synced(events_ab(&mut s, &mut ab, Command::Rewind { n: 4 }));
    check_whole(short.ab.as_ref().unwrap(), &short);
    // What B said before the rewind still holds; the new tip no longer has a token after it.
    let (kept, had) = (
        &short.ab.as_ref().unwrap().steps,
        &long.ab.as_ref().unwrap().steps,
    );
    let n = kept.len();
    assert_eq!(kept[..n - 1], had[..n - 1]);
    let mut tip = had[n - 1].clone();
    tip.b_chosen = None;
    assert_eq!(kept[n - 1], tip);
    let leaf = long.branches.iter().find(|b| b.current).unwrap().id;
    let back = figures(
        synced(events_ab(
            &mut s,
            &mut ab,
            Command::SwitchBranch { id: leaf },
        ))
        .ab,
    );
    assert_eq!(back, figures(long.ab));

    // A fresh B reads the whole path in one pass: the same figures, bit for bit.
    let mut fresh = tracker(Requant::Q4_0);
    let whole = fresh.view(&mut s);
    assert_eq!(whole.b_pass.0, s.len(), "{:?}", whole.b_pass);
    assert_eq!(figures(Some(whole)), back);

    // A refused command carries no view, and B's figures stay as they were.
    let refused = events_ab(&mut s, &mut ab, Command::SwitchBranch { id: 9999 });
    assert!(matches!(refused.last(), Some(Event::Failed { .. })));
    assert_eq!(figures(Some(ab.view(&mut s))), back);
}

/// Each token's probability summed by the character its text starts with (special tokens and partial
/// bytes together), written here apart from the engine's own.
fn by_first_char(s: &Session, logits: &[f32]) -> std::collections::BTreeMap<Option<char>, f64> {
    let lp = nexttoken::analysis::LogProbs::from_logits(logits);
    let mut m = std::collections::BTreeMap::new();
    for (id, l) in lp.0.iter().enumerate() {
        let v = s.token_view(id as u32);
        let c = (v.kind == TokenKind::Text)
            .then(|| v.text.chars().next())
            .flatten();
        *m.entry(c).or_insert(0.0) += l.exp();
    }
    m
}

fn js_of(
    p: &std::collections::BTreeMap<Option<char>, f64>,
    q: &std::collections::BTreeMap<Option<char>, f64>,
) -> f64 {
    let keys: std::collections::BTreeSet<_> = p.keys().chain(q.keys()).collect();
    let mut sum = 0.0;
    for k in keys {
        let (a, b) = (
            p.get(k).copied().unwrap_or(0.0),
            q.get(k).copied().unwrap_or(0.0),
        );
        let m = 0.5 * (a + b);
        if a > 0.0 {
            sum += 0.5 * a * (a / m).ln();
        }
        if b > 0.0 {
            sum += 0.5 * b * (b / m).ln();
        }
    }
    sum
}

/// Gemma 3 beside SmolLM2: two vocabularies. B reads the text of A's path through its own
/// tokenizer; its tokens spell that text; each step's divergence is over the next character, and
/// equals one computed from a Gemma session that reads the same text as a prompt.
#[test]
fn a_model_with_its_own_vocabulary_is_aligned_by_text() {
    let gemma = support::gemma_model();
    let twin = Twin::load(
        &support::real_model(),
        &TwinSpec::File(gemma.clone()),
        MatmulPath::Fast,
    )
    .unwrap();
    assert!(twin.vocab.is_some(), "Gemma's vocabulary is not SmolLM2's");
    let mut ab = AbTracker::new(twin, 10);
    let mut s = session(greedy());
    let prefill = Command::Prefill {
        prompt: PROMPT.into(),
        chat: false,
    };
    synced(events_ab(&mut s, &mut ab, prefill));
    let mut last = None;
    for _ in 0..3 {
        last = Some(stepped(events_ab(&mut s, &mut ab, Command::Step)));
    }
    let v = last.unwrap().ab.unwrap();
    assert!(v.by_text);
    assert_eq!(v.error, None);
    let ids = s.tokens();
    let positions: Vec<usize> = v.steps.iter().map(|x| x.position).collect();
    assert_eq!(positions, (s.prompt_len()..=ids.len()).collect::<Vec<_>>());
    assert_eq!(
        v.b_tokens[0].kind,
        TokenKind::Special,
        "Gemma reads its BOS first"
    );
    let spelled: String = v.b_tokens[1..].iter().map(|t| t.text.as_str()).collect();
    assert_eq!(spelled, s.text_of(&ids));

    let (mut g, _) = nexttoken::engine::load::load_session(
        &gemma,
        &Default::default(),
        greedy(),
        Default::default(),
        &mut |_| {},
    )
    .unwrap();
    for step in &v.steps {
        let p = step.position;
        assert_eq!(step.b_chosen, None);
        assert_eq!(step.same_top1, step.a_top.text == step.b_top.text);
        let b_ids = g.encode(&s.text_of(&ids[..p])).unwrap();
        g.prefill_ids(&b_ids).unwrap();
        let (b_logits, a_logits) = (g.tip_logits().unwrap(), s.logits_at(p).unwrap());
        let (b, a) = (by_first_char(&g, &b_logits), by_first_char(&s, &a_logits));
        let want = js_of(&a, &b);
        assert!(
            (step.js - want).abs() < 1e-9,
            "at {p}: {} against {want}",
            step.js
        );
        eprintln!(
            "{p}: A {:?} B {:?} JS {:.4}",
            step.a_top.text, step.b_top.text, step.js
        );
    }
}
