//! The `nexttoken` binary: parses arguments and hands off to the TUI, `fetch`, `trace` or `bench`.

use anyhow::Result;
use clap::Parser;
use nexttoken::cli::{Cli, Cmd};
use nexttoken::engine::fetch;
use nexttoken::engine::gguf::{GgufFile, LlamaConfig};
use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::SessionOptions;
use nexttoken::engine::twin::Twin;
use std::path::PathBuf;

fn main() {
    let cli = Cli::parse();
    let verbose = cli.model.verbose;
    if !verbose && std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // candle captures a backtrace into its errors whenever RUST_BACKTRACE is set, and prints it as
        // part of the message: dozens of lines around one sentence. Errors carry the sentence alone
        // unless --verbose; panics still follow RUST_BACKTRACE. Set before any other thread exists.
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
    if let Err(e) = run(cli) {
        if verbose {
            eprintln!("nexttoken: {e:?}");
        } else {
            eprintln!("nexttoken: {e:#}");
        }
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    // Size the thread pools before anything touches candle: left to itself, candle's default pool makes
    // decode run at less than half speed here.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    nexttoken::engine::set_threads(cli.model.threads.unwrap_or(cores));
    match &cli.command {
        Some(Cmd::Fetch { name, force }) => {
            let model = fetch::known(name).unwrap_or(&fetch::DEFAULT);
            let path = fetch::fetch(model, *force)?;
            println!("{}", path.display());
            Ok(())
        }
        Some(Cmd::Trace(args)) => {
            let opts = SessionOptions {
                top_k_shown: args.top_k.max(1),
                ..SessionOptions::default()
            };
            let settings = args.sampler.settings()?;
            let (mut session, _) = open_session(&cli, settings, opts)?;
            let stdout = std::io::stdout();
            nexttoken::trace::run(&mut session, args, &mut stdout.lock())
        }
        Some(Cmd::Compare(args)) if cli.model.server.server.is_some() => {
            if args.ab.model_b.is_some() || args.ab.requant_b.is_some() {
                anyhow::bail!("--model-b and --requant-b compare two local models: drop --server, or compare two paths of the served model (--force or --reference)");
            }
            let settings = args.sampler.settings()?;
            let (mut session, _) = open_session(&cli, settings, SessionOptions::default())?;
            nexttoken::compare::run(&mut session, args, &mut std::io::stdout().lock())
        }
        Some(Cmd::Compare(args)) => {
            let path = fetch::resolve_model(cli.model.model.as_deref())?;
            let load = LoadOptions {
                tokenizer_json: cli.model.tokenizer.as_deref(),
                ..LoadOptions::default()
            };
            let settings = args.sampler.settings()?;
            let opts = SessionOptions::default();
            let (mut session, _) = load_session(&path, &load, settings, opts, &mut |_| {})?;
            let stdout = std::io::stdout();
            let spec = args.ab.spec()?;
            match spec {
                Some(spec) => {
                    let mut twin = Twin::load(&path, &spec, load.matmul)?;
                    let a = path.file_name().unwrap_or_default().to_string_lossy();
                    nexttoken::compare_ab::run(
                        &mut session,
                        &mut twin,
                        &a,
                        args,
                        &mut stdout.lock(),
                    )
                }
                None => nexttoken::compare::run(&mut session, args, &mut stdout.lock()),
            }
        }
        Some(Cmd::Lesson(args)) => nexttoken::lesson::check::run_cli(&cli.model, args),
        Some(Cmd::Export(args)) => {
            let (path, bytes) = nexttoken::export::run(args)?;
            println!("wrote {} ({bytes} bytes)", path.display());
            Ok(())
        }
        Some(Cmd::Bench(args)) => {
            let path = fetch::resolve_model(cli.model.model.as_deref())?;
            nexttoken::bench::run(&path, args)
        }
        None if cli.model.server.server.is_some() => {
            cli.sampler.settings()?;
            cli.model.server.options()?;
            nexttoken::tui::run(&cli, PathBuf::new())
        }
        None => {
            let path = checked_model(&cli)?;
            nexttoken::tui::run(&cli, path)
        }
    }
}

/// The session `trace` and `compare` drive: over the served model with `--server`, else the local GGUF.
fn open_session(
    cli: &Cli,
    settings: nexttoken::protocol::SamplerSettings,
    opts: SessionOptions,
) -> Result<(
    nexttoken::engine::session::Session,
    nexttoken::protocol::ModelInfo,
)> {
    if let Some(server) = cli.model.server.options()? {
        let opened =
            nexttoken::engine::served::open_served_session(&server, settings, opts, &mut |_| {})?;
        return Ok(opened);
    }
    let path = fetch::resolve_model(cli.model.model.as_deref())?;
    let load = LoadOptions {
        tokenizer_json: cli.model.tokenizer.as_deref(),
        ..LoadOptions::default()
    };
    Ok(load_session(&path, &load, settings, opts, &mut |_| {})?)
}

/// The model the TUI will open, checked before the terminal is taken over: a missing or broken file is
/// a whole message on stderr, not a status line cut off at the screen's edge.
fn checked_model(cli: &Cli) -> Result<PathBuf> {
    cli.sampler.settings()?;
    let path = fetch::resolve_model(cli.model.model.as_deref())?;
    let g = GgufFile::open(&path)?;
    LlamaConfig::from_gguf(&g)?;
    Ok(path)
}
