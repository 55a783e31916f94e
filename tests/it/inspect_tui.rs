//! `Command::Inspect` on the engine thread, held to its documentation: one `Inspected` reply with the
//! parts asked for, the lens following the sampler's planned token, and the session unchanged.

use crate::support;

use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::{Session, SessionOptions};
use nexttoken::protocol::{Command, Event, SamplerSettings};
use support::{events, tiny};

fn session(dir: &tempfile::TempDir) -> Session {
    let path = tiny::write(dir.path());
    let opts = SessionOptions {
        attention_window: 8,
        ..SessionOptions::default()
    };
    load_session(
        &path,
        &LoadOptions::default(),
        SamplerSettings::default(),
        opts,
        &mut |_| {},
    )
    .unwrap()
    .0
}

#[test]
fn inspect_is_answered_by_one_inspected_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    let prefill = Command::Prefill {
        prompt: "Hello".into(),
        chat: false,
    };
    assert!(matches!(
        events(&mut s, prefill).last(),
        Some(Event::Synced(_))
    ));
    events(&mut s, Command::Step);
    let before = s.view().unwrap();

    let ev = events(
        &mut s,
        Command::Inspect {
            lens: true,
            heads: true,
        },
    );
    let [Event::Inspected(ins)] = ev.as_slice() else {
        panic!("expected one Inspected, got {ev:?}");
    };
    assert!(ev[0].is_closing());
    let tip = before.tokens.len() - 1;
    let lens = ins.lens.as_ref().expect("the lens was asked for");
    assert_eq!(lens.position, tip);
    assert_eq!(lens.layers.len(), tiny::N_LAYER);
    // The lens follows the token a step would take.
    assert_eq!(lens.chosen.id, before.next.planned.id);
    assert!(lens.layers.iter().all(|l| l.top.len() == 3));
    let heads = ins.heads.as_ref().expect("the map was asked for");
    assert_eq!(heads.position, tip);
    assert_eq!(heads.scores.len(), tiny::N_LAYER);
    assert!(heads.scores.iter().all(|l| l.len() == tiny::N_HEAD));
    assert_eq!(s.view().unwrap(), before, "inspecting changes nothing");

    // Only the part asked for comes back.
    let ev = events(
        &mut s,
        Command::Inspect {
            lens: false,
            heads: true,
        },
    );
    let [Event::Inspected(ins)] = ev.as_slice() else {
        panic!("expected one Inspected, got {ev:?}");
    };
    assert!(ins.lens.is_none() && ins.heads.is_some());
    assert_eq!(s.view().unwrap(), before);

    // And the next step is the one it would have been.
    let mut twin = session(&dir);
    events(
        &mut twin,
        Command::Prefill {
            prompt: "Hello".into(),
            chat: false,
        },
    );
    events(&mut twin, Command::Step);
    let a = events(&mut s, Command::Step);
    let b = events(&mut twin, Command::Step);
    match (a.as_slice(), b.as_slice()) {
        ([Event::Stepped(a)], [Event::Stepped(b)]) => {
            assert_eq!(a.committed, b.committed);
            assert_eq!(a.next.candidates, b.next.candidates);
        }
        other => panic!("steps answered {other:?}"),
    }
}
