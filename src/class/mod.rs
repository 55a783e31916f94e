//! Class mode's web server (`--class`, docs/CLASS.md): students join from their own devices, guess the
//! next token, and see their score after the reveal.
//!
//! The server runs on its own thread, on a one-thread tokio runtime, and shares with the terminal only
//! the [`Room`] behind a mutex: the app publishes what the class may see ([`ClassHandle::publish`],
//! after every message), and the room sends the app `ClassMsg`s (a join, a count, the guesses once
//! closed) through the app's own channel. Neither ever waits on the other, and the engine never sees a
//! request: a guess is a vocabulary token the room looks up itself.

mod http;
pub mod limits;
pub mod qr;
mod refusal;
mod result_json;
pub mod room;
pub mod vocab;

pub use refusal::Refusal;
pub use room::Room;

use crate::protocol::class::{JoinCard, Stage};
use crate::protocol::TokenView;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

pub use http::{MAX_BODY, SPARE_STREAMS};

/// The default address: this machine only. A teacher binds `0.0.0.0:PORT` to let the room in.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7878";
/// How often at most the live streams are sent a changed state.
const PUSH_EVERY: Duration = Duration::from_millis(200);
/// The text so far is sent to the class up to this many characters (its end).
const TEXT_CHARS: usize = 4000;

/// The running server, held by the terminal loop. Dropping it stops the server.
pub struct ClassHandle {
    room: Arc<Mutex<Room>>,
    /// The newest state JSON; the pusher sends it on when it changes.
    state: Arc<watch::Sender<Arc<str>>>,
    card: JoinCard,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ClassHandle {
    /// Starts the server on `addr` for at most `max` students; `notify` carries the room's messages
    /// to the app. Fails with a clear message when the address cannot be listened on.
    pub fn start(addr: &str, max: usize, notify: room::Notify) -> anyhow::Result<ClassHandle> {
        let sock: SocketAddr = addr.parse().map_err(|_| {
            anyhow::anyhow!("--class {addr}: expected an address and port, e.g. 0.0.0.0:7878")
        })?;
        let listener = TcpListener::bind(sock).map_err(|e| {
            anyhow::anyhow!(
                "--class {addr}: cannot listen there ({e}); pick another port, e.g. --class {}:{}",
                sock.ip(),
                sock.port().wrapping_add(1).max(1024)
            )
        })?;
        listener.set_nonblocking(true)?;
        let bound = listener.local_addr()?;
        let code = join_code();
        let url = page_url(bound);
        let card = JoinCard {
            qr: qr::lines(&format!("{url}?code={code}")),
            url,
            code: code.clone(),
            max,
            local_only: bound.ip().is_loopback().then_some(bound.port()),
        };
        let room = Arc::new(Mutex::new(Room::new(code, max, notify)));
        let (tx, rx) = watch::channel::<Arc<str>>(Arc::from("{}"));
        let state = Arc::new(tx);
        let shared = http::Shared {
            room: room.clone(),
            state: rx,
            streams: Arc::new(AtomicUsize::new(0)),
            max_streams: max + SPARE_STREAMS,
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let pusher = (room.clone(), state.clone());
        let thread = std::thread::Builder::new()
            .name("class".into())
            .spawn(move || serve(listener, shared, pusher, stop_rx))?;
        let handle = ClassHandle {
            room,
            state,
            card,
            stop: Some(stop_tx),
            thread: Some(thread),
        };
        handle.push();
        Ok(handle)
    }

    /// What the terminal shows to let the class in.
    pub fn card(&self) -> &JoinCard {
        &self.card
    }

    /// The model's vocabulary, once loaded: suggestions and guesses need it.
    pub fn set_vocabulary(&self, table: Vec<TokenView>) {
        self.lock().set_vocabulary(table);
    }

    /// The model's name, once loaded.
    pub fn set_model(&self, name: &str) {
        self.lock().set_model(name);
    }

    /// The app's newest stage (after every message): the room opens or closes its question, and the
    /// live streams are sent the change at their next push.
    pub fn publish(&self, mut stage: Stage) {
        let chars = stage.text.chars().count();
        if chars > TEXT_CHARS {
            stage.text = format!(
                "…{}",
                stage
                    .text
                    .chars()
                    .skip(chars - TEXT_CHARS)
                    .collect::<String>()
            );
        }
        self.lock().publish(stage);
    }

    /// Writes the room's state into the channel the streams read, if it changed.
    fn push(&self) {
        push(&self.room, &self.state);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Room> {
        self.room.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for ClassHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn push(room: &Mutex<Room>, state: &watch::Sender<Arc<str>>) {
    let json = room
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .state()
        .to_string();
    state.send_if_modified(|old| {
        let changed = **old != *json;
        if changed {
            *old = Arc::from(json.as_str());
        }
        changed
    });
}

/// The server thread: axum on a one-thread runtime, and a pusher that sends the live streams the
/// newest state at most every `PUSH_EVERY` (a burst of guesses is one event, not one per guess).
fn serve(
    listener: TcpListener,
    shared: http::Shared,
    (room, state): (Arc<Mutex<Room>>, Arc<watch::Sender<Arc<str>>>),
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    else {
        return;
    };
    rt.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(PUSH_EVERY);
            loop {
                tick.tick().await;
                push(&room, &state);
            }
        });
        let app = http::router(shared).into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        // Quitting does not wait for the students: a page's live stream never ends on its own, so
        // the runtime is dropped with every connection in it once the app says stop.
        let _ = stop.await;
    });
}

/// Six random digits, new every run.
fn join_code() -> String {
    use std::hash::BuildHasher;
    let n = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
    format!("{:06}", n % 1_000_000)
}

/// The address students type: this machine's address on the network when bound to every interface
/// (found by asking the routing table, no packet sent), else the address bound.
fn page_url(bound: SocketAddr) -> String {
    let ip = if bound.ip().is_unspecified() {
        lan_ip().unwrap_or(bound.ip())
    } else {
        bound.ip()
    };
    format!("http://{}/", SocketAddr::new(ip, bound.port()))
}

fn lan_ip() -> Option<std::net::IpAddr> {
    let s = UdpSocket::bind("0.0.0.0:0").ok()?;
    // A documentation address (TEST-NET-1): connecting a UDP socket sends nothing.
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_unspecified()).then_some(ip)
}
