//! Sessions saved to and loaded from JSON files (`docs/SESSIONS.md`): a round trip with branches gives
//! the same view and the same next step; a corrupt, truncated, future-version or wrong-model file is
//! refused with its own message and leaves the session as it was; a failed save leaves the old file.

use crate::common;
use crate::support;

use clap::Parser;
use nexttoken::app::{App, Msg};
use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::{Session, SessionOptions};
use nexttoken::engine::session_file::{self, SavedSession};
use nexttoken::protocol::{
    Command, Event, Failure, SamplerSettings, SessionView, Source, StepReport,
};
use std::path::{Path, PathBuf};
use support::{events, tiny};

fn session_on(model: &Path) -> Session {
    let opts = SessionOptions {
        attention_window: 8,
        prefill_chunk: 8,
        ..SessionOptions::default()
    };
    load_session(
        model,
        &LoadOptions::default(),
        SamplerSettings::default(),
        opts,
        &mut |_| {},
    )
    .unwrap()
    .0
}

fn synced(ev: Vec<Event>) -> SessionView {
    match ev.last() {
        Some(Event::Synced(v)) => v.clone(),
        _ => panic!("expected Synced, got {ev:?}"),
    }
}

fn stepped(ev: Vec<Event>) -> StepReport {
    match ev.as_slice() {
        [Event::Stepped(r)] => r.clone(),
        _ => panic!("expected one Stepped, got {ev:?}"),
    }
}

fn failed(ev: &[Event]) -> (Failure, String) {
    match ev {
        [Event::Failed { what, reason }] => (*what, reason.clone()),
        other => panic!("expected one Failed, got {other:?}"),
    }
}

/// The view without the last pass (a load's pass is the re-feed, not the saved session's last step)
/// and without the last draw's whole chain, which the file does not keep (a loaded token has none:
/// `SessionView::last_choice`, so the panel shows the next token).
fn same_view(mut a: SessionView, mut b: SessionView) {
    assert_eq!(a.tokens, b.tokens);
    b.last_pass = a.last_pass.clone();
    assert_eq!(b.last_choice, None, "a loaded tip has no chain of its draw");
    a.last_choice = None;
    assert_eq!(a, b);
}

/// A step without its pass's timing and pass count.
fn same_step(a: &StepReport, b: &StepReport) {
    assert_eq!(a.committed, b.committed);
    assert_eq!(a.chosen_from, b.chosen_from);
    assert_eq!(a.next, b.next);
    assert_eq!(a.attention, b.attention);
    assert_eq!(a.branches, b.branches);
    assert_eq!(
        (a.pass.tokens_fed, a.pass.kv_len),
        (b.pass.tokens_fed, b.pass.kv_len)
    );
}

/// Prefill, steps, a forced token, teacher forcing, a rewind and another path: a tree with branches.
fn branched(s: &mut Session) -> SessionView {
    synced(events(
        s,
        Command::Prefill {
            prompt: "Hello".into(),
            chat: false,
        },
    ));
    stepped(events(s, Command::Step));
    let view = s.view().unwrap();
    let pick = view.next.candidates[3].token.id;
    stepped(events(s, Command::Force { token_id: pick }));
    stepped(events(s, Command::Step));
    synced(events(s, Command::ForceText { text: " t!".into() }));
    synced(events(s, Command::Rewind { n: 4 }));
    let other = view.next.candidates[5].token.id;
    stepped(events(s, Command::Force { token_id: other }));
    stepped(events(s, Command::Step));
    let view = s.view().unwrap();
    assert!(view.branches.len() >= 2, "{:?}", view.branches);
    assert!(view.tokens.iter().any(|t| t.source == Source::Forced));
    view
}

/// The records along a saved session's current path.
fn path_records(saved: &SavedSession) -> Vec<nexttoken::protocol::TokenRecord> {
    let mut at = Some(saved.current);
    let mut out = vec![];
    while let Some(n) = at {
        out.push(saved.nodes[n].record.clone());
        at = saved.nodes[n].parent;
    }
    out.reverse();
    out
}

fn save(s: &mut Session, path: &Path) -> u64 {
    let cmd = Command::Save {
        path: path.into(),
        answers: vec![],
    };
    match events(s, cmd).as_slice() {
        [Event::Saved { path: p, bytes }] if p == path => *bytes,
        other => panic!("expected Saved, got {other:?}"),
    }
}

fn load(s: &mut Session, path: &Path, ignore_model_mismatch: bool) -> Vec<Event> {
    events(
        s,
        Command::Load {
            path: path.into(),
            ignore_model_mismatch,
        },
    )
}

/// Each generated node of `saved` keeps its top 10 (best first, its own rank among them when it is
/// one of them) and its step's pass.
fn every_generated_node_keeps_its_top_k_and_pass(saved: &SavedSession) {
    let generated = saved
        .nodes
        .iter()
        .filter(|n| n.record.source != Source::Prompt);
    for n in generated {
        let top = &n
            .chosen_from
            .as_ref()
            .expect("every generated node has its top-k")
            .top_k;
        assert_eq!(top.len(), 10);
        assert!(top.windows(2).all(|w| w[0].prob >= w[1].prob));
        assert_eq!(
            top.iter().find(|c| c.token.id == n.token).map(|c| c.rank),
            Some(n.record.rank).filter(|&r| r < 10)
        );
        assert!(
            n.pass.is_some(),
            "each generated token keeps its step's pass"
        );
    }
}

#[test]
fn round_trip_with_branches_gives_the_same_view_and_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny::write(dir.path());
    let mut a = session_on(&model);
    let view = branched(&mut a);
    let file = dir.path().join("s.json");
    let bytes = save(&mut a, &file);
    assert_eq!(bytes, std::fs::metadata(&file).unwrap().len());

    let saved = session_file::read(&file).unwrap();
    assert_eq!(saved.version, 1);
    assert_eq!(path_records(&saved), view.tokens);
    assert_eq!(saved.prompt, "Hello");
    assert_eq!(saved.tokenizer, "gguf");
    assert_eq!(
        Some(saved.model.file.as_str()),
        model.file_name().and_then(|f| f.to_str())
    );
    assert_eq!(saved.model.sha256.len(), 64);
    every_generated_node_keeps_its_top_k_and_pass(&saved);

    // A fresh session (other settings, another prompt) becomes the saved one.
    let mut b = session_on(&model);
    synced(events(
        &mut b,
        Command::Prefill {
            prompt: "Something else".into(),
            chat: false,
        },
    ));
    synced(events(
        &mut b,
        Command::SetSampler(SamplerSettings {
            seed: 7,
            ..Default::default()
        }),
    ));
    let loaded = synced(load(&mut b, &file, false));
    same_view(view.clone(), loaded.clone());
    assert_eq!(loaded.settings, view.settings);
    assert_eq!(loaded.prefill, view.prefill);

    // Nothing is lost on the way through JSON (timings included).
    assert_eq!(saved, a.to_saved().unwrap());
    // Saved again, the loaded session writes the same file.
    let file2 = dir.path().join("again.json");
    save(&mut b, &file2);
    assert_eq!(session_file::read(&file2).unwrap(), saved);

    // The next steps match, and so does switching to the other branch.
    for _ in 0..2 {
        same_step(
            &stepped(events(&mut a, Command::Step)),
            &stepped(events(&mut b, Command::Step)),
        );
    }
    let other = a.branches().iter().find(|br| !br.current).unwrap().id;
    let va = synced(events(&mut a, Command::SwitchBranch { id: other }));
    let vb = synced(events(&mut b, Command::SwitchBranch { id: other }));
    same_view(va, vb);
    same_step(
        &stepped(events(&mut a, Command::Step)),
        &stepped(events(&mut b, Command::Step)),
    );
}

/// Writes a damaged copy of a good file and checks that loading it fails with `needle` in the reason
/// and leaves the session as it was.
fn refused(s: &mut Session, path: &Path, needle: &str) {
    let before = s.view().unwrap();
    let (what, reason) = failed(&load(s, path, false));
    assert_eq!(what, Failure::LoadSession);
    assert!(reason.contains(needle), "{reason:?} should say {needle:?}");
    assert_eq!(s.view().unwrap(), before, "the session is unchanged");
}

#[test]
fn bad_files_are_refused_with_their_reason_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny::write(dir.path());
    let mut s = session_on(&model);
    branched(&mut s);
    let good = dir.path().join("good.json");
    save(&mut s, &good);
    let text = std::fs::read_to_string(&good).unwrap();
    let write = |name: &str, body: &str| -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();

    // The session in hand is another one, so a half-done load would show.
    synced(events(&mut s, Command::Rewind { n: 1 }));

    refused(
        &mut s,
        &write(
            "corrupt.json",
            &text.replacen("\"nodes\"", "\"nodes\" x", 1),
        ),
        "not a valid nexttoken session",
    );
    refused(
        &mut s,
        &write("truncated.json", &text[..text.len() / 2]),
        "truncated",
    );
    refused(&mut s, &write("empty.json", ""), "truncated");
    refused(
        &mut s,
        &write("other.json", "{\"hello\": 1}"),
        "not a valid nexttoken session",
    );
    refused(
        &mut s,
        &dir.path().join("missing.json"),
        "no session file at",
    );

    edited_files_are_refused(&mut s, dir.path(), &json);

    json["model"]["sha256"] = "0".repeat(64).into();
    let wrong = write("wrong.json", &json.to_string());
    refused(&mut s, &wrong, "--ignore-model-mismatch");
    refused(&mut s, &wrong, "but the model loaded is");
    // Asked to go on anyway, it loads.
    let v = synced(load(&mut s, &wrong, true));
    assert_eq!(v.tokens, path_records(&session_file::read(&good).unwrap()));
    synced(events(&mut s, Command::Rewind { n: 1 }));

    // A forward pass that fails during the re-feed leaves the session as it was too.
    let before = s.view().unwrap();
    s.inject_fault(1);
    let (what, _) = failed(&load(&mut s, &good, false));
    assert_eq!(what, Failure::LoadSession);
    assert_eq!(s.view().unwrap(), before);
    stepped(events(&mut s, Command::Step));
}

/// A good file edited: from a future version, with a node whose parent is not before it, with a token
/// outside the vocabulary. Each is refused with its reason, changing nothing.
fn edited_files_are_refused(s: &mut Session, dir: &Path, json: &serde_json::Value) {
    let write = |name: &str, body: &str| -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let mut future = json.clone();
    future["version"] = 2.into();
    let p = write("future.json", &future.to_string());
    refused(s, &p, "version 2");
    refused(s, &p, "update nexttoken");

    let mut shape = json.clone();
    shape["nodes"][3]["parent"] = 99.into();
    refused(
        s,
        &write("shape.json", &shape.to_string()),
        "node 3 has parent",
    );

    let mut vocab = json.clone();
    let last = vocab["nodes"].as_array().unwrap().len() - 1;
    vocab["nodes"][last]["token"] = 100_000.into();
    vocab["nodes"][last]["record"]["token"]["id"] = 100_000.into();
    refused(
        s,
        &write("vocab.json", &vocab.to_string()),
        "not in this model's vocabulary",
    );
}

#[test]
fn a_failed_save_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny::write(dir.path());
    let mut s = session_on(&model);
    branched(&mut s);
    let file = dir.path().join("keep.json");
    save(&mut s, &file);
    let old = std::fs::read(&file).unwrap();
    stepped(events(&mut s, Command::Step));
    let newer: SavedSession = s.to_saved().unwrap();

    // Killed (here: failing) between the fsynced temporary file and the rename.
    let err = session_file::write_with_hook(&file, &newer, &|| {
        Err(std::io::Error::other("killed before the rename"))
    })
    .unwrap_err();
    assert!(err.to_string().contains("is unchanged"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), old, "the old file survives");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file is left: {names:?}");

    // A folder that does not exist: the temporary file cannot be created.
    let nowhere = dir.path().join("no/such/folder/s.json");
    let cmd = Command::Save {
        path: nowhere,
        answers: vec![],
    };
    let (what, reason) = failed(&events(&mut s, cmd));
    assert_eq!(what, Failure::Save);
    assert!(reason.contains("cannot save"), "{reason}");
    assert_eq!(std::fs::read(&file).unwrap(), old);

    // A good save replaces it whole.
    save(&mut s, &file);
    assert_eq!(session_file::read(&file).unwrap(), s.to_saved().unwrap());
}

#[test]
fn trace_save_then_load() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny::write(dir.path());
    let file = dir.path().join("trace.json");
    let cli = nexttoken::cli::Cli::try_parse_from([
        "nexttoken",
        "trace",
        "--prompt",
        "Hi there",
        "--steps",
        "5",
        "--force",
        "2:t",
        "--save",
        file.to_str().unwrap(),
    ])
    .unwrap();
    let Some(nexttoken::cli::Cmd::Trace(args)) = cli.command else {
        panic!("not a trace");
    };
    let mut a = session_on(&model);
    let mut out = Vec::new();
    nexttoken::cmd::trace::run(&mut a, &args, &mut out).unwrap();
    let saved = session_file::read(&file).unwrap();
    assert_eq!(saved.prompt, "Hi there");
    assert!(!saved.chat);
    let lines = String::from_utf8(out).unwrap();
    assert!(lines.lines().count() >= 2);

    let view = a.view().unwrap();
    let mut b = session_on(&model);
    let loaded = synced(load(&mut b, &file, false));
    same_view(view, loaded);
    assert!(saved
        .nodes
        .iter()
        .any(|n| n.record.source == Source::Forced));
    same_step(
        &stepped(events(&mut a, Command::Step)),
        &stepped(events(&mut b, Command::Step)),
    );
}

#[test]
fn s_in_the_app_saves_and_the_status_says_where() {
    let mut app = common::ready_app(80, 24);
    app.update(Msg::Tick { now_ms: 5_000 });
    let cmds = common::key(&mut app, 'S');
    let [Command::Save { path, .. }] = cmds.as_slice() else {
        panic!("S answered {cmds:?}");
    };
    let name = path.to_str().unwrap().to_string();
    assert!(
        name.starts_with("nexttoken-the-capital-of-france-5") && name.ends_with(".json"),
        "{name}"
    );
    assert!(app.is_busy(), "a save is a request: one at a time");
    let cmds = app.update(Msg::Engine(Event::Saved {
        path: path.clone(),
        bytes: 4096,
    }));
    assert_eq!(cmds, vec![]);
    assert!(!app.is_busy());
    let status = app.status.clone().unwrap();
    assert!(
        !status.error && status.text.contains(&name),
        "{}",
        status.text
    );

    // A second save in the same second does not overwrite the first.
    let cmds = common::key(&mut app, 'S');
    let [Command::Save { path: second, .. }] = cmds.as_slice() else {
        panic!("S answered {cmds:?}");
    };
    assert_ne!(second.to_str().unwrap(), name);

    // A failed save says so.
    app.update(Msg::Engine(Event::Failed {
        what: Failure::Save,
        reason: "cannot save to x: denied".into(),
    }));
    let status = app.status.clone().unwrap();
    assert!(status.error && status.text.contains("could not save the session"));
}

/// The class's answers go into the file with `S`, come back with `--load` (the app takes them), and a
/// file without any (an older one) has no `answers` field and loads with none.
#[test]
fn the_class_answers_are_saved_and_loaded_back() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny::write(dir.path());
    let mut a = session_on(&model);
    branched(&mut a);
    let answer = nexttoken::protocol::ClassAnswer {
        position: 3,
        question: "What comes next?".into(),
        kind: "token".into(),
        class: "' Paris'".into(),
        model: "' Paris'".into(),
        correct: true,
        detail: "rank 1, 76.8%".into(),
    };
    let mut app = common::ready_app(80, 24);
    app.record_answer(answer.clone());
    let cmds = common::key(&mut app, 'S');
    let [Command::Save { answers, .. }] = cmds.as_slice() else {
        panic!("S sends one Save: {cmds:?}");
    };
    assert_eq!(
        answers,
        &vec![answer.clone()],
        "S carries the app's answers"
    );
    let file = dir.path().join("answers.json");
    let cmd = Command::Save {
        path: file.clone(),
        answers: answers.clone(),
    };
    assert!(matches!(
        events(&mut a, cmd).as_slice(),
        [Event::Saved { .. }]
    ));
    assert_eq!(
        session_file::read(&file).unwrap().answers,
        vec![answer.clone()]
    );

    let mut b = session_on(&model);
    let view = synced(load(&mut b, &file, false));
    assert_eq!(view.answers, vec![answer.clone()]);
    let mut fresh = common::ready_app(80, 24);
    fresh.update(Msg::Engine(Event::Synced(view)));
    assert_eq!(fresh.predict.answers, vec![answer]);
    // A new prompt is a new tree: the file's answers are no longer its.
    events(
        &mut b,
        Command::Prefill {
            prompt: "Hi".into(),
            chat: false,
        },
    );
    assert!(b.view().unwrap().answers.is_empty());

    let plain = dir.path().join("plain.json");
    save(&mut a, &plain);
    let text = std::fs::read_to_string(&plain).unwrap();
    assert!(!text.contains("\"answers\""), "no answers, no field");
    assert!(session_file::read(&plain).unwrap().answers.is_empty());
}

#[test]
fn load_flag_opens_the_file_instead_of_reading_the_prompt() {
    use nexttoken::app::sessions::SessionFiles;
    let files = |ignore| SessionFiles {
        load: Some(PathBuf::from("class.json")),
        ignore_model_mismatch: ignore,
        ..Default::default()
    };
    let mut app = App::new(common::config(80, 24)).with_session_files(files(false));
    let cmds = app.update(Msg::Engine(Event::Loaded(common::model_info())));
    assert_eq!(
        cmds,
        vec![Command::Load {
            path: "class.json".into(),
            ignore_model_mismatch: false
        }]
    );
    assert!(app.is_busy());
    app.update(Msg::Engine(Event::Failed {
        what: Failure::LoadSession,
        reason: "this session was saved with the model m.gguf (sha256 aa), but the model loaded is n.gguf (sha256 bb): start nexttoken with --model pointing at m.gguf, or add --ignore-model-mismatch to open it with this model anyway".into(),
    }));
    assert!(!app.is_busy());
    let status = app.status.clone().unwrap();
    assert!(status.error && status.text.contains("could not load the session"));
    assert!(status.text.contains("--ignore-model-mismatch"));

    let mut app = App::new(common::config(80, 24)).with_session_files(files(true));
    let cmds = app.update(Msg::Engine(Event::Loaded(common::model_info())));
    assert!(matches!(
        cmds.as_slice(),
        [Command::Load {
            ignore_model_mismatch: true,
            ..
        }]
    ));
    app.update(Msg::Engine(Event::Synced(common::prefilled())));
    assert!(!app.is_busy());
    assert_eq!(app.candidates()[0].token.text, " Paris");
}

#[test]
fn real_model_round_trip_in_chat_mode() {
    let model = support::real_model();
    let dir = tempfile::tempdir().unwrap();
    let opts = || SessionOptions {
        attention_window: 24,
        ..SessionOptions::default()
    };
    let open = || {
        load_session(
            &model,
            &LoadOptions::default(),
            SamplerSettings::default(),
            opts(),
            &mut |_| {},
        )
        .unwrap()
        .0
    };
    let mut a = open();
    synced(events(
        &mut a,
        Command::Prefill {
            prompt: "Name a city in France.".into(),
            chat: true,
        },
    ));
    for _ in 0..3 {
        stepped(events(&mut a, Command::Step));
    }
    synced(events(
        &mut a,
        Command::ForceText {
            text: " Lyon".into(),
        },
    ));
    synced(events(&mut a, Command::Rewind { n: 3 }));
    stepped(events(&mut a, Command::Step));
    let view = a.view().unwrap();
    let file = dir.path().join("real.json");
    save(&mut a, &file);
    let saved = session_file::read(&file).unwrap();
    assert!(saved.chat);
    assert_eq!(saved.prompt, "Name a city in France.");
    assert_eq!(saved.model.file, "SmolLM2-135M-Instruct.Q4_1.gguf");

    let mut b = open();
    let loaded = synced(load(&mut b, &file, false));
    same_view(view, loaded);
    for _ in 0..2 {
        same_step(
            &stepped(events(&mut a, Command::Step)),
            &stepped(events(&mut b, Command::Step)),
        );
    }
}

/// The real binary on the real model.
fn run_bin(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .args(args)
        .env("NEXTTOKEN_MODEL", support::real_model())
        .output()
        .unwrap()
}

/// `trace --greedy --steps N --save FILE` into `dir`: the file's path.
fn saved_by_trace(dir: &Path, steps: usize) -> PathBuf {
    let file = dir.join("t.json");
    let n = steps.to_string();
    let out = run_bin(&[
        "trace",
        "--steps",
        &n,
        "--greedy",
        "--save",
        file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    file
}

#[test]
fn the_binary_saves_with_trace_and_refuses_a_bad_load_before_the_screen() {
    let dir = tempfile::tempdir().unwrap();
    let file = saved_by_trace(dir.path(), 2);
    let run = run_bin;
    let saved = session_file::read(&file).unwrap();
    assert_eq!(saved.prompt, nexttoken::cli::DEFAULT_PROMPT);
    assert_eq!(saved.nodes.len(), saved.prompt_len + 2);
    assert!(saved.settings.greedy);

    let text = std::fs::read_to_string(&file).unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 3]).unwrap();
    let out = run(&["--load", cut.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("truncated"), "{err}");

    // Saved with the real model, opened with another: refused before the screen, the message whole:
    // both models by name, what to do, and the flag that goes on anyway.
    let other = tiny::write(dir.path());
    let out = run(&[
        "--model",
        other.to_str().unwrap(),
        "--load",
        file.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let other_name = other.file_name().unwrap().to_string_lossy();
    for says in [
        "t.json: this session was saved with the model SmolLM2-135M-Instruct.Q4_1.gguf",
        &format!("but the model loaded is {other_name}"),
        "start nexttoken with --model pointing at SmolLM2-135M-Instruct.Q4_1.gguf",
        "or add --ignore-model-mismatch to open it with this model anyway",
    ] {
        assert!(err.contains(says), "{says}: {err}");
    }
    assert_eq!(err.lines().count(), 1, "one message: {err}");
}

/// A copy of the model under the saved one's name, but another file: "point --model at it" would
/// name the file already loaded, so the message says what happened instead. Settings out of range (a
/// hand-edited file) are the file's fault, said before the screen.
#[test]
fn a_bad_load_says_what_is_wrong_before_the_screen() {
    let dir = tempfile::tempdir().unwrap();
    let file = saved_by_trace(dir.path(), 1);
    let run = run_bin;
    let text = std::fs::read_to_string(&file).unwrap();
    let other = tiny::write(dir.path());
    let same_name = dir.path().join("again");
    std::fs::create_dir(&same_name).unwrap();
    let copy = same_name.join("SmolLM2-135M-Instruct.Q4_1.gguf");
    std::fs::copy(&other, &copy).unwrap();
    let out = run(&[
        "--model",
        copy.to_str().unwrap(),
        "--load",
        file.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a different file with the same name"), "{err}");
    assert!(!err.contains("pointing at"), "{err}");

    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["settings"]["temperature"] = 99.into();
    let hot = dir.path().join("hot.json");
    std::fs::write(&hot, json.to_string()).unwrap();
    let out = run(&["--load", hot.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("its sampler settings are out of range") && err.contains("temperature"),
        "{err}"
    );
}
