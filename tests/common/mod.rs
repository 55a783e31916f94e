//! Report fixtures for the TUI tests: a realistic session on "The capital of France is", built by hand
//! (no model), with a sampler chain that follows the real stage order and attention rows that sum to 1.
#![allow(dead_code)]

use nexttoken::app::keymap::Key;
use nexttoken::app::{App, AppConfig, Msg, ThemeKind};
use nexttoken::protocol::*;

pub const PROMPT: &str = "The capital of France is";
pub const VOCAB: usize = 49152;
pub const N_LAYER: usize = 2;
pub const N_HEAD: usize = 3;

pub fn tv(id: u32, text: &str) -> TokenView {
    let kind = if text.starts_with("<|") {
        TokenKind::Special
    } else if text.starts_with("<") && text.ends_with('>') && text.len() > 2 {
        TokenKind::Bytes
    } else {
        TokenKind::Text
    };
    TokenView {
        id,
        text: text.into(),
        kind,
    }
}

/// A vocabulary search hit: a token with the model's probability and its rank in the whole vocabulary.
pub fn hit(id: u32, text: &str, prob: f32, rank: usize) -> Candidate {
    Candidate {
        token: tv(id, text),
        prob,
        logprob: prob.ln(),
        sampled_prob: 0.0,
        rank,
    }
}

pub fn model_info() -> ModelInfo {
    ModelInfo {
        name: "SmolLM2-135M-Instruct".into(),
        path: "models/SmolLM2-135M-Instruct.Q4_1.gguf".into(),
        architecture: "llama".into(),
        file_bytes: 98_000_000,
        n_layer: N_LAYER,
        n_head: N_HEAD,
        n_kv_head: 1,
        head_dim: 64,
        n_embd: 576,
        vocab_size: VOCAB,
        context_length: 8192,
        has_chat_template: true,
        eos_ids: vec![2, 0],
        load_ms: 412.0,
        windows: vec![],
        served: None,
        machine: None,
        kv_f16: false,
    }
}

/// The prompt's tokens.
pub fn prompt_tokens() -> Vec<TokenRecord> {
    [
        (504, "The"),
        (3575, " capital"),
        (282, " of"),
        (4649, " France"),
        (314, " is"),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(id, text))| TokenRecord {
        token: tv(id, text),
        position: i,
        source: Source::Prompt,
        prob: 1.0,
        logprob: 0.0,
        rank: 0,
        entropy: 0.0,
    })
    .collect()
}

/// What the model predicts after "… France is".
pub const AFTER_IS: [(u32, &str, f32); 10] = [
    (7042, " Paris", 0.78),
    (260, " the", 0.06),
    (253, " a", 0.04),
    (3532, " located", 0.03),
    (1543, " known", 0.02),
    (597, " also", 0.015),
    (441, " not", 0.012),
    (582, " one", 0.010),
    (1719, " home", 0.008),
    (198, "\n", 0.006),
];

/// What the model predicts after "… France is Paris".
pub const AFTER_PARIS: [(u32, &str, f32); 10] = [
    (30, ".", 0.55),
    (28, ",", 0.21),
    (284, " and", 0.07),
    (198, "\n", 0.05),
    (563, " which", 0.03),
    (9937, "<E2 80>", 0.02),
    (347, " (", 0.015),
    (1014, " in", 0.01),
    (2, "<|im_end|>", 0.008),
    (314, " is", 0.005),
];

/// A distribution with a sampler chain computed the way the engine's stages run.
pub fn distribution(
    position: usize,
    cands: &[(u32, &str, f32)],
    s: &SamplerSettings,
    u: f32,
) -> Distribution {
    let raw: Vec<f32> = cands.iter().map(|c| c.2).collect();
    let tail = (1.0 - raw.iter().sum::<f32>()).max(0.0);
    let mut stages = vec![
        stage("raw", VOCAB, raw.clone(), 1.0),
        stage("penalties", VOCAB, raw.clone(), 1.0),
    ];
    // Temperature: p^(1/T), renormalised; the long tail is one lump.
    let t: Vec<f32> = raw.iter().map(|p| p.powf(1.0 / s.temperature)).collect();
    let t_tail = tail.powf(1.0 / s.temperature) * 0.3;
    let z = t.iter().sum::<f32>() + t_tail;
    let t: Vec<f32> = t.iter().map(|p| p / z).collect();
    let t_tail = t_tail / z;
    stages.push(stage("temperature", VOCAB, t.clone(), 1.0));
    // Top-k keeps every shown candidate (k > 10) and part of the tail.
    let k_tail = t_tail * 0.5;
    let z = t.iter().sum::<f32>() + k_tail;
    let k: Vec<f32> = t.iter().map(|p| p / z).collect();
    stages.push(stage("top-k", s.top_k, k.clone(), z));
    let mp = cut_offs(&k, s, &mut stages);

    // The draw: where u lands in the cumulative final distribution.
    let mut acc = 0.0;
    let rank = mp
        .iter()
        .position(|&p| {
            acc += p;
            u < acc
        })
        .unwrap_or(0);
    let candidates = cands
        .iter()
        .zip(&mp)
        .enumerate()
        .map(|(rank, (&(id, text, p), &sp))| Candidate {
            token: tv(id, text),
            prob: p,
            logprob: p.ln(),
            sampled_prob: sp,
            rank,
        })
        .collect();
    let entropy = -raw.iter().map(|p| p * p.ln()).sum::<f32>() + tail * 4.0;
    Distribution {
        position,
        candidates,
        entropy,
        eos_prob: 0.002,
        stages,
        planned: tv(cands[rank].0, cands[rank].1),
        planned_prob: mp[rank],
        draw: (!s.greedy).then_some(Draw {
            u,
            token_id: cands[rank].0,
            rank,
        }),
        loop_next: None,
        model_top: None,
        known_mass: None,
    }
}

/// The top-p and min-p stages after top-k's probabilities `k`, pushed onto `stages`; returns the
/// final probabilities.
fn cut_offs(k: &[f32], s: &SamplerSettings, stages: &mut Vec<StageReport>) -> Vec<f32> {
    // Top-p: the smallest prefix whose mass reaches p.
    let mut cum = 0.0;
    let keep: Vec<bool> = k
        .iter()
        .map(|p| {
            let was = cum;
            cum += p;
            was < s.top_p
        })
        .collect();
    let (tp, mass) = renorm(k, &keep);
    stages.push(stage(
        "top-p",
        keep.iter().filter(|&&x| x).count(),
        tp.clone(),
        mass,
    ));
    // Min-p: drop what is below min_p × the best.
    let best = tp.iter().cloned().fold(0.0, f32::max);
    let keep: Vec<bool> = tp.iter().map(|&p| p > 0.0 && p >= s.min_p * best).collect();
    let (mp, mass) = renorm(&tp, &keep);
    stages.push(stage(
        "min-p",
        keep.iter().filter(|&&x| x).count(),
        mp.clone(),
        mass,
    ));
    mp
}

fn stage(name: &str, kept: usize, probs: Vec<f32>, kept_mass: f32) -> StageReport {
    StageReport {
        name: name.into(),
        kept,
        probs,
        kept_mass,
    }
}

fn renorm(p: &[f32], keep: &[bool]) -> (Vec<f32>, f32) {
    let mass: f32 = p.iter().zip(keep).filter(|(_, &k)| k).map(|(p, _)| p).sum();
    let out = p
        .iter()
        .zip(keep)
        .map(|(&p, &k)| if k { p / mass } else { 0.0 })
        .collect();
    (out, mass)
}

/// Attention over positions `0..len` for every layer and head: causal (zeros above the diagonal),
/// each row a softmax that sums to 1. Head 0 looks at the first token (a "sink"), head 1 at the
/// previous token, head 2 spreads out; layer 1 is sharper.
pub fn attention(len: usize) -> AttentionWindow {
    let mut weights = vec![0.0; N_LAYER * N_HEAD * len * len];
    for l in 0..N_LAYER {
        for h in 0..N_HEAD {
            for r in 0..len {
                let scores: Vec<f32> = (0..=r)
                    .map(|c| {
                        let sharp = 1.0 + l as f32;
                        sharp
                            * match h {
                                0 => {
                                    if c == 0 {
                                        3.0
                                    } else {
                                        0.2 * c as f32 / len as f32
                                    }
                                }
                                1 => {
                                    if c + 1 == r || (r == 0 && c == 0) {
                                        2.5
                                    } else {
                                        0.0
                                    }
                                }
                                _ => -0.3 * (r - c) as f32,
                            }
                    })
                    .collect();
                let z: f32 = scores.iter().map(|s| s.exp()).sum();
                for (c, s) in scores.iter().enumerate() {
                    weights[((l * N_HEAD + h) * len + r) * len + c] = s.exp() / z;
                }
            }
        }
    }
    let first_key = (0..N_LAYER * N_HEAD * len)
        .map(|i| weights[i * len])
        .collect();
    DenseWindow {
        start: 0,
        len,
        n_layer: N_LAYER,
        n_head: N_HEAD,
        weights,
        first_key,
    }
    .into()
}

fn pass(tokens_fed: usize, ms: f64, kv_len: usize, kv_on: bool, passes: u64) -> PassReport {
    PassReport {
        tokens_fed,
        ms,
        kv_len: if kv_on { kv_len } else { 0 },
        kv_bytes: if kv_on {
            kv_len * 2 * N_LAYER * 64 * 4 * 30
        } else {
            0
        },
        kv_cache_on: kv_on,
        forward_passes: passes,
        served: None,
    }
}

/// The session right after reading the prompt.
pub fn prefilled() -> SessionView {
    let settings = SamplerSettings::default();
    SessionView {
        tokens: prompt_tokens(),
        prompt_len: 5,
        next: distribution(5, &AFTER_IS, &settings, 0.412),
        attention: attention(5),
        last_pass: pass(5, 21.4, 5, true, 1),
        prefill: PrefillReport {
            tokens: 5,
            ms: 21.4,
            tok_per_s: 233.6,
            ttft_ms: 22.9,
        },
        decode_ms: vec![],
        decode_kv: vec![],
        decode_round: vec![],
        branches: vec![],
        settings,
        typed_prompt: None,
        passes_before_prompt: 0,
        ab: None,
        last_choice: None,
        answers: vec![],
        draft: None,
    }
}

/// The step that commits `token` (from the candidates after "is") and runs the next pass.
pub fn step_after_is(rank: usize, source: Source, kv_on: bool, ms: f64) -> StepReport {
    let settings = SamplerSettings::default();
    let (id, text, p) = AFTER_IS[rank];
    StepReport {
        step: 0,
        committed: TokenRecord {
            token: tv(id, text),
            position: 5,
            source,
            prob: p,
            logprob: p.ln(),
            rank,
            entropy: 0.98,
        },
        chosen_from: distribution(5, &AFTER_IS, &settings, 0.412).into(),
        pass: pass(if kv_on { 1 } else { 6 }, ms, 6, kv_on, 2),
        next: distribution(6, &AFTER_PARIS, &settings, 0.23).into(),
        attention: attention(6),
        branches: vec![],
        ab: None,
    }
}

/// A later step committing `text` at `position` (as a sampled token of probability `p`).
pub fn later_step(position: usize, text: &str, p: f32, kv_on: bool, ms: f64) -> StepReport {
    let settings = SamplerSettings::default();
    StepReport {
        step: position - 5,
        committed: TokenRecord {
            token: tv(9000 + position as u32, text),
            position,
            source: Source::Sampled,
            prob: p,
            logprob: p.ln(),
            rank: 0,
            entropy: 1.4,
        },
        chosen_from: distribution(position, &AFTER_PARIS, &settings, 0.3).into(),
        pass: pass(
            if kv_on { 1 } else { position + 1 },
            ms,
            position + 1,
            kv_on,
            (position - 3) as u64,
        ),
        next: distribution(position + 1, &AFTER_PARIS, &settings, 0.3).into(),
        attention: attention(position + 1),
        branches: vec![],
        ab: None,
    }
}

pub fn config(width: u16, height: u16) -> AppConfig {
    AppConfig {
        prompt: PROMPT.into(),
        chat: false,
        theme: ThemeKind::Default,
        settings: SamplerSettings::default(),
        width,
        height,
    }
}

/// An app that has loaded the model and read the prompt, ready for the first step.
pub fn ready_app(width: u16, height: u16) -> App {
    let mut app = App::new(config(width, height));
    app.update(Msg::Engine(Event::Loaded(model_info())));
    update(&mut app, Msg::Engine(Event::Synced(prefilled())));
    app
}

/// One message as the terminal loop folds it: `App::update`, then the screen map of what is drawn now.
pub fn update(app: &mut App, msg: Msg) -> Vec<Command> {
    nexttoken::cmd::tui::update(app, msg)
}

/// Presses one character key.
pub fn key(app: &mut App, c: char) -> Vec<Command> {
    update(app, Msg::Key(Key::Char(c)))
}

pub fn press(app: &mut App, k: Key) -> Vec<Command> {
    update(app, Msg::Key(k))
}

pub fn typing(app: &mut App, text: &str) -> Vec<Command> {
    text.chars().flat_map(|c| key(app, c)).collect()
}

/// The status line's message, or "" when there is none.
pub fn status_text(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

/// The screen as text, one string per row.
pub fn screen_text(app: &App) -> Vec<String> {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(
        app.screen.width,
        app.screen.height,
    ))
    .unwrap();
    terminal.draw(|f| nexttoken::ui::draw(f, app)).unwrap();
    let buf = terminal.backend().buffer();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect())
        .collect()
}

/// An app whose transcript holds `n` generated one-word tokens, far more than fit on screen.
pub fn long_app(width: u16, height: u16, n: usize) -> App {
    let mut app = ready_app(width, height);
    for i in 0..n {
        let step = later_step(5 + i, &format!(" w{i}"), 0.5, true, 10.0);
        update(&mut app, Msg::Engine(Event::Stepped(step)));
    }
    app
}

// Fixtures for the views tests (tests/views_*.rs): a long path with the engine's attention window.

/// The smallest full screen, the projector, and a wide terminal.
pub const VIEW_SIZES: [(u16, u16); 3] = [(80, 24), (100, 30), (160, 48)];

/// The words of a long path, `|` between tokens; the 12th is an emoji, to check that columns stay
/// aligned around a wide character.
pub const LONG_PATH: &str = "The| capital| of| France| is| Paris|.| It| is| a| city| 🙂| of| light|,| known| for| its| art|,| food| and| long| walks| by| the| river|.| Every| year|,| millions| of| people| come| to| see| it| for| themselves";

pub fn words() -> Vec<&'static str> {
    LONG_PATH.split('|').collect()
}

/// A session on the first `n` words, the prompt being the first five, with the engine's attention
/// window: the last `window` positions of a full causal attention over all `n`, and every row's weight
/// on key 0 even when it lies before the window.
pub fn long_path_app(w: u16, h: u16, n: usize, window: usize) -> App {
    let mut app = ready_app(w, h);
    let mut view = prefilled();
    view.tokens = words()[..n]
        .iter()
        .enumerate()
        .map(|(i, t)| TokenRecord {
            token: tv(1000 + i as u32, t),
            position: i,
            source: if i < 5 {
                Source::Prompt
            } else {
                Source::Sampled
            },
            prob: if i < 5 { 1.0 } else { 0.4 },
            logprob: if i < 5 { 0.0 } else { 0.4f32.ln() },
            rank: 0,
            entropy: 1.0,
        })
        .collect();
    view.decode_ms = vec![9.5; n - 5];
    view.decode_kv = vec![true; n - 5];
    // The last pass was the newest step: one token, with the cache.
    view.last_pass = PassReport {
        tokens_fed: 1,
        ms: 9.5,
        kv_len: n,
        kv_bytes: n * 30_720,
        kv_cache_on: true,
        forward_passes: (n - 4) as u64,
        served: None,
    };
    view.attention = window_of(&attention(n), window);
    update(&mut app, Msg::Engine(Event::Synced(view)));
    app
}

/// The last `len` rows and columns of `full` (which starts at position 0).
pub fn window_of(full: &AttentionWindow, len: usize) -> AttentionWindow {
    let len = len.min(full.len);
    let start = full.len - len;
    let heads = full.n_layer * full.n_head;
    let mut weights = vec![0.0; heads * len * len];
    let mut first_key = vec![0.0; heads * len];
    for lh in 0..heads {
        let (l, h) = (lh / full.n_head, lh % full.n_head);
        for r in 0..len {
            first_key[lh * len + r] = full.get(l, h, start + r, 0);
            for c in 0..len {
                weights[(lh * len + r) * len + c] = full.get(l, h, start + r, start + c);
            }
        }
    }
    DenseWindow {
        start,
        len,
        n_layer: full.n_layer,
        n_head: full.n_head,
        weights,
        first_key,
    }
    .into()
}

/// A guess scored by hand, as the engine answers `ScoreGuess`: the guess's tokens (id, text, prob,
/// rank) and the model's greedy continuation (id, text, prob) at `position`.
pub fn guess_score(
    position: usize,
    guess: &[(u32, &str, f32, usize)],
    greedy: &[(u32, &str, f32)],
) -> GuessScore {
    let tokens: Vec<GuessToken> = guess
        .iter()
        .map(|&(id, text, prob, rank)| GuessToken {
            token: tv(id, text),
            prob,
            logprob: prob.ln(),
            rank,
        })
        .collect();
    let ids: Vec<u32> = guess.iter().map(|g| g.0).collect();
    GuessScore {
        text: guess.iter().map(|g| g.1).collect(),
        position,
        logprob: guess.iter().map(|g| f64::from(g.2.ln())).sum(),
        is_greedy: ids.iter().eq(greedy.iter().map(|g| &g.0)),
        greedy: greedy.iter().map(|&(id, text, _)| tv(id, text)).collect(),
        greedy_logprob: greedy.iter().map(|g| f64::from(g.2.ln())).sum(),
        top1: tv(greedy[0].0, greedy[0].1),
        top1_prob: greedy[0].2,
        tokens,
    }
}

/// The rows of the box drawn with `title` on its top border, borders included.
pub fn boxed(screen: &[String], title: &str) -> Vec<String> {
    let rows: Vec<Vec<char>> = screen.iter().map(|r| r.chars().collect()).collect();
    let top = screen
        .iter()
        .position(|r| r.contains(title))
        .expect("the box");
    let t = &rows[top];
    let at = screen[top].find(title).expect("title");
    let title_col = screen[top][..at].chars().count();
    let left = (0..title_col).rev().find(|&c| t[c] == '┌').expect("left");
    let right = (title_col..t.len()).find(|&c| t[c] == '┐').expect("right");
    let mut out = vec![];
    for r in &rows[top..] {
        out.push(r[left..=right].iter().collect::<String>());
        if r[left] == '└' {
            break;
        }
    }
    out
}

/// The engine's reply that lesson step `index` (0-based) ran with no question and no screen
/// actions, leaving the session at `view`.
pub fn lesson_step_ran(index: usize, view: SessionView) -> Msg {
    lesson_step_ran_with(index, vec![], view)
}

/// `lesson_step_ran`, the step's screen actions `tui`.
pub fn lesson_step_ran_with(
    index: usize,
    tui: Vec<nexttoken::lesson::TuiAction>,
    view: SessionView,
) -> Msg {
    lesson_step_reported(index, (vec![], tui), view)
}

/// Lesson step `index` ran on `view` with these `outcomes` (its checks) and screen actions `tui`.
pub fn lesson_step_reported(
    index: usize,
    (outcomes, tui): (
        Vec<nexttoken::lesson::Outcome>,
        Vec<nexttoken::lesson::TuiAction>,
    ),
    view: SessionView,
) -> Msg {
    let run = nexttoken::lesson::StepRun {
        index,
        outcomes,
        tui,
        question: None,
        answer: None,
    };
    let step = LessonStepView {
        run,
        replayed: 0,
        earlier_failure: None,
        written_for: None,
        view,
    };
    Msg::Engine(Event::LessonStep(Box::new(step)))
}

/// A branch of the list as the engine reports it: no text, a mean log-probability of -1.
pub fn branch_info(id: usize, len: usize, fork_position: usize, current: bool) -> BranchInfo {
    BranchInfo {
        id,
        len,
        fork_position,
        mean_logprob: -1.0,
        preview: String::new(),
        before_fork: String::new(),
        after_fork: String::new(),
        current,
        class_choices: 0,
        forced_at_fork: false,
    }
}
