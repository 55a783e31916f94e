//! The TUI: the checks made before the screen is taken over (`terminal.rs` owns its modes), the input
//! thread, and the event loop that feeds `Msg`s to `App::update`, sends its `Command`s to the engine, and redraws.

use super::terminal::{self, TerminalGuard};
use crate::app::{App, AppConfig, Key, Msg, ThemeKind};
use crate::class::ClassHandle;
use crate::cli::{Cli, Theme};
use crate::engine::twin::TwinSpec;
use crate::protocol::{Command, Event, Failure, SamplerSettings};
use crate::worker::{self, EngineConfig};
use crossterm::event::{
    self, Event as CtEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton,
    MouseEventKind,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::stdout;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the clock ticks (autoplay, spinner).
const TICK: Duration = Duration::from_millis(100);
/// Candidates per distribution and positions in the attention window asked of the engine.
const TOP_K_SHOWN: usize = 20;
const ATTENTION_WINDOW: usize = 16;

/// Runs the TUI on `model_path` until the user quits.
pub fn run(cli: &Cli, model_path: PathBuf) -> anyhow::Result<()> {
    let settings = cli.sampler.settings()?;
    let (lesson, twin) = check_before_screen(cli, &model_path)?;
    terminal::check_is_terminal()?;
    let signalled = terminal::stop_on_signals()?;
    // Input and engine events arrive on one channel, so the loop waits on a single receiver. The engine
    // sends on it directly (no forwarding thread).
    let (msg_tx, msg_rx) = mpsc::channel::<Msg>();
    let class = super::class_room::start(cli, &msg_tx)?;
    let engine = spawn_engine(cli, model_path, settings.clone(), twin, msg_tx.clone())?;

    let guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(stdout()))?;
    let size = terminal.size()?;
    let mut app = new_app(cli, lesson, settings, size.width, size.height);
    if let Some(c) = &class {
        app = app.with_class(c.card().clone());
    }
    let stop = Arc::new(AtomicBool::new(false));
    spawn_input_thread(msg_tx, stop.clone());
    let result = event_loop(
        &mut terminal,
        &mut app,
        &msg_rx,
        &engine,
        class.as_ref(),
        &signalled,
    );
    stop.store(true, Ordering::Relaxed);
    drop(guard);
    // The engine finishes the command in hand (at most one step) and ends; a prompt being read is
    // left at once (it stops at the next chunk, or with the process): quitting never waits on it.
    if app.reading_prompt() {
        engine.quit_now();
    } else {
        engine.quit();
    }
    result
}

/// Handles what is refused before the screen is taken over, so that its message is whole on stderr:
/// a saved session that cannot be read or was saved with another model, a lesson that cannot be read,
/// model B's file, a bad `--pause-above`. Returns the lesson and model B.
fn check_before_screen(
    cli: &Cli,
    model_path: &Path,
) -> anyhow::Result<(Option<crate::lesson::Lesson>, Option<TwinSpec>)> {
    // A saved session that cannot be read, or was saved with another model, is refused before the
    // screen is taken over: the message is whole on stderr, never cut at the status line's edge (the
    // engine checks the model again once it has it loaded).
    if let Some(path) = &cli.load {
        let saved = crate::engine::session_file::read(path)?;
        if !cli.ignore_model_mismatch && cli.model.server.server.is_none() {
            crate::engine::session_file::check_model_file(&saved, model_path)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        }
    }
    // So is a lesson that cannot be found, read or parsed (the message names the file, line and field).
    let lesson = cli
        .classroom
        .lesson
        .as_deref()
        .map(read_lesson)
        .transpose()?;
    // Model B's file is found (a known name fetched) before the screen is taken over too.
    let twin = cli.ab.spec()?;
    if let Some(level) = cli
        .classroom
        .pause_above
        .filter(|l| !(*l > 0.0 && l.is_finite()))
    {
        anyhow::bail!("--pause-above {level}: expected an entropy in nats above 0, e.g. 2.0");
    }
    Ok((lesson, twin))
}

/// Starts the engine thread on `model_path`; its events come back as `Msg::Engine` on `msg_tx`.
fn spawn_engine(
    cli: &Cli,
    model_path: PathBuf,
    settings: SamplerSettings,
    twin: Option<TwinSpec>,
    msg_tx: Sender<Msg>,
) -> anyhow::Result<worker::EngineHandle> {
    Ok(worker::spawn(
        EngineConfig {
            model_path,
            tokenizer_path: cli.model.tokenizer.clone(),
            sampler: settings,
            top_k_shown: TOP_K_SHOWN,
            attention_window: ATTENTION_WINDOW,
            kv_cache: true,
            kv_precision: cli.model.kv.precision(),
            twin,
            server: cli.model.server.options()?,
            draft: cli.draft.spec().map(|d| (d, cli.draft.k())),
            vocabulary: cli.classroom.class.is_some(),
        },
        move |ev| {
            let _ = msg_tx.send(Msg::Engine(ev));
        },
    ))
}

/// The app as the command line asks for it, `width` by `height`: the prompt, theme, sampler and saved
/// session, then the lesson, then the classroom flags (`--pause-above` wins over the lesson's).
fn new_app(
    cli: &Cli,
    lesson: Option<crate::lesson::Lesson>,
    settings: SamplerSettings,
    width: u16,
    height: u16,
) -> App {
    let mut app = App::new(AppConfig {
        prompt: cli.session.prompt.clone(),
        chat: cli.session.chat,
        theme: theme_kind(theme(cli, lesson.as_ref())),
        settings,
        width,
        height,
    })
    .with_session_files(crate::app::sessions::SessionFiles {
        load: cli.load.clone(),
        ignore_model_mismatch: cli.ignore_model_mismatch,
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        ..Default::default()
    });
    if let Some(lesson) = lesson {
        app = app.with_lesson(lesson);
    }
    // After the lesson: `--pause-above` wins over the lesson's setting.
    let c = &cli.classroom;
    app.with_classroom(c.presenter, c.predict, c.pause_above)
}

/// Draw, wait for messages (or the next tick), fold them through `App::update`, send the commands.
fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    app: &mut App,
    msg_rx: &Receiver<Msg>,
    engine: &worker::EngineHandle,
    class: Option<&ClassHandle>,
    signalled: &AtomicBool,
) -> anyhow::Result<()> {
    let start = Instant::now();
    let mut last_tick = Instant::now();
    app.update(Msg::Measured(crate::ui::measure(app)));
    loop {
        terminal.draw(|frame| crate::ui::draw(frame, app))?;
        let mut msgs = match msg_rx.recv_timeout(TICK) {
            Ok(msg) => vec![msg],
            Err(RecvTimeoutError::Timeout) => vec![],
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        };
        // Take everything already waiting, so a burst of events costs one redraw.
        msgs.extend(msg_rx.try_iter());
        if last_tick.elapsed() >= TICK {
            last_tick = Instant::now();
            let now_ms = start.elapsed().as_millis() as u64;
            msgs.push(Msg::Tick { now_ms });
        }
        let mut queue = std::collections::VecDeque::from(msgs);
        while let Some(msg) = queue.pop_front() {
            match (class, &msg) {
                (Some(c), Msg::Engine(Event::Vocabulary(table))) => {
                    c.set_vocabulary(table.to_vec())
                }
                (Some(c), Msg::Engine(Event::Loaded(info))) => c.set_model(&info.name),
                _ => {}
            }
            let cmds = update(app, msg);
            if let (Some(c), Some(stage)) = (class, app.class_stage()) {
                c.publish(stage);
            }
            for cmd in cmds {
                if engine.send(cmd).is_err() && !app.quit {
                    let gone = Event::Failed {
                        what: Failure::Engine,
                        reason: "the engine thread has stopped; restart nexttoken".into(),
                    };
                    queue.push_back(Msg::Engine(gone));
                }
            }
        }
        if app.quit {
            return Ok(());
        }
        if signalled.load(Ordering::Relaxed) {
            anyhow::bail!(
                "stopped by a signal (SIGTERM, SIGHUP or SIGQUIT); the terminal is restored"
            );
        }
    }
}

/// One message through `App::update`, then the screen map of the state it left (`ui::measure`), as
/// the loop does for every message: a click or a scroll key that follows acts on what is drawn now.
/// The clock's tick moves nothing on screen (autoplay's step arrives as an engine event), so an idle
/// app does not measure ten times a second.
pub fn update(app: &mut App, msg: Msg) -> Vec<Command> {
    let tick = matches!(msg, Msg::Tick { .. });
    let cmds = app.update(msg);
    if !tick {
        app.update(Msg::Measured(crate::ui::measure(app)));
    }
    cmds
}

/// The lesson `--lesson` names: a built-in's name, or a lesson file. Neither: one sentence that says so
/// and names the built-ins.
fn read_lesson(name: &str) -> anyhow::Result<crate::lesson::Lesson> {
    if crate::lesson::builtin(name).is_none() && !std::path::Path::new(name).exists() {
        let names: Vec<&str> = crate::lesson::BUILTINS.iter().map(|(n, _)| *n).collect();
        anyhow::bail!(
            "no lesson {name}: no such file, and no built-in lesson has that name; give the path to a lesson file (.toml) or a built-in's name ({})",
            names.join(", ")
        );
    }
    Ok(crate::lesson::load(name)?)
}

/// The theme: `--theme` when given, else the lesson's, else the projector's in presenter mode.
fn theme(cli: &Cli, lesson: Option<&crate::lesson::Lesson>) -> Theme {
    use crate::protocol::lesson::format::ThemeName;
    let settings = lesson.map(|l| &l.settings);
    let presenter = cli.classroom.presenter || settings.is_some_and(|s| s.presenter);
    match (cli.theme, settings.and_then(|s| s.theme)) {
        (Some(t), _) => t,
        (None, Some(ThemeName::Projector)) => Theme::Projector,
        (None, Some(ThemeName::Default)) => Theme::Default,
        (None, None) if presenter => Theme::Projector,
        (None, None) => Theme::Default,
    }
}

fn theme_kind(theme: Theme) -> ThemeKind {
    // https://no-color.org: any non-empty NO_COLOR turns colour off, whatever the theme.
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return ThemeKind::NoColor;
    }
    match theme {
        Theme::Default => ThemeKind::Default,
        Theme::Projector => ThemeKind::Projector,
    }
}

/// Reads terminal events until `stop`, turning them into `Msg`s. Polls so that it can notice `stop`.
///
/// crossterm is built with its `use-dev-tty` feature (Cargo.toml), which waits on the terminal with a
/// level-triggered `poll(2)`. Its default source waits with mio, which is edge-triggered, and returns
/// after one 1 KiB read: the rest of a long burst of typed input (3,000 characters sent at once) stayed
/// unread with no new edge to wake it, so its last keys, Enter among them, waited for the next key
/// press (crossterm PR #1057). `tests/e2e_tmux.rs` types such a burst. With `use-dev-tty`, never poll
/// with a zero timeout: that source then returns before it looks at the terminal.
fn spawn_input_thread(tx: Sender<Msg>, stop: Arc<AtomicBool>) {
    let _ = std::thread::Builder::new()
        .name("input".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match event::poll(TICK) {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(_) => return,
                }
                let Ok(ev) = event::read() else { return };
                if let Some(msg) = to_msg(ev) {
                    if tx.send(msg).is_err() {
                        return;
                    }
                }
            }
        });
}

/// A crossterm event as a `Msg`, or `None` for what the app ignores (key releases, mouse moves).
pub fn to_msg(ev: CtEvent) -> Option<Msg> {
    match ev {
        CtEvent::Key(k) if k.kind != KeyEventKind::Release => to_key(k).map(Msg::Key),
        CtEvent::Mouse(m) if m.kind == MouseEventKind::Down(MouseButton::Left) => {
            Some(Msg::Click {
                column: m.column,
                row: m.row,
            })
        }
        CtEvent::Mouse(m) if m.kind == MouseEventKind::ScrollUp => Some(Msg::Wheel { up: true }),
        CtEvent::Mouse(m) if m.kind == MouseEventKind::ScrollDown => Some(Msg::Wheel { up: false }),
        CtEvent::Resize(width, height) => Some(Msg::Resize { width, height }),
        CtEvent::Paste(text) => Some(Msg::Paste(text)),
        _ => None,
    }
}

fn to_key(k: KeyEvent) -> Option<Key> {
    Some(match k.code {
        KeyCode::Char(c) if k.modifiers.contains(KeyModifiers::CONTROL) => {
            Key::Ctrl(c.to_ascii_lowercase())
        }
        KeyCode::Char(c) => Key::Char(c),
        // Terminals send Alt-Enter as Esc then Enter; crossterm folds it into one event with Alt.
        KeyCode::Enter if k.modifiers.contains(KeyModifiers::ALT) => Key::AltEnter,
        KeyCode::Enter => Key::Enter,
        KeyCode::Delete => Key::Delete,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Tab | KeyCode::BackTab => Key::Tab,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        _ => return None,
    })
}
