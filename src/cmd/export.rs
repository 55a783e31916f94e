//! `nexttoken export`: a saved session as a handout, written atomically (`docs/EXPORT.md`).

use crate::cli::ExportArgs;
use crate::engine::session_file::{self, SessionFileError};
use crate::export::{render_with_model, Format};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// Reads the session, renders it and writes the handout; returns where it went and its size.
pub fn run(args: &ExportArgs) -> Result<(PathBuf, u64)> {
    let format = Format::resolve(args.format.map(Format::from), args.output.as_deref());
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| args.session.with_extension(format.extension()));
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if args.format.is_none() && ext.as_deref() == Some("pdf") {
        bail!(
            "{} names a PDF, and a handout is HTML or Markdown: write {} and print it to PDF from a browser (it has a print stylesheet)",
            out.display(),
            out.with_extension("html").display()
        );
    }
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
