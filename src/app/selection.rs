//! Moving the highlight: up and down in the candidate list, the search hits, the sampler settings, the
//! branch list, the compare table and the help; and the attention head ring (mean, head 0, head 1, ...).
//! And which branch is on screen, as the status bar names it.

use super::keymap::Mode;
use super::sampler_panel::FIELDS;
use super::{App, HeadSel};

impl App {
    /// The candidates the next-token panel has rows for (the engine may send more than fit): what can be
    /// selected, and what a search hit's "list" row counts among.
    pub fn candidates_on_screen(&self) -> &[crate::protocol::Candidate] {
        let all = self.candidates();
        let rows = self.screen.map.candidate_rows.height as usize;
        &all[..all.len().min(rows)]
    }

    pub(super) fn move_selection(&mut self, up: bool) {
        if self.mode == Mode::Help {
            let max = self.screen.map.help_max_scroll;
            let s = &mut self.screen.help_scroll;
            *s = if up {
                s.saturating_sub(1)
            } else {
                (*s + 1).min(max)
            };
            return;
        }
        if self.mode == Mode::Prompt {
            self.input.editor.vertical(up);
            return;
        }
        if self.mode == Mode::Compare {
            let steps = self.lab.comparison.as_ref().map_or(0, |c| c.steps.len());
            let s = &mut self.lab.scroll;
            *s = if up {
                s.saturating_sub(1)
            } else {
                (*s + 1).min(steps.saturating_sub(1))
            };
            return;
        }
        let (index, len) = match self.mode {
            Mode::Search => {
                self.input.picked = true;
                (&mut self.input.selected, self.input.hits.len())
            }
            Mode::Sampler => (&mut self.sampler.field, FIELDS.len()),
            Mode::Branches => {
                let len = self.session.as_ref().map_or(0, |s| s.branches.len());
                (&mut self.selection.branch, len)
            }
            _ => {
                // Only rows on screen can be selected (the engine may send more than fit).
                let len = self.candidates_on_screen().len();
                (&mut self.selection.candidate, len)
            }
        };
        *index = if up {
            index.saturating_sub(1)
        } else {
            (*index + 1).min(len.saturating_sub(1))
        };
    }

    pub(super) fn cycle_head(&mut self, up: bool) {
        let n = self.n_head();
        // The ring is: mean, head 0, head 1, … head n-1, mean …
        let pos = match self.focus.head {
            HeadSel::Mean => 0,
            HeadSel::Head(h) => h + 1,
        };
        let next = (pos + if up { 1 } else { n }) % (n + 1);
        self.focus.head = if next == 0 {
            HeadSel::Mean
        } else {
            HeadSel::Head(next - 1)
        };
    }
}

impl super::App {
    /// Which branch is on screen, once there is more than one: "branch 2/3", numbered as the branch
    /// list numbers them; "3 branches" after a rewind inside one (no branch ends at the tip).
    pub fn branch_label(&self) -> Option<String> {
        let list = &self.session.as_ref()?.branches;
        if list.len() < 2 {
            return None;
        }
        Some(match list.iter().position(|b| b.current) {
            Some(i) => format!("branch {}/{}", i + 1, list.len()),
            None => format!("{} branches", list.len()),
        })
    }
}
