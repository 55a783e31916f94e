//! The model's answer to a lesson's question, measured on the session as it is now (the question itself,
//! and scoring the class against the answer, are plain data in `protocol::lesson::question`).

use super::expect;
use crate::engine::session::Session;
use crate::protocol::lesson::question::{
    number_within, yes_no, Answer, Measure, ModelAnswer, Question, QuestionKind,
};
use crate::protocol::lesson::{Check, Expect};

/// Computes the model's answer to `q` on the session as it is now. `previous` is the previous branch's
/// leaf, for the divergence measure. An error is a claim that cannot be measured at all.
pub fn answer(
    session: &mut Session,
    q: &Question,
    previous: Option<usize>,
) -> Result<ModelAnswer, String> {
    let holds = |session: &mut Session, e: &Expect| -> Result<(bool, Vec<Check>), String> {
        let checks = expect::evaluate(session, e, previous)?;
        Ok((checks.iter().all(|c| c.ok), checks))
    };
    let mut problem = None;
    let (value, shown, checks) = match &q.kind {
        QuestionKind::Token => {
            let next = session.distribution().map_err(|e| e.to_string())?;
            let top = next
                .candidates
                .first()
                .map(|c| (c.token.text.clone(), c.prob));
            let (text, p) = top.unwrap_or_default();
            let shown = format!("{text:?} ({:.1}%)", p * 100.0);
            (Answer::Token(text), shown, Vec::new())
        }
        QuestionKind::YesNo { yes_if } => {
            let (yes, checks) = holds(session, yes_if)?;
            (Answer::Yes(yes), yes_no(yes).to_string(), checks)
        }
        QuestionKind::Choice(choices) => {
            let mut held = Vec::new();
            let mut all = Vec::new();
            for (i, c) in choices.iter().enumerate() {
                let (ok, checks) = holds(session, &c.when)?;
                if ok {
                    held.push(i);
                }
                all.extend(checks);
            }
            let (value, shown) = match held.as_slice() {
                [i] => (Some(*i), format!("{}. {}", i + 1, choices[*i].text)),
                _ => {
                    problem = Some(format!(
                        "{} choices held (choices {:?}): exactly one must",
                        held.len(),
                        held.iter().map(|i| i + 1).collect::<Vec<_>>()
                    ));
                    (None, "no single answer".into())
                }
            };
            (Answer::Choice(value), shown, all)
        }
        QuestionKind::Number {
            measure,
            range,
            tolerance,
            factor,
        } => {
            // A factor scores to one decimal, so the answer is shown to two.
            let precision = if factor.is_some() { 0.1 } else { *tolerance };
            let (v, shown, check, outside) =
                number(session, *measure, (*range, precision), previous)?;
            problem = outside;
            (Answer::Number(v), shown, vec![check])
        }
    };
    Ok(ModelAnswer {
        question: q.clone(),
        value,
        shown,
        checks,
        problem,
    })
}

/// A number question's measurement on the session: the value, as shown (to the precision it is
/// scored at), the check that it falls in the lesson's range, and why not when it does not.
fn number(
    session: &mut Session,
    measure: Measure,
    (range, tolerance): (Option<[f64; 2]>, f64),
    previous: Option<usize>,
) -> Result<(f64, String, Check, Option<String>), String> {
    let (v, seen) = super::measure::measure(session, measure, previous)?;
    let outside = range
        .filter(|[lo, hi]| !(*lo..=*hi).contains(&v))
        .map(|[lo, hi]| {
            let name = measure.name();
            format!("{name} measured {v:.2}, outside the lesson's range [{lo}, {hi}]")
        });
    let number = number_within(v, tolerance);
    let unit = match measure.unit() {
        " tokens" if number == "1" => " token",
        unit => unit,
    };
    let check = Check {
        what: format!("{measure:?} in {range:?}"),
        observed: seen,
        ok: outside.is_none(),
    };
    Ok((v, format!("{number}{unit}"), check, outside))
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
