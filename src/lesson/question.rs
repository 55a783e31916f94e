//! A lesson's questions (`ask`): the token the model writes next, yes or no, one of several choices, or
//! a number measured on the model. The question is put to the class before the rest of its step runs;
//! the answer is computed from the model once the rest has run, and the class's answer is scored
//! against it. Plain data and pure functions, except [`answer`], which measures the session.

use super::expect::{self, Check};
use super::format::Expect;
use super::run::tip_loop;
use crate::engine::session::Session;
use crate::protocol::{ClassAnswer, SessionView};
use serde::de::{self, Deserializer};
use serde::Deserialize;

/// A question for the class.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// As shown to the class.
    pub text: String,
    pub kind: QuestionKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum QuestionKind {
    /// The next token: the class guesses it, and the model's distribution scores the guess.
    Token,
    /// Yes when the claim holds once the rest of the step has run.
    YesNo { yes_if: Box<Expect> },
    /// The one choice whose claim holds once the rest of the step has run.
    Choice(Vec<Choice>),
    /// A number measured once the rest of the step has run; a class answer within `tolerance` of it
    /// counts as right. `range`: the measurement the lesson relies on (`lesson check` fails outside it).
    Number {
        measure: Measure,
        tolerance: f64,
        range: Option<[f64; 2]>,
    },
}

/// One answer of a multiple-choice question, and the claim that makes it the right one.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    pub text: String,
    pub when: Box<Expect>,
}

/// What a number question measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// How many times less reading the prompt cost per token than writing one (cache on).
    PrefillSpeedup,
    /// The prompt's length in tokens, as the model read it.
    PromptTokens,
    /// Tokens the last forward pass read.
    TokensFed,
    /// The period of the loop at the tip (0 when there is none).
    LoopPeriod,
    /// The next distribution's entropy, in nats.
    Entropy,
    /// Mean Jensen–Shannon divergence (nats) of the current path against the previous branch.
    Js,
    /// The next token's most likely candidate's probability, in percent.
    Top1Percent,
}

impl Measure {
    /// The measurement's unit, after a number ("×", " tokens", ...).
    pub fn unit(self) -> &'static str {
        match self {
            Measure::PrefillSpeedup => "×",
            Measure::PromptTokens | Measure::TokensFed | Measure::LoopPeriod => " tokens",
            Measure::Entropy | Measure::Js => " nats",
            Measure::Top1Percent => "%",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AskTable {
    question: String,
    #[serde(default)]
    yes_if: Option<Box<Expect>>,
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    number: Option<Measure>,
    #[serde(default)]
    tolerance: Option<f64>,
    #[serde(default)]
    range: Option<[f64; 2]>,
}

impl<'de> Deserialize<'de> for Question {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Question;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a question as text, or a table { question = ..., yes_if/choices/number = ... }")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Question, E> {
                Ok(Question {
                    text: s.to_string(),
                    kind: QuestionKind::Token,
                })
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Question, A::Error> {
                let t = AskTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                t.question()
            }
        }
        d.deserialize_any(V)
    }
}

impl AskTable {
    fn question<E: de::Error>(self) -> Result<Question, E> {
        let t = self;
        let kind = match (t.yes_if, t.choices, t.number) {
            (Some(e), None, None) => QuestionKind::YesNo { yes_if: e },
            (None, Some(c), None) => QuestionKind::Choice(c),
            (None, None, Some(measure)) => QuestionKind::Number {
                measure,
                tolerance: t.tolerance.unwrap_or(0.0),
                range: t.range,
            },
            (None, None, None) => QuestionKind::Token,
            _ => {
                return Err(E::custom(
                    "a question takes one of `yes_if`, `choices` or `number`",
                ))
            }
        };
        Ok(Question {
            text: t.question,
            kind,
        })
    }
}

impl Question {
    /// "token", "yes/no", "choice" or "number".
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            QuestionKind::Token => "token",
            QuestionKind::YesNo { .. } => "yes/no",
            QuestionKind::Choice(_) => "choice",
            QuestionKind::Number { .. } => "number",
        }
    }

    /// A problem with the question's fields, if any (checked when the file is read).
    pub fn problem(&self) -> Option<String> {
        if self.text.trim().is_empty() {
            return Some("the question is empty".into());
        }
        match &self.kind {
            QuestionKind::Token => None,
            QuestionKind::YesNo { yes_if } => yes_if.problem().map(|m| format!("`yes_if`: {m}")),
            QuestionKind::Choice(c) if c.len() < 2 || c.len() > 9 => {
                Some(format!("{} choices: give 2 to 9", c.len()))
            }
            QuestionKind::Choice(c) => c
                .iter()
                .enumerate()
                .find_map(|(i, c)| c.when.problem().map(|m| format!("choice {}: {m}", i + 1))),
            QuestionKind::Number {
                tolerance, range, ..
            } => {
                if !(tolerance.is_finite() && *tolerance >= 0.0) {
                    return Some(format!("tolerance {tolerance}: expected 0 or more"));
                }
                match range {
                    Some([lo, hi]) if !(lo <= hi) => {
                        Some(format!("range [{lo}, {hi}]: expected [low, high]"))
                    }
                    _ => None,
                }
            }
        }
    }

    /// How the class answers, for the question card ("y or n", "1 to 3", "a number").
    pub fn how_to_answer(&self) -> String {
        match &self.kind {
            QuestionKind::Token => "a word".into(),
            QuestionKind::YesNo { .. } => "y or n".into(),
            QuestionKind::Choice(c) => format!("1 to {}", c.len()),
            QuestionKind::Number { measure, .. } => {
                format!("a number ({})", measure.unit().trim())
            }
        }
    }

    /// Reads what the class typed as an answer to this question (not a token question: a guess is a
    /// vocabulary search). The error says what to type.
    pub fn read_answer(&self, typed: &str) -> Result<Given, String> {
        let t = typed.trim().to_lowercase();
        let want = || format!("answer with {}", self.how_to_answer());
        match &self.kind {
            QuestionKind::Token => Err("a token question is answered by a guess".into()),
            QuestionKind::YesNo { .. } => match t.as_str() {
                "y" | "yes" => Ok(Given::Yes(true)),
                "n" | "no" => Ok(Given::Yes(false)),
                _ => Err(want()),
            },
            QuestionKind::Choice(c) => {
                let by_letter = t
                    .chars()
                    .next()
                    .filter(|ch| t.len() == 1 && ch.is_ascii_lowercase())
                    .map(|ch| ch as usize - 'a' as usize + 1);
                let n = t.parse::<usize>().ok().or(by_letter);
                match n {
                    Some(n) if (1..=c.len()).contains(&n) => Ok(Given::Choice(n - 1)),
                    _ => Err(want()),
                }
            }
            QuestionKind::Number { .. } => {
                let n = t.trim_end_matches(['x', '×', '%']).trim();
                match n.parse::<f64>() {
                    Ok(v) if v.is_finite() => Ok(Given::Number(v)),
                    _ => Err(want()),
                }
            }
        }
    }

    /// The class's answer scored against the model's, as the record kept for the session and the
    /// handout.
    pub fn score(&self, position: usize, given: &Given, model: &ModelAnswer) -> ClassAnswer {
        let (class, correct, detail) = match (&self.kind, given, &model.value) {
            (QuestionKind::YesNo { .. }, Given::Yes(c), Answer::Yes(m)) => {
                (yes_no(*c).to_string(), c == m, String::new())
            }
            (QuestionKind::Choice(cs), Given::Choice(c), Answer::Choice(m)) => {
                let text = cs.get(*c).map_or("?", |x| x.text.as_str());
                (format!("{}. {text}", c + 1), Some(*c) == *m, String::new())
            }
            (QuestionKind::Number { tolerance, .. }, Given::Number(c), Answer::Number(m)) => {
                let off = (c - m).abs();
                let detail = format!("off by {off:.1}; within {tolerance} counts");
                (trim_number(*c), off <= *tolerance, detail)
            }
            _ => (
                "?".into(),
                false,
                "the answer does not fit the question".into(),
            ),
        };
        ClassAnswer {
            position,
            question: self.text.clone(),
            kind: self.kind_name().into(),
            class,
            model: model.shown.clone(),
            correct,
            detail,
        }
    }
}

/// What the class answered to a question that is not a token question.
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    Yes(bool),
    /// 0-based.
    Choice(usize),
    Number(f64),
}

/// The model's answer to a question, computed once the rest of the step has run.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelAnswer {
    pub question: Question,
    pub value: Answer,
    /// As shown: "no", "2. It carries on about Berlin", "8.7×", "' cat' (31.2%)".
    pub shown: String,
    /// The claims behind it, with what was observed (`lesson check` prints them).
    pub checks: Vec<Check>,
    /// The lesson's own check of the answer failed: no choice held, two did, or a number fell
    /// outside its `range`.
    pub problem: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The model's top-1 token text (a token question is scored by the guess itself).
    Token(String),
    Yes(bool),
    /// The choice that held, 0-based, if exactly one did.
    Choice(Option<usize>),
    Number(f64),
}

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
        QuestionKind::Number { measure, range, .. } => {
            let (v, seen) = measure_now(session, *measure, previous)?;
            if let Some([lo, hi]) = range {
                if !(*lo..=*hi).contains(&v) {
                    problem = Some(format!("{v:.2} is outside the lesson's range [{lo}, {hi}]"));
                }
            }
            let shown = format!("{}{}", trim_number(v), measure.unit());
            let check = Check {
                what: format!("{measure:?} in {range:?}"),
                observed: seen,
                ok: problem.is_none(),
            };
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

/// One measurement on the session, with a sentence on how it was measured.
fn measure_now(
    session: &mut Session,
    m: Measure,
    previous: Option<usize>,
) -> Result<(f64, String), String> {
    let err = |e: crate::engine::session::SessionError| e.to_string();
    Ok(match m {
        Measure::PrefillSpeedup => prefill_speedup(&session.view().map_err(err)?)?,
        Measure::PromptTokens => {
            let n = session.prompt_len();
            (n as f64, format!("{n} prompt token(s)"))
        }
        Measure::TokensFed => {
            let n = session.view().map_err(err)?.last_pass.tokens_fed;
            (n as f64, format!("the last pass read {n} token(s)"))
        }
        Measure::LoopPeriod => match tip_loop(session) {
            Some(c) => (c.period as f64, format!("a loop of period {}", c.period)),
            None => (0.0, "no loop".into()),
        },
        Measure::Entropy => {
            let h = session.distribution().map_err(err)?.entropy as f64;
            (h, format!("entropy {h:.3} nats"))
        }
        Measure::Top1Percent => {
            let d = session.distribution().map_err(err)?;
            let p = d.candidates.first().map_or(0.0, |c| c.prob as f64) * 100.0;
            (p, format!("top-1 at {p:.1}%"))
        }
        Measure::Js => {
            let prev =
                previous.ok_or("there is no previous branch to compare with: rewind first")?;
            let tip = session.tip_id().ok_or("no prompt yet")?;
            let c = session.compare(prev, tip).map_err(err)?;
            (c.mean_js, format!("mean JS {:.4} nats", c.mean_js))
        }
    })
}

/// Mean decode ms per token (cache on) over prefill ms per token, with how it was measured.
pub fn prefill_speedup(view: &SessionView) -> Result<(f64, String), String> {
    let pre = view.prefill.ms / view.prefill.tokens.max(1) as f64;
    let dec: Vec<f64> = view
        .decode_ms
        .iter()
        .zip(&view.decode_kv)
        .filter(|(_, &kv)| kv)
        .map(|(&ms, _)| ms)
        .collect();
    if dec.is_empty() || view.prefill.tokens == 0 {
        return Err("no prefill or no decode step with the KV cache on to measure".into());
    }
    let d = dec.iter().sum::<f64>() / dec.len() as f64;
    let ratio = d / pre.max(1e-9);
    let seen = format!("prefill {pre:.2} ms/token, decode {d:.2} ms/token: {ratio:.1}x");
    Ok((ratio, seen))
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// A number as a class would write it: one decimal, none when it is whole.
fn trim_number(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 {
        format!("{:.0}", v.round())
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lesson::parse;
    use crate::lesson::Action;

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
                range: Some([1.0, 50.0])
            }
        );
    }

    #[test]
    fn bad_questions_say_what_is_wrong() {
        let e = ask("{ question = \"Q\", yes_if = { no_loop = true }, number = \"entropy\" }");
        assert!(e
            .unwrap_err()
            .contains("one of `yes_if`, `choices` or `number`"));
        let e =
            ask("{ question = \"Q\", choices = [ { text = \"a\", when = { no_loop = true } } ] }");
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
}
