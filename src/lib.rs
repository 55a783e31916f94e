//! nexttoken: watch a real quantised language model write, one forward pass at a time.
//!
//! # Module map
//!
//! | module | owns |
//! |---|---|
//! | [`analysis`] | pure measurements: loops at the tip, repeated n-grams, divergences between distributions |
//! | [`protocol`] | the plain data that crosses threads: `Command` (to the engine), `Event` (from it), reports |
//! | [`engine`] | candle and tokenizers: GGUF loading, tokenizer, llama forward, KV cache, sampler, session tree, the engine thread |
//! | [`app`] | the TUI's state and its pure `App::update`, the one keymap table |
//! | [`ui`] | views: pure reads of `&App` that draw with ratatui |
//! | [`tui`] | the terminal: setup and restore, the input thread, the event loop |
//! | [`trace`] | `nexttoken trace`: JSON Lines of a session, no terminal |
//! | [`compare`] | `nexttoken compare`: two paths aligned step by step (forced token or teacher forcing against free running) |
//! | [`compare_ab`] | `nexttoken compare --model-b / --requant-b`: two models at the same step of one path |
//! | [`lesson`] | lessons as TOML files: the format, the seven built-ins, the step runner, `nexttoken lesson list` and `check` |
//! | [`export`] | `nexttoken export`: a saved session as a handout, one self-contained HTML page or Markdown |
//! | [`bench`] | `nexttoken bench`: prefill and decode speed, llama-bench style |
//! | [`cli`] | command-line arguments |
//! | [`served_args`] | the `--server` flags: a model served by llama.cpp's server or vLLM instead of a local GGUF |
//!
//! # Threads: one direction
//!
//! ```text
//! input thread --Msg--> UI thread (App: state, update, render) --Command--> engine thread (model, session)
//!                              ^                                                   |
//!                              +----------------- Event (plain data) --------------+
//! ```
//!
//! `engine` never imports ratatui or crossterm; `app` and `ui` never import candle or tokenizers. `trace`
//! and `bench` drive the same `engine::session::Session` without a terminal.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod analysis;
pub mod app;
pub mod cli;
pub mod cmd;
pub mod engine;
pub mod export;
pub mod fmt;
pub mod lesson;
pub mod protocol;
pub mod ui;
pub mod worker;
