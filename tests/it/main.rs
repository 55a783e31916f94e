//! The integration tests in one binary (one link of candle and tokenizers instead of forty-odd): each
//! module is one area, named as its file. End-to-end tests with outside programs live in `tests/e2e/`, and
//! `tests/fetch.rs` alone, because it sets process-wide environment variables.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod ab;
mod ab_view;
mod app_panels;
mod app_state;
mod bad_input;
mod branches;
mod class_app;
mod class_http;
mod class_qr;
mod classroom;
mod cli;
mod dry;
mod engine_tiny;
mod exact_reference;
mod export;
mod golden;
mod guess;
mod head_maxima;
mod house;
mod inspect;
mod inspect_tui;
mod keymap;
mod kv_determinism;
mod lab;
mod lesson_engine;
mod lesson_questions;
mod lessons;
mod linear;
mod model_gemma;
mod model_qwen;
mod model_vs_candle;
mod parsers_prop;
mod sampler;
mod sampler_panel;
mod sessions;
mod speculative;
mod speed_of_light;
mod text_editing;
mod tokenizer;
mod trace_cli;
mod tui_input;
mod ui_snapshots;
mod views_ab;
mod views_attention;
mod views_bars;
mod views_class;
mod views_classroom;
mod views_inspect;
mod views_lab;
mod views_panels;
mod views_round;
mod views_served;
mod worker;
