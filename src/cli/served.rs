//! The `--server` flags: step a model served by llama.cpp's server or vLLM instead of a local GGUF, in
//! the TUI, `trace` and `compare`. The API key comes from `NEXTTOKEN_API_KEY` (or `--api-key`) and is
//! never printed: not by `--help`, not in an error.

use crate::engine::served::ServedOptions;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args, Clone, Default)]
pub struct ServerArgs {
    /// Step a model served by llama.cpp's server or vLLM at this address (http://HOST:PORT) instead of
    /// a local GGUF. Which server it is is found out when connecting.
    #[arg(long, global = true, value_name = "URL")]
    pub server: Option<String>,
    /// With --server: the model to step when the server holds several (a name from its /v1/models).
    #[arg(long, global = true, value_name = "NAME")]
    pub server_model: Option<String>,
    /// With --server: the server's API key (sent as a bearer token).
    #[arg(long, global = true, env = "NEXTTOKEN_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// With --server: seconds to wait for one request before giving up (the session stays as it was).
    #[arg(long, global = true, value_name = "SECS", default_value_t = 30.0)]
    pub server_timeout: f64,
}

impl ServerArgs {
    /// The connection these flags ask for; `None` without `--server`. A bad timeout is a clear error.
    pub fn options(&self) -> anyhow::Result<Option<ServedOptions>> {
        let Some(url) = &self.server else {
            if self.server_model.is_some() {
                anyhow::bail!(
                    "--server-model needs --server URL (the server that holds the model)"
                );
            }
            return Ok(None);
        };
        if !(self.server_timeout.is_finite() && self.server_timeout > 0.0) {
            anyhow::bail!(
                "--server-timeout {} is not a positive number of seconds (for example --server-timeout 60)",
                self.server_timeout
            );
        }
        Ok(Some(ServedOptions {
            url: url.clone(),
            api_key: self.api_key.clone(),
            model: self.server_model.clone(),
            timeout: Duration::from_secs_f64(self.server_timeout),
        }))
    }
}
