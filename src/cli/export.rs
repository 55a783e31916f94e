//! `nexttoken export` flags.

use crate::export::Format;
use clap::Args;
use std::path::PathBuf;

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
