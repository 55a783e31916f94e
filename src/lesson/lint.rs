//! The narration lint: a step whose narration makes a factual claim must check it on the model.
//!
//! A claim is read, conservatively, off the words: a number (any digit), a quoted token (`" Paris"`,
//! `“Hi”`), or a word for a trend ([`TREND_WORDS`]: climbs, faster, more, ...). A step that names one
//! must carry an `expect` (or a question whose answer `lesson check` verifies). `lesson check` runs it
//! on every lesson, and a test on every built-in, so a narration cannot lose its check unnoticed.

use crate::protocol::lesson::format::{Action, Lesson, Step};
use crate::protocol::lesson::question::QuestionKind;

/// Words that claim a trend or a comparison, lower case.
pub const TREND_WORDS: &[&str] = &[
    "climb",
    "climbs",
    "climbing",
    "rise",
    "rises",
    "rising",
    "grow",
    "grows",
    "growing",
    "fall",
    "falls",
    "falling",
    "drop",
    "drops",
    "dropping",
    "increase",
    "increases",
    "increasing",
    "decrease",
    "decreases",
    "decreasing",
    "shrink",
    "shrinks",
    "faster",
    "slower",
    "cheaper",
    "dearer",
    "more",
    "fewer",
    "less",
    "higher",
    "lower",
    "larger",
    "smaller",
];

/// A step whose narration makes a claim that nothing in the step checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// 0-based step index.
    pub step: usize,
    /// What reads as a claim: `number "49,152"`, `token " Paris"`, `trend "climbing"`.
    pub claims: Vec<String>,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "step {}: the narration names {}, but the step checks nothing: add an `expect` that bears it out",
            self.step + 1,
            self.claims.join(", ")
        )
    }
}

/// Every step of `lesson` whose narration makes a claim and which carries no check.
pub fn lint(lesson: &Lesson) -> Vec<Finding> {
    lesson
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| !checks_something(s))
        .filter_map(|(i, s)| {
            let claims = claims(&s.narration);
            (!claims.is_empty()).then_some(Finding { step: i, claims })
        })
        .collect()
}

/// Whether the step checks a claim on the model: an `expect`, or a number question with a `range`
/// (`lesson check` fails when the measurement falls outside it).
fn checks_something(step: &Step) -> bool {
    step.actions.iter().any(checks_a_claim)
}

/// Whether this action fails `lesson check` when the model does not bear it out.
pub fn checks_a_claim(a: &Action) -> bool {
    match a {
        Action::Expect(_) => true,
        Action::Ask(q) => matches!(q.kind, QuestionKind::Number { range: Some(_), .. }),
        _ => false,
    }
}

/// What in `text` reads as a claim: its first number, first quoted text and first trend word.
pub fn claims(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(n) = first_number(text) {
        out.push(format!("number {n:?}"));
    }
    if let Some(q) = first_quote(text) {
        out.push(format!("token {q:?}"));
    }
    let trend = text
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| TREND_WORDS.contains(&w.to_lowercase().as_str()));
    if let Some(w) = trend {
        out.push(format!("trend {w:?}"));
    }
    out
}

/// Every run of digits in `text`, in order (with the separators inside it: `49,152`, `0.8`).
pub fn numbers(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.find(|c: char| c.is_ascii_digit())?;
        let from = &rest[start..];
        let len = from
            .char_indices()
            .take_while(|&(i, c)| {
                c.is_ascii_digit()
                    || ((c == ',' || c == '.')
                        && from[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
            })
            .map(|(i, c)| i + c.len_utf8())
            .last()?;
        rest = &from[len..];
        Some(&from[..len])
    })
}

/// The first run of digits.
fn first_number(text: &str) -> Option<&str> {
    numbers(text).next()
}

/// The first text between double quotes, straight or curly.
fn first_quote(text: &str) -> Option<&str> {
    let open = text.find(['"', '“'])?;
    let q = text[open..].chars().next()?;
    let body = &text[open + q.len_utf8()..];
    let close = body.find(['"', '”'])?;
    Some(&body[..close])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lesson::parse;

    const HEAD: &str = "title = \"T\"\nsummary = \"S\"\nminutes = 3\n";

    fn lesson(body: &str) -> Lesson {
        parse("t", "t.toml", &format!("{HEAD}{body}")).unwrap()
    }

    #[test]
    fn reads_numbers_tokens_and_trends() {
        let c = claims("A probability for every one of its 49,152 tokens.");
        assert_eq!(c, vec!["number \"49,152\""]);
        let c = claims("It lands on \" dog\", about 2%.");
        assert_eq!(c, vec!["number \"2\"", "token \" dog\""]);
        assert_eq!(
            claims("The decode times keep Climbing."),
            vec!["trend \"Climbing\""]
        );
        assert_eq!(claims("“Hi” is a greeting"), vec!["token \"Hi\""]);
        assert!(claims("We let the model write on, greedy.").is_empty());
        // "moreover" is not "more"; a lone quote is no quoted token.
        assert!(claims("Moreover, the \"cat").is_empty());
    }

    /// A step that claims a trend passes with its expect, and fails the lint once the expect is gone.
    #[test]
    fn a_claim_without_its_expect_is_found() {
        let step = "[[step]]\nnarration = \"Each step reads one token more than the last.\"\nactions = [\n  { prompt = \"Hi\" },\n  { kv_cache = false },\n  { step = 3 },\n";
        let checked = lesson(&format!(
            "{step}  {{ expect = {{ tokens_fed_is_length = true }} }},\n]\n"
        ));
        assert_eq!(lint(&checked), vec![]);
        let unchecked = lesson(&format!("{step}]\n"));
        let found = lint(&unchecked);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].step, 0);
        assert_eq!(found[0].claims, vec!["trend \"more\""]);
        assert!(found[0]
            .to_string()
            .starts_with("step 1: the narration names trend"));
    }

    /// A number question with a range is a check; one without is not.
    #[test]
    fn a_number_question_with_a_range_checks_its_claim() {
        let step = "[[step]]\nnarration = \"Reading is 5 times faster.\"\nactions = [\n  { prompt = \"Hi\" },\n  { step = 3 },\n";
        let ask = "{ ask = { question = \"How many times faster?\", number = \"prefill_speedup\", tolerance = 2.0";
        let ranged = lesson(&format!("{step}  {ask}, range = [2.0, 100.0] }} }},\n]\n"));
        assert_eq!(lint(&ranged), vec![]);
        let open = lesson(&format!("{step}  {ask} }} }},\n]\n"));
        assert_eq!(lint(&open).len(), 1);
    }

    #[test]
    fn narration_without_claims_needs_no_expect() {
        let l = lesson(
            "[[step]]\nnarration = \"We read a prompt.\"\nactions = [ { prompt = \"Hi\" } ]\n",
        );
        assert!(lint(&l).is_empty());
    }
}
