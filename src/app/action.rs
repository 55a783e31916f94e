//! Everything a key can ask for: the `Action`s of the keymap table (`keymap.rs`).

/// Everything a key can ask for. `App::update` turns an action into state changes and `Command`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Step,
    ToggleAutoplay,
    Faster,
    Slower,
    Up,
    Down,
    Accept,
    /// Force the candidate with this 1-based number.
    Pick(u8),
    OpenSearch,
    OpenForceText,
    Rewind,
    /// Rewind to where the current path last forked from another branch.
    RewindToFork,
    /// Stop reading a long prompt.
    Cancel,
    OpenBranches,
    OpenSampler,
    ToggleChain,
    ToggleKvCache,
    PrevLayer,
    NextLayer,
    PrevHead,
    NextHead,
    NextPanel,
    OpenPrompt,
    ToggleChat,
    ToggleHelp,
    /// Transcript: a page back, a page forward, the start, the newest line.
    ScrollUp,
    ScrollDown,
    ScrollTop,
    ScrollBottom,
    /// Leave the current panel or text input.
    Close,
    /// Submit the text being typed.
    Submit,
    /// Text boxes: delete the character before the cursor.
    DeleteChar,
    /// Text boxes: delete the character at the cursor.
    DeleteForward,
    /// Text boxes: delete from the start of the line to the cursor.
    DeleteToLineStart,
    /// Text boxes: delete the word before the cursor.
    DeleteWordBack,
    CursorLeft,
    CursorRight,
    /// Text boxes: the start and the end of the cursor's line.
    LineStart,
    LineEnd,
    /// The prompt editor: a line break at the cursor.
    NewLine,
    /// Search: list the hits by match or by probability.
    ToggleHitOrder,
    /// Attention: scroll the key columns back to older keys, or forward to the newest.
    OlderKeys,
    NewerKeys,
    /// Compare the path on screen with the path left last (the nearest fork).
    OpenCompare,
    /// Branch list: compare the path on screen with the selected branch.
    CompareBranch,
    /// Type a reference continuation: teacher-force it, then run free from the same start.
    OpenReference,
    /// Rewind to just before the generated token at this position (a click on the transcript).
    RewindTo(usize),
    /// Sampler panel: change the selected setting down or up.
    Decrease,
    Increase,
    ResetSampler,
    /// Save the session to a file in the current folder (`app/sessions.rs`).
    SaveSession,
    /// The logit lens and the head map (`app/inspect.rs`): open them, look again at the tip, and
    /// cycle the score that shades the map.
    OpenLens,
    OpenHeadMap,
    Reinspect,
    NextScore,
    /// A lesson (`app/lesson.rs`): the next or previous lesson step, and back to the lesson's state
    /// after exploring.
    NextLessonStep,
    PrevLessonStep,
    BackToLesson,
    /// Predict-then-reveal (`app/predict.rs`): hide or reveal the distribution, predict mode on/off.
    ToggleHidden,
    TogglePredict,
    /// Presenter mode: large type, fewer panels (`ui/presenter.rs`).
    TogglePresenter,
    /// Speculative rounds on/off (`app/speculative.rs`): a step press then drafts and checks.
    ToggleDraft,
    /// Class mode (`app/class.rs`): the class's most popular guess forced, the join card, the
    /// leaderboard.
    ClassSamples,
    ToggleJoinCard,
    ToggleBoard,
}
