//! The screens on a served model (`--server`): every panel works or says in one line why it cannot
//! (attention, the logit lens, the head map), the distribution says how much mass the server's top K
//! cover, the timing panel labels the request as time across a network, and opening the lens or the
//! head map sends nothing to the engine.

use crate::common;

use common::*;
use nexttoken::app::{App, Msg};
use nexttoken::protocol::{
    AttentionWindow, Event, ModelInfo, ServedInfo, ServedTiming, SessionView,
};

fn served_info() -> ModelInfo {
    ModelInfo {
        n_layer: 0,
        n_head: 0,
        served: Some(ServedInfo {
            kind: "llama.cpp".into(),
            url: "http://127.0.0.1:8080".into(),
            model: "SmolLM2".into(),
            top_k: 20,
            tokenizer: "server".into(),
        }),
        ..model_info()
    }
}

fn served_view() -> SessionView {
    let mut v = prefilled();
    v.next.known_mass = Some(0.873);
    v.attention = AttentionWindow::none();
    v.last_pass.served = Some(ServedTiming {
        request_ms: 41.5,
        prompt_ms: Some(12.25),
        predicted_ms: Some(3.5),
        prompt_n: Some(5),
        cache_n: Some(0),
    });
    v
}

fn served_app(w: u16, h: u16) -> App {
    let mut app = App::new(config(w, h));
    app.update(Msg::Engine(Event::Loaded(served_info())));
    app.update(Msg::Engine(Event::Synced(served_view())));
    app
}

fn text(app: &App) -> String {
    screen_text(app).join("\n")
}

#[test]
fn the_main_screen_says_what_a_served_model_cannot_show_and_how_much_it_knows() {
    let app = served_app(160, 48);
    let screen = text(&app);
    assert!(
        screen.contains("a served model cannot show attention weights"),
        "{screen}"
    );
    assert!(
        screen.contains("top 20 from the server cover 87.3%"),
        "{screen}"
    );
    assert!(screen.contains("across the network"), "{screen}");
    assert!(
        screen.contains("server's own times: prompt 12.2"),
        "{screen}"
    );
    // Its speed of light is not ours to measure: the panel says so instead of a floor.
    assert!(
        screen.contains("light: unknown: a served model's passes run on its server"),
        "{screen}"
    );
    // The same screen for a local model says none of it.
    let local = text(&ready_app(160, 48));
    assert!(!local.contains("served model") && !local.contains("across the network"));
}

#[test]
fn the_chain_view_says_it_runs_on_the_top_k_only() {
    let mut app = served_app(160, 48);
    key(&mut app, 't');
    let screen = text(&app);
    assert!(
        screen.contains("the chain runs on the top 20 only"),
        "{screen}"
    );
}

#[test]
fn the_lens_and_the_head_map_say_why_and_ask_the_engine_nothing() {
    for (k, what) in [('L', "the logit lens"), ('H', "the head map")] {
        let mut app = served_app(120, 40);
        let cmds = key(&mut app, k);
        assert!(cmds.is_empty(), "{k}: {cmds:?}");
        let screen = text(&app);
        assert!(
            screen.contains(&format!("a served model cannot show {what}")),
            "{k}: {screen}"
        );
        assert!(!screen.contains("looking inside the pass"), "{k}: not busy");
    }
}

#[test]
fn the_small_screen_draws_a_served_model_without_panicking() {
    let app = served_app(80, 24);
    let screen = text(&app);
    assert!(screen.contains("served"), "{screen}");
}
