//! Speculative decoding on screen: whether a step press runs a round (`d`, with a draft loaded), the
//! newest round, and the rounds added up on this text since the draft was turned on.

use super::{App, SidePanel};
use crate::analysis::speculation::Tally;
use crate::protocol::{Command, DraftInfo, RoundReport, RoundSteps, SessionView, TokenKind};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Speculative {
    /// A step press runs a round instead of one step.
    pub on: bool,
    /// The newest round.
    pub last: Option<RoundReport>,
    /// Every round since the draft was last turned on or a new prompt was read (`adopt`).
    pub tally: Tally,
}

impl App {
    /// The draft the session has loaded (`--draft`, or a lesson's `draft`), if any.
    pub fn draft(&self) -> Option<&DraftInfo> {
        self.session.as_ref()?.draft.as_ref()
    }

    /// Whether the newest round's tokens are still the end of the path on screen (a rewind or a
    /// branch switch leaves the round panel showing a round that is no longer there).
    pub fn round_on_path(&self) -> bool {
        let (Some(r), Some(s)) = (&self.speculative.last, &self.session) else {
            return false;
        };
        let end = r.first_position + r.tokens();
        s.tokens.len() == end && s.tokens.get(end - 1).map(|t| t.token.id) == Some(r.last.token.id)
    }

    /// `d`: rounds on or off; on shows the round panel. Without a draft, says how to load one.
    pub(super) fn toggle_draft(&mut self) {
        let Some(d) = self.draft().cloned() else {
            self.say("no draft loaded: start with --draft q2_k, q4_0, q8_0, layers:N (say layers:20) or a GGUF file");
            return;
        };
        let s = &mut self.speculative;
        s.on = !s.on;
        if s.on {
            s.tally = Tally::default();
            self.show_round_panel();
            self.say(format!(
                "rounds on: space drafts {} with {}; the model checks them in one pass",
                d.k, d.label
            ));
        } else {
            self.say("rounds off: space runs one pass of the model for one token");
        }
    }

    /// What a step press sends: a round when rounds are on, else one step.
    pub(super) fn step_command(&self) -> (Command, &'static str) {
        match self.draft() {
            Some(d) if self.speculative.on => (
                Command::Speculate { k: d.k },
                "speculating: the draft proposes, the model checks",
            ),
            _ => (Command::Step, "stepping"),
        }
    }

    /// Handles a round: the session after it, the round on screen and in the tally; autoplay stops
    /// at a special token, as after a step.
    pub(super) fn on_rounded(&mut self, round: RoundSteps, view: SessionView) {
        self.adopt(view);
        self.take_round(&round.report);
        self.past_end_confirmed = false;
        self.selection.candidate = 0;
        let special = round
            .steps
            .iter()
            .find(|s| s.committed.token.kind == TokenKind::Special);
        if let (true, Some(s)) = (self.autoplay.on, special) {
            self.autoplay.on = false;
            self.say(format!("autoplay stopped at {}", s.committed.token.text));
        }
    }

    /// A round a lesson step ran: on screen and in the tally, as one the user ran.
    pub(super) fn take_round(&mut self, r: &RoundReport) {
        r.add_to(&mut self.speculative.tally);
        self.speculative.last = Some(r.clone());
        self.show_round_panel();
    }

    fn show_round_panel(&mut self) {
        if self.presenter.on {
            self.presenter.side = Some(SidePanel::Round);
        } else {
            self.screen.side = SidePanel::Round;
        }
    }
}
