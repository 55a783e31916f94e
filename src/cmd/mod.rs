//! Every command in one place, one file each: the TUI (`tui`, the default), `trace`, `compare` (two paths,
//! or two models with `compare_ab`), `lesson`, `export`, `bench`; `fetch` is here in `run`. Their flags
//! are all in `cli`. This is the top of the house: it may use every module below it.

pub mod bench;
mod bench_checks;
pub mod bench_draft;
pub mod class_room;
pub mod compare;
pub mod compare_ab;
pub mod export;
pub mod lesson;
pub mod speed_of_light;
pub mod terminal;
pub mod trace;
pub mod tui;

use crate::cli::{Cli, Cmd};
use crate::engine::draft::DraftSpec;
use crate::engine::fetch;
use crate::engine::gguf::{GgufFile, LlamaConfig};
use crate::engine::load::{load_session, LoadOptions};
use crate::engine::session::SessionOptions;
use crate::engine::twin::Twin;
use anyhow::Result;
use std::path::PathBuf;

/// Runs the command the arguments name: the TUI when there is none.
pub fn run(cli: Cli) -> Result<()> {
    // Size the thread pools before anything touches candle: left to itself, candle's default pool makes
    // decode run at less than half speed here.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    crate::engine::set_threads(cli.model.threads.unwrap_or(cores));
    refuse_unused_model_flags(&cli)?;
    if cli.model.server.server.is_some() && cli.model.kv != crate::cli::KvCacheType::F32 {
        anyhow::bail!("--kv sets a local model's KV cache; a served model keeps its server's: drop --kv or --server");
    }
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
                ..session_options(&cli.model)
            };
            let settings = args.sampler.settings()?;
            let (mut session, _) = open_session(&cli, settings, opts)?;
            if let Some(spec) = args.draft.spec() {
                load_draft(&cli, &mut session, &spec, args.draft.k())?;
            }
            let stdout = std::io::stdout();
            trace::run(&mut session, args, &mut stdout.lock())
        }
        Some(Cmd::Compare(args)) if cli.model.server.server.is_some() => {
            if args.ab.model_b.is_some() || args.ab.requant_b.is_some() {
                anyhow::bail!("--model-b and --requant-b compare two local models: drop --server, or compare two paths of the served model (--force or --reference)");
            }
            let settings = args.sampler.settings()?;
            let (mut session, _) = open_session(&cli, settings, session_options(&cli.model))?;
            compare::run(&mut session, args, &mut std::io::stdout().lock())
        }
        Some(Cmd::Compare(args)) => compare_local(&cli, args),
        Some(Cmd::Lesson(args)) => lesson::run_cli(&cli.model, args),
        Some(Cmd::Export(args)) => {
            let (path, bytes) = export::run(args)?;
            println!("wrote {} ({bytes} bytes)", path.display());
            Ok(())
        }
        Some(Cmd::Bench(args)) => {
            let path = fetch::resolve_model(cli.model.model.as_deref())?;
            bench::run(&path, args, cli.model.kv.precision())
        }
        None if cli.model.server.server.is_some() => {
            cli.sampler.settings()?;
            cli.model.server.options()?;
            tui::run(&cli, PathBuf::new())
        }
        None => {
            let path = checked_model(&cli)?;
            tui::run(&cli, path)
        }
    }
}

/// The model flags are global (clap lists them under every subcommand); a subcommand that does not use
/// one refuses it rather than ignore it (`fetch --model gemma3-270m` had fetched SmolLM2). A
/// `--model` that came from `NEXTTOKEN_MODEL` is the environment's, not asked for here.
fn refuse_unused_model_flags(cli: &Cli) -> Result<()> {
    use crate::cli::{LessonArgs, LessonCmd};
    let (name, uses, why): (&str, &[&str], &str) = match &cli.command {
        Some(Cmd::Fetch { .. }) => (
            "fetch",
            &[],
            "it fetches the model named as its argument: `nexttoken fetch gemma3-270m`",
        ),
        Some(Cmd::Export(_)) => (
            "export",
            &[],
            "a handout needs no model: everything is in the session file",
        ),
        Some(Cmd::Lesson(LessonArgs {
            command: LessonCmd::List,
        })) => (
            "lesson list",
            &[],
            "the list needs no model; `lesson check NAME --model M` runs one on a model",
        ),
        Some(Cmd::Bench(_)) => (
            "bench",
            &["--model", "--threads", "--kv"],
            "it measures a local model's kernels",
        ),
        _ => return Ok(()),
    };
    let m = &cli.model;
    let from_env = std::env::var_os("NEXTTOKEN_MODEL").map(PathBuf::from);
    let given = [
        ("--model", m.model.is_some() && m.model != from_env),
        ("--tokenizer", m.tokenizer.is_some()),
        ("--threads", m.threads.is_some()),
        ("--kv", m.kv != crate::cli::KvCacheType::F32),
        ("--server", m.server.server.is_some()),
        ("--server-model", m.server.server_model.is_some()),
    ];
    let unused: Vec<&str> = given
        .iter()
        .filter(|(flag, on)| *on && !uses.contains(flag))
        .map(|(flag, _)| *flag)
        .collect();
    if unused.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "`nexttoken {name}` does not use {}: drop {} ({why})",
        unused.join(", "),
        if unused.len() == 1 { "it" } else { "them" }
    )
}

/// A command's session options: the defaults, with what the model flags set (`--kv`).
fn session_options(model: &crate::cli::ModelArgs) -> SessionOptions {
    SessionOptions {
        kv_precision: model.kv.precision(),
        ..SessionOptions::default()
    }
}

/// `compare` on the local model: two paths of it, or model A against model B (`--model-b`,
/// `--requant-b`).
fn compare_local(cli: &Cli, args: &crate::cli::CompareArgs) -> Result<()> {
    let path = fetch::resolve_model(cli.model.model.as_deref())?;
    let load = LoadOptions {
        tokenizer_json: cli.model.tokenizer.as_deref(),
        ..LoadOptions::default()
    };
    let settings = args.sampler.settings()?;
    let opts = session_options(&cli.model);
    let (mut session, _) = load_session(&path, &load, settings, opts, &mut |_| {})?;
    let stdout = std::io::stdout();
    let spec = args.ab.spec()?;
    match spec {
        Some(spec) => {
            let mut twin = Twin::load(&path, &spec, load.matmul)?;
            let a = path.file_name().unwrap_or_default().to_string_lossy();
            compare_ab::run(&mut session, &mut twin, &a, args, &mut stdout.lock())
        }
        None => compare::run(&mut session, args, &mut stdout.lock()),
    }
}

/// The session `trace` and `compare` drive: over the served model with `--server`, else the local GGUF.
fn open_session(
    cli: &Cli,
    settings: crate::protocol::SamplerSettings,
    opts: SessionOptions,
) -> Result<(crate::engine::session::Session, crate::protocol::ModelInfo)> {
    if let Some(server) = cli.model.server.options()? {
        let opened =
            crate::engine::served::open_served_session(&server, settings, opts, &mut |_| {})?;
        return Ok(opened);
    }
    let path = fetch::resolve_model(cli.model.model.as_deref())?;
    let load = LoadOptions {
        tokenizer_json: cli.model.tokenizer.as_deref(),
        ..LoadOptions::default()
    };
    Ok(load_session(&path, &load, settings, opts, &mut |_| {})?)
}

/// The draft of speculative decoding for the session's local model, proposing `k` tokens a round.
fn load_draft(
    cli: &Cli,
    session: &mut crate::engine::session::Session,
    spec: &DraftSpec,
    k: usize,
) -> Result<()> {
    if cli.model.server.server.is_some() {
        anyhow::bail!("--draft needs the model's own passes: drop --server, or drop --draft");
    }
    Ok(session.load_draft(spec, k)?)
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
