//! Atomic edits: what an edit may change is saved before it starts, and on an error or a panic half-way
//! it is put back (the tree, the path, the reports, the settings, and how much of the KV cache is still
//! valid), so a failure leaves the session as it was.

use super::{Result, Session, SessionError};
use crate::engine::forward::model::AttentionRows;
use crate::engine::panic_text;
use crate::protocol::{PassReport, PrefillReport};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// What an edit may change, saved before it starts. Nodes are only ever appended during an edit (a
/// prefill moves the old tree out first), so remembering the count is enough to drop what it added;
/// an existing node that an edit steps onto again is logged in `Session::undo` before it changes.
struct Checkpoint {
    nodes: usize,
    with_logits: std::collections::VecDeque<usize>,
    path: Vec<usize>,
    prompt_len: usize,
    fed: usize,
    prefill: PrefillReport,
    last_pass: PassReport,
    last_attention: Arc<AttentionRows>,
    settings: crate::protocol::SamplerSettings,
}

impl Session {
    /// Runs `edit`; on an error or a panic, restores the session to how it was before.
    pub(super) fn atomically<T>(&mut self, edit: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let saved = Checkpoint {
            nodes: self.nodes.len(),
            with_logits: self.with_logits.clone(),
            path: self.path.clone(),
            prompt_len: self.prompt_len,
            fed: self.fed,
            prefill: self.prefill.clone(),
            last_pass: self.last_pass.clone(),
            last_attention: self.last_attention.clone(),
            settings: self.settings.clone(),
        };
        self.fed_floor = self.fed;
        self.undo.clear();
        let result = catch_unwind(AssertUnwindSafe(|| edit(self)))
            .unwrap_or_else(|p| Err(SessionError::Internal(panic_text(&p))));
        if result.is_err() {
            self.restore(saved);
        }
        self.undo.clear();
        result
    }

    fn restore(&mut self, saved: Checkpoint) {
        while let Some((n, record, pass)) = self.undo.pop() {
            if n < saved.nodes {
                self.nodes[n].record = record;
                self.nodes[n].pass = pass;
            }
        }
        for n in saved.nodes..self.nodes.len() {
            if let Some(p) = self.nodes[n].parent.filter(|&p| p < saved.nodes) {
                self.nodes[p].children.retain(|&c| c < saved.nodes);
            }
        }
        self.nodes.truncate(saved.nodes);
        self.with_logits = saved.with_logits;
        self.path = saved.path;
        self.prompt_len = saved.prompt_len;
        // The cache below the lowest position any pass of the edit started from is untouched, and it
        // still holds the old path there.
        self.fed = saved.fed.min(self.fed_floor);
        self.prefill = saved.prefill;
        self.last_pass = saved.last_pass;
        self.last_attention = saved.last_attention;
        self.settings = saved.settings;
        self.chain_memo = None;
    }

    /// `change`, then the view of the session it leaves, as one edit: when either fails (the view may
    /// run a forward pass for the tip, or ask a server), the session is as it was, its settings too.
    /// The engine thread answers `Rewind` and `SetSampler` through this, so their `Failed` leaves the
    /// path where it was.
    pub fn change_then_view(
        &mut self,
        change: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<super::SessionView> {
        self.atomically(|s| {
            change(s)?;
            s.view()
        })
    }
}
