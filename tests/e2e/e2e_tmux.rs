//! End to end in a real terminal: tmux runs the real binary on the real model, and the test waits on
//! screen conditions (polling capture-pane against a deadline), never on fixed sleeps.

use crate::support;

use support::tmux::{step_counter, Tmux};

/// A shell line that runs the app with `args`, then prints its exit status and the terminal's modes
/// (canonical input, echo) and keeps the pane open to read them.
fn app_then_modes(model: &std::path::Path, args: &str) -> String {
    let bin = env!("CARGO_BIN_EXE_nexttoken");
    format!(
        "'{bin}' --model '{}' {args}; echo \"exit=$?\"; \
         stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '; \
         echo; sleep 120",
        model.display()
    )
}

#[test]
fn step_force_rewind_and_quit_in_a_real_terminal() {
    let model = support::real_model();
    let cmd = app_then_modes(&model, "--prompt 'The capital of France is' --seed 42");
    let t = Tmux::start(&cmd, 120, 36);

    let s = t.wait_for("⟨␣Paris⟩ among the candidates", 120, |s| {
        s.contains("⟨␣Paris⟩") && step_counter(s) == Some(0)
    });
    assert!(s.contains("The capital of France is"));
    assert_eq!(
        t.display("#{alternate_on}"),
        "1",
        "the app draws on the alternate screen"
    );

    t.keys(&["Space"]);
    t.wait_for("step 1", 60, |s| step_counter(s) == Some(1));
    t.keys(&["Space"]);
    t.wait_for("step 2", 60, |s| step_counter(s) == Some(2));

    // Force the second candidate by number: it is marked as forced.
    t.keys(&["2"]);
    let s = t.wait_for("a forced token", 60, |s| {
        step_counter(s) == Some(3) && s.contains('⚑')
    });
    assert!(
        s.contains("forced"),
        "the forced token's surprise line is shown:\n{s}"
    );

    // Rewind it: the counter goes back and the mark disappears.
    t.keys(&["u"]);
    t.wait_for("the rewind", 60, |s| {
        step_counter(s) == Some(2) && !s.contains('⚑')
    });

    t.keys(&["q"]);
    let s = t.wait_for("the app to exit", 30, |s| s.contains("exit="));
    assert!(s.contains("exit=0"), "{s}");
    assert_eq!(
        t.display("#{alternate_on}"),
        "0",
        "the alternate screen was left"
    );
    let modes = t.wait_for("the terminal modes", 10, |s| {
        s.contains("icanon") && s.contains("echo")
    });
    assert!(
        !modes.contains("-icanon") && !modes.contains("-echo"),
        "raw mode was left on:\n{modes}"
    );
}

/// SIGTERM (a closed window's SIGHUP, a `kill`) ends the app as `q` does: the alternate screen, the
/// cursor, mouse capture and raw mode are all put back, and it says why it stopped.
#[test]
fn a_sigterm_restores_the_terminal() {
    let model = support::real_model();
    let cmd = app_then_modes(&model, "--prompt 'sigterm probe' --seed 9");
    let t = Tmux::start(&cmd, 100, 30);
    t.wait_for("the prompt read", 120, |s| step_counter(s) == Some(0));
    assert_eq!(t.display("#{mouse_any_flag}"), "1", "mouse capture on");
    let pid = std::process::Command::new("pgrep")
        .args(["-n", "-f", "sigterm probe"])
        .output()
        .unwrap();
    let pid = String::from_utf8(pid.stdout).unwrap().trim().to_string();
    assert!(!pid.is_empty(), "the app's pid");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let s = t.wait_for("the app to exit", 30, |s| s.contains("exit="));
    assert!(s.contains("stopped by a signal"), "{s}");
    assert_eq!(t.display("#{alternate_on}"), "0", "the alternate screen");
    assert_eq!(t.display("#{cursor_flag}"), "1", "the cursor shown");
    assert_eq!(t.display("#{mouse_any_flag}"), "0", "mouse capture off");
    let modes = t.wait_for("the terminal modes", 10, |s| {
        s.contains("icanon") && s.contains("echo")
    });
    assert!(
        !modes.contains("-icanon") && !modes.contains("-echo"),
        "raw mode was left on:\n{modes}"
    );
}

#[test]
fn a_pasted_multi_line_prompt_reaches_the_model_with_its_lines() {
    let model = support::real_model();
    let bin = env!("CARGO_BIN_EXE_nexttoken");
    let cmd = format!(
        "'{bin}' --model '{}' --prompt 'Hi' --greedy; sleep 60",
        model.display()
    );
    let t = Tmux::start(&cmd, 120, 36);
    t.wait_for("the prompt read", 120, |s| {
        s.contains("press space to generate")
    });
    t.keys(&["p"]);
    t.keys(&["BSpace", "BSpace"]);
    // A bracketed paste, as a terminal sends it when text is pasted with the mouse or Ctrl-Shift-V.
    let few_shot = "Q: 2+2?\nA: 4\nQ: 3+3?\nA:";
    t.paste(few_shot);
    t.keys(&["Enter"]);
    // The transcript shows each newline token as ↵ and breaks the line after it.
    // Wait until the new prompt is read: a step pressed while it is read is refused, not queued.
    let s = t.wait_for("the few-shot prompt read, line by line", 60, |s| {
        s.lines().any(|l| l.contains("Q: 2+2?↵"))
            && s.lines().any(|l| l.contains("A: 4↵"))
            && prompt_tokens(s).is_some_and(|n| n > 5)
            && !s.contains("reading the")
    });
    assert!(!s.contains("2+2?A:"), "lines glued together:\n{s}");
    t.keys(&["Space"]);
    let s = t.wait_for("a step after the prompt", 60, |s| {
        step_counter(s) == Some(1)
    });
    assert!(s.contains("Q: 3+3?↵"), "{s}");
}

/// A long burst of typed (not pasted) text, then Enter: the prompt is read at once. crossterm's default
/// edge-triggered input source left the end of such a burst unread until another key came.
#[test]
fn enter_after_a_long_typed_burst_is_not_held_back() {
    let model = support::real_model();
    let bin = env!("CARGO_BIN_EXE_nexttoken");
    let cmd = format!(
        "'{bin}' --model '{}' --prompt 'Hi' --greedy; sleep 60",
        model.display()
    );
    let t = Tmux::start(&cmd, 120, 36);
    t.wait_for("the prompt read", 120, |s| {
        s.contains("press space to generate")
    });
    t.keys(&["p", "BSpace", "BSpace"]);
    t.wait_for("the prompt editor", 10, |s| s.contains("line 1 of 1"));
    // Sent as keys, not as a bracketed paste: 6,000 characters, then Enter on its own. (The issue saw
    // it at 3,000; before the fix 6,000 held Enter back every time, 3,000 about half the time.)
    let burst = "ab ".repeat(2000);
    t.keys(&["-l", &burst]);
    t.keys(&["Enter"]);
    // Enter closes the editor at once; no further key is sent.
    let s = t.wait_for("Enter to submit the prompt", 10, |s| {
        !s.contains(" Prompt ") && !s.contains("line 1 of 1")
    });
    assert!(!s.contains("enter ok · esc cancel"), "{s}");
}

#[test]
fn force_a_token_then_compare_both_paths_and_see_the_loop() {
    let model = support::real_model();
    let bin = env!("CARGO_BIN_EXE_nexttoken");
    let cmd = format!(
        "'{bin}' --model '{}' --prompt 'The capital of France is' --greedy",
        model.display()
    );
    let t = Tmux::start(&cmd, 100, 30);
    t.wait_for("the first distribution", 120, |s| {
        s.contains("⟨␣Paris⟩") && step_counter(s) == Some(0)
    });
    // The model's own path for three steps, back to the start, then a forced second candidate.
    for n in 1..=3 {
        t.keys(&["Space"]);
        t.wait_for("a step", 60, |s| step_counter(s) == Some(n));
    }
    for n in (0..3).rev() {
        t.keys(&["u"]);
        t.wait_for("a rewind", 60, |s| step_counter(s) == Some(n));
    }
    t.keys(&["2"]);
    t.wait_for("the forced token", 60, |s| {
        step_counter(s) == Some(1) && s.contains('⚑')
    });
    t.keys(&["Space"]);
    t.wait_for("a step on the forced path", 60, |s| {
        step_counter(s) == Some(2)
    });
    // x compares the path on screen with the path it left.
    t.keys(&["x"]);
    // Wait for the whole view: a capture can catch a frame half drawn over the main screen.
    let s = t.wait_for("the compare view", 60, |s| {
        s.contains("Compare paths") && s.contains("fork at step 1")
    });
    assert!(s.contains("⟨␣Paris⟩"), "the path left is shown:\n{s}");
    assert!(s.contains("⚑⟨"), "the forced token is marked:\n{s}");
    t.keys(&["Escape"]);
    t.wait_for("the main screen again", 30, |s| {
        !s.contains("Compare paths")
    });

    // Greedy decoding falls into a loop: autoplay until the alert shows.
    for n in (0..2).rev() {
        t.keys(&["u"]);
        t.wait_for("a rewind", 60, |s| step_counter(s) == Some(n));
    }
    t.keys(&["Tab", "Tab", "+", "+", "+", "a"]);
    let s = t.wait_for("the loop alert", 180, |s| s.contains("loop: period"));
    assert!(
        s.contains("Repetition"),
        "the repetition panel is open:\n{s}"
    );
    t.keys(&["a", "q"]);
}

#[test]
fn a_lesson_in_presenter_mode_steps_to_the_loop() {
    let model = support::real_model();
    let bin = env!("CARGO_BIN_EXE_nexttoken");
    let cmd = format!(
        "'{bin}' --model '{}' --lesson repetition --presenter",
        model.display()
    );
    let t = Tmux::start(&cmd, 100, 30);
    // The first step: its narration, its question hiding the distribution, the large-type panel.
    // The narration shows as soon as the lesson opens; the step itself has run once the engine is
    // no longer opening it.
    let s = t.wait_for("the lesson's first step", 120, |s| {
        s.contains("step 1 of 5")
            && s.contains("What will the model write first?")
            && !s.contains("opening the lesson")
    });
    assert!(s.contains("Always the most likely word"), "{s}");
    assert!(s.contains("Chosen token"), "presenter mode:\n{s}");
    assert!(!s.contains("⟨␣Paris⟩"), "the answer stays hidden:\n{s}");
    // The teacher reveals, then goes on to the next step: the model writes until the loop.
    t.keys(&["h"]);
    t.wait_for("the revealed distribution", 30, |s| s.contains("⟨␣Paris⟩"));
    t.keys(&["Right"]);
    // The second step asks before it writes: nothing written yet, the distribution hidden again (a
    // frame caught halfway through its redraw may still show the last one, so wait for it).
    let s = t.wait_for(
        "the second step's question, the distribution hidden",
        60,
        |s| {
            s.contains("step 2 of 5")
                && s.contains("Will greedy decoding fall into a loop?")
                && s.contains("hidden")
        },
    );
    assert!(!s.contains("loop: period"), "{s}");
    assert!(s.contains("0 generated"), "{s}");
    // The class answers yes; the rest of the step runs, and the model's answer is shown beside it.
    t.keys(&["/"]);
    t.keys(&["y", "Enter"]);
    let s = t.wait_for("the loop alert", 180, |s| {
        s.contains("step 2 of 5") && s.contains("loop: period")
    });
    assert!(s.contains("Round and round"), "{s}");
    assert!(s.contains("✓ the class: yes"), "{s}");
    assert!(
        s.contains("Repetition"),
        "the lesson opened the repetition panel:\n{s}"
    );
    t.keys(&["q"]);
}

/// Gemma 3 in the real terminal: its distribution, steps, the attention over its 18 layers with the
/// sliding window named, the logit lens, and chat mode refused on the base model with the reason.
#[test]
fn gemma_3_steps_with_its_panels() {
    let model = support::gemma_model();
    let bin = env!("CARGO_BIN_EXE_nexttoken");
    let cmd = format!(
        "'{bin}' --model '{}' --prompt 'The capital of France is' --greedy",
        model.display()
    );
    let t = Tmux::start(&cmd, 120, 36);
    let s = t.wait_for("Gemma's first distribution", 180, |s| {
        s.contains("⟨␣Paris⟩") && step_counter(s) == Some(0)
    });
    assert!(s.contains("<bos>The capital of France is"), "{s}");
    assert!(s.to_lowercase().contains("gemma 3 270m"), "{s}");
    t.keys(&["Space"]);
    t.wait_for("step 1", 60, |s| step_counter(s) == Some(1));
    t.keys(&["Space"]);
    let s = t.wait_for("step 2", 60, |s| step_counter(s) == Some(2));
    assert!(
        s.contains("the capital"),
        "greedy writes \" the capital\":\n{s}"
    );
    assert!(s.contains("layer 1/18"), "{s}");
    assert!(s.contains("outside its window of 512 keys"), "{s}");
    t.keys(&["L"]);
    t.wait_for("the logit lens", 60, |s| s.contains("Logit lens"));
    // `L` closes the lens (a bare Escape followed by a key would reach the app as Alt+key).
    t.keys(&["L"]);
    t.wait_for("the main screen", 30, |s| s.contains("Next token"));
    t.keys(&["c"]);
    t.wait_for("chat refused on a base model", 30, |s| {
        s.contains("no chat template")
    });
    t.keys(&["q"]);
}

/// A/B in a real terminal: model B (the default model re-quantised to 2 bits) opens beside model A;
/// each step shows both distributions, the verdict, the divergence and the running count of flips.
#[test]
fn model_b_steps_beside_model_a() {
    let bin = env!("CARGO_BIN_EXE_nexttoken");
    let cmd = format!(
        "'{bin}' --model '{}' --prompt 'The capital of France is' --greedy --requant-b q2_k",
        support::real_model().display()
    );
    let t = Tmux::start(&cmd, 120, 36);
    let s = t.wait_for("the A/B panel", 180, |s| {
        s.contains("B · q2_k") && step_counter(s) == Some(0)
    });
    assert!(s.contains("A · the session's model"), "{s}");
    assert!(s.contains("top-1 flips") && s.contains(" of 1 "), "{s}");
    for n in 1..=3 {
        t.keys(&["Space"]);
        t.wait_for("a step", 60, |s| step_counter(s) == Some(n));
    }
    let s = t.wait_for("four steps compared", 30, |s| s.contains(" of 4 "));
    assert!(s.contains("JS per step"), "{s}");
    assert!(s.contains("q2_k on"), "{s}");
    t.keys(&["q"]);
}

/// A speculative round in a real terminal, at 80x24: `d` turns rounds on, space runs one; the round
/// panel shows each drafted token checked, the redraw or bonus, and the round's cost; the transcript
/// grows by the round's tokens, and the step counter with it.
#[test]
fn a_speculative_round_in_a_real_terminal() {
    let bin = env!("CARGO_BIN_EXE_nexttoken");
    let cmd = format!(
        "'{bin}' --model '{}' --prompt 'Monday, Tuesday, Wednesday,' --greedy --draft layers:20 --draft-k 4",
        support::real_model().display()
    );
    let t = Tmux::start(&cmd, 80, 24);
    t.wait_for("the prompt read", 120, |s| {
        s.contains("press space to generate") && step_counter(s) == Some(0)
    });
    t.keys(&["d"]);
    t.wait_for("rounds on", 10, |s| {
        s.contains("rounds on: space drafts 4 with layers:20")
    });
    t.keys(&["Space"]);
    // The whole frame after the round: tmux can capture a frame half redrawn (the panel's title and
    // first rows new, its foot and the status bar below still the last frame's), so the wait takes
    // every text asserted below, down to the status bar's step counter, which is drawn last.
    let s = t.wait_for("the first round, drawn whole", 60, |s| {
        s.contains("Speculative round 1")
            && s.contains("the model's top")
            && s.contains(", plain ")
            && step_counter(s).is_some_and(|n| n >= 1)
    });
    let marks = s
        .lines()
        .filter(|l| l.contains("✓ ") || l.contains("✗ ") || l.contains("· "))
        .count();
    assert!(marks >= 4, "each drafted token is marked:\n{s}");
    // Greedy draws nothing: the round's last token is the model's own top token, and the panel says so.
    assert!(
        s.contains("the model's top") && !s.contains("drawn from"),
        "the round's last token and where it came from:\n{s}"
    );
    assert!(
        s.contains(", plain ") && s.contains("this round ran") && s.contains("×"),
        "the round's cost against plain steps:\n{s}"
    );
    // The status bar counts the round's tokens as steps: 1 to 5 of them.
    let steps = step_counter(&s).unwrap();
    assert!(
        (1..=5).contains(&steps),
        "{steps} steps after one round:\n{s}"
    );
    t.keys(&["Space"]);
    // The whole frame after the second round, as above.
    let s = t.wait_for("the second round, counted", 60, |s| {
        s.contains("Speculative round 2")
            && s.contains("2 rounds:")
            && step_counter(s).is_some_and(|n| n > steps)
    });
    assert!(s.contains("2 rounds:"), "the rounds so far:\n{s}");
    t.keys(&["q"]);
}

/// The prompt's length in tokens, from the transcript's footer ("prompt 23 tokens · 0 generated").
fn prompt_tokens(screen: &str) -> Option<usize> {
    screen.match_indices(" prompt ").find_map(|(at, m)| {
        let rest = &screen[at + m.len()..];
        let (n, rest) = rest.split_once(' ')?;
        rest.starts_with("tokens").then(|| n.parse().ok())?
    })
}
