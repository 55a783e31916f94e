//! The draft a session keeps for speculative decoding (`speculate.rs`): loaded, named for the screen,
//! and the rounds run with it added up.

use super::{Result, Session, SessionError};
use crate::analysis::speculation::Tally;
use crate::engine::draft::{Draft, DraftSpec};
use crate::engine::forward::linear::MatmulPath;
use crate::protocol::DraftInfo;

impl Session {
    /// Loads (or, with `None`, drops) the draft that `speculate` uses; the tally starts again.
    pub fn set_draft(&mut self, draft: Option<Draft>) {
        self.draft = draft;
        self.tally = Tally::default();
    }

    /// Loads the draft `spec` of this session's own model file, proposing `k` tokens per round; a
    /// draft of the same name already loaded is kept (a lesson replayed does not load it again).
    pub fn load_draft(&mut self, spec: &DraftSpec, k: usize) -> Result<()> {
        if self.draft.as_ref().is_some_and(|d| d.label == spec.label()) {
            let draft = self.draft.take().map(|d| d.with_k(k));
            self.set_draft(draft);
            return Ok(());
        }
        let not_served =
            || SessionError::NotServed("a draft (it is made from the model's own file)");
        let path = self.model_file().ok_or_else(not_served)?;
        let model = self.model.local().ok_or_else(not_served)?;
        let draft = Draft::load(model, &path, spec, MatmulPath::Fast)?;
        self.set_draft(Some(draft.with_k(k)));
        Ok(())
    }

    /// The rounds since the draft was loaded, added up.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// The loaded draft as the screen names it.
    pub fn draft_info(&self) -> Option<DraftInfo> {
        let d = self.draft.as_ref()?;
        let model = self.model.local().map_or(1, |m| m.weight_bytes_per_token());
        Some(DraftInfo {
            label: d.label.clone(),
            k: d.k,
            n_layer: d.n_layer(),
            bytes_ratio: d.weight_bytes_per_token() as f64 / model as f64,
        })
    }

    /// The loaded draft's name.
    pub fn draft_label(&self) -> Option<&str> {
        self.draft.as_ref().map(|d| d.label.as_str())
    }

    /// The loaded draft, for what a screen says of it.
    pub fn draft(&self) -> Option<&Draft> {
        self.draft.as_ref()
    }
}
