//! A tmux session running a command, for end-to-end tests in a real terminal: keys in, the screen out,
//! waits on screen conditions against a deadline (never fixed sleeps). Killed on drop.

use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    session: String,
}

impl Tmux {
    pub fn start(cmd: &str, width: u16, height: u16) -> Tmux {
        let have = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            have,
            "tmux is needed for this test: apt-get install tmux (.ci/run installs it)"
        );
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let session = format!("nexttoken-e2e-{}-{n}", std::process::id());
        let (w, h) = (width.to_string(), height.to_string());
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-s", &session, "-x", &w, "-y", &h, cmd])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        Tmux { session }
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        Command::new("tmux")
            .args(["send-keys", "-t", &self.session])
            .args(keys)
            .status()
            .unwrap();
    }

    /// Pastes `text` as a terminal does with bracketed paste (the mouse, or Ctrl-Shift-V).
    pub fn paste(&self, text: &str) {
        let buffer = format!("{}-paste", self.session);
        let ok = Command::new("tmux")
            .args(["set-buffer", "-b", &buffer, text])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux set-buffer failed");
        let ok = Command::new("tmux")
            .args([
                "paste-buffer",
                "-p",
                "-d",
                "-b",
                &buffer,
                "-t",
                &self.session,
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux paste-buffer failed");
    }

    /// A tmux format string evaluated for the session (`#{cursor_x}`, ...).
    pub fn display(&self, format: &str) -> String {
        let out = Command::new("tmux")
            .args(["display-message", "-p", "-t", &self.session, format])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Polls the screen until `pred` holds; fails with the last screen after `secs`.
    pub fn wait_for(&self, what: &str, secs: u64, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen was:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .status();
    }
}

/// The number after "step " on the status line.
pub fn step_counter(screen: &str) -> Option<usize> {
    let line = screen
        .lines()
        .find(|l| l.trim_start().starts_with("step "))?;
    line.trim_start()["step ".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
