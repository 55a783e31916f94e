//! End to end in a real terminal on a served model: the TUI steps SmolLM2 through llama.cpp's own
//! `llama-server`; the panels say what a server cannot show; a server gone mid-session puts its reason on
//! the status line and leaves the step where it was.

use crate::support;

use support::llama_server::{self, LlamaServer};
use support::tmux::{step_counter, Tmux};

#[test]
fn the_tui_steps_a_served_model_and_survives_the_server_going_away() {
    let Some(bin) = llama_server::binary() else {
        return;
    };
    let mut server = LlamaServer::start(&bin, &support::real_model());
    let app = env!("CARGO_BIN_EXE_nexttoken");
    let cmd = format!(
        "'{app}' --server {} --prompt 'The capital of France is' --seed 42; echo \"exit=$?\"; sleep 120",
        server.url
    );
    let t = Tmux::start(&cmd, 160, 44);
    // Each wait takes the whole frame it asserts on: a capture can catch a frame half drawn.
    let s = t.wait_for("⟨␣Paris⟩ from the server", 120, |s| {
        s.contains("⟨␣Paris⟩")
            && step_counter(s) == Some(0)
            && s.contains("top 20 from the server cover")
            && s.contains("served model cannot")
    });
    assert!(s.contains("top 20 from the server cover"), "{s}");
    assert!(
        s.contains("served model cannot"),
        "the attention panel says why it is empty:\n{s}"
    );

    t.keys(&["Space"]);
    let s = t.wait_for("step 1", 60, |s| {
        step_counter(s) == Some(1) && s.contains("across the network")
    });
    assert!(s.contains("across the network"), "{s}");

    t.keys(&["L"]);
    t.wait_for("the lens panel saying why", 30, |s| {
        s.contains("cannot show the logit lens")
    });
    t.keys(&["Escape"]);
    t.wait_for("the lens closed", 30, |s| {
        !s.contains("cannot show the logit lens")
    });

    server.kill();
    t.keys(&["Space"]);
    let s = t.wait_for("the failure on the status line", 60, |s| {
        s.contains("could not step") && s.contains("not reachable") && step_counter(s).is_some()
    });
    assert!(s.contains("not reachable"), "{s}");
    assert_eq!(step_counter(&s), Some(1), "the session is unchanged:\n{s}");

    t.keys(&["q"]);
    let s = t.wait_for("the app to exit", 30, |s| s.contains("exit="));
    assert!(s.contains("exit=0"), "{s}");
}
