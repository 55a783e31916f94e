//! `nexttoken export`: a saved session read from its file, rendered as a handout (one self-contained
//! HTML page, or Markdown) and written atomically. It needs no model: everything is in the file
//! (`docs/EXPORT.md`).

pub mod facts;
pub mod html;
pub mod markdown;
pub mod replay;
pub mod timing_text;

use crate::engine::session_file::{self, SavedSession, SessionFileError};
use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

/// `nexttoken export` flags.
#[derive(Debug, Args, Clone)]
pub struct ExportArgs {
    /// The saved session (from the TUI's `S` key or `nexttoken trace --save`).
    #[arg(value_name = "SESSION.json")]
    pub session: PathBuf,
    /// `html` (one self-contained page) or `md` (Markdown) [default: from OUT's extension, else html].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Where to write the handout [default: the session file with the format's extension].
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One HTML file with its styles inline: opens offline, prints cleanly.
    Html,
    /// Markdown tables.
    Md,
}

impl Format {
    /// The format `--format` asks for, else the one `out`'s extension names, else HTML.
    pub fn resolve(asked: Option<Format>, out: Option<&Path>) -> Format {
        let ext = out
            .and_then(|o| o.extension())
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match (asked, ext.as_deref()) {
            (Some(f), _) => f,
            (None, Some("md" | "markdown")) => Format::Md,
            _ => Format::Html,
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Md => "md",
        }
    }
}

/// The handout of `saved` in `format`; `source_name` is the session file's name, shown in the footer.
/// Its commands are written from the file alone ([`replay::Replay::from_file`]).
pub fn render(saved: &SavedSession, source_name: &str, format: Format) -> String {
    render_handout(&facts::Handout::new(saved, source_name), format)
}

/// As [`render`], with the commands written for the session's model when `model` is a copy of it (the
/// same file name and size): a model `fetch` does not know is named by that path, and a forced token is
/// given as its text when the text tokenises back to it. `nexttoken export` passes the session's file in
/// the models directory.
pub fn render_with_model(
    saved: &SavedSession,
    source_name: &str,
    format: Format,
    model: Option<&Path>,
) -> String {
    let local = model.and_then(|m| local_model(saved, m));
    let reads_back = |id: u32, text: &str| {
        let vocab = local.as_ref().map(|(_, v)| v);
        vocab.is_some_and(|v| v.encode(text).is_ok_and(|ids| ids == [id]))
    };
    let replay = replay::Replay {
        model: replay::model_name(saved, local.as_ref().map(|(p, _)| p.as_path())),
        reads_back: local
            .is_some()
            .then_some(&reads_back as &dyn Fn(u32, &str) -> bool),
    };
    render_handout(
        &facts::Handout::with_replay(saved, source_name, &replay),
        format,
    )
}

fn render_handout(h: &facts::Handout, format: Format) -> String {
    match format {
        Format::Html => html::render(h),
        Format::Md => markdown::render(h),
    }
}

/// `model` as the session's own model, with its vocabulary, when it has the saved file name and size
/// (its absolute path). `None` with a tokenizer.json session (its vocabulary is not the GGUF's).
fn local_model(
    saved: &SavedSession,
    model: &Path,
) -> Option<(PathBuf, crate::engine::tokenizer::Vocab)> {
    if saved.tokenizer != "gguf" || session_file::file_name(model) != saved.model.file {
        return None;
    }
    let path = model.canonicalize().ok()?;
    if std::fs::metadata(&path).ok()?.len() != saved.model.bytes {
        return None;
    }
    let g = crate::engine::gguf::GgufFile::open(&path).ok()?;
    let vocab = crate::engine::tokenizer::Vocab::from_gguf(&g).ok()?;
    Some((path, vocab))
}

/// Reads the session, renders it and writes the handout; returns where it went and its size.
pub fn run(args: &ExportArgs) -> Result<(PathBuf, u64)> {
    let format = Format::resolve(args.format, args.output.as_deref());
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| args.session.with_extension(format.extension()));
    if same_file(&args.session, &out) {
        bail!(
            "{} is the session file itself: choose another output with -o, e.g. -o handout.{}",
            out.display(),
            format.extension()
        );
    }
    let saved = session_file::read(&args.session).map_err(|e| match e {
        SessionFileError::Read { .. } => anyhow::anyhow!(
            "{e}: give the path of a session saved with `S` in the TUI or with `nexttoken trace --save FILE`"
        ),
        e => e.into(),
    })?;
    let name = args
        .session
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let model = crate::engine::fetch::models_dir().join(&saved.model.file);
    let text = render_with_model(&saved, &name, format, Some(&model));
    let bytes = session_file::write_bytes(&out, text.as_bytes(), &|| Ok(())).map_err(|e| {
        anyhow::anyhow!("{e}; check that the folder exists and can be written to, or choose another path with -o")
    })?;
    Ok((out, bytes))
}

/// Whether two paths name the same file (an output that does not exist yet is never the input).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
