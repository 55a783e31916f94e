//! End-to-end tests that drive outside programs: tmux running the real binary, headless Chromium on the
//! handout, llama.cpp's `llama-server`. One binary.

#[path = "../support/mod.rs"]
mod support;

mod class_browser;
mod e2e_tmux;
mod e2e_tmux_served;
mod export_browser;
mod served;
