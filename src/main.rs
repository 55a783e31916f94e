//! The `nexttoken` binary: parses arguments and hands off to the TUI, `fetch`, `trace` or `bench`.

use clap::Parser;
use nexttoken::cli::{Cli, Cmd};

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match &cli.command {
        None => anyhow::bail!("the TUI is not built yet"),
        Some(Cmd::Fetch { .. }) => anyhow::bail!("fetch is not built yet"),
        Some(Cmd::Trace(_)) => anyhow::bail!("trace is not built yet"),
        Some(Cmd::Bench(_)) => anyhow::bail!("bench is not built yet"),
    }
}
