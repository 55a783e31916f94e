//! The handout: a saved session read from its file, rendered (one self-contained
//! HTML page, or Markdown) and written atomically. It needs no model: everything is in the file
//! (`docs/EXPORT.md`).

pub mod facts;
pub mod html;
mod html_costs;
pub mod markdown;
pub mod replay;
pub mod rounds_text;
pub mod timing_text;

use crate::engine::session_file::{self, SavedSession};
use std::path::{Path, PathBuf};

/// A handout's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

    pub fn extension(self) -> &'static str {
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
