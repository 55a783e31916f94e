//! The lab's state in the app: the last comparison of two paths (exposure bias, or teacher forcing
//! against free running), and the loop found at the tip of the current path.

use super::keymap::{hint_key, Action, Mode};
use super::App;
use crate::analysis::{self, Cycle};
use crate::protocol::{Command, Comparison, SessionView};

/// What the lab shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lab {
    /// The last comparison the engine answered.
    pub comparison: Option<Comparison>,
    /// Whether the comparison came from teacher forcing a reference (B is the reference).
    pub reference: bool,
    /// First aligned step shown in the compare view's table.
    pub scroll: usize,
}

/// Repeats shorter than this many tokens are not called a loop on screen ("the the" is English);
/// `nexttoken trace` reports every cycle.
pub const ALERT_MIN_SPAN: usize = 4;

impl App {
    /// A comparison arrived: it opens the compare view unless the user has moved on to another panel.
    pub(super) fn on_compared(&mut self, comparison: Comparison) {
        self.lab.comparison = Some(comparison);
        self.lab.scroll = 0;
        if matches!(self.mode, Mode::Normal | Mode::Branches | Mode::Compare) {
            self.mode = Mode::Compare;
        }
    }

    /// `x`: the path on screen (A) against the path left last (B): the branch that forks from it
    /// nearest the tip.
    pub(super) fn compare_with_left(&mut self) -> Vec<Command> {
        let Some(s) = &self.session else {
            return vec![];
        };
        let current = s.branches.iter().find(|b| b.current).map(|b| b.id);
        let left = s
            .branches
            .iter()
            .filter(|b| !b.current)
            .max_by_key(|b| (b.fork_position, b.id))
            .map(|b| b.id);
        match (current, left) {
            (Some(a), Some(b)) => self.ask_compare(a, b),
            _ => {
                self.say_one_path();
                vec![]
            }
        }
    }

    /// `x` in the branch list: the path on screen against the selected branch.
    pub(super) fn compare_with_selected(&mut self) -> Vec<Command> {
        let Some(s) = &self.session else {
            return vec![];
        };
        let current = s.branches.iter().find(|b| b.current).map(|b| b.id);
        let chosen = s.branches.get(self.selection.branch);
        match (current, chosen) {
            (_, Some(b)) if b.current => {
                self.say("that is the path on screen: choose another branch to compare");
                vec![]
            }
            (Some(a), Some(b)) => {
                let b = b.id;
                self.ask_compare(a, b)
            }
            // After a rewind the path on screen ends inside the tree, not at a branch's end.
            (None, Some(_)) => {
                let enter = hint_key(Mode::Branches, Action::Submit);
                let x = hint_key(Mode::Branches, Action::CompareBranch);
                self.say(format!(
                    "the path on screen is not a whole branch (it was rewound): {enter} switches to \
                     a branch, then {x} compares it with another"
                ));
                vec![]
            }
            (_, None) => {
                self.say_one_path();
                vec![]
            }
        }
    }

    /// There is no second path to compare with yet: how to make one.
    fn say_one_path(&mut self) {
        let force = hint_key(Mode::Normal, Action::Accept);
        self.say(format!(
            "one path so far: force another token ({force} or 1-9), then x compares the two"
        ));
    }

    /// Closing the comparison of a reference against free running: the free run stays on screen (the
    /// engine leaves it current), its tokens after the text the class had; the status line says so,
    /// and how to go back, or the text would seem to have grown by itself.
    pub(super) fn say_free_run_kept(&mut self) {
        let Some(c) = &self.lab.comparison else {
            return;
        };
        let n = c.a.tokens;
        let tokens = if n == 1 { "token" } else { "tokens" };
        let (rewind, branches) = (
            hint_key(Mode::Normal, Action::RewindToFork),
            hint_key(Mode::Normal, Action::OpenBranches),
        );
        self.say(format!(
            "on screen now: the free run's {n} {tokens}; the reference is a branch \
             ({rewind} goes back to where they began, {branches} lists both)"
        ));
    }

    fn ask_compare(&mut self, a: usize, b: usize) -> Vec<Command> {
        self.lab.reference = false;
        self.request(Command::Compare { a, b }, "comparing the paths")
    }
}

/// The loop at the tip of the current path, when it spans enough tokens to call it one and reaches
/// into the generated text.
pub fn tip_loop(view: &SessionView) -> Option<Cycle> {
    let ids: Vec<u32> = view.tokens.iter().map(|t| t.token.id).collect();
    analysis::tip_cycle(&ids).filter(|c| c.span() >= ALERT_MIN_SPAN && ids.len() > view.prompt_len)
}
