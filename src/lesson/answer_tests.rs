//! Tests of `protocol::lesson::question` and `answer.rs`: every kind parses, bad questions say what is wrong, answers are read and
//! scored for their kind.
use super::*;
use crate::lesson::parse;
use crate::lesson::Action;
use crate::protocol::lesson::question::*;

fn ask(body: &str) -> Result<Question, String> {
    let text = format!(
        "title = \"T\"\nsummary = \"S\"\nminutes = 3\n[[step]]\nnarration = \"x\"\nactions = [ {{ prompt = \"A\" }}, {{ ask = {body} }} ]\n"
    );
    let l = parse("t", "t.toml", &text).map_err(|e| e.to_string())?;
    match &l.steps[0].actions[1] {
        Action::Ask(q) => Ok(q.clone()),
        a => Err(format!("not an ask: {a:?}")),
    }
}

#[test]
fn every_kind_parses() {
    assert_eq!(ask("\"What next?\"").unwrap().kind, QuestionKind::Token);
    let q = ask("{ question = \"Again?\", yes_if = { text_contains = \" dog\" } }").unwrap();
    assert_eq!(q.kind_name(), "yes/no");
    let q = ask("{ question = \"Which?\", choices = [ { text = \"a\", when = { no_loop = true } }, { text = \"b\", when = { no_loop = false } } ] }").unwrap();
    assert!(matches!(&q.kind, QuestionKind::Choice(c) if c.len() == 2));
    let q = ask("{ question = \"How many?\", number = \"prefill_speedup\", tolerance = 2.0, range = [1.0, 50.0] }").unwrap();
    assert_eq!(
        q.kind,
        QuestionKind::Number {
            measure: Measure::PrefillSpeedup,
            tolerance: 2.0,
            range: Some([1.0, 50.0]),
            factor: None,
        }
    );
}

#[test]
fn bad_questions_say_what_is_wrong() {
    let e = ask("{ question = \"Q\", yes_if = { no_loop = true }, number = \"entropy\" }");
    assert!(e
        .unwrap_err()
        .contains("one of `yes_if`, `choices` or `number`"));
    let e = ask("{ question = \"Q\", choices = [ { text = \"a\", when = { no_loop = true } } ] }");
    assert!(e.unwrap_err().contains("1 choices: give 2 to 9"));
    let e = ask("{ question = \"Q\", number = \"speed\" }");
    assert!(
        e.unwrap_err().contains("prefill_speedup"),
        "names the measures"
    );
    let e = ask("{ question = \"Q\", number = \"entropy\", range = [3.0, 1.0] }");
    assert!(e.unwrap_err().contains("range"));
}

fn number_q(tolerance: f64) -> Question {
    Question {
        text: "How many times faster?".into(),
        kind: QuestionKind::Number {
            measure: Measure::PrefillSpeedup,
            tolerance,
            range: None,
            factor: None,
        },
    }
}

fn model(q: &Question, value: Answer, shown: &str) -> ModelAnswer {
    ModelAnswer {
        question: q.clone(),
        value,
        shown: shown.into(),
        checks: vec![],
        problem: None,
    }
}

#[test]
fn answers_are_read_for_their_kind() {
    let yn = Question {
        text: "Q".into(),
        kind: QuestionKind::YesNo {
            yes_if: Box::new(Expect::default()),
        },
    };
    assert_eq!(yn.read_answer(" Yes "), Ok(Given::Yes(true)));
    assert_eq!(yn.read_answer("n"), Ok(Given::Yes(false)));
    assert_eq!(yn.read_answer("maybe"), Err("answer with y or n".into()));
    let n = number_q(1.0);
    assert_eq!(n.read_answer("8.5x"), Ok(Given::Number(8.5)));
    assert!(n.read_answer("fast").unwrap_err().contains("a number"));
    let c = Question {
        text: "Q".into(),
        kind: QuestionKind::Choice(vec![
            Choice {
                text: "a".into(),
                when: Box::default(),
            },
            Choice {
                text: "b".into(),
                when: Box::default(),
            },
        ]),
    };
    assert_eq!(c.read_answer("2"), Ok(Given::Choice(1)));
    assert_eq!(c.read_answer("b"), Ok(Given::Choice(1)));
    assert_eq!(c.read_answer("3"), Err("answer with 1 to 2".into()));
}

#[test]
fn a_number_within_the_tolerance_is_right() {
    let q = number_q(2.0);
    let m = model(&q, Answer::Number(8.7), "8.7×");
    let near = q.score(5, &Given::Number(10.0), &m);
    assert!(near.correct, "{near:?}");
    assert_eq!((near.class.as_str(), near.model.as_str()), ("10", "8.7×"));
    assert!(!q.score(5, &Given::Number(11.0), &m).correct);
    let exact = number_q(0.0);
    assert!(!exact.score(5, &Given::Number(8.0), &m).correct);
}

/// A ratio scored within a factor: "3x" against a measured 3.1 is right, and so is 4; "1x" (no faster
/// at all) is not, though an absolute tolerance of 3 had counted it right; nor is 0 or less.
#[test]
fn a_number_within_a_factor_is_right_either_way() {
    let q = ask(
        "{ question = \"How many times?\", number = \"prefill_speedup\", within_factor = 1.5 }",
    )
    .unwrap();
    let m = model(&q, Answer::Number(3.1), "3.1×");
    for (class, right) in [
        (3.0, true),
        (4.0, true),
        (2.1, true),
        (2.0, false),
        (4.7, false),
        (1.0, false),
        (0.0, false),
        (-3.1, false),
    ] {
        let a = q.score(5, &Given::Number(class), &m);
        assert_eq!(a.correct, right, "{class}: {a:?}");
    }
    let e = ask(
        "{ question = \"Q\", number = \"prefill_speedup\", within_factor = 1.5, tolerance = 1.0 }",
    );
    assert!(e.unwrap_err().contains("not both"));
    let e = ask("{ question = \"Q\", number = \"prefill_speedup\", within_factor = 0.5 }");
    assert!(e.unwrap_err().contains("more than 1"));
}

/// The numbers a scored answer shows tell its score: the model's to one decimal more than the
/// tolerance has, the class's as typed. A mean JS of 0.588 within 0.15 rounded to "0.6" made a
/// class's 0.75 look right while it was scored wrong, and a class's 0.45 showed as "0.5".
#[test]
fn a_scored_number_shows_the_precision_it_was_scored_at() {
    let cases = [
        ((0.588, 0.15), "0.588"),
        ((0.45, 0.15), "0.45"),
        ((46.0, 1.0), "46"),
        ((8.734, 2.0), "8.7"),
        ((8.0, 0.0), "8"),
        ((52.44, 10.0), "52.4"),
        ((1.51, 0.5), "1.51"),
        ((-0.0001, 0.15), "0"),
    ];
    for ((v, tol), want) in cases {
        assert_eq!(number_within(v, tol), want, "{v} within {tol}");
    }
    let mut q = number_q(0.15);
    if let QuestionKind::Number { measure, .. } = &mut q.kind {
        *measure = Measure::Js;
    }
    let m = model(&q, Answer::Number(0.588), "0.588 nats");
    let far = q.score(5, &Given::Number(0.75), &m);
    assert!(!far.correct);
    assert_eq!(far.class, "0.75");
    assert!(far.detail.starts_with("off by 0.162;"), "{far:?}");
    let near = q.score(5, &Given::Number(0.45), &m);
    assert!(near.correct);
    assert_eq!(near.class, "0.45");
    assert!(near.detail.starts_with("off by 0.138;"), "{near:?}");
}

#[test]
fn yes_no_and_choices_score_against_the_models_answer() {
    let q = Question {
        text: "Q".into(),
        kind: QuestionKind::YesNo {
            yes_if: Box::new(Expect::default()),
        },
    };
    let m = model(&q, Answer::Yes(false), "no");
    assert!(q.score(3, &Given::Yes(false), &m).correct);
    let wrong = q.score(3, &Given::Yes(true), &m);
    assert!(!wrong.correct);
    assert_eq!(
        (wrong.kind.as_str(), wrong.class.as_str()),
        ("yes/no", "yes")
    );
}
