//! What `fetch` says while it extracts a model: one line rewritten in place on a terminal, a line per
//! quarter in a log.

use std::io::IsTerminal;
use std::path::Path;

/// Extraction progress on stderr: one line rewritten in place on a terminal; a line per 25% in a log,
/// so a CI log is not flooded.
pub(super) struct Progress {
    /// The file being written, as the line names it.
    label: String,
    total: u64,
    done: u64,
    /// The percentage last printed (`u64::MAX` before the first line).
    shown_pct: u64,
    tty: bool,
}

impl Progress {
    pub(super) fn new(dest: &Path, total: u64) -> Self {
        let label = dest
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        Progress {
            label,
            total,
            done: 0,
            shown_pct: u64::MAX,
            tty: std::io::stderr().is_terminal(),
        }
    }

    pub(super) fn advance(&mut self, n: u64) {
        self.done += n;
        let pct = (self.done * 100).checked_div(self.total).unwrap_or(100);
        let step = if self.tty { pct } else { pct / 25 * 25 };
        if step == self.shown_pct {
            return;
        }
        self.shown_pct = step;
        let line = format!(
            "Extracting {}: {:.1} / {:.1} MB ({pct}%)",
            self.label,
            self.done as f64 / 1e6,
            self.total as f64 / 1e6
        );
        if self.tty {
            eprint!("\r{line}");
        } else {
            eprintln!("{line}");
        }
    }

    /// Ends the line rewritten in place.
    pub(super) fn finish(&self) {
        if self.tty {
            eprintln!();
        }
    }
}
