//! Class mode under load: the real engine, the real `App` and the real class server in one process,
//! with simulated students on loopback. A benchmark, not a test: it prints figures and checks that
//! every guess is counted once, but sets no time limit.
//!
//! `cargo bench --bench class_load -- [--students 200] [--steps 24] [--warmup 2] [--threads 8]
//! [--poll-ms 0] [--pace-ms 1000] [--settle-ms 0] [--phases none,class,none,class] [--json]`; `NEXTTOKEN_MODEL` overrides the model.
//!
//! Each phase starts fresh (a new engine, app and server: every phase steps the same positions from
//! the same prompt) and runs the terminal loop of `cmd::tui::event_loop` without drawing: each `Msg`
//! through `cmd::tui::update` (`App::update`, then `ui::measure`), then `app.class_stage()` published
//! to the room, then the commands sent to the engine. The teacher is a script in that loop: wait until
//! every student has guessed (or a deadline), `h`, wait for the class's results (the room then says
//! "revealed"), wait until the students have read their results (or a deadline), then space, keeping
//! one pace in every phase (a step at most every `--pace-ms` from the question opening: a step right
//! after a pause costs more than one straight after another, so both phases must pause alike). The step
//! latency is from the space key (sent on the loop's channel, as the input thread sends it) to the
//! `Stepped` reply folded, measured and published; "rest" is that minus the engine's own pass time.
//!
//! A phase `none` has class mode on and nobody joined; a phase `class` has `--students` students,
//! each on its own live stream (`/api/events`, read by one tokio thread) or, with `--poll-ms MS`,
//! asking `/api/state` every MS (the page's fallback), and acting on a pool of `--threads` threads
//! with blocking `ureq`: a suggestion, a guess per question, their result after each reveal. Each
//! student keeps to the room's rate (8 requests a second, bursts of 16) with the room's own bucket.
//! The students run on this machine's cores: with live streams they are idle while the model steps,
//! but polling (`--poll-ms`) is their own CPU as much as the server's.
//!
//! Checked (a failure is printed as PROBLEM, never a panic): each reveal's `ClassMsg::Closed` carries
//! one guess per student, from distinct students; the app's poll at that position counts them all; the
//! room then says "revealed". At the end of a class phase the server's handle is dropped while the
//! students' live streams are still open, as the terminal drops it when the teacher quits, and whether
//! that returns is reported.

use nexttoken::app::{App, AppConfig, Key, Msg, ThemeKind};
use nexttoken::class::limits::Bucket;
use nexttoken::class::ClassHandle;
use nexttoken::protocol::class::{Ask, ClassMsg};
use nexttoken::protocol::{Event, Failure, SamplerSettings, TokenView};
use nexttoken::worker::{self, EngineConfig, EngineHandle};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "common.rs"]
#[allow(dead_code)]
mod common;

/// As `cmd/tui.rs`.
const TICK: Duration = Duration::from_millis(100);
const TOP_K_SHOWN: usize = 20;
const ATTENTION_WINDOW: usize = 16;
/// The terminal the app believes it has (a projector's: every panel).
const WIDTH: u16 = 160;
const HEIGHT: u16 = 48;
/// The teacher waits this long at most for every guess, and for every student's result.
const GUESS_DEADLINE: Duration = Duration::from_secs(30);
const RESULT_DEADLINE: Duration = Duration::from_secs(10);
/// Guesses the students type, in turn (each must be one token of the vocabulary).
const GUESSES: &[&str] = &[
    " the", " Paris", " a", " not", " one", " France", " also", " in", " an", " known", " home",
    " located", " famous", " very", ",", ".",
];

struct Opts {
    students: usize,
    steps: usize,
    warmup: usize,
    threads: usize,
    poll_ms: u64,
    settle_ms: u64,
    pace_ms: u64,
    phases: Vec<String>,
    json: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        students: 200,
        steps: 24,
        warmup: 2,
        threads: 8,
        poll_ms: 0,
        settle_ms: 0,
        pace_ms: 1000,
        phases: ["none", "class", "none", "class"]
            .map(String::from)
            .to_vec(),
        json: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = |i: usize| -> &str {
            args.get(i + 1)
                .map(String::as_str)
                .unwrap_or_else(|| panic!("{} needs a value", args[i]))
        };
        let num = |i: usize| -> usize {
            val(i)
                .parse()
                .unwrap_or_else(|_| panic!("{} takes a number", args[i]))
        };
        match args[i].as_str() {
            "--students" => o.students = num(i),
            "--steps" => o.steps = num(i),
            "--warmup" => o.warmup = num(i),
            "--threads" => o.threads = num(i).max(1),
            "--poll-ms" => o.poll_ms = num(i) as u64,
            "--settle-ms" => o.settle_ms = num(i) as u64,
            "--pace-ms" => o.pace_ms = num(i) as u64,
            "--phases" => o.phases = val(i).split(',').map(str::to_string).collect(),
            "--json" => {
                o.json = true;
                i += 1;
                continue;
            }
            // `cargo bench` passes `--bench`; anything else unknown is ignored the same way.
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    for p in &o.phases {
        assert!(
            p == "none" || p == "class",
            "--phases: none or class, not {p}"
        );
    }
    o
}

fn main() {
    let o = opts();
    // As `cmd::run`: size the thread pools before anything touches candle.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    nexttoken::engine::set_threads(cores);
    let model = common::model_path();
    let rss_start = rss();
    let mut results = vec![];
    for name in &o.phases {
        let n = if name == "class" { o.students } else { 0 };
        let r = run_phase(&o, &model, name, n);
        results.push(r);
    }
    report(&o, &model, cores, rss_start, &results);
}

// ---------------------------------------------------------------------------------------------
// The terminal's side: engine, app, server, and the loop of `cmd::tui::event_loop`.

/// What the loop saw of one message, after folding it.
enum Seen {
    Stepped {
        engine_ms: f64,
    },
    Closed {
        position: usize,
        n: usize,
        unique: usize,
    },
    Guessed,
    Joined,
    Failed(String),
    Other,
}

/// UI thread time per kind of message (update + measure + publish + send).
#[derive(Default, Clone)]
struct UiTime {
    guessed: (u64, Duration),
    joined: (u64, Duration),
    closed: (u64, Duration),
    other: (u64, Duration),
}

struct Rig {
    app: App,
    engine: Option<EngineHandle>,
    class: Option<ClassHandle>,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    start: Instant,
    last_tick: Instant,
    vocab: Option<Arc<Vec<TokenView>>>,
    ui: UiTime,
}

impl Rig {
    /// As `cmd::tui::run`: the server (`cmd::class_room::start`), the engine (`spawn_engine`), the app
    /// (`new_app` then `with_class`), and the first `Measured`.
    fn start(model: &std::path::Path, max: usize) -> Rig {
        let (tx, rx) = mpsc::channel::<Msg>();
        let notify_tx = Mutex::new(tx.clone());
        let notify = Box::new(move |m| {
            if let Ok(tx) = notify_tx.lock() {
                let _ = tx.send(Msg::Class(m));
            }
        });
        let class = ClassHandle::start("127.0.0.1:0", max, notify).expect("the class server");
        let engine_tx = tx.clone();
        let engine = worker::spawn(
            EngineConfig {
                model_path: model.to_path_buf(),
                tokenizer_path: None,
                sampler: SamplerSettings::default(),
                top_k_shown: TOP_K_SHOWN,
                attention_window: ATTENTION_WINDOW,
                kv_cache: true,
                kv_precision: Default::default(),
                twin: None,
                server: None,
                draft: None,
                vocabulary: true,
            },
            move |ev| {
                let _ = engine_tx.send(Msg::Engine(ev));
            },
        );
        let app = App::new(AppConfig {
            prompt: nexttoken::cli::DEFAULT_PROMPT.into(),
            chat: false,
            theme: ThemeKind::Default,
            settings: SamplerSettings::default(),
            width: WIDTH,
            height: HEIGHT,
        })
        .with_classroom(false, false, None)
        .with_class(class.card().clone());
        let mut rig = Rig {
            app,
            engine: Some(engine),
            class: Some(class),
            tx,
            rx,
            start: Instant::now(),
            last_tick: Instant::now(),
            vocab: None,
            ui: UiTime::default(),
        };
        let map = nexttoken::ui::measure(&rig.app);
        rig.app.update(Msg::Measured(map));
        rig
    }

    fn addr(&self) -> SocketAddr {
        let url = &self.class.as_ref().unwrap().card().url;
        url.trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("the card's address")
    }

    /// One turn of the loop (without the draw): wait for messages or the tick, fold each one, publish
    /// the stage, send the commands. Returns what was seen, each with the time it was done.
    fn turn(&mut self) -> Vec<(Seen, Instant)> {
        let mut msgs = match self.rx.recv_timeout(TICK) {
            Ok(msg) => vec![msg],
            Err(RecvTimeoutError::Timeout) => vec![],
            Err(RecvTimeoutError::Disconnected) => panic!("the channel closed"),
        };
        msgs.extend(self.rx.try_iter());
        if self.last_tick.elapsed() >= TICK {
            self.last_tick = Instant::now();
            let now_ms = self.start.elapsed().as_millis() as u64;
            msgs.push(Msg::Tick { now_ms });
        }
        let mut seen = vec![];
        let mut queue = VecDeque::from(msgs);
        while let Some(msg) = queue.pop_front() {
            let began = Instant::now();
            let class = self.class.as_ref();
            match (class, &msg) {
                (Some(c), Msg::Engine(Event::Vocabulary(table))) => {
                    self.vocab = Some(table.clone());
                    c.set_vocabulary(table.to_vec())
                }
                (Some(c), Msg::Engine(Event::Loaded(info))) => c.set_model(&info.name),
                _ => {}
            }
            let what = match &msg {
                Msg::Engine(Event::Stepped(r)) => Seen::Stepped {
                    engine_ms: r.pass.ms,
                },
                Msg::Engine(Event::Failed { what, reason }) => {
                    Seen::Failed(format!("{what:?}: {reason}"))
                }
                Msg::Class(ClassMsg::Closed { position, guesses }) => {
                    let ids: HashSet<_> = guesses.iter().map(|(id, _)| *id).collect();
                    Seen::Closed {
                        position: *position,
                        n: guesses.len(),
                        unique: ids.len(),
                    }
                }
                Msg::Class(ClassMsg::Guessed { .. }) => Seen::Guessed,
                Msg::Class(ClassMsg::Joined { .. }) => Seen::Joined,
                _ => Seen::Other,
            };
            let cmds = nexttoken::cmd::tui::update(&mut self.app, msg);
            if let (Some(c), Some(stage)) = (class, self.app.class_stage()) {
                c.publish(stage);
            }
            for cmd in cmds {
                if self.engine.as_ref().unwrap().send(cmd).is_err() && !self.app.quit {
                    let gone = Event::Failed {
                        what: Failure::Engine,
                        reason: "the engine thread has stopped".into(),
                    };
                    queue.push_back(Msg::Engine(gone));
                }
            }
            let done = Instant::now();
            let took = done - began;
            let slot = match what {
                Seen::Guessed => &mut self.ui.guessed,
                Seen::Joined => &mut self.ui.joined,
                Seen::Closed { .. } => &mut self.ui.closed,
                _ => &mut self.ui.other,
            };
            slot.0 += 1;
            slot.1 += took;
            seen.push((what, done));
        }
        seen
    }

    /// A key from the teacher, as the input thread sends it.
    fn press(&self, c: char) -> Instant {
        let at = Instant::now();
        self.tx.send(Msg::Key(Key::Char(c))).unwrap();
        at
    }

    fn stop(&mut self) {
        if let Some(e) = self.engine.take() {
            e.quit();
        }
        // Dropping the handle stops the server (its thread is joined).
        drop(self.class.take());
    }
}

// ---------------------------------------------------------------------------------------------
// One phase: the teacher's script over `steps` steps.

#[derive(Default, Clone)]
struct StepRec {
    position: usize,
    /// Question open (the step before folded) to the last guess folded.
    guess_window_ms: f64,
    /// The first guess folded to the last.
    guess_burst_ms: f64,
    /// `h` to the class's results in the app.
    reveal_ms: f64,
    /// Space to `Stepped` folded, measured and published.
    step_ms: f64,
    /// The engine's own time for the pass.
    engine_ms: f64,
    closed: Option<(usize, usize)>,
    poll_guesses: Option<u32>,
    room_phase: String,
    results_read: usize,
    guesses_timed_out: bool,
}

struct PhaseResult {
    name: String,
    students: usize,
    steps: Vec<StepRec>,
    ui: UiTime,
    join_ms: f64,
    counters: Snapshot,
    rss_loaded_kb: u64,
    rss_end_kb: u64,
    rss_per_step_kb: Vec<u64>,
    hwm_kb: u64,
    wall_s: f64,
    problems: Vec<String>,
    drop_with_streams: Option<String>,
}

enum Teacher {
    Joining,
    WaitOpen,
    Guessing {
        position: usize,
        deadline: Instant,
    },
    Revealing {
        position: usize,
        at: Instant,
    },
    Reading {
        round: u64,
        deadline: Instant,
        /// When every student had read their result (or the deadline passed).
        read_at: Option<Instant>,
    },
    Stepping {
        at: Instant,
    },
}

fn run_phase(o: &Opts, model: &std::path::Path, name: &str, n: usize) -> PhaseResult {
    eprintln!("[{name}] loading the model, starting the server ({n} students)");
    let phase_start = Instant::now();
    let mut rig = Rig::start(model, o.students.max(1));
    let addr = rig.addr();
    let code = rig.class.as_ref().unwrap().card().code.clone();
    let teacher_http = agent();
    let mut problems = vec![];
    // Load and read the prompt: until the first question is open.
    while !(rig.app.session.is_some()
        && !rig.app.is_busy()
        && rig.app.class_stage().is_some_and(|s| s.ask == Ask::Open))
    {
        for (s, _) in rig.turn() {
            if let Seen::Failed(why) = s {
                panic!("the engine failed while loading: {why}");
            }
        }
    }
    let rss_loaded_kb = rss().0;
    let texts = usable_guesses(rig.vocab.as_deref().expect("the vocabulary"), &mut problems);
    let shared = Arc::new(Shared::default());
    let join_start = Instant::now();
    let students = (n > 0).then(|| {
        Students::start(
            addr,
            code,
            n,
            o.threads,
            o.poll_ms,
            texts.clone(),
            shared.clone(),
        )
    });
    let class = Class {
        o,
        name,
        n,
        join_start,
        shared: &shared,
        http: &teacher_http,
        addr,
    };
    let mut t = Teaching::new();
    while t.recs.len() < o.warmup + o.steps {
        let seen = rig.turn();
        let now = Instant::now();
        t.note(&seen, &mut problems);
        // The teacher acts on what is on screen now, as often as something changes.
        while t.recs.len() < o.warmup + o.steps && t.act(&rig, &class, &seen, now) {}
    }
    let wall_s = phase_start.elapsed().as_secs_f64();
    let counters = shared.snapshot().minus(&t.counters_at_warm);
    let ui = rig.ui.minus(&t.ui_at_warm);
    let measured: Vec<StepRec> = t.recs.split_off(o.warmup);
    check_steps(&measured, n, &mut problems);
    let drop_with_streams = students.and_then(|st| quit_with_streams(&mut rig, st));
    rig.stop();
    let (rss_end_kb, hwm_kb) = rss();
    PhaseResult {
        name: name.to_string(),
        students: n,
        steps: measured,
        ui,
        join_ms: t.join_ms,
        counters,
        rss_loaded_kb,
        rss_end_kb,
        rss_per_step_kb: t.rss_per_step_kb,
        hwm_kb,
        wall_s,
        problems,
        drop_with_streams,
    }
}

/// What a phase's teacher acts in: the options, the class's size and the room's address.
struct Class<'a> {
    o: &'a Opts,
    name: &'a str,
    n: usize,
    join_start: Instant,
    shared: &'a Shared,
    http: &'a ureq::Agent,
    addr: SocketAddr,
}

/// The teacher's side of a phase: what they wait for, and the steps measured so far.
struct Teaching {
    teacher: Teacher,
    /// When the last step was folded (or the class joined): the question's opening.
    since: Instant,
    cur: StepRec,
    recs: Vec<StepRec>,
    rss_per_step_kb: Vec<u64>,
    ui_at_warm: UiTime,
    counters_at_warm: Snapshot,
    /// What the room handed over at each position's reveal: (guesses, unique students).
    closed: HashMap<usize, (usize, usize)>,
    last_guessed_at: Instant,
    first_guessed_at: Option<Instant>,
    join_ms: f64,
}

impl Teaching {
    fn new() -> Self {
        Teaching {
            teacher: Teacher::Joining,
            since: Instant::now(),
            cur: StepRec::default(),
            recs: vec![],
            rss_per_step_kb: vec![],
            ui_at_warm: UiTime::default(),
            counters_at_warm: Snapshot::default(),
            closed: HashMap::new(),
            last_guessed_at: Instant::now(),
            first_guessed_at: None,
            join_ms: 0.0,
        }
    }

    /// Takes note of what the app's turn saw: the room closing, guesses arriving, failures.
    fn note(&mut self, seen: &[(Seen, Instant)], problems: &mut Vec<String>) {
        for (s, at) in seen {
            match s {
                Seen::Closed {
                    position,
                    n: count,
                    unique,
                } => {
                    self.closed.insert(*position, (*count, *unique));
                }
                Seen::Guessed => {
                    self.last_guessed_at = *at;
                    self.first_guessed_at.get_or_insert(*at);
                }
                Seen::Failed(why) => problems.push(format!("engine failure: {why}")),
                _ => {}
            }
        }
    }

    /// The teacher acts once on what is on screen; returns whether they moved on to another wait.
    fn act(&mut self, rig: &Rig, c: &Class, seen: &[(Seen, Instant)], now: Instant) -> bool {
        let before = std::mem::discriminant(&self.teacher);
        let next = match self.teacher {
            Teacher::Joining => self.joining(rig, c, now),
            Teacher::WaitOpen => self.wait_open(rig, now),
            Teacher::Guessing { position, deadline } => {
                self.guessing(rig, c, (position, deadline), now)
            }
            Teacher::Revealing { position, at } => self.revealing(rig, c, (position, at), now),
            Teacher::Reading {
                round,
                deadline,
                read_at,
            } => self.reading(rig, c, (round, deadline, read_at), now),
            Teacher::Stepping { at } => self.stepping(rig, c, at, seen),
        };
        if let Some(next) = next {
            self.teacher = next;
        }
        std::mem::discriminant(&self.teacher) != before
    }

    fn joining(&mut self, rig: &Rig, c: &Class, now: Instant) -> Option<Teacher> {
        let roster = rig.app.class.as_ref().unwrap().roster.len();
        if roster >= c.n {
            self.join_ms = c.join_start.elapsed().as_secs_f64() * 1e3;
            if c.n > 0 {
                eprintln!(
                    "[{}] {} students joined in {:.0} ms",
                    c.name, c.n, self.join_ms
                );
            }
            self.since = now;
            self.first_guessed_at = None;
            return Some(Teacher::WaitOpen);
        }
        if c.join_start.elapsed() > Duration::from_secs(120) {
            panic!("only {roster} of {} students joined", c.n);
        }
        None
    }

    fn wait_open(&mut self, rig: &Rig, now: Instant) -> Option<Teacher> {
        let app = &rig.app;
        let open = app.class_stage().is_some_and(|s| s.ask == Ask::Open);
        if app.is_busy() || !open {
            return None;
        }
        let position = app.session.as_ref().unwrap().next.position;
        self.cur = StepRec {
            position,
            ..StepRec::default()
        };
        Some(Teacher::Guessing {
            position,
            deadline: now + GUESS_DEADLINE,
        })
    }

    fn guessing(
        &mut self,
        rig: &Rig,
        c: &Class,
        (position, deadline): (usize, Instant),
        now: Instant,
    ) -> Option<Teacher> {
        let class = rig.app.class.as_ref().unwrap();
        let all = c.n == 0 || class.guessed == Some((position, c.n));
        if !all && now < deadline {
            return None;
        }
        self.cur.guesses_timed_out = !all;
        if c.n > 0 {
            self.cur.guess_window_ms = (self.last_guessed_at - self.since).as_secs_f64() * 1e3;
            self.cur.guess_burst_ms = self
                .first_guessed_at
                .map_or(0.0, |f| (self.last_guessed_at - f).as_secs_f64() * 1e3);
        }
        let at = rig.press('h');
        Some(Teacher::Revealing { position, at })
    }

    fn revealing(
        &mut self,
        rig: &Rig,
        c: &Class,
        (position, at): (usize, Instant),
        now: Instant,
    ) -> Option<Teacher> {
        let app = &rig.app;
        let ready = app
            .class_stage()
            .is_some_and(|s| s.results.is_some() && s.position == position);
        if !ready {
            return None;
        }
        self.cur.reveal_ms = (now - at).as_secs_f64() * 1e3;
        self.cur.closed = self.closed.get(&position).copied();
        self.cur.poll_guesses = app
            .class
            .as_ref()
            .unwrap()
            .polls
            .iter()
            .find(|p| p.position == position)
            .map(|p| p.guesses());
        // The room's word, as a student's page would read it.
        let state = get_json(c.http, &format!("http://{}/api/state", c.addr));
        self.cur.room_phase = state["phase"].as_str().unwrap_or("?").to_string();
        Some(Teacher::Reading {
            round: state["round"].as_u64().unwrap_or(0),
            deadline: now + RESULT_DEADLINE,
            read_at: None,
        })
    }

    fn reading(
        &mut self,
        rig: &Rig,
        c: &Class,
        (round, deadline, read_at): (u64, Instant, Option<Instant>),
        now: Instant,
    ) -> Option<Teacher> {
        let read = c.shared.results_read(round);
        let (read_at, next) = match read_at {
            None if read >= c.n || now >= deadline => {
                self.cur.results_read = read;
                let next = Teacher::Reading {
                    round,
                    deadline,
                    read_at: Some(now),
                };
                (Some(now), Some(next))
            }
            r => (r, None),
        };
        // The teacher talks about the reveal for `--settle-ms` before stepping on. And keeps one
        // pace with or without a class: a step at most every `--pace-ms` from the question opening,
        // so that both phases step after the same pause.
        let settled = read_at.is_some_and(|t| now >= t + Duration::from_millis(c.o.settle_ms))
            && now >= self.since + Duration::from_millis(c.o.pace_ms);
        if !settled {
            return next;
        }
        // The model ended its turn: the first press says so, the second steps.
        let ended = rig.app.ended_with().is_some();
        let at = rig.press(' ');
        if ended {
            rig.press(' ');
        }
        Some(Teacher::Stepping { at })
    }

    fn stepping(
        &mut self,
        rig: &Rig,
        c: &Class,
        at: Instant,
        seen: &[(Seen, Instant)],
    ) -> Option<Teacher> {
        let (Seen::Stepped { engine_ms }, done) = seen
            .iter()
            .find(|(s, _)| matches!(s, Seen::Stepped { .. }))?
        else {
            return None;
        };
        self.cur.step_ms = (*done - at).as_secs_f64() * 1e3;
        self.cur.engine_ms = *engine_ms;
        self.since = *done;
        self.first_guessed_at = None;
        self.recs.push(std::mem::take(&mut self.cur));
        self.rss_per_step_kb.push(rss().0);
        if self.recs.len() == c.o.warmup {
            self.ui_at_warm = rig.ui.clone();
            self.counters_at_warm = c.shared.snapshot();
        }
        Some(Teacher::WaitOpen)
    }
}

/// What went wrong in the measured steps: a guess not in on time, the room or the app counting other
/// than one guess per student, the room not revealed, a result unread.
fn check_steps(measured: &[StepRec], n: usize, problems: &mut Vec<String>) {
    for r in measured {
        if r.guesses_timed_out {
            problems.push(format!(
                "position {}: not every student guessed in time",
                r.position
            ));
        }
        if r.closed != Some((n, n)) {
            problems.push(format!(
                "position {}: the room closed with {:?} guesses (of them unique students), expected {n}",
                r.position, r.closed
            ));
        }
        if r.poll_guesses != Some(n as u32) {
            problems.push(format!(
                "position {}: the app's poll counts {:?} guesses, expected {n}",
                r.position, r.poll_guesses
            ));
        }
        if r.room_phase != "revealed" {
            problems.push(format!(
                "position {}: the room said {:?} after the results, not \"revealed\"",
                r.position, r.room_phase
            ));
        }
        if r.results_read < n {
            problems.push(format!(
                "position {}: {} of {n} students read their result",
                r.position, r.results_read
            ));
        }
    }
}

/// Quitting with the students' live streams still open: the real terminal drops its handle the same
/// way when the teacher quits while the pages are open. Says how the drop went (`None` without
/// streams), and stops the students.
fn quit_with_streams(rig: &mut Rig, mut st: Students) -> Option<String> {
    let streams = st.open_streams();
    if streams == 0 {
        st.stop();
        return None;
    }
    if let Some(e) = rig.engine.take() {
        e.quit();
    }
    let handle = rig.class.take().unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let began = Instant::now();
    std::thread::spawn(move || {
        drop(handle);
        let _ = done_tx.send(());
    });
    let waited = Duration::from_secs(3);
    let verdict = match done_rx.recv_timeout(waited) {
        Ok(()) => format!(
            "returned in {:.0} ms with {streams} live streams open",
            began.elapsed().as_secs_f64() * 1e3
        ),
        Err(_) => {
            st.stop();
            let after = match done_rx.recv_timeout(Duration::from_secs(20)) {
                Ok(()) => format!(
                    "returned {:.1} s after the students closed their streams",
                    began.elapsed().as_secs_f64() - waited.as_secs_f64()
                ),
                Err(_) => "still blocked 20 s after the students closed their streams".to_string(),
            };
            format!(
                "BLOCKED: still waiting after {} s with {streams} live streams open; {after}",
                waited.as_secs()
            )
        }
    };
    st.stop();
    Some(verdict)
}

impl UiTime {
    fn minus(&self, b: &UiTime) -> UiTime {
        let d = |x: (u64, Duration), y: (u64, Duration)| (x.0 - y.0, x.1 - y.1);
        UiTime {
            guessed: d(self.guessed, b.guessed),
            joined: d(self.joined, b.joined),
            closed: d(self.closed, b.closed),
            other: d(self.other, b.other),
        }
    }
}

/// The guesses that are one token of this vocabulary (a guess that is not would be refused, 400).
fn usable_guesses(vocab: &[TokenView], problems: &mut Vec<String>) -> Vec<String> {
    let known: HashSet<&str> = vocab.iter().map(|t| t.text.as_str()).collect();
    let ok: Vec<String> = GUESSES
        .iter()
        .filter(|g| known.contains(**g))
        .map(|g| g.to_string())
        .collect();
    if ok.len() < GUESSES.len() {
        problems.push(format!(
            "not one token, left out: {:?}",
            GUESSES
                .iter()
                .filter(|g| !known.contains(**g))
                .collect::<Vec<_>>()
        ));
    }
    assert!(!ok.is_empty(), "no guess is one token of this vocabulary");
    ok
}

// ---------------------------------------------------------------------------------------------
// The students.

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    joined: AtomicU64,
    requests: AtomicU64,
    guesses_ok: AtomicU64,
    suggests_ok: AtomicU64,
    results_ok: AtomicU64,
    too_fast: AtomicU64,
    closed_409: AtomicU64,
    bad_400: AtomicU64,
    other_status: AtomicU64,
    transport: AtomicU64,
    states_seen: AtomicU64,
    streams_open: AtomicU64,
    streams_refused: AtomicU64,
    /// Results read, per round.
    read: Mutex<HashMap<u64, usize>>,
    /// Request latencies (ms) of guesses.
    guess_ms: Mutex<Vec<f64>>,
}

#[derive(Default, Clone)]
struct Snapshot {
    requests: u64,
    guesses_ok: u64,
    suggests_ok: u64,
    results_ok: u64,
    too_fast: u64,
    closed_409: u64,
    bad_400: u64,
    other_status: u64,
    transport: u64,
    states_seen: u64,
    streams_refused: u64,
    guess_ms: Vec<f64>,
}

impl Snapshot {
    fn minus(&self, b: &Snapshot) -> Snapshot {
        Snapshot {
            requests: self.requests - b.requests,
            guesses_ok: self.guesses_ok - b.guesses_ok,
            suggests_ok: self.suggests_ok - b.suggests_ok,
            results_ok: self.results_ok - b.results_ok,
            too_fast: self.too_fast - b.too_fast,
            closed_409: self.closed_409 - b.closed_409,
            bad_400: self.bad_400 - b.bad_400,
            other_status: self.other_status - b.other_status,
            transport: self.transport - b.transport,
            states_seen: self.states_seen - b.states_seen,
            streams_refused: self.streams_refused - b.streams_refused,
            guess_ms: self.guess_ms[b.guess_ms.len().min(self.guess_ms.len())..].to_vec(),
        }
    }
}

impl Shared {
    fn results_read(&self, round: u64) -> usize {
        *self.read.lock().unwrap().get(&round).unwrap_or(&0)
    }

    fn snapshot(&self) -> Snapshot {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Snapshot {
            requests: l(&self.requests),
            guesses_ok: l(&self.guesses_ok),
            suggests_ok: l(&self.suggests_ok),
            results_ok: l(&self.results_ok),
            too_fast: l(&self.too_fast),
            closed_409: l(&self.closed_409),
            bad_400: l(&self.bad_400),
            other_status: l(&self.other_status),
            transport: l(&self.transport),
            states_seen: l(&self.states_seen),
            streams_refused: l(&self.streams_refused),
            guess_ms: self.guess_ms.lock().unwrap().clone(),
        }
    }

    fn count_status(&self, status: u16) {
        let c = match status {
            429 => &self.too_fast,
            409 => &self.closed_409,
            400 => &self.bad_400,
            _ => &self.other_status,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

struct Students {
    shared: Arc<Shared>,
    pool: Vec<std::thread::JoinHandle<()>>,
    /// The live streams' thread (tokio), stopped by dropping the sender.
    streams: Option<(
        tokio::sync::oneshot::Sender<()>,
        std::thread::JoinHandle<()>,
    )>,
}

impl Students {
    fn start(
        addr: SocketAddr,
        code: String,
        n: usize,
        threads: usize,
        poll_ms: u64,
        texts: Vec<String>,
        shared: Arc<Shared>,
    ) -> Students {
        let threads = threads.min(n).max(1);
        let mut senders = vec![];
        let mut pool = vec![];
        let texts = Arc::new(texts);
        // Students 0..n, dealt round the threads: student k on thread k % threads.
        for t in 0..threads {
            let (tx, rx) = mpsc::channel::<(usize, Arc<str>)>();
            senders.push(tx);
            let mine: Vec<usize> = (t..n).step_by(threads).collect();
            let (shared, code, texts) = (shared.clone(), code.clone(), texts.clone());
            pool.push(
                std::thread::Builder::new()
                    .name(format!("students-{t}"))
                    .spawn(move || pool_thread(addr, code, mine, rx, poll_ms, texts, shared))
                    .unwrap(),
            );
        }
        // Every student joins before their stream opens (the page does the same).
        while (shared.joined.load(Ordering::Relaxed) as usize) < n {
            std::thread::sleep(Duration::from_millis(5));
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
        }
        let streams = (poll_ms == 0).then(|| {
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let shared = shared.clone();
            let handle = std::thread::Builder::new()
                .name("student-streams".into())
                .spawn(move || streams_thread(addr, n, threads, senders, shared, stop_rx))
                .unwrap();
            (stop_tx, handle)
        });
        Students {
            shared,
            pool,
            streams,
        }
    }

    fn open_streams(&self) -> u64 {
        self.shared.streams_open.load(Ordering::Relaxed)
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some((stop, handle)) = self.streams.take() {
            let _ = stop.send(());
            let _ = handle.join();
        }
        for t in self.pool.drain(..) {
            let _ = t.join();
        }
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .max_redirects(0)
        .build()
        .into()
}

fn get_json(agent: &ureq::Agent, url: &str) -> Value {
    let mut r = agent.get(url).call().expect("GET");
    serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
}

/// One student as their thread knows them.
struct Student {
    index: usize,
    id: String,
    bucket: Bucket,
    /// The newest state seen.
    state: Option<Arc<str>>,
    guessed_round: u64,
    read_round: u64,
    next_poll: Instant,
    /// A request refused as too fast is tried again after this.
    retry_at: Option<Instant>,
}

impl Student {
    /// A request refused as too fast (or failed) is tried again in 250 ms.
    fn retry_soon(&mut self) {
        self.retry_at = Some(Instant::now() + Duration::from_millis(250));
    }
}

/// A pool thread: joins its students, then acts for each as their state changes.
fn pool_thread(
    addr: SocketAddr,
    code: String,
    mine: Vec<usize>,
    rx: Receiver<(usize, Arc<str>)>,
    poll_ms: u64,
    texts: Arc<Vec<String>>,
    shared: Arc<Shared>,
) {
    let http = agent();
    let base = format!("http://{addr}");
    let mut students = join_students(&http, &base, &code, &mine, poll_ms, &shared);
    let slot: HashMap<usize, usize> = students
        .iter()
        .enumerate()
        .map(|(i, s)| (s.index, i))
        .collect();
    while !shared.stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        // Wake for the next poll or retry, or for a new state from a stream.
        let mut wake = now + Duration::from_millis(50);
        for s in &students {
            if let Some(t) = s.retry_at {
                wake = wake.min(t);
            }
            if poll_ms > 0 {
                wake = wake.min(s.next_poll);
            }
        }
        let mut woke = vec![];
        match rx.recv_timeout(wake.saturating_duration_since(now)) {
            Ok(m) => woke.push(m),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                if poll_ms == 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        woke.extend(rx.try_iter());
        for (k, state) in woke {
            shared.states_seen.fetch_add(1, Ordering::Relaxed);
            let i = slot[&k];
            students[i].state = Some(state);
            act(&http, &base, &mut students[i], &texts, &shared);
        }
        let now = Instant::now();
        for s in students.iter_mut() {
            if poll_ms > 0 && now >= s.next_poll {
                s.next_poll = now + Duration::from_millis(poll_ms);
                poll_state(&http, &base, s, &shared);
                act(&http, &base, s, &texts, &shared);
            } else if s.retry_at.is_some_and(|t| now >= t) {
                s.retry_at = None;
                act(&http, &base, s, &texts, &shared);
            }
        }
    }
}

/// Joins the students numbered `mine` with `code`; polling students' first polls spread over the
/// interval.
fn join_students(
    http: &ureq::Agent,
    base: &str,
    code: &str,
    mine: &[usize],
    poll_ms: u64,
    shared: &Shared,
) -> Vec<Student> {
    let mut students: Vec<Student> = vec![];
    for &k in mine {
        let body = json!({"code": code, "name": format!("student {k:03}")}).to_string();
        let mut r = http
            .post(format!("{base}/api/join"))
            .header("Content-Type", "application/json")
            .send(body)
            .expect("join");
        shared.requests.fetch_add(1, Ordering::Relaxed);
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string().unwrap();
        assert_eq!(status, 200, "join refused: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        students.push(Student {
            index: k,
            id: v["student"].as_str().unwrap().to_string(),
            bucket: Bucket::new(Instant::now()),
            state: None,
            guessed_round: 0,
            read_round: 0,
            // Polling students are spread over the interval.
            next_poll: Instant::now()
                + Duration::from_millis(poll_ms * k as u64 / (mine.len() as u64 * 8).max(1)),
            retry_at: None,
        });
        shared.joined.fetch_add(1, Ordering::Relaxed);
    }
    students
}

/// Reads the room's state as a polling page does.
fn poll_state(http: &ureq::Agent, base: &str, s: &mut Student, shared: &Shared) {
    shared.requests.fetch_add(1, Ordering::Relaxed);
    match http.get(format!("{base}/api/state")).call() {
        Ok(mut r) => {
            let text = r.body_mut().read_to_string().unwrap_or_default();
            shared.states_seen.fetch_add(1, Ordering::Relaxed);
            s.state = Some(Arc::from(text));
        }
        Err(_) => {
            shared.transport.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Takes a request's token from the student's own bucket, waiting for it if need be (as a page that
/// keeps to the room's rate would).
fn wait_for_token(s: &mut Student) {
    while !s.bucket.take(Instant::now()) {
        std::thread::sleep(Duration::from_millis(1000 / 8 / 2));
    }
}

/// What a student does on seeing a state: guess while guessing (after a suggestion, as typing asks),
/// read their result once revealed.
fn act(http: &ureq::Agent, base: &str, s: &mut Student, texts: &[String], shared: &Shared) {
    let Some(state) = s.state.clone() else { return };
    let Ok(v) = serde_json::from_str::<Value>(&state) else {
        return;
    };
    let round = v["round"].as_u64().unwrap_or(0);
    let phase = v["phase"].as_str().unwrap_or("");
    if phase == "guessing" && round != s.guessed_round {
        let text = &texts[(s.index + round as usize) % texts.len()];
        let q: String = text.trim_start().chars().take(2).collect();
        if !q.is_empty() && s.retry_at.is_none() {
            suggest(http, base, s, &q, shared);
        }
        send_guess(http, base, s, text, round, shared);
    } else if phase == "revealed" && round != s.read_round {
        read_result(http, base, s, round, shared);
    }
}

/// Asks for suggestions for `q`, as typing the first letters does.
fn suggest(http: &ureq::Agent, base: &str, s: &mut Student, q: &str, shared: &Shared) {
    wait_for_token(s);
    shared.requests.fetch_add(1, Ordering::Relaxed);
    let url = format!("{base}/api/suggest?student={}&q={}", s.id, encode(q));
    match http.get(url).call() {
        Ok(mut r) => {
            let _ = r.body_mut().read_to_string();
            match r.status().as_u16() {
                200 => {
                    shared.suggests_ok.fetch_add(1, Ordering::Relaxed);
                }
                st => shared.count_status(st),
            }
        }
        Err(_) => {
            shared.transport.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Sends the guess `text` for `round`; a refusal as too fast (or a failed request) is tried again in
/// 250 ms.
fn send_guess(
    http: &ureq::Agent,
    base: &str,
    s: &mut Student,
    text: &str,
    round: u64,
    shared: &Shared,
) {
    wait_for_token(s);
    shared.requests.fetch_add(1, Ordering::Relaxed);
    let body = json!({"student": s.id, "text": text}).to_string();
    let began = Instant::now();
    let sent = http
        .post(format!("{base}/api/guess"))
        .header("Content-Type", "application/json")
        .send(body);
    match outcome(sent, s, shared) {
        Outcome::Ok(_) => {
            shared.guesses_ok.fetch_add(1, Ordering::Relaxed);
            let ms = began.elapsed().as_secs_f64() * 1e3;
            shared.guess_ms.lock().unwrap().push(ms);
            s.guessed_round = round;
        }
        Outcome::Refused => s.guessed_round = round,
        Outcome::Retry => {}
    }
}

/// What became of one request.
enum Outcome {
    /// Answered 200, with this body.
    Ok(String),
    /// Refused as too fast, or failed on the way: counted, and to be sent again in 250 ms.
    Retry,
    /// Refused for good with another status: counted.
    Refused,
}

/// Reads the answer to `sent`, counting what is not a success and scheduling a retry where one is due.
fn outcome(
    sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    s: &mut Student,
    shared: &Shared,
) -> Outcome {
    let mut r = match sent {
        Ok(r) => r,
        Err(_) => {
            shared.transport.fetch_add(1, Ordering::Relaxed);
            s.retry_soon();
            return Outcome::Retry;
        }
    };
    let text = r.body_mut().read_to_string().unwrap_or_default();
    match r.status().as_u16() {
        200 => Outcome::Ok(text),
        429 => {
            shared.count_status(429);
            s.retry_soon();
            Outcome::Retry
        }
        st => {
            shared.count_status(st);
            Outcome::Refused
        }
    }
}

/// Reads the student's result of `round`; a refusal as too fast (or a failed request) is tried again
/// in 250 ms.
fn read_result(http: &ureq::Agent, base: &str, s: &mut Student, round: u64, shared: &Shared) {
    wait_for_token(s);
    shared.requests.fetch_add(1, Ordering::Relaxed);
    let sent = http
        .get(format!("{base}/api/result?student={}", s.id))
        .call();
    match outcome(sent, s, shared) {
        Outcome::Ok(text) => {
            s.read_round = round;
            let v: Value = serde_json::from_str(&text).unwrap_or_default();
            // A result without this student's guess means the guess was lost.
            if v["guess"].is_null() && s.guessed_round == round {
                shared.other_status.fetch_add(1, Ordering::Relaxed);
            }
            shared.results_ok.fetch_add(1, Ordering::Relaxed);
            *shared.read.lock().unwrap().entry(round).or_insert(0) += 1;
        }
        Outcome::Refused => s.read_round = round,
        Outcome::Retry => {}
    }
}

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every student's live stream on one tokio thread; each new state goes to the student's pool
/// thread.
fn streams_thread(
    addr: SocketAddr,
    n: usize,
    threads: usize,
    senders: Vec<Sender<(usize, Arc<str>)>>,
    shared: Arc<Shared>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async move {
        for k in 0..n {
            let tx = senders[k % threads].clone();
            let shared = shared.clone();
            tokio::spawn(async move {
                if let Err(e) = stream(addr, k, tx, &shared).await {
                    if !shared.stop.load(Ordering::Relaxed) {
                        eprintln!("student {k}'s stream: {e}");
                    }
                }
            });
        }
        let _ = stop.await;
    });
    // Dropping the runtime drops every stream's task and closes its socket.
}

async fn stream(
    addr: SocketAddr,
    k: usize,
    tx: Sender<(usize, Arc<str>)>,
    shared: &Shared,
) -> std::io::Result<()> {
    let sock = tokio::net::TcpStream::connect(addr).await?;
    let req =
        format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    let mut sent = 0;
    while sent < req.len() {
        sock.writable().await?;
        match sock.try_write(&req.as_bytes()[sent..]) {
            Ok(w) => sent += w,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    let mut parser = SseParser::default();
    let mut buf = vec![0u8; 16 * 1024];
    let mut counted = false;
    let result = loop {
        sock.readable().await?;
        match sock.try_read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(got) => match parser.feed(&buf[..got]) {
                Ok(newest) => {
                    if parser.status == Some(200) && !counted {
                        counted = true;
                        shared.streams_open.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Some(data) = newest {
                        if tx.send((k, Arc::from(data))).is_err() {
                            break Ok(());
                        }
                    }
                }
                Err(e) => {
                    shared.streams_refused.fetch_add(1, Ordering::Relaxed);
                    break Err(std::io::Error::other(e));
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => break Err(e),
        }
    };
    if counted {
        shared.streams_open.fetch_sub(1, Ordering::Relaxed);
    }
    result
}

/// An HTTP/1.1 response carrying server-sent events, chunked or not.
#[derive(Default)]
struct SseParser {
    raw: Vec<u8>,
    status: Option<u16>,
    chunked: bool,
    /// The decoded body not yet split into events.
    body: Vec<u8>,
}

impl SseParser {
    /// Takes more bytes; returns the newest event's data, if an event ended.
    fn feed(&mut self, bytes: &[u8]) -> Result<Option<String>, String> {
        self.raw.extend_from_slice(bytes);
        if self.status.is_none() {
            let Some(end) = find(&self.raw, b"\r\n\r\n") else {
                return Ok(None);
            };
            let head = String::from_utf8_lossy(&self.raw[..end]).to_string();
            self.raw.drain(..end + 4);
            let status: u16 = head
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            self.status = Some(status);
            self.chunked = head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked");
            if status != 200 {
                return Err(format!("the stream was refused: {head}"));
            }
        }
        if self.chunked {
            while let Some(eol) = find(&self.raw, b"\r\n") {
                let line = String::from_utf8_lossy(&self.raw[..eol]).to_string();
                let size = usize::from_str_radix(line.split(';').next().unwrap().trim(), 16)
                    .map_err(|_| format!("bad chunk size {line:?}"))?;
                if size == 0 {
                    return Err("the stream ended".into());
                }
                if self.raw.len() < eol + 2 + size + 2 {
                    break;
                }
                self.body
                    .extend_from_slice(&self.raw[eol + 2..eol + 2 + size]);
                self.raw.drain(..eol + 2 + size + 2);
            }
        } else {
            self.body.append(&mut self.raw);
        }
        let mut newest = None;
        while let Some(end) = find(&self.body, b"\n\n") {
            let event = String::from_utf8_lossy(&self.body[..end]).to_string();
            self.body.drain(..end + 2);
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                newest = Some(data.join("\n"));
            }
        }
        Ok(newest)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------------------------------------
// Figures.

/// (VmRSS, VmHWM) in kB.
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// (median, p90) of `xs`, nearest rank.
fn stats(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    (median, rank(0.9))
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn per(d: (u64, Duration)) -> f64 {
    if d.0 == 0 {
        0.0
    } else {
        d.1.as_secs_f64() * 1e6 / d.0 as f64
    }
}

/// Each run's memory over its measured steps (MB), and its growth a step (KB).
fn rss_by_run(o: &Opts, runs: &[&PhaseResult]) -> Vec<Value> {
    runs.iter()
        .map(|r| {
            let measured = &r.rss_per_step_kb[o.warmup.min(r.rss_per_step_kb.len())..];
            let growth = match (measured.first(), measured.last()) {
                (Some(a), Some(b)) if measured.len() > 1 => {
                    (*b as f64 - *a as f64) / (measured.len() - 1) as f64
                }
                _ => 0.0,
            };
            json!({
                "growth_kb_per_step": growth,
                "loaded": mb(r.rss_loaded_kb),
                "first_measured_step": mb(measured.first().copied().unwrap_or(0)),
                "last_step": mb(measured.last().copied().unwrap_or(0)),
                "max_during_steps": mb(measured.iter().copied().max().unwrap_or(0)),
                "after_phase": mb(r.rss_end_kb),
                "peak_so_far": mb(r.hwm_kb),
            })
        })
        .collect()
}

/// The figures of one or more runs of a phase, pooled.
fn summary(o: &Opts, runs: &[&PhaseResult]) -> Value {
    let steps: Vec<&StepRec> = runs.iter().flat_map(|r| r.steps.iter()).collect();
    let pick = |f: fn(&StepRec) -> f64| -> Vec<f64> { steps.iter().map(|s| f(s)).collect() };
    let sum = |f: fn(&Snapshot) -> u64| -> u64 { runs.iter().map(|r| f(&r.counters)).sum() };
    let ui = |f: fn(&UiTime) -> (u64, Duration)| -> (u64, Duration) {
        runs.iter()
            .map(|r| f(&r.ui))
            .fold((0, Duration::ZERO), |a, b| (a.0 + b.0, a.1 + b.1))
    };
    let (step_med, step_p90) = stats(&pick(|s| s.step_ms));
    let (eng_med, eng_p90) = stats(&pick(|s| s.engine_ms));
    let (over_med, over_p90) = stats(&pick(|s| s.step_ms - s.engine_ms));
    let (rev_med, rev_p90) = stats(&pick(|s| s.reveal_ms));
    let (win_med, win_p90) = stats(&pick(|s| s.guess_window_ms));
    let (burst_med, _) = stats(&pick(|s| s.guess_burst_ms));
    let guess_ms: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.counters.guess_ms.iter().copied())
        .collect();
    let (g_med, g_p90) = stats(&guess_ms);
    let window_s: f64 = steps.iter().map(|s| s.guess_window_ms).sum::<f64>() / 1e3;
    let burst_s: f64 = steps.iter().map(|s| s.guess_burst_ms).sum::<f64>() / 1e3;
    let guesses = sum(|c| c.guesses_ok);
    let students = runs.first().map_or(0, |r| r.students);
    let closed_total: usize = steps.iter().filter_map(|s| s.closed).map(|c| c.0).sum();
    let poll_total: u32 = steps.iter().filter_map(|s| s.poll_guesses).sum();
    let wall_s: f64 = runs.iter().map(|r| r.wall_s).sum();
    let (guessed, closed) = (ui(|u| u.guessed), ui(|u| u.closed));
    let per_step_rss = rss_by_run(o, runs);
    json!({
        "phase": runs.first().map_or("", |r| r.name.as_str()),
        "runs": runs.len(),
        "students": students,
        "join_ms": runs.iter().map(|r| r.join_ms).collect::<Vec<_>>(),
        "steps": steps.len(),
        "step_ms": {"median": step_med, "p90": step_p90},
        "engine_pass_ms": {"median": eng_med, "p90": eng_p90},
        "step_minus_engine_ms": {"median": over_med, "p90": over_p90},
        "reveal_ms": {"median": rev_med, "p90": rev_p90},
        "guess_window_ms": {"median": win_med, "p90": win_p90},
        "guess_burst_ms": {"median": burst_med},
        "guess_request_ms": {"median": g_med, "p90": g_p90},
        "guesses_accepted": guesses,
        "guesses_expected": students * steps.len(),
        "guesses_closed_by_room": closed_total,
        "guesses_in_app_polls": poll_total,
        "guesses_per_s_in_window": if window_s > 0.0 { guesses as f64 / window_s } else { 0.0 },
        "guesses_per_s_in_burst": if burst_s > 0.0 { guesses as f64 / burst_s } else { 0.0 },
        "guesses_per_s_wall": guesses as f64 / wall_s,
        "requests": sum(|c| c.requests),
        "suggests_ok": sum(|c| c.suggests_ok),
        "results_ok": sum(|c| c.results_ok),
        "status_429": sum(|c| c.too_fast),
        "status_409": sum(|c| c.closed_409),
        "status_400": sum(|c| c.bad_400),
        "status_other": sum(|c| c.other_status),
        "transport_errors": sum(|c| c.transport),
        "states_seen": sum(|c| c.states_seen),
        "streams_refused": sum(|c| c.streams_refused),
        "ui_us_per_msg": {
            "guessed": per(guessed),
            "closed": per(closed),
            "joined": per(ui(|u| u.joined)),
            "other": per(ui(|u| u.other)),
        },
        "ui_ms_on_class_msgs_per_step": (guessed.1 + closed.1).as_secs_f64() * 1e3 / steps.len().max(1) as f64,
        "rss_mb": per_step_rss,
        "wall_s": wall_s,
        "drop_with_streams_open": runs.iter().filter_map(|r| r.drop_with_streams.clone()).collect::<Vec<_>>(),
        "problems": runs.iter().flat_map(|r| r.problems.iter().cloned()).collect::<Vec<_>>(),
    })
}

fn report(
    o: &Opts,
    model: &std::path::Path,
    cores: usize,
    rss_start: (u64, u64),
    results: &[PhaseResult],
) {
    let kinds: Vec<&str> = ["none", "class"]
        .into_iter()
        .filter(|k| results.iter().any(|r| r.name == *k))
        .collect();
    let pooled: Vec<Value> = kinds
        .iter()
        .map(|k| {
            let runs: Vec<&PhaseResult> = results.iter().filter(|r| r.name == *k).collect();
            summary(o, &runs)
        })
        .collect();
    let each: Vec<Value> = results.iter().map(|r| summary(o, &[r])).collect();
    let (_, hwm) = rss();
    if o.json {
        return print_json(o, model, cores, rss_start, (&pooled, &each), hwm);
    }
    print_steps(o, model, cores, &pooled);
    print_runs(&each, rss_start, hwm);
    for r in &pooled {
        print_class(r);
    }
    print_problems(&pooled);
}

/// The whole report as JSON.
fn print_json(
    o: &Opts,
    model: &std::path::Path,
    cores: usize,
    rss_start: (u64, u64),
    (pooled, each): (&[Value], &[Value]),
    hwm: u64,
) {
    let out = json!({
        "model": model.display().to_string(),
        "cores": cores,
        "students": o.students,
        "steps_per_run": o.steps,
        "warmup": o.warmup,
        "threads": o.threads,
        "settle_ms": o.settle_ms,
        "pace_ms": o.pace_ms,
        "transport": if o.poll_ms == 0 { "sse".to_string() } else { format!("poll {} ms", o.poll_ms) },
        "pooled": pooled,
        "runs": each,
        "step_median_ratio_class_over_none": ratio(pooled, "step_ms", "median"),
        "step_p90_ratio_class_over_none": ratio(pooled, "step_ms", "p90"),
        "rss_start_mb": mb(rss_start.0),
        "peak_rss_mb": mb(hwm),
    });
    println!("{}", serde_json::to_string_pretty(&out).unwrap());
}

/// The step latency of each phase (its runs pooled), and the class's over none's.
fn print_steps(o: &Opts, model: &std::path::Path, cores: usize, pooled: &[Value]) {
    let (f, u, s) = (num, count, text);
    println!();
    println!(
        "class_load: {} | {cores} cores | {} students on {} threads ({}) | phases {} | {} steps measured per run after {} warm-up | the teacher steps {} ms after the last result is read and at most every {} ms",
        model.file_name().unwrap_or_default().to_string_lossy(),
        o.students,
        o.threads,
        if o.poll_ms == 0 { "live streams".to_string() } else { format!("polling every {} ms", o.poll_ms) },
        o.phases.join(","),
        o.steps,
        o.warmup,
        o.settle_ms,
        o.pace_ms
    );
    println!();
    println!("step latency: space key -> Stepped folded, measured and published (ms); runs of a phase pooled");
    println!(
        "{:<6} {:>8} {:>6} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10}",
        "phase",
        "students",
        "steps",
        "step med",
        "step p90",
        "engine med",
        "engine p90",
        "rest med",
        "rest p90",
        "reveal med",
        "reveal p90"
    );
    for r in pooled {
        println!(
            "{:<6} {:>8} {:>6} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10}",
            s(&r["phase"]),
            u(&r["students"]),
            u(&r["steps"]),
            f(&r["step_ms"]["median"]),
            f(&r["step_ms"]["p90"]),
            f(&r["engine_pass_ms"]["median"]),
            f(&r["engine_pass_ms"]["p90"]),
            f(&r["step_minus_engine_ms"]["median"]),
            f(&r["step_minus_engine_ms"]["p90"]),
            f(&r["reveal_ms"]["median"]),
            f(&r["reveal_ms"]["p90"]),
        );
    }
    if let Some(x) = ratio(pooled, "step_ms", "median") {
        println!(
            "class / none: step median {x:.2}x, p90 {}; engine pass median {}",
            ratio(pooled, "step_ms", "p90").map_or("-".into(), |y| format!("{y:.2}x")),
            ratio(pooled, "engine_pass_ms", "median").map_or("-".into(), |y| format!("{y:.2}x")),
        );
    }
}

/// Each run's step times and memory.
fn print_runs(each: &[Value], rss_start: (u64, u64), hwm: u64) {
    let (f, s) = (num, text);
    println!();
    println!("each run");
    println!(
        "{:<6} {:>9} {:>9} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "phase",
        "step med",
        "step p90",
        "engine med",
        "RSS load",
        "RSS 1st",
        "RSS last",
        "RSS max",
        "RSS after",
        "VmHWM",
        "KB/step"
    );
    for r in each {
        let m = &r["rss_mb"][0];
        println!(
            "{:<6} {:>9} {:>9} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}",
            s(&r["phase"]),
            f(&r["step_ms"]["median"]),
            f(&r["step_ms"]["p90"]),
            f(&r["engine_pass_ms"]["median"]),
            f(&m["loaded"]),
            f(&m["first_measured_step"]),
            f(&m["last_step"]),
            f(&m["max_during_steps"]),
            f(&m["after_phase"]),
            f(&m["peak_so_far"]),
            f(&m["growth_kb_per_step"]),
        );
    }
    println!(
        "RSS in MB (VmRSS: model loaded, after the first and last measured step, the most during the steps, after the run's engine and server stopped); VmHWM = peak so far; KB/step = VmRSS growth a measured step.\nEach run loads the model afresh: glibc keeps much of a stopped run's memory (its mmap threshold rises after the first large free), so a later run starts higher; with MALLOC_MMAP_THRESHOLD_=1048576 every run starts near the first. At start {:.1} MB, peak {:.1} MB",
        mb(rss_start.0),
        mb(hwm)
    );
}

/// A phase with students: its guesses, requests and the UI thread's time on class messages.
fn print_class(r: &Value) {
    let (f, u, s) = (num, count, text);
    if r["students"].as_u64() == Some(0) {
        return;
    }
    let p = s(&r["phase"]);
    println!();
    println!(
        "[{p}] guesses: {} accepted of {} expected; {} handed over by the room at the reveals; {} in the app's polls",
        u(&r["guesses_accepted"]),
        u(&r["guesses_expected"]),
        u(&r["guesses_closed_by_room"]),
        u(&r["guesses_in_app_polls"]),
    );
    println!(
        "[{p}] guess rate: {:.0}/s from the question opening to the last guess (median window {} ms, p90 {} ms; the live streams push at most every 200 ms), {:.0}/s from the first guess to the last; a guess request {} ms median, {} ms p90",
        r["guesses_per_s_in_window"].as_f64().unwrap_or(0.0),
        f(&r["guess_window_ms"]["median"]),
        f(&r["guess_window_ms"]["p90"]),
        r["guesses_per_s_in_burst"].as_f64().unwrap_or(0.0),
        f(&r["guess_request_ms"]["median"]),
        f(&r["guess_request_ms"]["p90"]),
    );
    println!(
        "[{p}] requests {} (suggest {} ok, guess {} ok, result {} ok); 429: {}, 409: {}, 400: {}, other: {}, transport errors: {}, streams refused: {}",
        u(&r["requests"]),
        u(&r["suggests_ok"]),
        u(&r["guesses_accepted"]),
        u(&r["results_ok"]),
        u(&r["status_429"]),
        u(&r["status_409"]),
        u(&r["status_400"]),
        u(&r["status_other"]),
        u(&r["transport_errors"]),
        u(&r["streams_refused"]),
    );
    println!(
        "[{p}] UI thread: {} us per Guessed message (update + measure + publish), {} ms a step on class messages; joins took {} ms",
        f(&r["ui_us_per_msg"]["guessed"]),
        f(&r["ui_ms_on_class_msgs_per_step"]),
        r["join_ms"]
            .as_array()
            .map(|v| v.iter().map(|x| format!("{:.0}", x.as_f64().unwrap_or(0.0))).collect::<Vec<_>>().join(", "))
            .unwrap_or_default(),
    );
    for d in r["drop_with_streams_open"].as_array().into_iter().flatten() {
        println!("[{p}] dropping the ClassHandle at the end: {}", s(d));
    }
}

/// Every problem a phase met, or the line that says there were none.
fn print_problems(pooled: &[Value]) {
    let s = text;
    let mut clean = true;
    for r in pooled {
        for p in r["problems"].as_array().into_iter().flatten() {
            clean = false;
            println!("PROBLEM [{}] {}", s(&r["phase"]), s(p));
        }
    }
    if clean {
        println!();
        println!("every guess counted once: each reveal closed with one guess per student, and each of the app's polls counted them all");
    }
}

/// A pooled figure of the class phase over the same of the phase without one.
fn ratio(pooled: &[Value], what: &str, q: &str) -> Option<f64> {
    let get = |name: &str| {
        pooled
            .iter()
            .find(|r| r["phase"] == name)
            .and_then(|r| r[what][q].as_f64())
    };
    get("class").zip(get("none")).map(|(a, b)| a / b)
}

/// A number to one decimal, or "-".
fn num(v: &Value) -> String {
    v.as_f64().map_or("-".to_string(), |x| format!("{x:.1}"))
}

/// A count, or "-".
fn count(v: &Value) -> String {
    v.as_u64().map_or("-".to_string(), |x| x.to_string())
}

/// A string's text ("" if none).
fn text(v: &Value) -> String {
    v.as_str().unwrap_or("").to_string()
}
