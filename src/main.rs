//! The `nexttoken` binary: parses arguments and hands off to the TUI, `fetch`, `trace` or `bench`.

use anyhow::Result;
use clap::Parser;
use nexttoken::cli::{Cli, Cmd};
use nexttoken::engine::fetch;
use nexttoken::engine::linear::MatmulPath;
use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::SessionOptions;

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("nexttoken: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    // Size the thread pools before anything touches candle: left to itself, candle's default pool makes
    // decode run at less than half speed here.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    nexttoken::engine::set_threads(cli.model.threads.unwrap_or(cores));
    match &cli.command {
        Some(Cmd::Fetch { force }) => {
            let path = fetch::fetch_default(*force)?;
            println!("{}", path.display());
            Ok(())
        }
        Some(Cmd::Trace(args)) => {
            let path = fetch::resolve_model(cli.model.model.as_deref())?;
            let load = LoadOptions {
                tokenizer_json: cli.model.tokenizer.as_deref(),
                matmul: MatmulPath::Fast,
            };
            let opts = SessionOptions {
                top_k_shown: args.top_k.max(1),
                ..SessionOptions::default()
            };
            let (mut session, _) = load_session(
                &path,
                &load,
                nexttoken::tui::sampler_settings(&cli.sampler),
                opts,
                &mut |_| {},
            )?;
            let prompt = cli.prompt.as_deref().unwrap_or("The capital of France is");
            let stdout = std::io::stdout();
            nexttoken::trace::run(&mut session, prompt, cli.chat, args, &mut stdout.lock())
        }
        Some(Cmd::Bench(args)) => {
            let path = fetch::resolve_model(cli.model.model.as_deref())?;
            nexttoken::bench::run(&path, args)
        }
        None => {
            let path = fetch::resolve_model(cli.model.model.as_deref())?;
            nexttoken::tui::run(&cli, path)
        }
    }
}
