//! A tmux session running a command, for end-to-end tests in a real terminal: keys in, the screen out,
//! waits on screen conditions against a deadline (never fixed sleeps). Killed on drop.

use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    session: String,
    /// The private tmux server's socket name (`tmux -L NAME`): every session has a server of its own.
    socket: String,
    /// The private server's socket file, removed on drop (tmux leaves it behind).
    socket_path: Option<std::path::PathBuf>,
}

/// Whether tmux can be run.
pub fn available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Tmux {
    /// A session running `cmd` on a private tmux server of its own (as `start_private`). On the default
    /// server, tests running at once raced: one test's last session ending stopped the server while
    /// another's `new-session` was connecting to it ("tmux new-session failed" in a CI run).
    pub fn start(cmd: &str, width: u16, height: u16) -> Tmux {
        Self::launch("nexttoken-e2e", cmd, width, height)
    }

    /// A session running `cmd` on a private tmux server (`tmux -L SOCKET-PID-N`), which is killed with
    /// it: a test that needs its own server (its own environment, no other session) uses this.
    pub fn start_private(socket: &str, cmd: &str, width: u16, height: u16) -> Tmux {
        Self::launch(socket, cmd, width, height)
    }

    fn launch(socket: &str, cmd: &str, width: u16, height: u16) -> Tmux {
        assert!(
            available(),
            "tmux is needed for this test: apt-get install tmux (.ci/run installs it)"
        );
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let pid = std::process::id();
        let session = format!("nexttoken-e2e-{pid}-{n}");
        let socket = format!("{socket}-{pid}-{n}");
        let mut t = Tmux {
            session,
            socket,
            socket_path: None,
        };
        let (w, h) = (width.to_string(), height.to_string());
        let ok = t
            .tmux()
            .args([
                "new-session",
                "-d",
                "-s",
                &t.session,
                "-x",
                &w,
                "-y",
                &h,
                cmd,
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        t.socket_path = Some(t.display("#{socket_path}").into());
        t
    }

    /// A tmux command on this session's server.
    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    pub fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        self.tmux()
            .args(["send-keys", "-t", &self.session])
            .args(keys)
            .status()
            .unwrap();
    }

    /// Pastes `text` as a terminal does with bracketed paste (the mouse, or Ctrl-Shift-V).
    pub fn paste(&self, text: &str) {
        let buffer = format!("{}-paste", self.session);
        let ok = self
            .tmux()
            .args(["set-buffer", "-b", &buffer, text])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux set-buffer failed");
        let ok = self
            .tmux()
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
        let out = self
            .tmux()
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
        let _ = self
            .tmux()
            .args(["kill-session", "-t", &self.session])
            .status();
        // The private server is this session's alone.
        let _ = self
            .tmux()
            .arg("kill-server")
            .stderr(std::process::Stdio::null())
            .status();
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
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
