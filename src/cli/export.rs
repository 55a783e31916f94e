//! `nexttoken export` flags.

use crate::export::Format;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `nexttoken export` flags.
#[derive(Debug, Args, Clone)]
pub struct ExportArgs {
    /// The saved session (from the TUI's `S` key or `nexttoken trace --save`).
    #[arg(value_name = "SESSION.json")]
    pub session: PathBuf,
    /// `html` (one self-contained page) or `md` (Markdown) [default: from OUT's extension, else html].
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Where to write the handout [default: the session file with the format's extension].
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// `--format`'s values (clap's side of `export::Format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// One HTML file with its styles inline: opens offline, prints cleanly.
    Html,
    /// Markdown tables.
    Md,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Html => Format::Html,
            FormatArg::Md => Format::Md,
        }
    }
}
