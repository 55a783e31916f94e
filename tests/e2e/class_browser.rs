//! Class mode end to end: the real app in tmux serves the class page (`--class`, docs/CLASS.md), and
//! three students use it in a real headless Chromium, driven over the DevTools protocol. They join with
//! the code read off the teacher's screen, guess (two ` Paris`, one ` London`: by the button, by a
//! suggestion picked with the keyboard), the teacher reveals with `h`, and each page shows the model's
//! choices, the class's guesses and the student's score, while the terminal's class panel counts the
//! same guesses. One page is a 360 px phone, which must not scroll sideways; one nickname is markup,
//! which must stay text. Every wait polls against a deadline, never a fixed sleep.
//! Without Chromium or tmux the test is skipped, except under `CI=true`, where it fails.

use crate::export_browser::{browser_or_skip, HEADLESS_FLAGS};
use crate::support;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::tmux::{self, Tmux};
use tungstenite::{Message, WebSocket};

const PROMPT: &str = "The capital of France is";
/// How long a page may take to show what the test waits for.
const PAGE_WAIT: Duration = Duration::from_secs(20);

/// A student: their nickname, their guess, and whether their page is a phone (360 × 740, mobile).
struct Student {
    name: &'static str,
    guess: &'static str,
    phone: bool,
}

const STUDENTS: [Student; 3] = [
    Student {
        name: "Ada",
        guess: "Paris",
        phone: false,
    },
    Student {
        name: "Bo",
        guess: "Paris",
        phone: false,
    },
    Student {
        name: "<b>Eve</b>",
        guess: "London",
        phone: true,
    },
];

#[test]
fn three_students_guess_in_chromium_and_see_their_scores_at_the_reveal() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    if !tmux::available() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("tmux is needed for this test under CI: apt-get install tmux");
        }
        eprintln!(
            "skipped: no tmux found; install it with `apt-get install tmux` to run this test"
        );
        return;
    }
    let started = Instant::now();

    let port = free_port();
    let (t, code) = teacher(port);

    // The students: one browser, a tab each, opened at the address the QR code holds.
    let (_chromium, mut cdp) = Chromium::start(&browser);
    let pages = students_join(&mut cdp, port, &code);
    t.wait_for("three joined", 20, |s| s.contains("3 joined"));

    students_guess(&mut cdp, &pages);
    let phone = &pages[2];
    assert_eq!(
        cdp.eval(phone, "window.innerWidth"),
        json!(360),
        "the phone's viewport"
    );
    no_sideways_scroll(&mut cdp, phone);

    // Before the reveal the teacher's screen says how many guessed, never what.
    let s = t.wait_for("3 of 3 guessed on the teacher's screen", 20, |s| {
        s.contains("3 of 3 have guessed")
    });
    assert!(
        !s.contains("⟨␣Paris⟩") && !s.contains("⟨␣London⟩"),
        "a guess shows before the reveal:\n{s}"
    );

    // The reveal: the class panel counts the guesses beside the model, the leaderboard names the
    // students (the markup as text).
    t.keys(&["h"]);
    let s = t.wait_for("the class's guesses in the panel", 60, |s| {
        class_count(s, "⟨␣Paris⟩") == Some(2) && class_count(s, "⟨␣London⟩") == Some(1)
    });
    assert!(
        s.contains("leaderboard") && s.contains("<b>Eve</b>"),
        "the leaderboard:\n{s}"
    );

    // Each page: revealed, the model's top choices, the class's distribution, the score.
    let mut places: Vec<u32> = pages
        .iter()
        .zip(&STUDENTS)
        .map(|(page, st)| a_students_result(&mut cdp, page, st))
        .collect();
    places.sort();
    assert_eq!(places, [1, 2, 3], "each student has their own place");
    no_sideways_scroll(&mut cdp, phone);
    eprintln!(
        "class_browser: passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// The teacher: the real app on the real model, serving the class on `port`, in tmux. Waits for the
/// join card (the address and the code, large), closes it and waits for the class panel's open
/// question; returns the terminal and the code.
fn teacher(port: u16) -> (Tmux, String) {
    let cmd = format!(
        "'{}' --model '{}' --prompt '{PROMPT}' --seed 42 --class 127.0.0.1:{port}; echo \"exit=$?\"; sleep 60",
        env!("CARGO_BIN_EXE_nexttoken"),
        support::real_model().display()
    );
    let t = Tmux::start_private("nexttoken-class-browser", &cmd, 120, 36);
    // The join card is open at the start: the address and the code, large.
    let s = t.wait_for("the join card", 60, |s| join_code(s).is_some());
    let code = join_code(&s).unwrap();
    assert!(
        s.contains(&format!("open http://127.0.0.1:{port}/")),
        "the card names the address:\n{s}"
    );
    t.keys(&["J"]);
    t.wait_for("the class panel with its question open", 120, |s| {
        s.contains(&format!("Class · join code {code}"))
            && s.contains("0 of 0 have guessed")
            && !s.contains("J closes this card")
    });
    (t, code)
}

/// Each student opens the class page at `port` with `code` in the address, types a nickname and
/// joins; returns their pages once all three are in the class.
fn students_join(cdp: &mut Cdp, port: u16, code: &str) -> Vec<Page> {
    let url = format!("http://127.0.0.1:{port}/?code={code}");
    let pages: Vec<Page> = STUDENTS.iter().map(|st| cdp.open(&url, st.phone)).collect();
    for (page, st) in pages.iter().zip(&STUDENTS) {
        // The code comes from the address; the student types a nickname and joins.
        let js = format!("document.getElementById('code').value === {}", json!(code));
        cdp.wait(page, "the join form with the code filled in", &js);
        cdp.fill(page, "name", st.name);
        cdp.eval(page, "document.getElementById('join').click()");
        let js = format!(
            "document.body.dataset.joined === 'yes' && document.body.dataset.phase === 'guessing' \
             && document.getElementById('text').textContent.includes({})",
            json!(PROMPT)
        );
        cdp.wait(page, "the class, guessing, with the prompt's text", &js);
        let who = cdp.eval(page, "document.getElementById('who').textContent");
        assert_eq!(who, json!(format!("· {}", st.name)), "the nickname as text");
    }
    for page in &pages {
        cdp.wait(
            page,
            "all three in the class",
            "document.getElementById('count').textContent === '0 of 3 have guessed'",
        );
    }
    pages
}

/// The guesses. Ada uses the button; Bo picks the first suggestion with the arrow key and Enter; Eve,
/// on the phone, types "London". Each page then shows its guess taken and three of three guessed.
fn students_guess(cdp: &mut Cdp, pages: &[Page]) {
    cdp.fill(&pages[0], "guess", STUDENTS[0].guess);
    cdp.eval(&pages[0], "document.getElementById('guess-submit').click()");

    cdp.eval(&pages[1], "document.getElementById('guess').focus()");
    cdp.fill(&pages[1], "guess", STUDENTS[1].guess);
    cdp.wait(
        &pages[1],
        "the suggestions, ␣Paris first",
        "!document.getElementById('suggestions').hidden && \
         document.querySelector('#suggestions li')?.textContent === '␣Paris'",
    );
    cdp.key(&pages[1], "ArrowDown", 40, None);
    cdp.wait(
        &pages[1],
        "the first suggestion highlighted",
        "document.querySelector('#suggestions li').getAttribute('aria-selected') === 'true'",
    );
    cdp.key(&pages[1], "Enter", 13, Some("\r"));

    cdp.fill(&pages[2], "guess", STUDENTS[2].guess);
    cdp.eval(&pages[2], "document.getElementById('guess-submit').click()");

    for (page, st) in pages.iter().zip(&STUDENTS) {
        let js = format!(
            "document.getElementById('my-guess').textContent.startsWith({})",
            json!(format!("Your guess: ␣{}", st.guess))
        );
        cdp.wait(page, "the page showing the guess taken", &js);
        cdp.wait(
            page,
            "the count of guesses",
            "document.getElementById('count').textContent === '3 of 3 have guessed'",
        );
    }
}

/// One page after the reveal: revealed, the model's top choices, the class's distribution, the
/// student's own row marked and the score; returns the student's place.
fn a_students_result(cdp: &mut Cdp, page: &Page, st: &Student) -> u32 {
    cdp.wait(
        page,
        "the result and the score",
        "document.body.dataset.phase === 'revealed' && !document.getElementById('result').hidden \
         && document.getElementById('score').textContent !== ''",
    );
    let r = cdp.eval(page, RESULT_FACTS);
    let ctx = format!("{}'s page: {r:#}", st.name);
    let mine = format!("␣{}", st.guess);
    let text = r["text"].as_str().unwrap();
    assert!(text.contains(&format!("Your guess: {mine}")), "{ctx}");
    assert!(text.contains("The model's top choices"), "{ctx}");
    assert!(text.contains("The class · 3 guesses"), "{ctx}");
    let model = r["model"].as_array().unwrap();
    assert_eq!(model.len(), 5, "the model's five likeliest: {ctx}");
    assert_eq!(model[0]["label"], "␣Paris", "{ctx}");
    let class: Vec<(&str, &str)> = r["class"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["label"].as_str().unwrap(),
                row["value"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        class,
        [("␣Paris", "2 · 67%"), ("␣London", "1 · 33%")],
        "{ctx}"
    );
    let marked: Vec<&Value> = r["class"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["mine"] == true)
        .collect();
    assert!(
        marked.len() == 1 && marked[0]["label"] == mine.as_str(),
        "the student's own row is marked: {ctx}"
    );
    let score = r["score"].as_str().unwrap();
    assert!(score.starts_with("1 guess · "), "{ctx}");
    assert!(score.contains(" of 3"), "{ctx}");
    let place: u32 = score
        .split("place ")
        .nth(1)
        .and_then(|p| p.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no place in the score: {ctx}"));
    if st.guess == "Paris" {
        assert!(text.contains("rank 1 of the whole vocabulary"), "{ctx}");
        assert!(text.contains("The model's own top choice!"), "{ctx}");
        assert!(score.contains("1 model's top-1"), "{ctx}");
        assert!(place <= 2, "{ctx}");
    } else {
        assert!(!text.contains("rank 1 of"), "{ctx}");
        assert!(score.contains("0 model's top-1"), "{ctx}");
        assert_eq!(place, 3, "{ctx}");
    }
    assert_eq!(r["markup"], false, "a nickname became an element: {ctx}");
    place
}

/// What a page shows after the reveal, as one JSON object.
const RESULT_FACTS: &str = "(() => {
  const r = document.getElementById('result');
  const rows = (sel) => [...r.querySelectorAll(sel)].map((li) => ({
    label: li.querySelector('.label .tok').textContent,
    value: li.querySelector('.val').textContent,
    mine: li.classList.contains('mine'),
  }));
  return {
    text: r.innerText,
    model: rows('ol.model li'),
    class: rows('ol.class li'),
    score: document.getElementById('score').textContent,
    markup: [...document.querySelectorAll('b')].some((b) => b.textContent.includes('Eve')),
  };
})()";

fn no_sideways_scroll(cdp: &mut Cdp, page: &Page) {
    let w = cdp.eval(page, "document.documentElement.scrollWidth");
    assert!(
        w.as_u64().is_some_and(|w| w <= 360),
        "the 360 px page scrolls sideways: scrollWidth {w}"
    );
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The six digits after "join code " (the card, or the class panel's title).
fn join_code(screen: &str) -> Option<String> {
    screen.match_indices("join code ").find_map(|(at, m)| {
        let rest = &screen[at + m.len()..];
        let code: String = rest.chars().take_while(char::is_ascii_digit).collect();
        (code.len() == 6).then_some(code)
    })
}

/// The class panel's count for a token: its row reads "⟨␣Paris⟩      2  █████      78% #1".
fn class_count(screen: &str, token: &str) -> Option<u32> {
    screen
        .lines()
        .flat_map(|l| {
            l.match_indices(token)
                .map(move |(at, m)| &l[at + m.len()..])
        })
        .find_map(|rest| rest.split_whitespace().next()?.parse().ok())
}

/// As JavaScript's `!!v`, for the values `returnByValue` gives.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Headless Chromium with a fresh profile, killed on drop.
struct Chromium {
    child: Child,
    _profile: tempfile::TempDir,
}

impl Chromium {
    /// Starts the browser and connects to it over the DevTools websocket it names on stderr.
    fn start(bin: &Path) -> (Chromium, Cdp) {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(bin)
            .arg("--headless")
            .args(HEADLESS_FLAGS)
            .arg("--remote-debugging-port=0")
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        // Read stderr to its end, so that the browser never blocks on a full pipe.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(ws) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(ws.trim().to_string());
                }
            }
        });
        let chromium = Chromium {
            child,
            _profile: profile,
        };
        let ws = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("Chromium did not say where its DevTools websocket listens");
        (chromium, Cdp::connect(&ws))
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tab, reached through its DevTools session.
struct Page {
    session: String,
}

/// A small DevTools protocol client: one websocket to the browser; each command is answered by the
/// message with its id (the events between are dropped); a tab's commands carry its session id.
struct Cdp {
    ws: WebSocket<TcpStream>,
    next_id: u64,
}

impl Cdp {
    fn connect(url: &str) -> Cdp {
        let host = url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("not a ws:// address: {url}"));
        let stream = TcpStream::connect(host).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let (ws, _) = tungstenite::client(url, stream)
            .unwrap_or_else(|e| panic!("the DevTools handshake failed: {e}"));
        Cdp { ws, next_id: 0 }
    }

    /// One command; `Err` with the browser's error when it refuses.
    fn call(&mut self, page: Option<&Page>, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(p) = page {
            msg["sessionId"] = json!(p.session);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .unwrap_or_else(|e| panic!("cannot send {method}: {e}"));
        loop {
            let reply = match self.ws.read() {
                Ok(Message::Text(t)) => serde_json::from_str::<Value>(t.as_str()).unwrap(),
                Ok(_) => continue,
                Err(e) => panic!("no answer to {method}: {e}"),
            };
            if reply["id"] == id {
                return match reply.get("error") {
                    Some(e) => Err(format!("{method}: {e}")),
                    None => Ok(reply["result"].clone()),
                };
            }
        }
    }

    /// A new tab on `url`; a phone's screen (360 × 740 CSS pixels, mobile) when `phone`.
    fn open(&mut self, url: &str, phone: bool) -> Page {
        let target = self
            .call(None, "Target.createTarget", json!({"url": "about:blank"}))
            .unwrap()["targetId"]
            .clone();
        let attached = self
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
            )
            .unwrap();
        let page = Page {
            session: attached["sessionId"].as_str().unwrap().to_string(),
        };
        // Each tab behaves as the focused one: focus() and keys work in all three.
        self.call(
            Some(&page),
            "Emulation.setFocusEmulationEnabled",
            json!({"enabled": true}),
        )
        .unwrap();
        if phone {
            let screen =
                json!({"width": 360, "height": 740, "deviceScaleFactor": 2, "mobile": true});
            self.call(Some(&page), "Emulation.setDeviceMetricsOverride", screen)
                .unwrap();
        }
        self.call(Some(&page), "Page.navigate", json!({"url": url}))
            .unwrap();
        page
    }

    /// The value of a JavaScript expression in the tab (a promise awaited); `Err` when it throws.
    fn try_eval(&mut self, page: &Page, js: &str) -> Result<Value, String> {
        let params = json!({"expression": js, "awaitPromise": true, "returnByValue": true});
        let r = self.call(Some(page), "Runtime.evaluate", params)?;
        match r.get("exceptionDetails") {
            Some(e) => Err(format!("{js} threw: {e}")),
            None => Ok(r["result"]["value"].clone()),
        }
    }

    fn eval(&mut self, page: &Page, js: &str) -> Value {
        self.try_eval(page, js).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Polls `js` until it is truthy (errors while the page loads count as not yet); fails after
    /// `PAGE_WAIT` with what the page shows.
    fn wait(&mut self, page: &Page, what: &str, js: &str) -> Value {
        let deadline = Instant::now() + PAGE_WAIT;
        loop {
            let v = self.try_eval(page, js);
            if let Ok(v) = &v {
                if truthy(v) {
                    return v.clone();
                }
            }
            if Instant::now() > deadline {
                let shown = self.try_eval(
                    page,
                    "`phase ${document.body.dataset.phase}:\\n${document.body.innerText}`",
                );
                panic!("timed out waiting for {what} ({js} gave {v:?}); the page showed {shown:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types into an input as a user does: its value, then an `input` event.
    fn fill(&mut self, page: &Page, id: &str, text: &str) {
        let js = format!(
            "(() => {{ const e = document.getElementById({}); e.focus(); e.value = {};
               e.dispatchEvent(new Event('input', {{bubbles: true}})); return true; }})()",
            json!(id),
            json!(text)
        );
        self.eval(page, &js);
    }

    /// A key pressed and released in the tab's focused element (`text` for keys that type, as Enter).
    fn key(&mut self, page: &Page, key: &str, code: u32, text: Option<&str>) {
        let mut down =
            json!({"type": "rawKeyDown", "key": key, "code": key, "windowsVirtualKeyCode": code});
        if let Some(t) = text {
            down["type"] = json!("keyDown");
            down["text"] = json!(t);
        }
        self.call(Some(page), "Input.dispatchKeyEvent", down)
            .unwrap();
        let up = json!({"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code});
        self.call(Some(page), "Input.dispatchKeyEvent", up).unwrap();
    }
}
