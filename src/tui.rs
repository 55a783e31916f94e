//! The terminal: setup, restore, input thread, event loop.
pub fn run(_cli: &crate::cli::Cli, _model: std::path::PathBuf) -> anyhow::Result<()> {
    anyhow::bail!("the TUI is not built yet")
}
