//! `nexttoken export`: a saved session read from its file, rendered as a handout (one self-contained
//! HTML page, or Markdown) and written atomically. It needs no model: everything is in the file
//! (`docs/EXPORT.md`).

pub mod facts;
pub mod html;
pub mod markdown;
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
pub fn render(saved: &SavedSession, source_name: &str, format: Format) -> String {
    let h = facts::Handout::new(saved, source_name);
    match format {
        Format::Html => html::render(&h),
        Format::Md => markdown::render(&h),
    }
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
    let text = render(&saved, &name, format);
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
