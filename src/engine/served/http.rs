//! The served backend's HTTP: one blocking request at a time (ureq), JSON in and out, and every way a
//! request can fail turned into one sentence that says what went wrong and what to do. The API key is
//! sent as a bearer token and never appears in any message.

use std::time::{Duration, Instant};

/// Why a request to the server failed. Each message names the server and what to try.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ServedError {
    #[error("the server at {url} is not reachable ({why}): check that it is running and the address is right, then try again")]
    Unreachable { url: String, why: String },
    #[error("the server at {url} did not answer within {secs} s (--server-timeout): it may be busy or loading; try again, or raise the timeout")]
    Timeout { url: String, secs: f64 },
    #[error("the server answered {path} with HTTP {status}: {body}")]
    Status {
        path: String,
        status: u16,
        body: String,
    },
    #[error("the server's answer to {path} is not what nexttoken expects ({why}); is it llama.cpp's server or vLLM? Try again, or check the server's log")]
    Malformed { path: String, why: String },
    #[error("{0}")]
    Refused(String),
}

/// The connection: base address, the key (never printed), the timeout, and a keep-alive agent.
pub struct Http {
    agent: ureq::Agent,
    base: String,
    api_key: Option<String>,
    timeout: Duration,
}

impl std::fmt::Debug for Http {
    // Hand-written so that the key can never reach a log through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("base", &self.base)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Largest answer read (a top-K reply is a few kB; a chat template a few more).
const MAX_BODY: u64 = 16 << 20;

impl Http {
    /// Checks the address (`http://host:port`, no path needed) and builds the agent.
    pub fn new(url: &str, api_key: Option<String>, timeout: Duration) -> Result<Self, ServedError> {
        let base = url.trim().trim_end_matches('/').to_string();
        if base.starts_with("https://") {
            return Err(ServedError::Refused(format!(
                "{base}: this build of nexttoken speaks plain http only; reach the server through http (for example an SSH tunnel: ssh -L 8000:localhost:8000 HOST, then --server http://127.0.0.1:8000)"
            )));
        }
        if !base.starts_with("http://") || base.len() <= "http://".len() {
            return Err(ServedError::Refused(format!(
                "`{url}` is not a server address: give it as http://HOST:PORT (for example --server http://127.0.0.1:8080)"
            )));
        }
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build();
        Ok(Self {
            agent: config.into(),
            base,
            api_key: api_key.filter(|k| !k.is_empty()),
            timeout,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// `GET path`, its JSON and how long it took in ms.
    pub fn get(&self, path: &str) -> Result<(serde_json::Value, f64), ServedError> {
        let mut req = self.agent.get(format!("{}{path}", self.base));
        if let Some(k) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        let start = Instant::now();
        let resp = req.call();
        self.answer(path, resp, start)
    }

    /// `POST path` with a JSON body, its JSON and how long it took in ms.
    pub fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<(serde_json::Value, f64), ServedError> {
        let mut req = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json");
        if let Some(k) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        let start = Instant::now();
        let resp = req.send(body.to_string());
        self.answer(path, resp, start)
    }

    fn answer(
        &self,
        path: &str,
        resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        start: Instant,
    ) -> Result<(serde_json::Value, f64), ServedError> {
        let mut resp = resp.map_err(|e| self.transport(e))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_string()
            .map_err(|e| match e {
                ureq::Error::Timeout(_) | ureq::Error::Io(_) | ureq::Error::ConnectionFailed => {
                    self.transport(e)
                }
                e => ServedError::Malformed {
                    path: path.into(),
                    why: e.to_string(),
                },
            })?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        if !(200..300).contains(&status) {
            return Err(ServedError::Status {
                path: path.into(),
                status,
                body: error_text(&text),
            });
        }
        let json = serde_json::from_str(&text).map_err(|e| ServedError::Malformed {
            path: path.into(),
            why: format!("not JSON: {e}"),
        })?;
        Ok((json, ms))
    }

    fn transport(&self, e: ureq::Error) -> ServedError {
        let url = self.base.clone();
        match e {
            ureq::Error::Timeout(_) => ServedError::Timeout {
                url,
                secs: self.timeout.as_secs_f64(),
            },
            e => ServedError::Unreachable {
                url,
                why: e.to_string(),
            },
        }
    }
}

/// The message inside an error answer (`{"error": {"message": ...}}` from both servers), else the text
/// itself, cut short.
fn error_text(body: &str) -> String {
    let msg = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            e.get("message")
                .or(Some(e))
                .and_then(|m| m.as_str().map(str::to_string))
                .or_else(|| v.get("message")?.as_str().map(str::to_string))
        });
    let text = msg.unwrap_or_else(|| body.trim().to_string());
    let mut cut: String = text.chars().take(300).collect();
    if cut.is_empty() {
        cut = "(no message)".into();
    }
    cut
}
