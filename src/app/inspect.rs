//! The logit lens (`L`) and the head map (`H`) in the app: the last inspection of the tip, asked for on
//! demand, never on every step. Opening a panel asks for what it shows when there is none yet or when the
//! path has moved on since; `r` asks again. While a panel is open (and only then), a step or another
//! change of the path asks again once the engine is idle, so the panel follows the user's own steps.

use super::keymap::{hint_key, Action, Mode};
use super::{App, HeadSel, SidePanel};
use crate::protocol::{Command, HeadMap, HeadScore, Inspection, LogitLens};

/// Which score shades the head map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Score {
    /// Attention on the token just before.
    #[default]
    Prev,
    /// Attention on the token that followed the previous occurrence of the current token.
    Induction,
    /// How spread out the attention row is.
    Entropy,
}

impl Score {
    pub fn next(self) -> Score {
        match self {
            Score::Prev => Score::Induction,
            Score::Induction => Score::Entropy,
            Score::Entropy => Score::Prev,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Score::Prev => "previous-token",
            Score::Induction => "induction",
            Score::Entropy => "entropy",
        }
    }

    /// The score as it is (attention in 0..=1, or entropy in nats).
    pub fn raw(self, s: &HeadScore) -> f32 {
        match self {
            Score::Prev => s.prev,
            Score::Induction => s.induction,
            Score::Entropy => s.entropy,
        }
    }

    /// The score in 0..=1 for a shade: attention as it is, entropy as a share of the most it can be
    /// at `position` (spread evenly over its `position + 1` keys).
    pub fn level(self, s: &HeadScore, position: usize) -> f32 {
        match self {
            Score::Entropy => {
                let most = ((position + 1) as f32).ln();
                if most > 0.0 {
                    (s.entropy / most).clamp(0.0, 1.0)
                } else {
                    0.0
                }
            }
            _ => self.raw(s).clamp(0.0, 1.0),
        }
    }
}

/// The last inspection, and how its panels are shown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inspect {
    pub lens: Option<LogitLens>,
    pub heads: Option<HeadMap>,
    /// The token ids of the path each was computed on: another path makes it stale.
    pub lens_path: Vec<u32>,
    pub heads_path: Vec<u32>,
    /// The score that shades the head map.
    pub score: Score,
    /// The head map's cursor: (layer, head).
    pub cell: (usize, usize),
    /// Lens rows scrolled up from the last layer (0: the last layers show; the view clamps it).
    pub scroll_up: usize,
}

impl App {
    fn path_ids(&self) -> Vec<u32> {
        self.session
            .as_ref()
            .map(|s| s.tokens.iter().map(|t| t.token.id).collect())
            .unwrap_or_default()
    }

    /// Whether the lens on hand was computed on another path, or follows another token than the one
    /// the sampler now plans (settings changed).
    pub fn lens_stale(&self) -> bool {
        let Some(lens) = &self.inspect.lens else {
            return false;
        };
        let planned = self.session.as_ref().map(|s| s.next.planned.id);
        self.inspect.lens_path != self.path_ids() || planned != Some(lens.chosen.id)
    }

    /// Whether the head map on hand was computed on another path.
    pub fn heads_stale(&self) -> bool {
        self.inspect.heads.is_some() && self.inspect.heads_path != self.path_ids()
    }

    /// The actions of the lens and the head map, and the keys their panels give another meaning;
    /// `None` for any other action.
    pub(super) fn inspect_action(&mut self, action: Action) -> Option<Vec<Command>> {
        let cmds = match (self.mode, action) {
            (_, Action::OpenLens) => self.open_inspect(Mode::Lens),
            (_, Action::OpenHeadMap) => self.open_inspect(Mode::HeadMap),
            (_, Action::Reinspect) => self.ask_inspect(),
            (_, Action::NextScore) => {
                self.inspect.score = self.inspect.score.next();
                vec![]
            }
            (Mode::Lens, Action::Up | Action::Down) => {
                let max = self.screen.map.lens_max_scroll;
                let s = self.inspect.scroll_up.min(max);
                self.inspect.scroll_up = if action == Action::Up {
                    (s + 1).min(max)
                } else {
                    s.saturating_sub(1)
                };
                vec![]
            }
            (Mode::HeadMap, Action::PrevLayer | Action::NextLayer) => {
                let n = self.map_size().0;
                let l = &mut self.inspect.cell.0;
                *l = step(*l, action == Action::NextLayer, n);
                vec![]
            }
            (Mode::HeadMap, Action::PrevHead | Action::NextHead) => {
                let n = self.map_size().1;
                let h = &mut self.inspect.cell.1;
                *h = step(*h, action == Action::NextHead, n);
                vec![]
            }
            (Mode::HeadMap, Action::Submit) => {
                self.open_cell();
                vec![]
            }
            _ => return None,
        };
        Some(cmds)
    }

    /// Layers and heads of the map (from the model until a map arrives).
    fn map_size(&self) -> (usize, usize) {
        match &self.inspect.heads {
            Some(m) => (m.scores.len(), m.scores.first().map_or(0, Vec::len)),
            None => (self.n_layer(), self.n_head()),
        }
    }

    /// Opens a panel; asks the engine when there is nothing to show yet or the path has moved on.
    fn open_inspect(&mut self, mode: Mode) -> Vec<Command> {
        self.mode = mode;
        self.inspect.scroll_up = 0;
        let (have, stale) = match mode {
            Mode::Lens => (self.inspect.lens.is_some(), self.lens_stale()),
            _ => (self.inspect.heads.is_some(), self.heads_stale()),
        };
        if have && !stale {
            return vec![];
        }
        self.ask_inspect()
    }

    /// Asks for what the open panel shows: one forward pass of the tip.
    fn ask_inspect(&mut self) -> Vec<Command> {
        if self.session.is_none() {
            self.say("nothing to look inside yet: the prompt is still being read");
            return vec![];
        }
        if self.model.as_ref().is_some_and(|m| m.served.is_some()) {
            // A served model cannot be looked inside: the panel says so, no request is sent.
            return vec![];
        }
        let lens = self.mode != Mode::HeadMap;
        let cmd = Command::Inspect { lens, heads: !lens };
        self.request(cmd, "looking inside the pass")
    }

    /// The path changed (a step, a rewind…) while a panel is open: look again, once the engine is free.
    pub(super) fn refresh_inspection(&mut self) -> Vec<Command> {
        let stale = match self.mode {
            Mode::Lens => self.lens_stale(),
            Mode::HeadMap => self.heads_stale(),
            _ => false,
        };
        if stale && !self.is_busy() {
            return self.ask_inspect();
        }
        vec![]
    }

    /// Folds an inspection in: each part that came replaces the one on hand.
    pub(super) fn on_inspected(&mut self, ins: Inspection) {
        if let Some(s) = self.session.as_mut() {
            s.last_pass.forward_passes = s.last_pass.forward_passes.max(ins.forward_passes);
        }
        let path = self.path_ids();
        if let Some(lens) = ins.lens {
            self.inspect.lens = Some(lens);
            self.inspect.lens_path = path.clone();
        }
        if let Some(heads) = ins.heads {
            self.inspect.heads = Some(heads);
            self.inspect.heads_path = path;
            let (layers, heads) = self.map_size();
            let c = &mut self.inspect.cell;
            *c = (
                c.0.min(layers.saturating_sub(1)),
                c.1.min(heads.saturating_sub(1)),
            );
        }
    }

    /// Enter on the map: that layer and head in the attention panel, which is brought on screen.
    fn open_cell(&mut self) {
        let (layer, head) = self.inspect.cell;
        self.focus.layer = layer;
        self.focus.head = HeadSel::Head(head);
        self.focus.key_scroll = 0;
        self.mode = Mode::Normal;
        if self.screen.map.areas.attention.is_none() {
            self.screen.side = SidePanel::Attention;
            self.screen.show_chain = false;
        }
        let back = hint_key(Mode::Normal, Action::OpenHeadMap);
        self.say(format!(
            "attention panel: layer {}, head {} ({back}: back to the map)",
            layer + 1,
            head + 1
        ));
    }
}

/// One step along a row of `n`, stopping at the ends.
fn step(i: usize, up: bool, n: usize) -> usize {
    if up {
        (i + 1).min(n.saturating_sub(1))
    } else {
        i.saturating_sub(1)
    }
}
