//! Lessons: the built-ins checked on the real model, broken files and their messages, and the
//! `nexttoken lesson` subcommand.

mod support;

use nexttoken::engine::session::Session;
use nexttoken::lesson::{self, check, Action, BUILTINS};
use std::path::Path;
use std::process::{Command, Output};

fn session() -> Session {
    support::real_session()
}

fn nexttoken(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .args(args)
        .env("NEXTTOKEN_MODEL", support::real_model())
        .output()
        .unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

const HEAD: &str = "title = \"Broken\"\nsummary = \"A broken lesson.\"\nminutes = 2\n\n";

/// Every built-in lesson holds on the real model: one session, each lesson in turn.
#[test]
fn every_builtin_lesson_passes_check() {
    let mut s = session();
    for (name, _) in BUILTINS {
        let l = lesson::load(name).unwrap();
        let mut out = Vec::new();
        let result = check::check(&mut s, &l, &mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(result.is_ok(), "{name}: {result:?}\n{text}");
        assert!(text.contains("checks hold"), "{text}");
    }
}

/// Each built-in is short, asks the class at least one question and checks at least one claim.
#[test]
fn builtins_are_short_and_ask_and_expect() {
    assert_eq!(BUILTINS.len(), 7);
    for (name, _) in BUILTINS {
        let l = lesson::load(name).unwrap();
        assert_eq!(l.name, name);
        assert!(l.minutes < 10, "{name}: {} minutes", l.minutes);
        let actions: Vec<&Action> = l.steps.iter().flat_map(|s| &s.actions).collect();
        assert!(
            actions.iter().any(|a| matches!(a, Action::Ask(_))),
            "{name}: no question"
        );
        assert!(
            actions.iter().any(|a| matches!(a, Action::Expect(_))),
            "{name}: no expect"
        );
        assert!(l.steps.iter().all(|s| !s.narration.is_empty()), "{name}");
    }
}

#[test]
fn lesson_list_shows_seven() {
    let out = nexttoken(&["lesson", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for (name, _) in BUILTINS {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    let rows = text.lines().filter(|l| l.contains(" min  ")).count();
    assert_eq!(rows, 7, "{text}");
}

/// A broken file: exit 1, and stderr names the file, the line and the field.
fn broken(dir: &Path, name: &str, body: &str, line: usize, field: &str) -> String {
    let path = write(dir, name, &format!("{HEAD}{body}"));
    let out = nexttoken(&["lesson", "check", &path]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{name}: {err}");
    assert!(
        err.contains(&format!("{name}:{line}:")),
        "{name}: wants line {line}: {err}"
    );
    assert!(
        err.contains(&format!("`{field}`")),
        "{name}: wants field {field}: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn broken_files_name_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Bad TOML: a string never closed.
    broken(
        d,
        "syntax.toml",
        "[[step]]\nnarration = \"unclosed\n",
        6,
        "narration",
    );
    // An unknown action.
    let e = broken(
        d,
        "action.toml",
        "[[step]]\nnarration = \"x\"\nactions = [\n  { prompt = \"Hi\" },\n  { jump = 3 },\n]\n",
        9,
        "jump",
    );
    assert!(e.contains("autoplay"), "lists the actions: {e}");
    // A wrong type.
    let e = broken(
        d,
        "type.toml",
        "[[step]]\nnarration = \"x\"\nactions = [ { kv_cache = \"off\" } ]\n",
        7,
        "kv_cache",
    );
    assert!(e.contains("expected a boolean"), "{e}");
    // A missing field.
    broken(
        d,
        "missing.toml",
        "[[step]]\nactions = [ { step = 1 } ]\n",
        5,
        "narration",
    );
    // A negative step count.
    let e = broken(
        d,
        "negative.toml",
        "[[step]]\nnarration = \"x\"\nactions = [\n  { step = -3 },\n]\n",
        8,
        "step",
    );
    assert!(e.contains("1 to"), "{e}");
    // An unknown panel.
    let e = broken(
        d,
        "panel.toml",
        "[[step]]\nnarration = \"x\"\nactions = [ { panel = \"attentoin\" } ]\n",
        7,
        "panel",
    );
    assert!(e.contains("attention"), "lists the panels: {e}");
    // A sampler setting out of range.
    let e = broken(
        d,
        "sampler.toml",
        "[[step]]\nnarration = \"x\"\nactions = [ { sampler = { top_p = 2.0 } } ]\n",
        7,
        "sampler",
    );
    assert!(e.contains("top_p"), "{e}");
}

#[test]
fn a_missing_lesson_names_the_builtins() {
    let out = nexttoken(&["lesson", "check", "no-such-lesson"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("typewriter"), "{err}");
}

/// A claim the model does not bear out fails the check: exit 1, the step's narration and what the
/// model did instead.
#[test]
fn a_false_expect_fails_with_the_observed_value() {
    let dir = tempfile::tempdir().unwrap();
    let body = "[[step]]\nnarration = \"The model surely says London.\"\nactions = [\n  { prompt = \"The capital of France is\" },\n  { sampler = { greedy = true } },\n  { expect = { top1 = \" London\" } },\n]\n";
    let path = write(dir.path(), "false.toml", &format!("{HEAD}{body}"));
    let out = nexttoken(&["lesson", "check", &path]);
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{err}");
    assert!(err.contains("The model surely says London."), "{err}");
    assert!(err.contains("top-1 is \" Paris\""), "{err}");
    assert!(err.contains("step 1/1 (line 10)"), "{err}");
    assert!(stdout.contains("FAIL"), "{stdout}");
}

/// The runner hands the TUI what it must act on, and replays to a step deterministically.
#[test]
fn runner_reports_tui_actions_and_replays() {
    use nexttoken::lesson::{Runner, TuiAction};
    let mut s = session();
    let l = lesson::load("repetition").unwrap();
    let mut r = Runner::new(l);
    let runs = r.replay_to(&mut s, 2).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|run| run.failure().is_none()));
    assert!(
        runs[0].answer.is_some(),
        "a replay answers the step's question"
    );
    assert!(matches!(&runs[1].tui[..], [TuiAction::Panel(_)]));
    let first = s.tokens();
    r.replay_to(&mut s, 2).unwrap();
    assert_eq!(s.tokens(), first, "a replay gives the same path");
    assert_eq!(r.next_step(), 2);
}

/// The complete example in docs/LESSONS.md parses and holds on the real model.
#[test]
fn the_documented_example_holds() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/LESSONS.md")).unwrap();
    let start = doc.find("```toml\n").unwrap() + "```toml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let l = lesson::parse("example", "docs/LESSONS.md", &doc[start..end]).unwrap();
    assert_eq!(l.steps.len(), 3);
    let mut out = Vec::new();
    let result = check::check(&mut session(), &l, &mut out);
    assert!(
        result.is_ok(),
        "{result:?}\n{}",
        String::from_utf8_lossy(&out)
    );
}

/// `--lesson` is read before the screen is taken over: a bad name or file is a clear message, and the
/// terminal was never touched (the test has none to give).
#[test]
fn the_tui_refuses_a_bad_lesson_before_taking_the_terminal() {
    let out = nexttoken(&["--lesson", "no-such-lesson"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no built-in lesson by this name") && err.contains("exposure-bias"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let body = "[[step]]\nnarration = \"x\"\nactions = [{ step = -3 }]\n";
    let path = write(dir.path(), "bad.toml", &format!("{HEAD}{body}"));
    let out = nexttoken(&["--lesson", &path]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("bad.toml:7:") && err.contains("field `step`"),
        "{err}"
    );
    let out = nexttoken(&["--predict", "--pause-above", "-1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--pause-above"), "{err}");
}
