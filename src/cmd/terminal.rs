//! The terminal's modes: raw mode, the alternate screen, mouse capture and bracketed paste, entered
//! once and undone on every way out: a return, an error, a panic on the UI thread, and a signal
//! (SIGTERM, SIGHUP, SIGQUIT end the event loop as `q` does). And the check that there is a terminal
//! to take over at all.

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use std::io::{stdout, IsTerminal};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Refuses, with what to do, when standard output is not a terminal (a pipe, a file) or there is no
/// terminal to read keys from (keys come from `/dev/tty`, so standard input may be anything): the
/// screen cannot be drawn there, and crossterm's own error ("No such device or address") says
/// nothing of why.
pub fn check_is_terminal() -> anyhow::Result<()> {
    let keys = cfg!(not(unix)) || std::fs::File::open("/dev/tty").is_ok();
    if stdout().is_terminal() && keys {
        return Ok(());
    }
    anyhow::bail!(
        "nexttoken's screen needs a terminal, and its output is not one (a pipe or a file) or it has \
         none to read keys from: run it in a terminal window, or use `nexttoken trace` to write the \
         steps as JSON Lines"
    )
}

/// A flag the event loop reads: set by SIGTERM, SIGHUP or SIGQUIT, so the loop ends and the terminal
/// is restored on the way out. A second such signal ends the process at once.
pub fn stop_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGHUP, SIGQUIT, SIGTERM};
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [SIGTERM, SIGHUP, SIGQUIT] {
        // Registered first, so it acts on a flag the second handler has not yet set.
        signal_hook::flag::register_conditional_shutdown(sig, 1, flag.clone())?;
        signal_hook::flag::register(sig, flag.clone())?;
    }
    Ok(flag)
}

/// Raw mode, the alternate screen and mouse capture, undone on drop and by the panic hook.
pub struct TerminalGuard;

impl TerminalGuard {
    pub fn enter() -> anyhow::Result<TerminalGuard> {
        install_panic_hook();
        // Made first, so an error half-way through still restores what was done.
        let guard = TerminalGuard;
        enable_raw_mode()?;
        execute!(
            stdout(),
            EnterAlternateScreen,
            EnableMouseCapture,
            EnableBracketedPaste,
            cursor::Hide
        )?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Puts the terminal back as the shell expects it. Safe to call twice.
pub fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = execute!(
        stdout(),
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
}

/// Restores the terminal before the panic message prints, so it is readable. Only for the thread that
/// owns the screen: a panic elsewhere must not pull the screen from under a running UI.
fn install_panic_hook() {
    let ui_thread = std::thread::current().id();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == ui_thread {
            restore_terminal();
        }
        previous(info);
    }));
}
