//! A lesson on the engine thread, on the real model: `OpenLesson` and `LessonGoto` each answered by one
//! `LessonStep`; the next step follows on without a replay; after exploring by hand, going back to the
//! lesson replays it to exactly the state it had; bad requests fail and leave the session as it was.

use crate::support;

use nexttoken::engine::session::Session;
use nexttoken::lesson::{self, Track};
use nexttoken::protocol::{Command, Event, Failure, LessonStepView, SessionView};
use support::events_in_lesson;

fn session() -> Session {
    support::real_session()
}

/// The one reply of a lesson command, which must be a `LessonStep`.
fn lesson_step(events: Vec<Event>) -> LessonStepView {
    match &events[..] {
        [Event::LessonStep(step)] => (**step).clone(),
        other => panic!("expected one LessonStep, got {other:?}"),
    }
}

/// A session on the real model with built-in lesson `name` open at its first step.
fn opened(name: &str) -> (Session, Option<Track>) {
    let (mut s, mut track) = (session(), None);
    let open = Command::OpenLesson(Box::new(lesson::load(name).unwrap()));
    lesson_step(events_in_lesson(&mut s, &mut track, open));
    (s, track)
}

/// The view without the cost of the last pass (a replay reads the prompt again).
fn state(v: &SessionView) -> (Vec<u32>, Vec<u32>, usize) {
    (
        v.tokens.iter().map(|t| t.token.id).collect(),
        v.next.candidates.iter().map(|c| c.token.id).collect(),
        v.next.position,
    )
}

#[test]
fn a_lesson_steps_on_explores_and_goes_back_exactly() {
    let mut s = session();
    let mut track: Option<Track> = None;
    let repetition = lesson::load("repetition").unwrap();
    let open = Command::OpenLesson(Box::new(repetition));
    let first = lesson_step(events_in_lesson(&mut s, &mut track, open));
    assert_eq!((first.run.index, first.replayed), (0, 0));
    assert!(first.run.failure().is_none(), "{:?}", first.run);
    assert!(
        first.run.question.is_some(),
        "the first step asks the class"
    );
    assert_eq!(
        first.view.typed_prompt,
        Some(("The capital of France is".into(), false)),
        "the prompt box starts from the lesson's prompt"
    );

    // The next step follows on: nothing replayed. It asks first; the reveal runs the rest, and the
    // loop the lesson promises is there.
    let asked = lesson_step(events_in_lesson(
        &mut s,
        &mut track,
        Command::LessonGoto { step: 1 },
    ));
    assert_eq!((asked.run.index, asked.replayed), (1, 0));
    assert!(
        asked.run.question.is_some(),
        "the second step asks before it writes"
    );
    assert!(
        tip_loop_of(&asked.view).is_none(),
        "nothing written before the question"
    );
    let second = lesson_step(events_in_lesson(&mut s, &mut track, Command::LessonReveal));
    assert!(second.run.failure().is_none(), "{:?}", second.run);
    assert!(second.run.answer.is_some());
    assert!(nexttoken::app::lab::tip_loop(&second.view).is_some());

    // Explore by hand: rewind and force something else.
    support::events(&mut s, Command::Rewind { n: 3 });
    support::events(&mut s, Command::Step);
    assert_ne!(state(&s.view().unwrap()), state(&second.view));

    // Back to the lesson: the same step, replayed from the start to the same tokens.
    let back = lesson_step(events_in_lesson(
        &mut s,
        &mut track,
        Command::LessonGoto { step: 1 },
    ));
    assert_eq!((back.run.index, back.replayed), (1, 1));
    assert_eq!(
        state(&back.view),
        state(&asked.view),
        "at the question again"
    );
    let back = lesson_step(events_in_lesson(&mut s, &mut track, Command::LessonReveal));
    assert_eq!(state(&back.view), state(&second.view));
    assert_eq!(back.view.settings, second.view.settings);

    // A step back replays too; then the next step follows on again.
    let prev = lesson_step(events_in_lesson(
        &mut s,
        &mut track,
        Command::LessonGoto { step: 0 },
    ));
    assert_eq!(state(&prev.view), state(&first.view));
    let again = lesson_step(events_in_lesson(
        &mut s,
        &mut track,
        Command::LessonGoto { step: 1 },
    ));
    assert_eq!(again.replayed, 0);
    assert_eq!(state(&again.view), state(&asked.view));
}

#[test]
fn bad_lesson_requests_fail_and_leave_the_session() {
    let mut s = session();
    let mut track: Option<Track> = None;
    // No lesson open.
    let ev = events_in_lesson(&mut s, &mut track, Command::LessonGoto { step: 0 });
    assert!(
        matches!(&ev[..], [Event::Failed { what: Failure::Lesson, reason }] if reason.contains("no lesson is open")),
        "{ev:?}"
    );
    let open = Command::OpenLesson(Box::new(lesson::load("typewriter").unwrap()));
    lesson_step(events_in_lesson(&mut s, &mut track, open));
    let before = s.view().unwrap();
    let n = track.as_ref().unwrap().lesson().steps.len();
    let ev = events_in_lesson(&mut s, &mut track, Command::LessonGoto { step: n });
    assert!(
        matches!(&ev[..], [Event::Failed { what: Failure::Lesson, reason }] if reason.contains("there is no step")),
        "{ev:?}"
    );
    assert_eq!(s.view().unwrap(), before, "the session as it was");
}

/// `Command::changes_session` is the promise `App` relies on to notice exploring.
#[test]
fn which_commands_change_the_session() {
    let changes = [
        Command::Step,
        Command::Force { token_id: 1 },
        Command::Rewind { n: 1 },
        Command::SetKvCache { on: false },
        Command::ForceText { text: "x".into() },
    ];
    let reads = [
        Command::Search {
            query: "x".into(),
            limit: 1,
        },
        Command::Compare { a: 0, b: 1 },
        Command::Inspect {
            lens: true,
            heads: false,
        },
        Command::LessonGoto { step: 0 },
    ];
    assert!(changes.iter().all(Command::changes_session));
    assert!(!reads.iter().any(Command::changes_session));
    // And each really does or does not, on the real model.
    let mut s = session();
    support::events(
        &mut s,
        Command::Prefill {
            prompt: "Hello".into(),
            chat: false,
        },
    );
    for cmd in reads.into_iter().take(3) {
        let before = s.view().unwrap();
        support::events(&mut s, cmd.clone());
        assert_eq!(s.view().unwrap(), before, "{cmd:?} changed the session");
    }
    let before = s.view().unwrap();
    support::events(&mut s, Command::Step);
    assert_ne!(s.view().unwrap(), before);
}

fn tip_loop_of(v: &SessionView) -> Option<nexttoken::analysis::Cycle> {
    nexttoken::app::lab::tip_loop(v)
}

/// The panel a step opens after its question still opens when the class skips the question: the
/// attention lesson's step 4 opens layer 18, head 5 once answered; going on to step 5 without an
/// answer, its run starts with that panel, before its own (step 5 had shown step 2's head under a
/// narration about "the same head"). Going to step 5 from the start carries every step's panels.
#[test]
fn panels_of_the_steps_run_on_the_way_open_first() {
    use nexttoken::protocol::lesson::report::TuiAction;
    let (mut s, mut track) = opened("attention");
    for step in 1..3 {
        let goto = Command::LessonGoto { step };
        lesson_step(events_in_lesson(&mut s, &mut track, goto));
    }
    let heads = |v: &LessonStepView| -> Vec<(Option<usize>, Option<usize>)> {
        v.run
            .tui
            .iter()
            .filter_map(|a| match a {
                TuiAction::Panel(p) => Some((p.layer, p.head)),
                _ => None,
            })
            .collect()
    };
    // Step 4 waits at its question: its panel is not open yet.
    let asked = lesson_step(events_in_lesson(
        &mut s,
        &mut track,
        Command::LessonGoto { step: 3 },
    ));
    assert!(asked.run.question.is_some());
    assert!(heads(&asked).is_empty(), "{:?}", asked.run.tui);
    let last = lesson_step(events_in_lesson(
        &mut s,
        &mut track,
        Command::LessonGoto { step: 4 },
    ));
    assert_eq!(last.replayed, 0, "it followed on");
    let copy = (Some(17), Some(4)); // layer 18, head 5
    assert_eq!(
        heads(&last),
        [copy, copy],
        "step 4's panel, then step 5's own"
    );
    // From the start: step 2's head, then step 4's.
    let first = lesson_step(events_in_lesson(
        &mut s,
        &mut track,
        Command::LessonGoto { step: 0 },
    ));
    assert!(first.run.failure().is_none());
    let again = lesson_step(events_in_lesson(
        &mut s,
        &mut track,
        Command::LessonGoto { step: 4 },
    ));
    assert!(again.replayed > 0);
    let previous = (Some(16), Some(0)); // layer 17, head 1: steps 2 and 3
    assert_eq!(heads(&again), [previous, previous, copy, copy]);
}

/// The speculative rounds of a step skipped at its question reach the screen with the next step, and
/// only the text's own: step 4 asks, then writes 6 rounds on a new prompt; going on to step 5
/// unanswered carries those 6 (the panel had still shown a counting round, "all kept", beside the
/// giraffe). A replay carries every round of the text on screen, none of an earlier text.
#[test]
fn rounds_of_the_steps_run_on_the_way_reach_the_screen() {
    use nexttoken::protocol::lesson::report::TuiAction;
    let (mut s, mut track) = opened("speculative-decoding");
    let rounds = |v: &LessonStepView| {
        v.run
            .tui
            .iter()
            .filter(|a| matches!(a, TuiAction::Round(_)))
            .count()
    };
    let mut goto = |s: &mut Session, step| {
        lesson_step(events_in_lesson(
            s,
            &mut track,
            Command::LessonGoto { step },
        ))
    };
    for step in 1..3 {
        goto(&mut s, step);
    }
    let asked = goto(&mut s, 3);
    assert!(asked.run.question.is_some());
    assert_eq!(rounds(&asked), 0, "nothing written before the question");
    let last = goto(&mut s, 4);
    assert_eq!((last.replayed, rounds(&last)), (0, 6), "step 4's rounds");
    // Back to step 2 ("One round", skipped at its question): replayed, its text's one round... and
    // on to step 3, whose three rounds follow on.
    let back = goto(&mut s, 1);
    assert!(back.replayed > 0);
    assert_eq!(rounds(&back), 0, "step 2 waits at its question");
    let on = goto(&mut s, 2);
    assert_eq!(
        (on.replayed, rounds(&on)),
        (0, 1 + 3),
        "step 2's round, then step 3's"
    );
    // Step 5 from the start: the giraffe's 6 rounds, none of the counting text's 4.
    goto(&mut s, 0);
    let replayed = goto(&mut s, 4);
    assert_eq!(rounds(&replayed), 6);
}

/// A lesson names the models it was written for: opened on another, every step says so (the same
/// note on a step reached by a replay and on a reveal); opened on one of them, no step does.
#[test]
fn a_lesson_on_a_model_it_was_not_written_for_says_so_on_every_step() {
    let (mut s, mut track) = (session(), None);
    let mut typewriter = lesson::load("typewriter").unwrap();
    assert_eq!(typewriter.models, ["smollm2-135m"]);
    let open = Command::OpenLesson(Box::new(typewriter.clone()));
    let first = lesson_step(events_in_lesson(&mut s, &mut track, open));
    assert_eq!(first.written_for, None, "the default model is SmolLM2");

    typewriter.models = vec!["gemma3-270m".into()];
    let open = Command::OpenLesson(Box::new(typewriter));
    let first = lesson_step(events_in_lesson(&mut s, &mut track, open));
    let note = Some("Gemma 3 270M Q4_K_M".to_string());
    assert_eq!(first.written_for, note);
    let reveal = lesson_step(events_in_lesson(&mut s, &mut track, Command::LessonReveal));
    assert_eq!(reveal.written_for, note, "the reveal");
    let third = Command::LessonGoto { step: 2 };
    let third = lesson_step(events_in_lesson(&mut s, &mut track, third));
    assert!(third.replayed > 0 || third.run.index == 2);
    assert_eq!(third.written_for, note, "a step reached by a replay");
}

/// A view counts the passes since its prompt was read: a lesson opened again (or gone back to its
/// first step) reads its prompt again, in one pass, whatever ran before.
#[test]
fn a_prompt_read_again_counts_its_passes_from_itself() {
    let (mut s, mut track) = (session(), None);
    for _ in 0..2 {
        let open = Command::OpenLesson(Box::new(lesson::load("typewriter").unwrap()));
        let first = lesson_step(events_in_lesson(&mut s, &mut track, open));
        let v = &first.view;
        assert_eq!(v.last_pass.forward_passes - v.passes_before_prompt, 1);
        let cmd = Command::LessonGoto { step: 3 };
        lesson_step(events_in_lesson(&mut s, &mut track, cmd));
    }
    assert!(s.forward_passes() > 3);
}
