//! Class mode's HTTP interface on loopback (docs/CLASS.md), against the real server with a stage
//! published as the app would publish it: join with and without the code, guess, change the guess,
//! reveal, read results and the tally, and every refusal: oversize bodies, invalid UTF-8, markup in a
//! nickname, a flood from one client, a client that never reads its stream. Nothing a student sends
//! reaches the app but a join, a count and, at the reveal, the guesses.

use nexttoken::class::ClassHandle;
use nexttoken::protocol::class::{
    Ask, ClassMsg, ClassPoll, ClassResults, Stage, StudentResult, StudentScore, TokenRanks,
};
use nexttoken::protocol::{GuessToken, TokenKind, TokenView};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn tv(id: u32, text: &str) -> TokenView {
    TokenView {
        id,
        text: text.into(),
        kind: TokenKind::Text,
    }
}

fn vocab() -> Vec<TokenView> {
    let mut v = vec![
        tv(0, " Paris"),
        tv(1, "Paris"),
        tv(2, " the"),
        tv(3, " London"),
        tv(4, " Par"),
        tv(5, " a"),
    ];
    v.push(TokenView {
        id: 6,
        text: "<|im_end|>".into(),
        kind: TokenKind::Special,
    });
    v
}

struct Room {
    handle: ClassHandle,
    addr: String,
    msgs: Receiver<ClassMsg>,
}

fn start(max: usize) -> Room {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let notify = Box::new(move |m| {
        let _ = tx.lock().unwrap().send(m);
    });
    let handle = ClassHandle::start("127.0.0.1:0", max, notify).unwrap();
    handle.set_vocabulary(vocab());
    handle.set_model("test model");
    let addr = handle
        .card()
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    Room {
        handle,
        addr,
        msgs: rx,
    }
}

fn stage(ask: Ask, results: Option<Arc<ClassResults>>) -> Stage {
    Stage {
        step: 0,
        position: 5,
        ask,
        question: "What comes next?".into(),
        text: "The capital of France is".into(),
        results,
    }
}

/// One request over a fresh connection; the status and the body.
fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text[9..12].parse().unwrap();
    let body = text.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (status, body)
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

fn code(r: &Room) -> String {
    r.handle.card().code.clone()
}

fn join(r: &Room, name: &str) -> String {
    let body = format!(r#"{{"code":"{}","name":"{name}"}}"#, code(r));
    let (status, body) = http(&r.addr, "POST", "/api/join", body.as_bytes());
    assert_eq!(status, 200, "{body}");
    json(&body)["student"].as_str().unwrap().to_string()
}

fn guess(r: &Room, student: &str, text: &str) -> (u16, String) {
    let body = serde_json::json!({"student": student, "text": text}).to_string();
    http(&r.addr, "POST", "/api/guess", body.as_bytes())
}

fn state(r: &Room) -> Value {
    json(&http(&r.addr, "GET", "/api/state", b"").1)
}

/// The messages the room sent the app so far.
fn drain(r: &Room) -> Vec<ClassMsg> {
    r.msgs.try_iter().collect()
}

fn gt(t: TokenView, prob: f32, rank: usize) -> GuessToken {
    GuessToken {
        token: t,
        prob,
        logprob: prob.ln(),
        rank,
    }
}

/// The results the app would publish for these guessed tokens.
fn results(guessed: &[TokenView], students: &[(&str, Option<GuessToken>)]) -> Arc<ClassResults> {
    let ranks = TokenRanks {
        position: 5,
        tokens: vec![gt(tv(0, " Paris"), 0.77, 0), gt(tv(3, " London"), 0.012, 2)],
        top: vec![gt(tv(0, " Paris"), 0.77, 0), gt(tv(2, " the"), 0.075, 1)],
        entropy: 1.47,
    };
    let poll = ClassPoll::new("What comes next?", guessed, ranks, students.len());
    let students = students
        .iter()
        .map(|(id, g)| {
            let mut score = StudentScore::default();
            if let Some(g) = g {
                score.record(g);
            }
            let guess = g.clone();
            (id.parse().unwrap(), StudentResult { guess, score })
        })
        .collect();
    Arc::new(ClassResults {
        step: 0,
        poll,
        students,
    })
}

#[test]
fn the_page_its_script_and_style_are_served_from_the_binary() {
    let r = start(10);
    let (status, page) = http(&r.addr, "GET", "/", b"");
    assert_eq!(status, 200);
    assert!(
        page.contains("page.js") && page.contains("page.css"),
        "{page}"
    );
    assert!(
        !page.contains("https://"),
        "the page must fetch nothing from elsewhere"
    );
    assert_eq!(http(&r.addr, "GET", "/page.js", b"").0, 200);
    assert_eq!(http(&r.addr, "GET", "/page.css", b"").0, 200);
    assert_eq!(http(&r.addr, "GET", "/nope", b"").0, 404);
    assert_eq!(r.handle.card().code.len(), 6);
    assert!(!r.handle.card().qr.is_empty(), "a QR code of the address");
}

/// Without the code, or with a wrong one, a join is refused.
fn a_join_needs_the_code(r: &Room) {
    let wrong = http(
        &r.addr,
        "POST",
        "/api/join",
        br#"{"code":"000000","name":"Ada"}"#,
    );
    let wrong = if code(r) == "000000" {
        (403, String::new())
    } else {
        wrong
    };
    assert_eq!(wrong.0, 403, "{}", wrong.1);
    let missing = http(&r.addr, "POST", "/api/join", br#"{"name":"Ada"}"#);
    assert_eq!(missing.0, 400, "{}", missing.1);
}

/// The app shows the reveal: the room closes and hands over every guess (" Paris" and " London" at
/// position 5), once.
fn the_reveal_closes_the_room_once(r: &Room) {
    drain(r);
    r.handle.publish(stage(Ask::Shown, None));
    let closed: Vec<_> = drain(r)
        .into_iter()
        .filter_map(|m| match m {
            ClassMsg::Closed { position, guesses } => Some((position, guesses)),
            _ => None,
        })
        .collect();
    assert_eq!(closed.len(), 1);
    let mut ids: Vec<u32> = closed[0].1.iter().map(|(_, t)| t.id).collect();
    ids.sort();
    assert_eq!((closed[0].0, ids), (5, vec![0, 3]));
    assert_eq!(state(r)["phase"], "scoring");
}

#[test]
fn a_student_joins_with_the_code_guesses_changes_the_guess_and_reads_the_result() {
    let r = start(10);
    r.handle.publish(stage(Ask::Open, None));
    assert_eq!(state(&r)["phase"], "guessing");
    a_join_needs_the_code(&r);
    let ada = join(&r, "Ada");
    let bob = join(&r, "Bob");
    assert_eq!(state(&r)["students"], 2);
    // A word after a word is the token with its space; a changed guess replaces the first.
    let (status, body) = guess(&r, &ada, "London");
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["token"]["text"], " London");
    let (status, body) = guess(&r, &ada, "Paris");
    assert_eq!(
        (status, json(&body)["token"]["id"].clone()),
        (200, 0.into())
    );
    assert_eq!(guess(&r, &bob, " London").0, 200);
    assert_eq!(
        state(&r)["guesses"],
        2,
        "one guess per student, the last one"
    );
    // Not one token: refused with the tokens it starts with.
    let (status, body) = guess(&r, &bob, "Parisian");
    assert_eq!(status, 400);
    assert!(
        json(&body)["error"].as_str().unwrap().contains("' Paris'"),
        "{body}"
    );
    // Before the reveal: no result.
    let path = format!("/api/result?student={ada}");
    assert_eq!(http(&r.addr, "GET", &path, b"").0, 409);
    the_reveal_closes_the_room_once(&r);
    assert_eq!(guess(&r, &bob, "Paris").0, 409, "guessing is closed");
    // The app publishes the ranked results: the room serves each student's.
    let guessed = [tv(0, " Paris"), tv(3, " London")];
    let res = results(
        &guessed,
        &[
            (&ada, Some(gt(tv(0, " Paris"), 0.77, 0))),
            (&bob, Some(gt(tv(3, " London"), 0.012, 2))),
        ],
    );
    r.handle.publish(stage(Ask::Shown, Some(res)));
    assert_eq!(state(&r)["phase"], "revealed");
    let (status, body) = http(&r.addr, "GET", &path, b"");
    assert_eq!(status, 200, "{body}");
    let v = json(&body);
    assert_eq!(
        (v["rank"].clone(), v["guess"]["top1"].clone()),
        (1.into(), true.into())
    );
    assert!((v["prob"].as_f64().unwrap() - 0.77).abs() < 1e-6);
    assert_eq!(v["class_size"], 2);
    assert_eq!(v["class"].as_array().unwrap().len(), 2);
    assert_eq!(v["model_top"][0]["text"], " Paris");
}

#[test]
fn bad_bodies_are_refused_with_a_clear_status_and_nothing_reaches_the_app() {
    let r = start(10);
    r.handle.publish(stage(Ask::Open, None));
    let ada = join(&r, "Ada");
    drain(&r);
    let big = format!(r#"{{"student":"{ada}","text":"{}"}}"#, "x".repeat(5000));
    assert_eq!(http(&r.addr, "POST", "/api/guess", big.as_bytes()).0, 413);
    let mut bad = format!(r#"{{"student":"{ada}","text":""#).into_bytes();
    bad.extend_from_slice(&[0xff, 0xfe, b'"', b'}']);
    let (status, body) = http(&r.addr, "POST", "/api/guess", &bad);
    assert_eq!(status, 400);
    assert!(body.contains("UTF-8"), "{body}");
    assert_eq!(http(&r.addr, "POST", "/api/guess", b"not json").0, 400);
    let unknown = r#"{"student":"0000000000000000","text":"Paris"}"#;
    assert_eq!(
        http(&r.addr, "POST", "/api/guess", unknown.as_bytes()).0,
        403
    );
    let extra = format!(r#"{{"student":"{ada}","text":"Paris","step":true}}"#);
    assert_eq!(http(&r.addr, "POST", "/api/guess", extra.as_bytes()).0, 400);
    assert_eq!(
        guess(&r, &ada, &"y".repeat(65)).0,
        400,
        "a guess is at most 64 bytes"
    );
    assert_eq!(
        guess(&r, &ada, "<|im_end|>").0,
        400,
        "a control token is not a guess"
    );
    let long_q = format!("/api/suggest?student={ada}&q={}", "p".repeat(40));
    assert_eq!(http(&r.addr, "GET", &long_q, b"").0, 400);
    assert!(drain(&r).is_empty(), "nothing reached the app");
    assert_eq!(state(&r)["guesses"], 0);
}

#[test]
fn a_nickname_is_text_one_to_24_characters_without_control_or_direction_characters() {
    let r = start(10);
    let try_name = |name: &str| {
        let body = serde_json::json!({"code": code(&r), "name": name}).to_string();
        http(&r.addr, "POST", "/api/join", body.as_bytes())
    };
    for bad in [
        "",
        "   ",
        &"n".repeat(25),
        "a\u{1b}[31mred",
        "x\u{202e}evil",
        "zero\u{200b}width",
    ] {
        assert_eq!(try_name(bad).0, 400, "{bad:?} must be refused");
    }
    // Markup is only text: kept as typed, for the page to show as text.
    let (status, body) = try_name("<b>Eve</b>");
    assert_eq!(status, 200);
    assert_eq!(json(&body)["name"], "<b>Eve</b>");
    match drain(&r).pop() {
        Some(ClassMsg::Joined { name, .. }) => assert_eq!(name, "<b>Eve</b>"),
        other => panic!("expected a join, got {other:?}"),
    }
}

#[test]
fn a_flood_from_one_student_is_slowed_and_wrong_codes_lock_an_address_out() {
    let r = start(10);
    r.handle.publish(stage(Ask::Open, None));
    let ada = join(&r, "Ada");
    let statuses: Vec<u16> = (0..40).map(|_| guess(&r, &ada, "Paris").0).collect();
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(statuses.iter().filter(|&&s| s == 200).count() >= 16);
    // Another student is not slowed by Ada's flood.
    let bob = join(&r, "Bob");
    assert_eq!(guess(&r, &bob, "London").0, 200);
    assert_eq!(state(&r)["guesses"], 2);
    // Ten wrong codes from one address: the next join is refused, even with the right code.
    let wrong = if code(&r) == "111111" {
        "222222"
    } else {
        "111111"
    };
    for _ in 0..10 {
        let body = format!(r#"{{"code":"{wrong}","name":"Mallory"}}"#);
        assert_eq!(http(&r.addr, "POST", "/api/join", body.as_bytes()).0, 403);
    }
    let body = format!(r#"{{"code":"{}","name":"Mallory"}}"#, code(&r));
    assert_eq!(http(&r.addr, "POST", "/api/join", body.as_bytes()).0, 429);
}

#[test]
fn the_class_is_full_at_its_maximum() {
    let r = start(2);
    join(&r, "Ada");
    join(&r, "Bob");
    let body = format!(r#"{{"code":"{}","name":"Cy"}}"#, code(&r));
    let (status, body) = http(&r.addr, "POST", "/api/join", body.as_bytes());
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("full"));
}

#[test]
fn suggestions_match_the_prefix_never_by_probability() {
    let r = start(10);
    let ada = join(&r, "Ada");
    let (status, body) = http(
        &r.addr,
        "GET",
        &format!("/api/suggest?student={ada}&q=par"),
        b"",
    );
    assert_eq!(status, 200);
    let texts: Vec<String> = json(&body)["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, [" Par", " Paris", "Paris"]);
}

#[test]
fn the_live_stream_sends_the_state_and_a_client_that_never_reads_costs_nothing() {
    let r = start(10);
    r.handle.publish(stage(Ask::Open, None));
    // A client that opens the stream and never reads it.
    let mut idle = TcpStream::connect(&r.addr).unwrap();
    let head = format!("GET /api/events HTTP/1.1\r\nHost: {}\r\n\r\n", r.addr);
    idle.write_all(head.as_bytes()).unwrap();
    // A reader: the first event is the state.
    let mut s = TcpStream::connect(&r.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let ada = join(&r, "Ada");
    for i in 0..10 {
        assert_eq!(
            guess(&r, &ada, if i % 2 == 0 { "Paris" } else { "London" }).0,
            200
        );
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline && !seen.contains("\"guesses\":1") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    assert!(seen.contains("text/event-stream"), "{seen}");
    assert!(seen.contains("event: state"), "{seen}");
    assert!(
        seen.contains("\"guesses\":1"),
        "the newest count reached the stream: {seen}"
    );
    // The room still answers everyone while the idle client holds its stream.
    assert_eq!(state(&r)["guesses"], 1);
    drop(idle);
}

#[test]
fn a_question_answered_in_words_is_asked_aloud_and_takes_no_guess() {
    let r = start(10);
    let ada = join(&r, "Ada");
    r.handle.publish(stage(Ask::Aloud, None));
    assert_eq!(state(&r)["phase"], "aloud");
    assert_eq!(guess(&r, &ada, "Paris").0, 409);
    // Then a token question opens guessing.
    r.handle.publish(stage(Ask::Open, None));
    assert_eq!(state(&r)["phase"], "guessing");
    assert_eq!(guess(&r, &ada, "Paris").0, 200);
}

#[test]
fn a_port_in_use_is_a_clear_error_naming_another() {
    let r = start(10);
    let err = ClassHandle::start(&r.addr, 10, Box::new(|_| {}))
        .err()
        .expect("in use");
    let text = err.to_string();
    assert!(
        text.contains("cannot listen there") && text.contains("pick another port"),
        "{text}"
    );
    let bad = ClassHandle::start("nonsense", 10, Box::new(|_| {}))
        .err()
        .expect("bad");
    assert!(
        bad.to_string().contains("expected an address and port"),
        "{bad}"
    );
}

#[test]
fn dropping_the_server_does_not_wait_for_an_open_stream() {
    let r = start(10);
    let mut s = TcpStream::connect(&r.addr).unwrap();
    let head = format!("GET /api/events HTTP/1.1\r\nHost: {}\r\n\r\n", r.addr);
    s.write_all(head.as_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 256];
    assert!(s.read(&mut buf).unwrap() > 0, "the stream is open");
    // Quitting the app drops the handle: it must return while the student's page still listens.
    let (tx, rx) = mpsc::channel();
    let handle = r.handle;
    std::thread::spawn(move || {
        drop(handle);
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(5)).is_ok(),
        "the server waited for the open stream"
    );
}
