//! Lessons: the built-ins checked on the real model, broken files and their messages, and the
//! `nexttoken lesson` subcommand.

use crate::support;

use nexttoken::engine::session::Session;
use nexttoken::lesson::{self, check, lint, Action, BUILTINS};
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

/// Fresh runs a lesson gets after a claim on the clock fails (see `every_builtin_lesson_passes_check`).
const RETRIES: usize = 3;

const HEAD: &str = "title = \"Broken\"\nsummary = \"A broken lesson.\"\nminutes = 2\n\n";

/// Checks lesson `l` on `s`; when its only failure is a claim on the clock (a prefill against the
/// steps, a step against light, decode growth, a question on the prefill speed-up), again on a fresh
/// session from `fresh` after a pause, up to [`RETRIES`] times: its one prefill is one measurement,
/// and the parallel tests can stall it (CI saw 6.46 ms a token against 0.6, and a speed-up of 0.64x;
/// once, twice in a row, every cache-off pass of 46 to 66 tokens at 94-99 ms, three times this
/// machine's unloaded 34-42 ms, while a neighbouring test held both cores). A claim that is wrong
/// fails every time. The result, and what the check printed.
fn check_on(
    l: &lesson::Lesson,
    s: &mut Session,
    fresh: impl Fn() -> Session,
) -> (Result<(), String>, String) {
    let timing = [
        "faster per token",
        "step_slower_than_light",
        "decode time grows",
        "prefill_speedup measured",
    ];
    let run = |s: &mut Session| {
        let mut out = Vec::new();
        let result = check::check(s, l, &mut out).map_err(|e| format!("{e:#}"));
        (result, String::from_utf8_lossy(&out).into_owned())
    };
    let (mut result, mut text) = run(s);
    for again in 1..=RETRIES {
        let Err(e) = &result else { break };
        // The failed claim and what was observed: the first two lines of the message.
        let failed: String = e.lines().take(2).collect();
        if !timing.iter().any(|t| failed.contains(t)) {
            break;
        }
        let name = &l.name;
        eprintln!(
            "{name}: a claim on the clock failed, again ({again} of {RETRIES}) after a pause: {e}"
        );
        std::thread::sleep(std::time::Duration::from_secs(3));
        (result, text) = run(&mut fresh());
    }
    (result, text)
}

/// Every built-in lesson holds on the real model: one session, each lesson in turn ([`check_on`]).
#[test]
fn every_builtin_lesson_passes_check() {
    let mut s = session();
    for (name, _) in BUILTINS {
        let l = lesson::load(name).unwrap();
        let (result, text) = check_on(&l, &mut s, session);
        assert!(result.is_ok(), "{name}: {result:?}\n{text}");
        assert!(text.contains("checks hold"), "{text}");
        assert!(!text.contains("note: written for"), "{text}");
        if name == "repetition" {
            // A loop's start, counted as the repetition panel beside it counts it: by steps.
            assert!(text.contains(", since step "), "{text}");
        }
    }
}

fn gemma() -> Session {
    let path = support::gemma_model();
    let opts = (Default::default(), Default::default());
    nexttoken::engine::load::load_session(&path, &Default::default(), opts.0, opts.1, &mut |_| {})
        .unwrap()
        .0
}

/// The built-ins written for Gemma 3 270M too hold on it; the others say, when checked on it, that
/// they were written for another model (and fail: their tokens and figures are SmolLM2's).
#[test]
fn builtins_written_for_gemma_hold_on_it_and_the_others_say_they_were_not() {
    let mut s = gemma();
    let mut written_for_gemma = 0;
    for (name, _) in BUILTINS {
        let l = lesson::load(name).unwrap();
        assert!(
            !l.models.is_empty(),
            "{name} names the models it was written for"
        );
        if l.models.iter().any(|m| m == "gemma3-270m") {
            written_for_gemma += 1;
            let (result, text) = check_on(&l, &mut s, gemma);
            assert!(result.is_ok(), "{name} on Gemma: {result:?}\n{text}");
            assert!(!text.contains("note: written for"), "{text}");
        } else {
            let mut out = Vec::new();
            let _ = check::check(&mut s, &l, &mut out);
            let text = String::from_utf8_lossy(&out);
            let note = "note: written for SmolLM2-135M-Instruct Q4_1, not the model loaded";
            assert!(text.contains(note), "{name}: {text}");
        }
    }
    assert!(written_for_gemma >= 2, "{written_for_gemma}");
}

/// Each built-in is short, asks the class at least one question and checks at least one claim.
#[test]
fn builtins_are_short_and_ask_and_expect() {
    assert_eq!(BUILTINS.len(), 9);
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

/// Every built-in backs each claim of its narration with an `expect` (the lint finds nothing), and the
/// lint would notice: with a claiming step's expects taken out, it names that step.
#[test]
fn builtins_check_every_claim_and_the_lint_notices_a_lost_one() {
    for (name, _) in BUILTINS {
        let l = lesson::load(name).unwrap();
        assert_eq!(lint::lint(&l), vec![], "{name}");
        for (i, step) in l.steps.iter().enumerate() {
            if lint::claims(&step.narration).is_empty() {
                continue;
            }
            let mut bare = l.clone();
            bare.steps[i].actions.retain(|a| !lint::checks_a_claim(a));
            let found = lint::lint(&bare);
            assert!(
                found.iter().any(|f| f.step == i),
                "{name} step {}: {found:?}",
                i + 1
            );
        }
    }
}

#[test]
fn lesson_list_shows_every_builtin() {
    let out = nexttoken(&["lesson", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for (name, _) in BUILTINS {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    let rows = text.lines().filter(|l| l.contains(" min  ")).count();
    assert_eq!(rows, BUILTINS.len(), "{text}");
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
    // A question after a panel that takes the keyboard, which the class could not answer.
    let e = broken(
        d,
        "keys.toml",
        "[[step]]\nnarration = \"x\"\nactions = [\n  { prompt = \"Hi\" },\n  { panel = \"sampler\" },\n  { ask = \"Which?\" },\n]\n",
        10,
        "ask",
    );
    assert!(e.contains("after the `ask`"), "{e}");
}

/// A model `fetch` does not know, in `models`, is named with the ones it does.
#[test]
fn a_model_fetch_does_not_know_is_named_with_those_it_does() {
    let dir = tempfile::tempdir().unwrap();
    let e = broken(
        dir.path(),
        "models.toml",
        "models = [\"smollm2-135m\", \"gpt-9\"]\n[[step]]\nnarration = \"x\"\n",
        5,
        "models",
    );
    assert!(
        e.contains("\"gpt-9\"") && e.contains("smollm2-135m, gemma3-270m"),
        "{e}"
    );
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

/// A question whose answer the narration says before it is asked fails the check, naming the step
/// and the word; the same words after the line `---` pass.
#[test]
fn an_answer_told_before_its_question_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let lesson = |narration: &str| {
        format!("{HEAD}[[step]]\nnarration = \"\"\"\n{narration}\n\"\"\"\nactions = [\n  {{ prompt = \"The capital of France is\" }},\n  {{ sampler = {{ greedy = true }} }},\n  {{ ask = \"Which word comes next?\" }},\n  {{ expect = {{ top1 = \" Paris\" }} }},\n]\n")
    };
    let told = write(
        dir.path(),
        "told.toml",
        &lesson("It writes \" Paris\", of course."),
    );
    let out = nexttoken(&["lesson", "check", &told]);
    let (stdout, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{err}");
    assert!(
        stdout.contains("told step 1: the text before the answer says \"Paris\""),
        "{stdout}"
    );
    assert!(
        err.contains("can read the answer to the question of step 1"),
        "{err}"
    );
    let after = write(
        dir.path(),
        "after.toml",
        &lesson("What next?\n---\nIt writes \" Paris\"."),
    );
    let out = nexttoken(&["lesson", "check", &after]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("told"), "{stdout}");
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
        err.contains("no built-in lesson") && err.contains("exposure-bias"),
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

/// Runs a one-step lesson with these actions on `s`: the printed report, or the failure's message.
fn run_actions(s: &mut Session, actions: &str) -> Result<String, String> {
    let body = format!("[[step]]\nnarration = \"x\"\nactions = [ {actions} ]\n");
    let l = lesson::parse("t", "t.toml", &format!("{HEAD}{body}")).unwrap();
    let mut out = Vec::new();
    let r = check::check(s, &l, &mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    r.map(|_| text.clone())
        .map_err(|e| format!("{e:#}\n{text}"))
}

fn holds(s: &mut Session, actions: &str) -> String {
    run_actions(s, actions).unwrap_or_else(|e| panic!("should hold: {e}"))
}

/// The claim fails, and the message shows `observed`.
fn fails(s: &mut Session, actions: &str, observed: &str) {
    match run_actions(s, actions) {
        Ok(text) => panic!("should fail: {text}"),
        Err(e) => assert!(e.contains(observed), "wants {observed:?}: {e}"),
    }
}

/// `differs_from_previous`: the same seed writes the same text again; another seed another text.
#[test]
fn differs_from_previous_tells_a_replay_from_another_story() {
    let mut s = session();
    let start = "{ prompt = \"My favourite animal is the\" }, { sampler = { temperature = 0.8, seed = 7 } }, { step = 6 }, { rewind = 6 },";
    let same = format!("{start} {{ step = 6 }},");
    let out = holds(
        &mut s,
        &format!("{same} {{ expect = {{ differs_from_previous = false }} }}"),
    );
    assert!(out.contains("do not fork"), "{out}");
    fails(
        &mut s,
        &format!("{same} {{ expect = {{ differs_from_previous = true }} }}"),
        "do not fork",
    );
    let other =
        format!("{start} {{ sampler = {{ temperature = 0.8, seed = 8 }} }}, {{ step = 6 }},");
    holds(
        &mut s,
        &format!("{other} {{ expect = {{ differs_from_previous = true, text_not_contains = \" dog\" }} }}"),
    );
    fails(
        &mut s,
        &format!("{other} {{ expect = {{ differs_from_previous = false }} }}"),
        "after the fork, previous \"",
    );
}

/// `js_steps` limits the mean JS to the first N steps from the fork, and fails when there are fewer.
#[test]
fn js_over_the_first_steps_from_the_fork() {
    let mut s = session();
    let start = "{ prompt = \"The capital of France is\" }, { sampler = { greedy = true } }, { step = 8 }, { rewind = 8 }, { force = \" Berlin\" }, { step = 7 },";
    let out = holds(
        &mut s,
        &format!("{start} {{ expect = {{ js_above = 0.0001, js_steps = 4 }} }}"),
    );
    assert!(out.contains("over 4 steps from step 1"), "{out}");
    fails(
        &mut s,
        &format!("{start} {{ expect = {{ js_below = 0.0001, js_steps = 4 }} }}"),
        "over 4 steps",
    );
    fails(
        &mut s,
        &format!("{start} {{ expect = {{ js_above = 0.0, js_steps = 40 }} }}"),
        "only 8 steps, not 40",
    );
}

/// `chain_changes_top1` and `last_not_top1`: at the step where greedy decoding would close the loop,
/// DRY makes the sampler plan (and take) another token than the model's own top-1.
#[test]
fn the_step_where_a_penalty_changes_the_choice() {
    let mut s = session();
    let looped = "{ prompt = \"The capital of France is\" }, { sampler = { greedy = true } }, { autoplay = { until_loop = true, max = 60 } }, { rewind = 11 },";
    holds(
        &mut s,
        &format!("{looped} {{ expect = {{ chain_changes_top1 = false }} }}, {{ step = 1 }}, {{ expect = {{ last_not_top1 = false }} }}"),
    );
    let dry = format!("{looped} {{ sampler = {{ greedy = true, dry_multiplier = 0.8 }} }},");
    holds(
        &mut s,
        &format!("{dry} {{ expect = {{ chain_changes_top1 = true }} }}, {{ step = 1 }}, {{ expect = {{ last_not_top1 = true, last_token_not = \" has\" }} }}"),
    );
    fails(
        &mut s,
        &format!("{dry} {{ expect = {{ chain_changes_top1 = false }} }}"),
        "raw top-1 \" has\", the sampler plans",
    );
    fails(
        &mut s,
        &format!("{dry} {{ step = 1 }}, {{ expect = {{ last_not_top1 = false }} }}"),
        "rank 2 in the raw distribution",
    );
}

/// `decode_growth_*` compares the first and last thirds of the steps with the cache as it is now; it
/// needs six of them.
#[test]
fn decode_growth_needs_six_steps_and_reads_the_clock() {
    let mut s = session();
    let start =
        "{ prompt = \"Once upon a time\" }, { sampler = { greedy = true } }, { kv_cache = false },";
    fails(
        &mut s,
        &format!("{start} {{ step = 5 }}, {{ expect = {{ decode_growth_below = 1000.0 }} }}"),
        "fewer than 6 decode steps",
    );
    let out = holds(
        &mut s,
        &format!("{start} {{ step = 6 }}, {{ expect = {{ decode_growth_below = 1000.0, tokens_fed_is_length = true }} }}"),
    );
    assert!(out.contains("6 steps with the KV cache off"), "{out}");
    fails(
        &mut s,
        &format!("{start} {{ step = 6 }}, {{ expect = {{ decode_growth_above = 1000.0 }} }}"),
        "first third",
    );
}

/// The arithmetic of `decode_growth`: thirds of the trailing run with the cache as it is, leaving out
/// the step that rebuilt a cache switched back on.
#[test]
fn decode_growth_takes_thirds_of_the_last_run() {
    use nexttoken::lesson::expect::decode_growth;
    let mut s = session();
    s.prefill_text("Hi", false).unwrap();
    let mut v = s.view().unwrap();
    v.decode_ms = vec![5.0, 5.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0];
    v.decode_kv = vec![true, true, false, false, false, false, false, false];
    let (r, seen) = decode_growth(&v).unwrap();
    // The fastest of each third: 10 of [10, 12], 18 of [18, 20].
    assert!((r - 18.0 / 10.0).abs() < 1e-9, "{r} {seen}");
    // Back on: the rebuild (90 ms) is left out; six flat steps remain.
    v.decode_ms.extend([90.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]);
    v.decode_kv.extend([true; 7]);
    let (r, seen) = decode_growth(&v).unwrap();
    assert_eq!(r, 1.0, "{seen}");
    v.decode_ms.pop();
    v.decode_kv.pop();
    assert_eq!(decode_growth(&v), None, "five steps are too few");
}

/// A step faster than light by the bandwidth the session remembers means that measure ran low (a
/// busy spell): the checker measures once more, now, before it judges. Here the session carries a
/// figure far too low, as a file saved on a slower machine could.
#[test]
fn a_step_faster_than_a_stale_light_is_measured_again() {
    let mut s = session();
    holds(
        &mut s,
        "{ prompt = \"The history of the printing press begins in\" }",
    );
    let mut saved = s.to_saved().unwrap();
    saved.machine = Some(nexttoken::protocol::MachineSpeed {
        bandwidth_gb_s: 0.5,
        from_cache: false,
        weight_bytes: 0,
        kv_bytes_per_position: 0,
        matmul_flop_per_token: 0.0,
        attention_flop_per_key: 0.0,
        peak_gflops: 1.0,
    });
    let mut t = session();
    t.restore_saved(&saved, false).unwrap();
    assert_eq!(t.machine().unwrap().bandwidth_gb_s, 0.5);
    let text = holds(
        &mut t,
        "{ prompt = \"The history of the printing press begins in\" }, { step = 4 }, { expect = { step_slower_than_light = true } }",
    );
    assert!(
        text.contains("(measured again: the first read 0.5)"),
        "{text}"
    );
}

/// `lesson check`'s last line never reads as a pass it is not: a lesson without any `expect` says it
/// only runs (one step is "1 step"); a missing file says what to do.
#[test]
fn lesson_checks_summary_says_what_was_checked() {
    let dir = tempfile::tempdir().unwrap();
    let body = "[[step]]\nnarration = \"Look.\"\nactions = [\n  { prompt = \"The capital of France is\" },\n]\n";
    let path = write(dir.path(), "plain.toml", &format!("{HEAD}{body}"));
    let out = nexttoken(&["lesson", "check", &path]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("(2 min, 1 step)"), "{text}");
    assert!(
        text.contains("has no `expect` to check") && !text.contains("checks hold"),
        "{text}"
    );
    let missing = dir.path().join("missing.toml");
    let out = nexttoken(&["lesson", "check", missing.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no such file") && err.contains("nexttoken lesson list"),
        "{err}"
    );
}
