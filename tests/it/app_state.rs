//! State-machine tests: fold `Msg`s through `App::update`, with no terminal and no model, and check both
//! the state and the `Command`s it returns.

use crate::common;

use common::*;
use nexttoken::app::keymap::{Key, Mode};
use nexttoken::app::{App, Msg};
use nexttoken::protocol::{Command, Event, Failure, SamplerSettings, Source};
use nexttoken::ui::layout::{areas, candidate_rows};

fn stepped(app: &mut App, report: nexttoken::protocol::StepReport) -> Vec<Command> {
    app.update(Msg::Engine(Event::Stepped(report)))
}

/// True for commands that run a forward pass.
fn runs_forward_pass(c: &Command) -> bool {
    matches!(
        c,
        Command::Step
            | Command::Force { .. }
            | Command::ForceText { .. }
            | Command::Prefill { .. }
            | Command::SetKvCache { .. }
    )
}

#[test]
fn loaded_model_prefills_the_prompt() {
    let mut app = App::new(config(80, 24));
    assert!(app.is_busy(), "loading counts as busy");
    let cmds = app.update(Msg::Engine(Event::Loaded(model_info())));
    assert_eq!(
        cmds,
        vec![Command::Prefill {
            prompt: PROMPT.into(),
            chat: false
        }]
    );
    assert!(app.is_busy());
    app.update(Msg::Engine(Event::Synced(prefilled())));
    assert!(!app.is_busy());
    assert_eq!(app.step_count(), 0);
    assert_eq!(app.candidates()[0].token.text, " Paris");
}

#[test]
fn step_sends_one_step_at_a_time() {
    let mut app = ready_app(80, 24);
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
    assert!(app.is_busy());
    assert_eq!(
        key(&mut app, 'n'),
        vec![],
        "a second step waits for the first"
    );
    assert!(
        app.status
            .as_ref()
            .is_some_and(|s| s.text.contains("queued")),
        "the user is told the press was kept"
    );
    let next = app.update(Msg::Engine(Event::Stepped(step_after_is(
        0,
        Source::Sampled,
        true,
        9.0,
    ))));
    assert_eq!(
        next,
        vec![Command::Step],
        "the queued press is sent with the reply"
    );
    assert!(app.is_busy());
}

#[test]
fn stepped_report_folds_into_the_session() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'j');
    key(&mut app, ' ');
    stepped(&mut app, step_after_is(0, Source::Sampled, true, 9.0));
    let s = app.session.as_ref().unwrap();
    assert_eq!(s.tokens.len(), 6);
    assert_eq!(s.tokens[5].token.text, " Paris");
    assert_eq!(s.decode_ms, vec![9.0]);
    assert_eq!(s.last_pass.forward_passes, 2);
    assert_eq!(app.step_count(), 1);
    assert_eq!(app.candidates()[0].token.text, ".");
    assert_eq!(
        app.selection.candidate, 0,
        "selection resets for the new distribution"
    );
}

#[test]
fn pick_by_number_forces_that_candidate() {
    let mut app = ready_app(80, 24);
    assert_eq!(key(&mut app, '2'), vec![Command::Force { token_id: 260 }]);
    assert_eq!(app.selection.candidate, 1);
    assert!(app.is_busy());
}

#[test]
fn pick_beyond_the_list_does_nothing() {
    let mut app = ready_app(80, 24);
    let mut view = prefilled();
    view.next.candidates.truncate(3);
    app.update(Msg::Engine(Event::Synced(view)));
    assert_eq!(key(&mut app, '7'), vec![]);
    assert!(!app.is_busy());
}

#[test]
fn enter_forces_the_moved_selection() {
    let mut app = ready_app(80, 24);
    press(&mut app, Key::Down);
    key(&mut app, 'j');
    key(&mut app, 'j');
    key(&mut app, 'k');
    assert_eq!(app.selection.candidate, 2);
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::Force { token_id: 253 }]
    );
    press(&mut app, Key::Up);
    press(&mut app, Key::Up);
    press(&mut app, Key::Up);
    assert_eq!(app.selection.candidate, 0, "up stops at the top");
}

#[test]
fn click_on_a_candidate_row_forces_it() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = ready_app(w, h);
        let rows = candidate_rows(areas(&app).distribution, false);
        let click = Msg::Click {
            column: rows.x + 3,
            row: rows.y + 3,
        };
        assert_eq!(app.update(click), vec![Command::Force { token_id: 3532 }]);
        let mut app = ready_app(w, h);
        let outside = Msg::Click { column: 0, row: 0 };
        assert_eq!(app.update(outside), vec![]);
    }
}

#[test]
fn forced_step_is_recorded_as_forced() {
    let mut app = ready_app(80, 24);
    key(&mut app, '2');
    stepped(&mut app, step_after_is(1, Source::Forced, true, 9.0));
    let last = app.last_generated().unwrap();
    assert_eq!(last.source, Source::Forced);
    assert_eq!(last.token.text, " the");
    assert_eq!(last.rank, 1);
}

#[test]
fn force_text_is_typed_then_sent() {
    let mut app = ready_app(80, 24);
    assert_eq!(key(&mut app, 'i'), vec![]);
    assert_eq!(app.mode, Mode::ForceText);
    let asked = typing(&mut app, "Lyon q");
    assert!(!asked.contains(&Command::Quit), "q types, it does not quit");
    assert_eq!(
        asked.last(),
        Some(&Command::Tokenize {
            text: "Lyon q".into()
        }),
        "each edit asks how the text will tokenise"
    );
    assert!(!app.is_busy(), "a preview is not a forward pass");
    press(&mut app, Key::Backspace);
    press(&mut app, Key::Backspace);
    assert_eq!(app.input.text(), "Lyon");
    let pieces = vec![common::tv(58, "Ly"), common::tv(257, "on")];
    app.update(Msg::Engine(Event::Tokenized {
        text: "Lyo".into(),
        tokens: vec![],
    }));
    assert!(app.input.preview.is_empty(), "a stale preview is ignored");
    app.update(Msg::Engine(Event::Tokenized {
        text: "Lyon".into(),
        tokens: pieces.clone(),
    }));
    assert_eq!(app.input.preview, pieces);
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::ForceText {
            text: "Lyon".into()
        }]
    );
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.input.text().is_empty());
}

#[test]
fn escape_cancels_typing() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'i');
    typing(&mut app, "abc");
    assert_eq!(press(&mut app, Key::Esc), vec![]);
    assert_eq!(app.mode, Mode::Normal);
    assert!(!app.is_busy());
}

#[test]
fn rewind_drops_one_token_but_never_the_prompt() {
    let mut app = ready_app(80, 24);
    assert_eq!(
        key(&mut app, 'u'),
        vec![],
        "only the prompt: nothing to rewind"
    );
    key(&mut app, ' ');
    stepped(&mut app, step_after_is(0, Source::Sampled, true, 9.0));
    assert_eq!(key(&mut app, 'u'), vec![Command::Rewind { n: 1 }]);
    app.update(Msg::Engine(Event::Synced(prefilled())));
    assert_eq!(app.step_count(), 0);
    key(&mut app, ' ');
    stepped(&mut app, step_after_is(0, Source::Sampled, true, 9.0));
    assert_eq!(
        press(&mut app, Key::Backspace),
        vec![Command::Rewind { n: 1 }]
    );
}

#[test]
fn autoplay_steps_on_tick_only_when_not_busy() {
    let mut app = ready_app(80, 24);
    app.update(Msg::Tick { now_ms: 10_000 });
    assert_eq!(key(&mut app, 'a'), vec![], "autoplay itself sends nothing");
    assert!(app.autoplay.on);
    let interval = app.autoplay_interval_ms();
    assert_eq!(
        app.update(Msg::Tick { now_ms: 10_100 }),
        vec![Command::Step]
    );
    assert_eq!(
        app.update(Msg::Tick {
            now_ms: 10_100 + interval * 3
        }),
        vec![],
        "busy: the first step has not come back"
    );
    stepped(&mut app, step_after_is(0, Source::Sampled, true, 9.0));
    assert_eq!(
        app.update(Msg::Tick {
            now_ms: 10_100 + interval * 3
        }),
        vec![Command::Step]
    );
    stepped(&mut app, later_step(6, ".", 0.55, true, 9.0));
    let t = 10_100 + interval * 3;
    assert_eq!(app.update(Msg::Tick { now_ms: t + 1 }), vec![], "too soon");
    assert_eq!(
        app.update(Msg::Tick {
            now_ms: t + interval
        }),
        vec![Command::Step]
    );
    stepped(&mut app, later_step(7, " It", 0.3, true, 9.0));
    key(&mut app, 'a');
    assert_eq!(
        app.update(Msg::Tick { now_ms: t * 2 }),
        vec![],
        "autoplay off"
    );
}

#[test]
fn autoplay_speed_dial() {
    let mut app = ready_app(80, 24);
    let start = app.autoplay_interval_ms();
    key(&mut app, '+');
    assert!(app.autoplay_interval_ms() < start);
    for _ in 0..20 {
        key(&mut app, '-');
    }
    assert_eq!(app.autoplay_interval_ms(), 2000, "slowest");
}

#[test]
fn autoplay_stops_at_a_special_token() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'a');
    app.update(Msg::Tick { now_ms: 5000 });
    stepped(&mut app, later_step(5, "<|im_end|>", 0.9, true, 9.0));
    assert!(!app.autoplay.on);
}

#[test]
fn sampler_change_resends_settings_without_a_forward_pass() {
    let mut app = ready_app(80, 24);
    assert_eq!(key(&mut app, 's'), vec![]);
    assert_eq!(app.mode, Mode::Sampler);
    let cmds = press(&mut app, Key::Right);
    let expected = SamplerSettings {
        temperature: 0.9,
        ..SamplerSettings::default()
    };
    assert_eq!(cmds, vec![Command::SetSampler(expected.clone())]);
    assert!(!cmds.iter().any(runs_forward_pass));
    // Another change while the first is in flight waits, then goes out with the reply.
    key(&mut app, 'j');
    assert_eq!(key(&mut app, 'l'), vec![], "waits for the engine");
    let mut view = prefilled();
    view.settings = expected;
    let cmds = app.update(Msg::Engine(Event::Synced(view)));
    assert_eq!(cmds.len(), 1);
    let Command::SetSampler(s) = &cmds[0] else {
        panic!("expected SetSampler, got {cmds:?}");
    };
    assert_eq!((s.temperature, s.top_k), (0.9, 50));
    assert_eq!(app.step_count(), 0, "re-ranking did not step");
}

#[test]
fn re_ranked_distribution_replaces_the_old_one() {
    let mut app = ready_app(80, 24);
    key(&mut app, 's');
    let greedy_row = nexttoken::app::sampler_panel::FIELDS
        .iter()
        .position(|f| *f == nexttoken::protocol::Setting::Greedy)
        .unwrap();
    for _ in 0..greedy_row {
        key(&mut app, 'j');
    }
    let cmds = press(&mut app, Key::Enter);
    let Command::SetSampler(s) = &cmds[0] else {
        panic!("expected SetSampler, got {cmds:?}");
    };
    assert!(s.greedy);
    let mut view = prefilled();
    view.settings = s.clone();
    view.next = distribution(5, &AFTER_IS, s, 0.0);
    app.update(Msg::Engine(Event::Synced(view)));
    let next = &app.session.as_ref().unwrap().next;
    assert!(next.draw.is_none(), "greedy: no random draw");
    assert!(app.sampler.settings.greedy);
    assert_eq!(key(&mut app, 'q'), vec![], "q closes the panel");
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn kv_cache_toggle() {
    let mut app = ready_app(80, 24);
    assert_eq!(key(&mut app, 'v'), vec![Command::SetKvCache { on: false }]);
    assert!(
        app.kv_cache_on(),
        "the screen shows what the engine last said"
    );
    let mut off = prefilled();
    off.last_pass.kv_cache_on = false;
    app.update(Msg::Engine(Event::Synced(off)));
    assert!(!app.kv_cache_on());
    assert_eq!(key(&mut app, 'v'), vec![Command::SetKvCache { on: true }]);
}

#[test]
fn too_small_flag_follows_resize() {
    let mut app = ready_app(80, 24);
    assert!(!app.too_small());
    app.update(Msg::Resize {
        width: 50,
        height: 15,
    });
    assert!(app.too_small());
    app.update(Msg::Resize {
        width: 160,
        height: 48,
    });
    assert!(!app.too_small());
    assert!(app.is_wide());
}

#[test]
fn quit_with_q_and_ctrl_c_everywhere() {
    let mut app = ready_app(80, 24);
    assert_eq!(key(&mut app, 'q'), vec![Command::Quit]);
    assert!(app.quit);
    let mut app = ready_app(80, 24);
    key(&mut app, 'i');
    assert_eq!(press(&mut app, Key::Ctrl('c')), vec![Command::Quit]);
    assert!(app.quit);
}

#[test]
fn engine_failure_shows_and_frees_the_ui() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'a');
    key(&mut app, ' ');
    app.update(Msg::Engine(Event::Failed {
        what: Failure::Step,
        reason: "out of context".into(),
    }));
    assert!(!app.is_busy());
    assert!(!app.autoplay.on);
    let status = app.status.as_ref().unwrap();
    assert!(status.error && status.text.contains("out of context"));
}

#[test]
fn load_failure_is_reported() {
    let mut app = App::new(config(80, 24));
    app.update(Msg::Engine(Event::Failed {
        what: Failure::Load,
        reason: "no such file".into(),
    }));
    assert!(!app.is_busy());
    assert!(app.status.as_ref().unwrap().text.contains("could not load"));
    assert_eq!(key(&mut app, ' '), vec![], "no model: nothing to step");
}

#[test]
fn selection_stops_at_the_last_row_on_screen() {
    // 20 candidates, fewer rows at 80x24.
    let mut app = ready_app(80, 24);
    let mut view = prefilled();
    let more: Vec<_> = (0..20)
        .map(|i| {
            let mut c = view.next.candidates[i % 10].clone();
            c.token.id = 10_000 + i as u32;
            c
        })
        .collect();
    view.next.candidates = more;
    app.update(Msg::Engine(Event::Synced(view)));
    for _ in 0..30 {
        key(&mut app, 'j');
    }
    let rows = candidate_rows(areas(&app).distribution, false).height as usize;
    assert!(rows < 20);
    assert_eq!(app.selection.candidate, rows - 1);
}

#[test]
fn stepping_past_the_end_of_the_turn_takes_a_second_press() {
    let mut app = ready_app(80, 24);
    let mut end = later_step(5, "<|im_end|>", 0.9, true, 12.0);
    end.committed.token.id = 2; // an EOS id of the model
    app.update(Msg::Engine(Event::Stepped(end)));
    assert_eq!(key(&mut app, ' '), vec![], "the first press explains");
    let status = app.status.clone().unwrap();
    assert!(
        status.text.contains("ended its turn with <|im_end|>"),
        "{}",
        status.text
    );
    assert_eq!(
        key(&mut app, ' '),
        vec![Command::Step],
        "the second press goes on"
    );
    // Autoplay never runs past the end by itself.
    let mut app = ready_app(80, 24);
    let mut end = later_step(5, "<|im_end|>", 0.9, true, 12.0);
    end.committed.token.id = 0;
    app.update(Msg::Engine(Event::Stepped(end)));
    key(&mut app, 'a');
    app.update(Msg::Tick { now_ms: 10_000 });
    assert!(!app.is_busy(), "autoplay stays put at the end of a turn");
}

#[test]
fn a_closing_event_frees_the_app_and_progress_does_not() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'i');
    typing(&mut app, "abc");
    assert!(matches!(
        press(&mut app, Key::Enter).as_slice(),
        [Command::ForceText { .. }]
    ));
    app.update(Msg::Engine(Event::Forcing { done: 1, total: 3 }));
    assert!(app.is_busy(), "progress is not the reply");
    assert_eq!(key(&mut app, ' '), vec![], "one command in flight");
    assert_eq!(
        app.update(Msg::Engine(Event::Synced(prefilled()))),
        vec![Command::Step],
        "the closing event frees the app, and the step pressed meanwhile goes"
    );
}

#[test]
fn the_transcript_scrolls_back_and_says_what_is_hidden() {
    let mut app = long_app(80, 24, 300);
    let rows = |app: &App| screen_text(app).join("\n");
    assert!(
        rows(&app).contains("↑") && rows(&app).contains("more above (pgup)"),
        "{}",
        rows(&app)
    );
    // (The newest tokens also label the attention map, so look at one before its window.)
    assert!(
        rows(&app).contains(" w280 "),
        "the newest lines are in view"
    );
    press(&mut app, Key::PageUp);
    let back = app.screen.scroll_back;
    assert!(back > 0);
    assert!(
        !rows(&app).contains(" w280 "),
        "a page back hides the newest lines"
    );
    assert!(rows(&app).contains("more below (end)"));
    app.update(Msg::Wheel { up: false });
    assert_eq!(
        app.screen.scroll_back,
        back - 3,
        "the wheel moves three lines"
    );
    press(&mut app, Key::Home);
    assert!(rows(&app).contains(" w0 "), "home shows the start");
    assert!(!rows(&app).contains("more above"));
    let top = app.screen.scroll_back;
    press(&mut app, Key::PageUp);
    assert_eq!(app.screen.scroll_back, top, "no scrolling past the start");
    press(&mut app, Key::End);
    assert_eq!(app.screen.scroll_back, 0);
    press(&mut app, Key::PageUp);
    app.update(Msg::Engine(Event::Stepped(later_step(
        305, " new", 0.5, true, 10.0,
    ))));
    assert_eq!(
        app.screen.scroll_back, 0,
        "a new token brings the newest line back"
    );
}

#[test]
fn a_long_read_shows_progress_and_esc_cancels_it() {
    let mut app = ready_app(160, 48);
    key(&mut app, 'p');
    typing(&mut app, " long");
    press(&mut app, Key::Enter);
    app.update(Msg::Tick { now_ms: 1_000 });
    app.update(Msg::Engine(Event::Prefilling {
        done: 0,
        total: 8192,
    }));
    app.update(Msg::Tick { now_ms: 3_000 });
    app.update(Msg::Engine(Event::Prefilling {
        done: 1024,
        total: 8192,
    }));
    let label = app.busy.label(app.now_ms);
    assert_eq!(
        label,
        "reading the prompt: 1024 of 8192 tokens, at least 14 s left"
    );
    assert!(screen_text(&app).join("\n").contains("esc cancels"));
    assert_eq!(press(&mut app, Key::Esc), vec![Command::Cancel]);
    app.update(Msg::Engine(Event::Failed {
        what: Failure::Prefill,
        reason: "cancelled: the prompt was not read, and the session is as it was".into(),
    }));
    assert!(!app.is_busy());
    assert_eq!(press(&mut app, Key::Esc), vec![], "nothing to cancel now");
}

/// The status line's text, or "".
fn status(app: &App) -> String {
    app.status
        .as_ref()
        .map_or(String::new(), |s| s.text.clone())
}

#[test]
fn keys_during_a_prompt_read_never_act_on_the_old_screen() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'p');
    typing(&mut app, " again");
    let cmds = press(&mut app, Key::Enter);
    assert!(
        matches!(cmds.as_slice(), [Command::Prefill { .. }]),
        "{cmds:?}"
    );
    assert!(app.reading_prompt());
    // Before the engine's first progress event, and after it.
    for progress in [false, true] {
        if progress {
            app.update(Msg::Engine(Event::Prefilling { done: 0, total: 9 }));
            assert!(app.reading_prompt());
        }
        assert_eq!(key(&mut app, ' '), vec![]);
        assert_eq!(app.queued_steps, 0, "no step is queued onto the new prompt");
        assert!(status(&app).contains("no step queued"), "{}", status(&app));
        for c in ['2', 'u', '/', 'i', 'b', 'x', 'a'] {
            assert_eq!(key(&mut app, c), vec![], "{c}");
            assert!(
                status(&app).contains("shows the old one"),
                "{c}: {}",
                status(&app)
            );
        }
        assert_eq!(press(&mut app, Key::Down), vec![]);
        assert_eq!(press(&mut app, Key::Enter), vec![]);
        assert_eq!(
            app.selection.candidate, 0,
            "the old candidates stay unpicked"
        );
        assert_eq!(
            app.mode,
            Mode::Normal,
            "no box or panel opened on the old path"
        );
        assert!(!app.autoplay.on);
    }
    // Keys that do not touch the path still work: the help screen, and Esc to stop reading.
    key(&mut app, '?');
    assert_eq!(app.mode, Mode::Help);
    key(&mut app, '?');
    assert_eq!(press(&mut app, Key::Esc), vec![Command::Cancel]);
    // The new prompt is read: nothing was queued, and the keys act again.
    assert_eq!(app.update(Msg::Engine(Event::Synced(prefilled()))), vec![]);
    assert!(!app.reading_prompt());
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
}

#[test]
fn autoplay_pauses_behind_too_small_and_says_so_when_the_screen_is_back() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'a');
    assert_eq!(app.update(Msg::Tick { now_ms: 5_000 }), vec![Command::Step]);
    stepped(&mut app, step_after_is(0, Source::Sampled, true, 9.0));
    app.update(Msg::Resize {
        width: 50,
        height: 15,
    });
    assert!(
        app.too_small() && !app.autoplay.on,
        "paused behind the card"
    );
    let later = 5_000 + 10 * app.autoplay_interval_ms();
    assert_eq!(app.update(Msg::Tick { now_ms: later }), vec![]);
    app.update(Msg::Resize {
        width: 60,
        height: 16,
    });
    assert!(
        !status(&app).contains("paused"),
        "nothing said while still too small"
    );
    app.update(Msg::Resize {
        width: 80,
        height: 24,
    });
    assert!(
        status(&app).contains("autoplay paused while the terminal was too small: a plays on"),
        "{}",
        status(&app)
    );
    assert_eq!(
        app.update(Msg::Tick { now_ms: later * 2 }),
        vec![],
        "still paused"
    );
    key(&mut app, 'a');
    assert!(app.autoplay.on);
    assert_eq!(
        app.update(Msg::Tick { now_ms: later * 3 }),
        vec![Command::Step]
    );
}

/// `--chat` with a base model (no chat template): the first request reads the prompt as plain text,
/// and the status line says why, instead of a screen stuck on "no chat template" that `c` could not
/// turn off.
#[test]
fn chat_on_a_model_without_a_template_reads_plain_text_and_says_so() {
    let mut app = App::new(nexttoken::app::AppConfig {
        chat: true,
        ..config(80, 24)
    });
    let mut info = model_info();
    info.has_chat_template = false;
    let cmds = update(&mut app, Msg::Engine(Event::Loaded(info)));
    assert!(
        matches!(cmds.as_slice(), [Command::Prefill { chat: false, .. }]),
        "{cmds:?}"
    );
    assert!(
        status_text(&app).contains("--chat ignored"),
        "{}",
        status_text(&app)
    );
    // With a template, --chat stands.
    let mut app = App::new(nexttoken::app::AppConfig {
        chat: true,
        ..config(80, 24)
    });
    let cmds = update(&mut app, Msg::Engine(Event::Loaded(model_info())));
    assert!(
        matches!(cmds.as_slice(), [Command::Prefill { chat: true, .. }]),
        "{cmds:?}"
    );
}

/// An error longer than the line wraps onto up to three rows under the status bar, so its cause and
/// what to do stay on screen at 80 columns (the panels above give up the rows); an error that fits
/// takes one.
#[test]
fn a_long_error_wraps_under_the_status_bar_at_80_columns() {
    let mut app = ready_app(80, 24);
    let short = screen_text(&app);
    app.update(Msg::Engine(Event::Failed {
        what: Failure::Prefill,
        reason: "the prompt is 9001 tokens but the model's context holds 8192; shorten the prompt, or read it in a model with a longer context".into(),
    }));
    let s = screen_text(&app);
    assert_eq!(s.len(), 24);
    let bar = s.iter().rposition(|l| l.contains(" step 0 │")).unwrap();
    assert_eq!(s.len() - bar - 1, 2, "two rows: {}", s.join("\n"));
    let error = s[bar + 1..].join(" ");
    assert!(
        error.contains("could not read the prompt") && error.contains("longer context"),
        "{error}"
    );
    assert_eq!(short[short.len() - 2], s[bar], "the same status bar");
}

/// Once the tree has more than one branch, the status bar names the one on screen, numbered as the
/// branch list numbers them; after a rewind inside one, how many there are.
#[test]
fn the_status_bar_names_the_branch_on_screen() {
    let mut app = ready_app(80, 24);
    let bar = |app: &App| screen_text(app)[22].clone();
    assert!(!bar(&app).contains("branch"), "{}", bar(&app));
    let branch = |id, current| branch_info(id, 3, 6, current);
    let mut view = app.session.clone().unwrap();
    view.branches = vec![branch(7, false), branch(9, true)];
    update(&mut app, Msg::Engine(Event::Synced(view.clone())));
    assert!(bar(&app).contains("branch 2/2"), "{}", bar(&app));
    view.branches[1].current = false;
    update(&mut app, Msg::Engine(Event::Synced(view)));
    assert!(bar(&app).contains("2 branches"), "{}", bar(&app));
}

/// Enter on an empty text box says that nothing changed, instead of closing as if it had been taken.
#[test]
fn enter_on_an_empty_box_says_nothing_changed() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'i');
    assert_eq!(press(&mut app, Key::Enter), vec![]);
    assert!(
        status_text(&app).contains("nothing typed"),
        "{}",
        status_text(&app)
    );
}
