//! A model served by llama.cpp's server (`--server`): the served engine agrees with the local one on a
//! greedy path, and every way a server can fail (gone, unreachable, garbage, an error status, too slow,
//! a refused key) gives its message and leaves the session as it was. The real server is llama.cpp's own
//! `llama-server` (built by `.ci/llama-server.sh`); the failures that need a misbehaving server use a
//! tiny loopback server (`support/fake_server.rs`).

use crate::support;

use nexttoken::engine::served::{open_served_session, ServedOptions};
use nexttoken::engine::session::{Choice, Session, SessionOptions};
use nexttoken::protocol::{Command, Event, Failure, SamplerSettings};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::fake_server::{self, Reply, Request};
use support::llama_server::{self, LlamaServer};

/// Step-0 top-5 probability bound of the golden tests against llama.cpp (`tests/support/golden.rs`).
const PROB_TOL: f32 = 0.045;
const PROMPT: &str = "The capital of France is";

fn greedy() -> SamplerSettings {
    SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    }
}

fn options(url: &str) -> ServedOptions {
    ServedOptions {
        url: url.into(),
        api_key: None,
        model: None,
        timeout: Duration::from_secs(60),
    }
}

fn served(url: &str) -> Session {
    let opts = SessionOptions {
        top_k_shown: 10,
        ..SessionOptions::default()
    };
    open_served_session(&options(url), greedy(), opts, &mut |_| {})
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
        .0
}

fn real_server() -> Option<LlamaServer> {
    let bin = llama_server::binary()?;
    Some(LlamaServer::start(&bin, &support::real_model()))
}

#[test]
fn served_and_local_agree_on_every_step_of_a_greedy_path() {
    let Some(server) = real_server() else { return };
    let mut remote = served(&server.url);
    let mut local = support::golden::greedy_session(&support::real_model());
    let info = remote
        .served()
        .expect("a served session says which server")
        .clone();
    assert_eq!(info.kind, "llama.cpp");

    let ids = local.encode(PROMPT).unwrap();
    assert_eq!(
        remote.encode(PROMPT).unwrap(),
        ids,
        "the server's tokenizer and ours"
    );
    remote.prefill_ids(&ids).unwrap();
    local.prefill_ids(&ids).unwrap();
    let mut worst = 0f32;
    for step in 0..8 {
        let (r, l) = (
            remote.distribution().unwrap(),
            local.distribution().unwrap(),
        );
        assert_eq!(
            r.candidates[0].token.id, l.candidates[0].token.id,
            "step {step}: top-1"
        );
        assert_eq!(
            r.candidates[0].token.text, l.candidates[0].token.text,
            "step {step}: its text"
        );
        for c in &r.candidates[..5] {
            let ours = l.candidates.iter().find(|x| x.token.id == c.token.id);
            let ours = ours.unwrap_or_else(|| {
                panic!("step {step}: served top-5 {c:?} not in the local top-10")
            });
            worst = worst.max((c.prob - ours.prob).abs());
            assert!(
                (c.prob - ours.prob).abs() <= PROB_TOL,
                "step {step}: p({}) served {} local {}",
                c.token.id,
                c.prob,
                ours.prob
            );
        }
        let mass = r
            .known_mass
            .expect("a served distribution says how much mass it knows");
        let top5: f32 = r.candidates[..5].iter().map(|c| c.prob).sum();
        assert!(
            mass >= top5 - 1e-4 && mass <= 1.0 + 1e-4,
            "step {step}: known mass {mass}"
        );
        assert_eq!(l.known_mass, None, "a local row is whole");
        let (rs, ls) = (
            remote.step(Choice::Sample).unwrap(),
            local.step(Choice::Sample).unwrap(),
        );
        assert_eq!(
            rs.committed.token.id, ls.committed.token.id,
            "step {step}: committed"
        );
        let t = rs
            .pass
            .served
            .expect("a served step records its request's times");
        assert!(t.request_ms > 0.0 && t.prompt_ms.is_some() && t.predicted_ms.is_some());
    }
    assert_eq!(remote.tokens(), local.tokens());
    eprintln!(
        "served against local, 8 greedy steps: worst top-5 |Δp| {worst:.4} (tolerance {PROB_TOL})"
    );
}

#[test]
fn trace_with_server_prints_the_same_tokens_as_the_local_trace() {
    let Some(server) = real_server() else { return };
    let run = |extra: &[&str]| -> Vec<serde_json::Value> {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nexttoken"))
            .args(["trace", "--prompt", PROMPT, "--steps", "8", "--greedy"])
            .args(extra)
            .env("NEXTTOKEN_MODEL", support::real_model())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let local = run(&[]);
    let remote = run(&["--server", &server.url]);
    let tokens = |lines: &[serde_json::Value]| -> Vec<u64> {
        lines[1..]
            .iter()
            .map(|l| l["token"]["id"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(tokens(&remote), tokens(&local));
    assert_eq!(tokens(&local).len(), 8);
    assert_eq!(remote[0]["server"]["kind"], "llama.cpp");
    assert_eq!(remote[0]["server"]["url"], server.url.as_str());
    assert!(local[0]["server"].is_null());
    for l in &remote[1..] {
        assert!(l["served"]["request_ms"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["known_mass"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn a_server_killed_mid_session_fails_the_step_and_leaves_the_session_unchanged() {
    let Some(mut server) = real_server() else {
        return;
    };
    let mut s = served(&server.url);
    s.prefill_text(PROMPT, false).unwrap();
    s.step(Choice::Sample).unwrap();
    let before = s.view().unwrap();
    server.kill();
    for _ in 0..2 {
        let err = s.step(Choice::Sample).unwrap_err().to_string();
        assert!(err.contains("not reachable"), "{err}");
        assert_eq!(s.view().unwrap(), before, "the session is unchanged");
    }
    assert!(s
        .inspect(true, false, None)
        .unwrap_err()
        .to_string()
        .contains("the logit lens"));
}

#[test]
fn an_unreachable_port_is_a_clear_message() {
    let url = format!("http://127.0.0.1:{}", llama_server::free_port());
    let err = open_served_session(&options(&url), greedy(), Default::default(), &mut |_| {})
        .err()
        .expect("nothing listens there")
        .to_string();
    assert!(err.contains(&url) && err.contains("not reachable"), "{err}");
}

// A llama.cpp-shaped fake: 100 tokens, one per byte of text (mod 100); `mode` says how /completion answers.
const GOOD: u8 = 0;
const GARBAGE: u8 = 1;
const ERROR_500: u8 = 2;
const SLOW: u8 = 3;
const WRONG_SHAPE: u8 = 4;

fn fake(mode: Arc<AtomicU8>, key: Option<&'static str>) -> String {
    fake_server::serve(move |r: &Request| {
        let auth = r
            .headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .map(|(_, v)| v.as_str());
        if let Some(k) = key {
            if auth != Some(&format!("Bearer {k}")) {
                return Reply::status(401, r#"{"error":{"message":"Invalid API Key"}}"#);
            }
        }
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/props") => {
                Reply::ok(r#"{"default_generation_settings":{"n_ctx":512},"chat_template":""}"#)
            }
            ("GET", "/v1/models") => Reply::ok(
                r#"{"data":[{"id":"fake","owned_by":"llamacpp","meta":{"n_vocab":100}}]}"#,
            ),
            ("POST", "/tokenize") => {
                let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
                let text = v["content"].as_str().unwrap();
                let ids: Vec<u32> = text.bytes().map(|b| b as u32 % 100).collect();
                Reply::ok(serde_json::json!({ "tokens": ids }).to_string())
            }
            ("POST", "/detokenize") => Reply::ok(r#"{"content":"t"}"#),
            ("POST", "/completion") => match mode.load(Ordering::SeqCst) {
                GOOD => Reply::ok(
                    r#"{"completion_probabilities":[{"top_logprobs":[{"id":5,"token":"x","bytes":[120],"logprob":-0.5},{"id":7,"token":"y","bytes":[121],"logprob":-1.5}]}],"timings":{"prompt_ms":1.0,"predicted_ms":2.0}}"#,
                ),
                GARBAGE => Reply::ok("<html>this is not json"),
                ERROR_500 => Reply::status(500, r#"{"error":{"message":"out of memory"}}"#),
                WRONG_SHAPE => Reply::ok(r#"{"content":"x"}"#),
                _ => Reply {
                    delay: Duration::from_secs(3),
                    ..Reply::ok("{}")
                },
            },
            _ => Reply::status(404, "{}"),
        }
    })
}

#[test]
fn each_misbehaviour_gives_its_message_and_leaves_the_session_unchanged() {
    let mode = Arc::new(AtomicU8::new(GOOD));
    let url = fake(mode.clone(), None);
    let opts = ServedOptions {
        timeout: Duration::from_millis(500),
        ..options(&url)
    };
    let (mut s, info) =
        open_served_session(&opts, greedy(), Default::default(), &mut |_| {}).unwrap();
    assert_eq!(info.served.as_ref().unwrap().kind, "llama.cpp");
    assert_eq!(
        (info.vocab_size, info.context_length, info.n_layer),
        (100, 512, 0)
    );
    s.prefill_text("hi", false).unwrap();
    let d = s.distribution().unwrap();
    assert_eq!(d.candidates[0].token.id, 5);
    assert!(
        (d.candidates[0].prob - (-0.5f32).exp()).abs() < 1e-6,
        "the server's probability, not renormalised"
    );
    let mass = (-0.5f32).exp() + (-1.5f32).exp();
    assert!((d.known_mass.unwrap() - mass).abs() < 1e-6);
    s.step(Choice::Sample).unwrap();
    let before = s.view().unwrap();
    for (m, want) in [
        (GARBAGE, "not JSON"),
        (WRONG_SHAPE, "completion_probabilities"),
        (ERROR_500, "HTTP 500: out of memory"),
        (SLOW, "did not answer within 0.5 s"),
    ] {
        mode.store(m, Ordering::SeqCst);
        let err = s.step(Choice::Sample).unwrap_err().to_string();
        assert!(err.contains(want), "mode {m}: {err}");
        assert_eq!(
            s.view().unwrap(),
            before,
            "mode {m}: the session is unchanged"
        );
    }
    mode.store(GOOD, Ordering::SeqCst);
    let r = s.step(Choice::Sample).unwrap();
    assert_eq!(
        r.committed.position,
        before.tokens.len(),
        "a retry steps from where it was"
    );
}

#[test]
fn a_refused_api_key_says_so_and_never_shows_the_key() {
    let url = fake(Arc::new(AtomicU8::new(GOOD)), Some("right-key"));
    let wrong = ServedOptions {
        api_key: Some("sekrit-wrong-key".into()),
        ..options(&url)
    };
    let err = open_served_session(&wrong, greedy(), Default::default(), &mut |_| {})
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("NEXTTOKEN_API_KEY") && !err.contains("sekrit"),
        "{err}"
    );
    assert!(!format!("{wrong:?}").contains("sekrit"));
    let right = ServedOptions {
        api_key: Some("right-key".into()),
        ..options(&url)
    };
    assert!(open_served_session(&right, greedy(), Default::default(), &mut |_| {}).is_ok());
}

#[test]
fn a_failed_served_step_answers_failed_and_the_apps_view_equals_the_engines() {
    use nexttoken::app::{App, AppConfig, Msg, ThemeKind};
    let mode = Arc::new(AtomicU8::new(GOOD));
    let url = fake(mode.clone(), None);
    let (mut s, info) =
        open_served_session(&options(&url), greedy(), Default::default(), &mut |_| {}).unwrap();
    let mut app = App::new(AppConfig {
        prompt: "hi".into(),
        chat: false,
        theme: ThemeKind::Default,
        settings: greedy(),
        width: 100,
        height: 30,
    });
    let feed = |app: &mut App, s: &mut Session, cmd: Command| -> Vec<Event> {
        let ev = support::events(s, cmd);
        for e in &ev {
            app.update(Msg::Engine(e.clone()));
        }
        ev
    };
    app.update(Msg::Engine(Event::Loaded(info)));
    feed(
        &mut app,
        &mut s,
        Command::Prefill {
            prompt: "hi".into(),
            chat: false,
        },
    );
    feed(&mut app, &mut s, Command::Step);
    mode.store(GARBAGE, Ordering::SeqCst);
    let ev = feed(&mut app, &mut s, Command::Step);
    match ev.as_slice() {
        [Event::Failed {
            what: Failure::Step,
            reason,
        }] => assert!(reason.contains("not JSON"), "{reason}"),
        other => panic!("expected one Failed, got {other:?}"),
    }
    assert_eq!(
        app.session.as_ref(),
        Some(&s.view().unwrap()),
        "the app's copy is the engine's session"
    );
    let status = app
        .status
        .as_ref()
        .expect("the failure is on the status line");
    assert!(
        status.error && status.text.contains("could not step") && status.text.contains("not JSON"),
        "{status:?}"
    );
}

#[test]
fn compare_with_server_forks_the_same_paths_and_leaves_unknown_divergences_null() {
    let Some(server) = real_server() else { return };
    let run = |extra: &[&str]| -> Vec<serde_json::Value> {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nexttoken"))
            .args(["compare", "--prompt", PROMPT, "--steps", "4", "--greedy"])
            .args(["--force", "1: Lyon"])
            .args(extra)
            .env("NEXTTOKEN_MODEL", support::real_model())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let local = run(&[]);
    let remote = run(&["--server", &server.url]);
    let steps = |lines: &[serde_json::Value]| -> Vec<serde_json::Value> {
        lines
            .iter()
            .filter(|l| l["type"] == "step")
            .cloned()
            .collect()
    };
    let (ls, rs) = (steps(&local), steps(&remote));
    assert_eq!(ls.len(), 4);
    assert_eq!(rs.len(), ls.len());
    for (l, r) in ls.iter().zip(&rs) {
        for side in ["a", "b"] {
            assert_eq!(
                r[side]["id"], l[side]["id"],
                "step {}: path {side}",
                l["step"]
            );
            let (pr, pl) = (
                r[side]["prob"].as_f64().unwrap(),
                l[side]["prob"].as_f64().unwrap(),
            );
            assert!(
                (pr - pl).abs() <= PROB_TOL as f64,
                "step {}: {side} p {pr} vs {pl}",
                l["step"]
            );
        }
        let after_fork = l["step"].as_u64().unwrap() > 1;
        assert_eq!(r["kl_ab"].is_null(), after_fork, "{r}");
        assert_eq!(r["js"].is_null(), after_fork, "{r}");
        assert!(
            !l["kl_ab"].is_null(),
            "a local comparison knows every divergence"
        );
    }
}
