//! The one keymap table: which key does what in which mode. It drives both dispatch and the help screen.

pub use super::action::Action;
pub use super::keys::Key;

/// What the screen is doing; decides which bindings are live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Help,
    /// Typing a vocabulary search after `/`.
    Search,
    /// Typing text to teacher-force after `i`.
    ForceText,
    /// Editing the prompt after `p`.
    Prompt,
    /// The sampler settings panel after `s`.
    Sampler,
    /// The branch list after `b`.
    Branches,
    /// Two paths compared step by step, after `x` (or a teacher-forcing run).
    Compare,
    /// Typing a reference continuation to teacher-force after `r`.
    Reference,
    /// The logit lens after `L`: what each layer would predict.
    Lens,
    /// The map of every head after `H`.
    HeadMap,
    /// Typing the class's answer to a lesson's question (yes/no, a choice, a number) after `/`.
    Answer,
}

impl Mode {
    /// Modes where plain characters are typed into `App::input` rather than looked up.
    pub fn is_text_input(self) -> bool {
        matches!(
            self,
            Mode::Search | Mode::ForceText | Mode::Prompt | Mode::Reference | Mode::Answer
        )
    }
    pub fn title(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::Help => "help",
            Mode::Search => "search",
            Mode::ForceText => "force text",
            Mode::Prompt => "prompt",
            Mode::Sampler => "sampler",
            Mode::Branches => "branches",
            Mode::Compare => "compare",
            Mode::Reference => "reference",
            Mode::Lens => "logit lens",
            Mode::HeadMap => "head map",
            Mode::Answer => "answer",
        }
    }
}

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// In every mode, before any other binding.
    Global,
    In(Mode),
    /// In every text box (prompt, force text, search), after the box's own bindings.
    Editing,
}

/// A key or a class of keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Key(Key),
    /// Any of `1`..=`9`; the action receives the digit.
    Digit,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub scope: Scope,
    pub keys: &'static [Pattern],
    pub action: Action,
    pub help: &'static str,
}

use Action as A;
use Key as K;
use Mode as M;
use Pattern::{Digit, Key as P};
use Scope::{Editing, Global, In};

const fn b(scope: Scope, keys: &'static [Pattern], action: Action, help: &'static str) -> Binding {
    Binding {
        scope,
        keys,
        action,
        help,
    }
}

/// THE keymap. Order matters only for the help screen, which lists rows as they appear here.
#[rustfmt::skip]
pub static KEYMAP: &[Binding] = &[
    b(Global, &[P(K::Ctrl('c'))], A::Quit, "quit, always"),
    // Normal mode: the main screen.
    b(In(M::Normal), &[P(K::Char(' ')), P(K::Char('n'))], A::Step, "step: one pass, one token"),
    b(In(M::Normal), &[P(K::Char('a'))], A::ToggleAutoplay, "autoplay on/off"),
    b(In(M::Normal), &[P(K::Char('+')), P(K::Char('='))], A::Faster, "autoplay faster"),
    b(In(M::Normal), &[P(K::Char('-'))], A::Slower, "autoplay slower"),
    b(In(M::Normal), &[P(K::Up), P(K::Char('k'))], A::Up, "select candidate above"),
    b(In(M::Normal), &[P(K::Down), P(K::Char('j'))], A::Down, "select candidate below"),
    b(In(M::Normal), &[P(K::Enter)], A::Accept, "force the selected candidate"),
    b(In(M::Normal), &[Digit], A::Pick(1), "force candidate by number"),
    b(In(M::Normal), &[P(K::Char('/'))], A::OpenSearch, "search vocabulary, or guess"),
    b(In(M::Normal), &[P(K::Char('i'))], A::OpenForceText, "type text to force"),
    b(In(M::Normal), &[P(K::Char('u')), P(K::Backspace)], A::Rewind, "rewind one token"),
    b(In(M::Normal), &[P(K::Char('U'))], A::RewindToFork, "rewind to the last fork"),
    b(In(M::Normal), &[P(K::Char('b'))], A::OpenBranches, "branches: switch path"),
    b(In(M::Normal), &[P(K::Char('s'))], A::OpenSampler, "sampler settings"),
    b(In(M::Normal), &[P(K::Char('t'))], A::ToggleChain, "sampler chain stage by stage"),
    b(In(M::Normal), &[P(K::Char('v'))], A::ToggleKvCache, "KV cache on/off"),
    b(In(M::Normal), &[P(K::Char('d'))], A::ToggleDraft, "speculative rounds on/off"),
    b(In(M::Normal), &[P(K::Char('['))], A::PrevLayer, "attention: prev layer"),
    b(In(M::Normal), &[P(K::Char(']'))], A::NextLayer, "attention: next layer"),
    b(In(M::Normal), &[P(K::Char('{'))], A::PrevHead, "attention: prev head/mean"),
    b(In(M::Normal), &[P(K::Char('}'))], A::NextHead, "attention: next head/mean"),
    b(In(M::Normal), &[P(K::Char('<'))], A::OlderKeys, "attention: older keys"),
    b(In(M::Normal), &[P(K::Char('>'))], A::NewerKeys, "attention: newer keys"),
    b(In(M::Normal), &[P(K::Char('x'))], A::OpenCompare, "compare with the path left"),
    b(In(M::Normal), &[P(K::Char('r'))], A::OpenReference, "reference vs free running"),
    b(In(M::Normal), &[P(K::Tab)], A::NextPanel, "next side panel"),
    b(In(M::Normal), &[P(K::Char('p'))], A::OpenPrompt, "edit prompt, prefill again"),
    b(In(M::Normal), &[P(K::Char('c'))], A::ToggleChat, "chat template on/off"),
    b(In(M::Normal), &[P(K::PageUp)], A::ScrollUp, "transcript: a page back (or the mouse wheel)"),
    b(In(M::Normal), &[P(K::PageDown)], A::ScrollDown, "transcript: a page forward"),
    b(In(M::Normal), &[P(K::Home)], A::ScrollTop, "transcript: the start"),
    b(In(M::Normal), &[P(K::End)], A::ScrollBottom, "transcript: the newest line"),
    b(In(M::Normal), &[P(K::Char('L'))], A::OpenLens, "logit lens: each layer's guess"),
    b(In(M::Normal), &[P(K::Char('H'))], A::OpenHeadMap, "head map: every head's scores"),
    b(In(M::Normal), &[P(K::Char('S'))], A::SaveSession, "save the session to a file"),
    b(In(M::Normal), &[P(K::Right), P(K::Char('.'))], A::NextLessonStep, "lesson: next step"),
    b(In(M::Normal), &[P(K::Left), P(K::Char(','))], A::PrevLessonStep, "lesson: previous step"),
    b(In(M::Normal), &[P(K::Char('g'))], A::BackToLesson, "lesson: back to where it was"),
    b(In(M::Normal), &[P(K::Char('h'))], A::ToggleHidden, "hide/reveal the distribution"),
    b(In(M::Normal), &[P(K::Char('P'))], A::TogglePredict, "predict-then-reveal on/off"),
    b(In(M::Normal), &[P(K::Char('C'))], A::ClassSamples, "class: force its top guess"),
    b(In(M::Normal), &[P(K::Char('J'))], A::ToggleJoinCard, "class: the join card (QR)"),
    b(In(M::Normal), &[P(K::Char('W'))], A::ToggleBoard, "class: leaderboard on/off"),
    b(In(M::Normal), &[P(K::Char('z'))], A::TogglePresenter, "presenter mode (projector)"),
    b(In(M::Normal), &[P(K::Char('?'))], A::ToggleHelp, "this help"),
    b(In(M::Normal), &[P(K::Char('q'))], A::Quit, "quit"),
    b(In(M::Normal), &[P(K::Esc)], A::Cancel, "stop reading a long prompt"),
    // Help overlay.
    b(In(M::Help), &[P(K::Char('?')), P(K::Esc), P(K::Char('q'))], A::Close, "close help"),
    b(In(M::Help), &[P(K::Down), P(K::Char('j'))], A::Down, "scroll down"),
    b(In(M::Help), &[P(K::Up), P(K::Char('k'))], A::Up, "scroll up"),
    // Text boxes: characters are typed at the cursor; these keys are special.
    b(In(M::Search), &[P(K::Enter)], A::Submit, "force, or guess, the hit"),
    b(In(M::Search), &[P(K::Up)], A::Up, "previous hit"),
    b(In(M::Search), &[P(K::Down)], A::Down, "next hit"),
    b(In(M::Search), &[P(K::Tab)], A::ToggleHitOrder, "by match/by probability"),
    b(In(M::Search), &[P(K::Esc)], A::Close, "cancel"),
    b(In(M::Answer), &[P(K::Enter)], A::Submit, "answer the lesson's question"),
    b(In(M::Answer), &[P(K::Esc)], A::Close, "cancel"),
    b(In(M::ForceText), &[P(K::Enter)], A::Submit, "force this text"),
    b(In(M::ForceText), &[P(K::Esc)], A::Close, "cancel"),
    b(In(M::Reference), &[P(K::Enter)], A::Submit, "teacher-force it, then run free"),
    b(In(M::Reference), &[P(K::Esc)], A::Close, "cancel"),
    b(In(M::Prompt), &[P(K::Enter)], A::Submit, "read this prompt"),
    b(In(M::Prompt), &[P(K::AltEnter), P(K::Ctrl('j'))], A::NewLine, "new line"),
    b(In(M::Prompt), &[P(K::Up)], A::Up, "line above"),
    b(In(M::Prompt), &[P(K::Down)], A::Down, "line below"),
    b(In(M::Prompt), &[P(K::Esc)], A::Close, "cancel"),
    // Every text box, after its own keys.
    b(Editing, &[P(K::Left)], A::CursorLeft, "cursor left"),
    b(Editing, &[P(K::Right)], A::CursorRight, "cursor right"),
    b(Editing, &[P(K::Home), P(K::Ctrl('a'))], A::LineStart, "start of the line"),
    b(Editing, &[P(K::End), P(K::Ctrl('e'))], A::LineEnd, "end of the line"),
    b(Editing, &[P(K::Backspace)], A::DeleteChar, "delete before the cursor"),
    b(Editing, &[P(K::Delete), P(K::Ctrl('d'))], A::DeleteForward, "delete at the cursor"),
    b(Editing, &[P(K::Ctrl('u'))], A::DeleteToLineStart, "delete to the line start"),
    b(Editing, &[P(K::Ctrl('w'))], A::DeleteWordBack, "delete the word before"),
    // Sampler panel.
    b(In(M::Sampler), &[P(K::Up), P(K::Char('k'))], A::Up, "previous setting"),
    b(In(M::Sampler), &[P(K::Down), P(K::Char('j'))], A::Down, "next setting"),
    b(In(M::Sampler), &[P(K::Left), P(K::Char('h')), P(K::Char('-'))], A::Decrease, "lower"),
    b(In(M::Sampler), &[P(K::Right), P(K::Char('l')), P(K::Char('+')), P(K::Enter)], A::Increase, "raise/toggle"),
    b(In(M::Sampler), &[P(K::Char('r'))], A::ResetSampler, "defaults"),
    b(In(M::Sampler), &[P(K::Esc), P(K::Char('s')), P(K::Char('q'))], A::Close, "close"),
    // Branch list.
    b(In(M::Branches), &[P(K::Up), P(K::Char('k'))], A::Up, "previous"),
    b(In(M::Branches), &[P(K::Down), P(K::Char('j'))], A::Down, "next"),
    b(In(M::Branches), &[P(K::Enter)], A::Submit, "switch to it"),
    b(In(M::Branches), &[P(K::Char('x'))], A::CompareBranch, "compare with the path on screen"),
    b(In(M::Branches), &[P(K::Esc), P(K::Char('b')), P(K::Char('q'))], A::Close, "close"),
    b(In(M::Branches), &[P(K::Right), P(K::Char('.'))], A::NextLessonStep, "lesson: next step"),
    b(In(M::Branches), &[P(K::Left), P(K::Char(','))], A::PrevLessonStep, "lesson: previous step"),
    // Compare view.
    b(In(M::Compare), &[P(K::Up), P(K::Char('k'))], A::Up, "earlier steps"),
    b(In(M::Compare), &[P(K::Down), P(K::Char('j'))], A::Down, "later steps"),
    b(In(M::Compare), &[P(K::Esc), P(K::Char('x')), P(K::Char('q'))], A::Close, "close"),
    b(In(M::Compare), &[P(K::Right), P(K::Char('.'))], A::NextLessonStep, "lesson: next step"),
    b(In(M::Compare), &[P(K::Left), P(K::Char(','))], A::PrevLessonStep, "lesson: previous step"),
    // Logit lens.
    b(In(M::Lens), &[P(K::Up), P(K::Char('k'))], A::Up, "earlier layers"),
    b(In(M::Lens), &[P(K::Down), P(K::Char('j'))], A::Down, "later layers"),
    b(In(M::Lens), &[P(K::Char(' ')), P(K::Char('n'))], A::Step, "step, look again"),
    b(In(M::Lens), &[P(K::Char('r'))], A::Reinspect, "look again"),
    b(In(M::Lens), &[P(K::Char('H'))], A::OpenHeadMap, "head map"),
    b(In(M::Lens), &[P(K::Esc), P(K::Char('L')), P(K::Char('q'))], A::Close, "close"),
    // Head map.
    b(In(M::HeadMap), &[P(K::Left), P(K::Char('h'))], A::PrevLayer, "earlier layer"),
    b(In(M::HeadMap), &[P(K::Right), P(K::Char('l'))], A::NextLayer, "later layer"),
    b(In(M::HeadMap), &[P(K::Up), P(K::Char('k'))], A::PrevHead, "head above"),
    b(In(M::HeadMap), &[P(K::Down), P(K::Char('j'))], A::NextHead, "head below"),
    b(In(M::HeadMap), &[P(K::Tab)], A::NextScore, "score"),
    b(In(M::HeadMap), &[P(K::Enter)], A::Submit, "open in the attention panel"),
    b(In(M::HeadMap), &[P(K::Char(' ')), P(K::Char('n'))], A::Step, "step, look again"),
    b(In(M::HeadMap), &[P(K::Char('r'))], A::Reinspect, "look again"),
    b(In(M::HeadMap), &[P(K::Char('L'))], A::OpenLens, "lens"),
    b(In(M::HeadMap), &[P(K::Esc), P(K::Char('H')), P(K::Char('q'))], A::Close, "close"),
];

impl Pattern {
    /// The action for `key` if this pattern matches it: `Digit` fills in the number, a plain key
    /// gives the binding's own action.
    fn action_for(self, key: Key, action: Action) -> Option<Action> {
        match (self, key) {
            (Pattern::Digit, Key::Char(c @ '1'..='9')) => Some(Action::Pick(c as u8 - b'0')),
            (Pattern::Key(k), key) if k == key => Some(action),
            _ => None,
        }
    }

    /// How the key is written on screen.
    pub fn label(self) -> String {
        match self {
            Pattern::Digit => "1-9".into(),
            Pattern::Key(k) => k.label(),
        }
    }
}

impl Binding {
    /// The action this binding gives for `key`, if it matches (a digit fills in `Pick`).
    pub fn action_for(&self, key: Key) -> Option<Action> {
        self.keys
            .iter()
            .find_map(|p| p.action_for(key, self.action))
    }

    /// All keys of the binding, as shown in help ("space n").
    pub fn keys_label(&self) -> String {
        self.keys
            .iter()
            .map(|p| p.label())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Looks a key up: global bindings first, then the mode's own, then (in a text box) the editing keys.
pub fn lookup(mode: Mode, key: Key) -> Option<Action> {
    let global = KEYMAP.iter().filter(|b| b.scope == Scope::Global);
    let local = KEYMAP.iter().filter(|b| b.scope == Scope::In(mode));
    let editing = KEYMAP
        .iter()
        .filter(|b| mode.is_text_input() && b.scope == Scope::Editing);
    global
        .chain(local)
        .chain(editing)
        .find_map(|b| b.action_for(key))
}

/// The editing keys every text box shares, in table order (for the help screen).
pub fn editing_bindings() -> impl Iterator<Item = &'static Binding> {
    KEYMAP.iter().filter(|b| b.scope == Scope::Editing)
}

/// The bindings of one mode, in table order (for help and panel hints).
pub fn bindings(mode: Mode) -> impl Iterator<Item = &'static Binding> {
    KEYMAP.iter().filter(move |b| b.scope == Scope::In(mode))
}

/// Every key bound to `action` in `mode`, as shown on screen, in table order.
pub fn keys_for(mode: Mode, action: Action) -> Vec<String> {
    bindings(mode)
        .find(|b| b.action == action)
        .map(|b| b.keys.iter().map(|p| p.label()).collect())
        .unwrap_or_default()
}

/// The first key bound to `action` in `mode`, as shown on screen (for hint lines).
pub fn key_for(mode: Mode, action: Action) -> Option<String> {
    keys_for(mode, action).into_iter().next()
}

/// The first key of each action, joined by spaces: one hint for a pair such as previous/next layer
/// ("[ ]"). An action with no key is left out.
pub fn pair_hint(mode: Mode, actions: [Action; 2]) -> String {
    let keys: Vec<String> = actions.iter().filter_map(|&a| key_for(mode, a)).collect();
    keys.join(" ")
}

/// The first key of `action` in `mode` for a hint line the view writes around it ("t → chain"); empty
/// if the action has no key there (`tests/it/keymap.rs` checks that every hint's action has one).
pub fn hint_key(mode: Mode, action: Action) -> String {
    key_for(mode, action).unwrap_or_default()
}
