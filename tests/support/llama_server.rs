//! llama.cpp's own `llama-server`, started on a free loopback port with a model for a test and killed
//! when dropped. The binary is `NEXTTOKEN_LLAMA_SERVER`, else what `.ci/llama-server.sh` builds (once,
//! cached outside the clone). Where it cannot be had, tests skip with a message naming what to install,
//! except under `CI=true`, where that is a failure.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The llama-server binary, or `None` (with the reason printed) when it cannot be had here.
pub fn binary() -> Option<PathBuf> {
    static BIN: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let found = BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("NEXTTOKEN_LLAMA_SERVER") {
            return Ok(PathBuf::from(p));
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/llama-server.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && Path::new(&path).is_file() {
            Ok(PathBuf::from(path))
        } else {
            Err(format!("{} failed ({})", script.display(), out.status))
        }
    });
    match found {
        Ok(p) => Some(p.clone()),
        Err(why) => {
            let msg = format!(
                "llama-server is not available ({why}). Install cmake, a C++ compiler and python3 with pip so that .ci/llama-server.sh can build it, or point NEXTTOKEN_LLAMA_SERVER at a llama-server binary"
            );
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{msg}");
            }
            eprintln!("SKIPPED: {msg}");
            None
        }
    }
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A running llama-server; killed (and reaped) on drop.
pub struct LlamaServer {
    child: Child,
    pub url: String,
}

impl LlamaServer {
    /// Starts `bin` with `model` on a free port and waits until `/health` answers 200.
    pub fn start(bin: &Path, model: &Path) -> LlamaServer {
        let port = free_port();
        let child = Command::new(bin)
            .args(["-m", &model.display().to_string()])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-c", "2048", "-np", "1", "-t", "2", "--no-webui"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start llama-server");
        let mut server = LlamaServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        server.wait_ready(port);
        server
    }

    fn wait_ready(&mut self, port: u16) {
        // Generous: a first start on a busy 2-core machine can be slow. Not a timing assertion: only
        // how long to wait before calling the server broken.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = self.child.try_wait().expect("poll llama-server") {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                panic!("llama-server exited ({status}) before it was ready:\n{err}");
            }
            if health_ok(port) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "llama-server never became ready on port {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills the server now (a server gone mid-session).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether `GET /health` answers 200 (raw HTTP, so the helper needs no client of its own).
fn health_ok(port: u16) -> bool {
    use std::io::Write;
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200")
}
