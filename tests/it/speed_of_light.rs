//! The speed of light of every step: the engine measures this machine at load (bandwidth, the
//! kernels' peak) and counts what a pass reads and computes from the model's shapes; the timing
//! panel sets the newest step against the bandwidth floor and the prefill against the peak.

use crate::common::*;
use crate::support;
use nexttoken::app::{Msg, SidePanel};
use nexttoken::protocol::{Event, MachineSpeed, ModelInfo, Source};

#[test]
fn the_engine_counts_a_steps_bytes_and_flop_from_the_models_tensors() {
    let path = support::real_model();
    let mut f = std::fs::File::open(&path).unwrap();
    let content = candle_core::quantized::gguf_file::Content::read(&mut f).unwrap();
    // Every matrix but the embedding table once more as the tied output head (SmolLM2 ties them).
    let matrices: usize = content
        .tensor_infos
        .values()
        .filter(|t| t.shape.dims().len() == 2)
        .map(|t| t.shape.elem_count())
        .sum();
    let mut s = support::real_session();
    let threads = nexttoken::engine::threads();
    let model = s.local_model().expect("a local model");
    assert_eq!(model.decode_trial_running(), threads > 1);
    let m = s.measure_machine().unwrap().expect("a local model");
    // The decode steps' thread trial ran at load too: no step the class watches alternates.
    assert!(!s.local_model().unwrap().decode_trial_running());
    let flop = m.matmul_flop_per_token;
    assert!(
        (flop / (2.0 * matrices as f64) - 1.0).abs() < 0.01,
        "{flop} against {matrices} weights"
    );
    let tensor_bytes =
        std::fs::metadata(&path).unwrap().len() as f64 - content.tensor_data_offset as f64;
    assert!((m.weight_bytes as f64 / tensor_bytes - 1.0).abs() < 0.15);
    assert!(m.bandwidth_gb_s > 0.1 && m.peak_gflops > 0.1, "{m:?}");
    // 30 layers, 3 KV heads of 64, keys and values in f32.
    assert_eq!(m.kv_bytes_per_position, 2 * 30 * 3 * 64 * 4);
    // The session reads a prompt afterwards as if nothing happened, and its steps keep the choice.
    s.prefill_text("The capital of France is", false).unwrap();
    assert_eq!(s.distribution().unwrap().planned.text, " Paris");
    let plan = |s: &nexttoken::engine::session::Session| {
        let m = s.local_model().unwrap();
        (m.decode_threads(), m.decode_prefetch())
    };
    let chosen = plan(&s);
    for _ in 0..4 {
        s.step(nexttoken::engine::session::Choice::Sample).unwrap();
        assert_eq!(plan(&s), chosen);
        assert!(!s.local_model().unwrap().decode_trial_running());
    }
    // The status bar counts the text's passes: one prompt read, four tokens written. The ~36 passes
    // that timed the machine at load are not among them, nor is a bare pass that times a step.
    assert_eq!(s.forward_passes(), 5);
    let tip = s.distribution().unwrap().planned.id;
    s.time_bare_forward(tip).unwrap();
    assert_eq!(s.forward_passes(), 5);
}

fn machine() -> MachineSpeed {
    MachineSpeed {
        bandwidth_gb_s: 20.0,
        from_cache: false,
        weight_bytes: 96_400_000,
        kv_bytes_per_position: 46_080,
        matmul_flop_per_token: 2.69e8,
        attention_flop_per_key: 4.0 * 30.0 * 9.0 * 64.0,
        peak_gflops: 40.0,
    }
}

/// The screen after the window shrinks to 80x24.
fn at_80x24(app: &mut nexttoken::app::App) -> String {
    update(
        app,
        Msg::Resize {
            width: 80,
            height: 24,
        },
    );
    screen_text(app).join("\n")
}

/// An app at 160x48 that has loaded a model with `machine()`'s figures and prefilled its prompt.
fn prefilled_app() -> nexttoken::app::App {
    let mut app = nexttoken::app::App::new(config(160, 48));
    let info = ModelInfo {
        machine: Some(machine()),
        ..model_info()
    };
    update(&mut app, Msg::Engine(Event::Loaded(info)));
    update(&mut app, Msg::Engine(Event::Synced(prefilled())));
    app
}

#[test]
fn the_timing_panel_sets_the_newest_step_against_the_bandwidth_floor() {
    let mut app = prefilled_app();
    let text = screen_text(&app).join("\n");
    // Prefill: 5 tokens of 2.69e8 FLOP and 15 keys of attention in 21.4 ms.
    let flop = 5.0 * 2.69e8 + 15.0 * 4.0 * 30.0 * 9.0 * 64.0;
    let gflops = flop / 0.0214 / 1e9;
    let want = format!(
        "prefill at {:.0}% of peak: {gflops:.1} of 40 GFLOP/s",
        100.0 * gflops / 40.0
    );
    assert!(text.contains(&want), "{want}\n{text}");
    update(
        &mut app,
        Msg::Engine(Event::Stepped(step_after_is(0, Source::Sampled, true, 9.0))),
    );
    app.screen.side = SidePanel::Timing;
    let text = screen_text(&app).join("\n");
    // The step that fed position 5 read the weights and the 5 positions before it.
    let floor = (96_400_000.0 + 5.0 * 46_080.0) / 20e9 * 1e3;
    for want in [
        format!(
            "step ≥ {floor:.2} ms: reads {:.1} MB (KV 0.2) at 20.0 GB/s",
            (96_400_000.0 + 5.0 * 46_080.0) / 1e6
        ),
        format!(
            "the last took 9.00 ms: {:.0}% of light",
            100.0 * floor / 9.0
        ),
    ] {
        assert!(text.contains(&want), "{want}\n{text}");
    }
    // At 80x24 the narrow panel says the same, each sentence whole on its own line.
    let text = at_80x24(&mut app);
    let prefill_pct = 100.0 * flop / 0.0214 / 1e9 / 40.0;
    for want in [
        format!("last step 9.00 ms: {:.0}% of light", 100.0 * floor / 9.0),
        format!("prefill at {prefill_pct:.0}% of peak"),
    ] {
        assert!(text.contains(&want), "{want}\n{text}");
    }
    // The panel keeps the name lessons call it by on every screen: at 60 columns (a panel 27 wide)
    // the badge gives way while the cache is on.
    assert!(text.contains("Reading vs writing ─ KV cache on"), "{text}");
    update(
        &mut app,
        Msg::Resize {
            width: 60,
            height: 20,
        },
    );
    let text = screen_text(&app).join("\n");
    assert!(text.contains("┌ Reading vs writing ─"), "{text}");
}

/// Where the model fits in the CPU's last-level cache the probe read a buffer its size from there, and
/// the light line says where the bandwidth came from where it has room (at 80x24 the panel's 34
/// columns keep the short line whole instead).
#[test]
fn a_bandwidth_read_from_the_cache_says_so() {
    let cached = |app: &mut nexttoken::app::App, on: bool| {
        app.model
            .as_mut()
            .unwrap()
            .machine
            .as_mut()
            .unwrap()
            .from_cache = on;
    };
    let mut app = prefilled_app();
    cached(&mut app, true);
    update(
        &mut app,
        Msg::Engine(Event::Stepped(step_after_is(0, Source::Sampled, true, 9.0))),
    );
    app.screen.side = SidePanel::Timing;
    let text = screen_text(&app).join("\n");
    assert!(text.contains("at 20.0 GB/s from cache"), "{text}");
    let text = at_80x24(&mut app);
    let line = text.lines().find(|l| l.contains("step ≥")).unwrap();
    let inside = line.rsplit('│').nth(1).unwrap_or(line).trim_end();
    assert!(inside.ends_with(" GB/s"), "{line}");
    cached(&mut app, false);
    let text = screen_text(&app).join("\n");
    assert!(!text.contains("GB/s from cache"), "{text}");
}

/// A step faster than its floor means the bandwidth was measured low (a busy spell, or weights still
/// in the cache): the panel says so, wide and narrow, and never shows a step above 100% of light.
#[test]
fn a_step_under_its_floor_says_the_measure_ran_low() {
    let mut app = prefilled_app();
    // The floor is ~4.83 ms at 20 GB/s; this step took 3.
    update(
        &mut app,
        Msg::Engine(Event::Stepped(step_after_is(0, Source::Sampled, true, 3.0))),
    );
    app.screen.side = SidePanel::Timing;
    let text = screen_text(&app).join("\n");
    let want = "the last took 3.00 ms < floor: memory measured slow";
    assert!(text.contains(want), "{want}\n{text}");
    assert!(!text.contains("% of light"), "{text}");
    let text = at_80x24(&mut app);
    assert!(
        text.contains("last 3.00 ms: memory measured slow"),
        "{text}"
    );
    assert!(!text.contains("% of light"), "{text}");
}

/// Under the speed-of-light lesson at 80x24 the timing panel keeps the lines its narration points
/// at ("step ≥", "% of light", the prefill against the peak), giving up the abbreviations' key, the
/// cache's size and TTFT instead: it has six rows there, and those lines had been below them, cut.
#[test]
fn under_the_lesson_at_80x24_the_panel_keeps_the_lines_it_names() {
    let lesson = nexttoken::lesson::builtin("speed-of-light")
        .unwrap()
        .unwrap();
    let mut app = nexttoken::app::App::new(config(80, 24)).with_lesson(lesson);
    let info = ModelInfo {
        machine: Some(machine()),
        ..model_info()
    };
    update(&mut app, Msg::Engine(Event::Loaded(info)));
    update(&mut app, Msg::Engine(Event::Synced(prefilled())));
    update(
        &mut app,
        Msg::Engine(Event::Stepped(step_after_is(0, Source::Sampled, true, 9.0))),
    );
    let view = app.session.clone().unwrap();
    update(&mut app, lesson_step_ran(1, view));
    app.screen.side = SidePanel::Timing;
    let screen = screen_text(&app);
    let text = screen.join("\n");
    assert!(text.contains("The floor set by memory"), "{text}");
    for want in ["read ", "write ", "step ≥", "% of light", "prefill at"] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // It is short of rows: what gave way is gone whole, not cut at the panel's edge.
    assert!(!text.contains("TTFT 1st token"), "{text}");
}

/// Short of rows at 80x24, the timing panel keeps what the lesson's step names: under the
/// speed-of-light lesson ("No step beats it", and "Reading shares the bytes", which names the peak
/// and the bandwidth but not the light) its light lines, the steps' row giving way; under
/// reading-vs-writing ("The work grows with length", which names no light) the steps' row, the light
/// lines giving way. The steps' row had pushed the speed-of-light lesson's `prefill at` line off the
/// panel, cut with no mark. Each step's check has held, its line under the narration, as on screen.
#[test]
fn a_short_timing_panel_keeps_the_lines_the_step_names() {
    // Steps with and without the cache (the write line takes two rows), the last with it: one
    // row more than the panel holds.
    let mut view = long_path_app(80, 24, 34, 16).session.unwrap();
    view.decode_ms = [
        vec![4.2; 8],
        (0..21).map(|i| 66.0 + i as f64 * 0.5).collect(),
    ]
    .concat();
    view.decode_kv = [vec![true; 8], vec![false; 20], vec![true]].concat();
    for (lesson, index, keeps, loses) in [
        ("speed-of-light", 2, "prefill at", "│steps "),
        ("speed-of-light", 3, "prefill at", "│steps "),
        ("reading-vs-writing", 3, "│steps ", "prefill at"),
    ] {
        let lesson = nexttoken::lesson::builtin(lesson).unwrap().unwrap();
        let mut app = nexttoken::app::App::new(config(80, 24)).with_lesson(lesson);
        let info = ModelInfo {
            machine: Some(machine()),
            ..model_info()
        };
        update(&mut app, Msg::Engine(Event::Loaded(info)));
        update(&mut app, Msg::Engine(Event::Synced(view.clone())));
        update(&mut app, step_checked(index, view.clone()));
        app.screen.side = SidePanel::Timing;
        let text = screen_text(&app).join("\n");
        assert!(text.contains(keeps), "{keeps}\n{text}");
        assert!(!text.contains(loses), "{loses}\n{text}");
    }
}

/// Lesson step `index` ran on `view`, its one check held.
fn step_checked(index: usize, view: nexttoken::protocol::SessionView) -> Msg {
    use nexttoken::lesson::{Outcome, Status};
    let check = Outcome {
        line: 1,
        what: "expect a check".into(),
        observed: "it held".into(),
        status: Status::Passed,
    };
    lesson_step_reported(index, (vec![check], vec![]), view)
}

/// On a projector's side panel (presenter mode at 120x34) the light line is the wide form only where
/// it fits, else the narrow one, led by the `step ≥` the lessons name either way: the wide form had
/// been cut at "at 23", its GB/s lost.
#[test]
fn the_light_line_is_never_cut() {
    let mut app = prefilled_app();
    update(
        &mut app,
        Msg::Engine(Event::Stepped(step_after_is(0, Source::Sampled, true, 9.0))),
    );
    update(
        &mut app,
        Msg::Resize {
            width: 120,
            height: 34,
        },
    );
    app.presenter.on = true;
    app.presenter.side = Some(SidePanel::Timing);
    let text = screen_text(&app).join("\n");
    let line = text
        .lines()
        .find(|l| l.contains("step ≥"))
        .unwrap_or_else(|| panic!("no step ≥ line\n{text}"));
    let inside = line.rsplit('│').nth(1).unwrap_or(line).trim_end();
    assert!(inside.ends_with("GB/s"), "{line}");
}

/// `--kv f16`: the cache holds half the bytes, what a step reads from it (the speed of light's
/// figure) is counted at 2 bytes a value, and the timing panel names the cache's type beside its size.
#[test]
fn an_f16_cache_halves_what_a_step_reads_from_it() {
    use nexttoken::engine::forward::kv_cache::KvPrecision;
    use nexttoken::engine::session::{Choice, SessionOptions};
    let open = |kv_precision| {
        let opts = SessionOptions {
            kv_precision,
            ..SessionOptions::default()
        };
        let path = support::real_model();
        let settings = nexttoken::protocol::SamplerSettings::default();
        nexttoken::engine::load::load_session(
            &path,
            &Default::default(),
            settings,
            opts,
            &mut |_| {},
        )
        .unwrap()
    };
    let (mut half, info) = open(KvPrecision::F16);
    assert!(info.kv_f16);
    let (mut full, info32) = open(KvPrecision::F32);
    assert!(!info32.kv_f16);
    let m = half.measure_machine().unwrap().expect("a local model");
    assert_eq!(m.kv_bytes_per_position, 2 * 30 * 3 * 64 * 2);
    let mut kv_bytes = vec![];
    for s in [&mut half, &mut full] {
        s.prefill_text("The capital of France is", false).unwrap();
        s.step(Choice::Sample).unwrap();
        kv_bytes.push(s.view().unwrap().last_pass.kv_bytes);
    }
    assert!(
        kv_bytes[0] > 0 && 2 * kv_bytes[0] == kv_bytes[1],
        "{kv_bytes:?}"
    );
    // On screen: "KV f16 5 pos, …" where the default says "KV 5 pos, …".
    for (f16, want) in [(true, "KV f16 5 pos"), (false, "KV 5 pos")] {
        let mut app = nexttoken::app::App::new(config(160, 48));
        let info = ModelInfo {
            machine: Some(machine()),
            kv_f16: f16,
            ..model_info()
        };
        update(&mut app, Msg::Engine(Event::Loaded(info)));
        update(&mut app, Msg::Engine(Event::Synced(prefilled())));
        app.screen.side = SidePanel::Timing;
        let text = screen_text(&app).join("\n");
        assert!(text.contains(want), "{want}\n{text}");
    }
}
