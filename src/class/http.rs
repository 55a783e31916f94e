//! The HTTP interface of docs/CLASS.md on axum: each handler reads its input, asks the room (one short
//! lock), and writes the answer. A refusal is `{"error": "..."}` with its status.

use super::room::Room;
use super::Refusal;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The largest request body, in bytes.
pub const MAX_BODY: usize = 4096;
/// Live streams open beyond the class's size.
pub const SPARE_STREAMS: usize = 16;
/// A comment line on each live stream this often, to keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

const PAGE: &str = include_str!("../../assets/class/index.html");
const SCRIPT: &str = include_str!("../../assets/class/page.js");
const STYLE: &str = include_str!("../../assets/class/page.css");

/// What every handler shares: the room, and the newest `/api/state` JSON the live streams send.
#[derive(Clone)]
pub struct Shared {
    pub room: Arc<Mutex<Room>>,
    pub state: watch::Receiver<Arc<str>>,
    pub streams: Arc<AtomicUsize>,
    pub max_streams: usize,
}

impl Shared {
    fn room(&self) -> MutexGuard<'_, Room> {
        // A handler that panicked leaves the room as it was between two whole edits.
        self.room.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub fn router(shared: Shared) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { page(PAGE, "text/html; charset=utf-8") }),
        )
        .route(
            "/page.js",
            get(|| async { page(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/page.css",
            get(|| async { page(STYLE, "text/css; charset=utf-8") }),
        )
        .route("/api/join", post(join))
        .route("/api/guess", post(guess))
        .route("/api/state", get(state))
        .route("/api/suggest", get(suggest))
        .route("/api/result", get(result))
        .route("/api/events", get(events))
        .fallback(|| async { refuse(Refusal::new(404, "no such page: open / to join")) })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(MAX_BODY))
        .with_state(shared)
}

fn page(body: &'static str, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
            ),
        ],
        body,
    )
        .into_response()
}

fn refuse(r: Refusal) -> Response {
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(json!({ "error": r.message }))).into_response()
}

fn answer(r: Result<Value, Refusal>) -> Response {
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => refuse(e),
    }
}

/// A JSON body of type `T`, or the refusal that says what is wrong with it.
fn body<T: serde::de::DeserializeOwned>(
    bytes: Result<Bytes, axum::extract::rejection::BytesRejection>,
    form: &str,
) -> Result<T, Refusal> {
    let bytes = bytes.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => {
            Refusal::new(413, format!("the body is over {MAX_BODY} bytes"))
        }
        _ => Refusal::bad(format!("cannot read the body: {e}")),
    })?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| Refusal::bad(format!("the body is not UTF-8: send JSON {form}")))?;
    serde_json::from_str(text).map_err(|e| Refusal::bad(format!("expected JSON {form}: {e}")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JoinBody {
    code: String,
    name: String,
}

async fn join(
    State(s): State<Shared>,
    ConnectInfo(from): ConnectInfo<SocketAddr>,
    bytes: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    answer(
        body::<JoinBody>(bytes, r#"{"code": "123456", "name": "Ada"}"#).and_then(|b| {
            let (id, name) = s.room().join(&b.code, &b.name, from.ip(), Instant::now())?;
            Ok(json!({"student": id.to_string(), "name": name}))
        }),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GuessBody {
    student: String,
    text: String,
}

async fn guess(
    State(s): State<Shared>,
    bytes: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    answer(
        body::<GuessBody>(bytes, r#"{"student": "ID", "text": " Paris"}"#).and_then(|b| {
            let (position, t) = s.room().guess(&b.student, &b.text, Instant::now())?;
            Ok(json!({"position": position, "token": {"id": t.id, "text": t.text}}))
        }),
    )
}

async fn state(State(s): State<Shared>) -> Response {
    let state = s.room().state();
    Json(state).into_response()
}

#[derive(Deserialize)]
struct SuggestQuery {
    student: String,
    q: String,
}

async fn suggest(
    State(s): State<Shared>,
    q: Result<Query<SuggestQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match q {
        Ok(Query(q)) => q,
        Err(e) => return refuse(Refusal::bad(format!("expected ?student=ID&q=TEXT: {e}"))),
    };
    answer(
        s.room()
            .suggest(&q.student, &q.q, Instant::now())
            .map(|tokens| {
                let tokens: Vec<Value> = tokens
                    .iter()
                    .map(|t| json!({"id": t.id, "text": t.text}))
                    .collect();
                json!({ "tokens": tokens })
            }),
    )
}

#[derive(Deserialize)]
struct StudentQuery {
    student: String,
}

async fn result(
    State(s): State<Shared>,
    q: Result<Query<StudentQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    match q {
        Ok(Query(q)) => answer(s.room().result(&q.student, Instant::now())),
        Err(e) => refuse(Refusal::bad(format!("expected ?student=ID: {e}"))),
    }
}

/// Counts a live stream while it is open.
struct StreamSlot(Arc<AtomicUsize>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// `GET /api/events`: the newest state on connecting and on each change. A client that does not read
/// holds only its socket: the channel keeps one value, the newest.
async fn events(State(s): State<Shared>) -> Response {
    if s.streams.fetch_add(1, Ordering::Relaxed) >= s.max_streams {
        s.streams.fetch_sub(1, Ordering::Relaxed);
        return refuse(Refusal::new(
            503,
            "too many live streams are open: the page falls back to asking every few seconds",
        ));
    }
    let slot = StreamSlot(s.streams.clone());
    let stream = tokio_stream::StreamExt::map(
        tokio_stream::wrappers::WatchStream::new(s.state.clone()),
        move |json| {
            let _open = &slot;
            Ok::<_, std::convert::Infallible>(Event::default().event("state").data(&*json))
        },
    );
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}
