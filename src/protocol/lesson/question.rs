//! A lesson's questions (`ask`): the token the model writes next, yes or no, one of several choices, or
//! a number measured on the model. The question is put to the class before the rest of its step runs;
//! the answer is computed from the model once the rest has run, and the class's answer is scored
//! against it. Plain data and pure functions: `lesson::answer` measures the model's answer on the session.

use super::expect::{Check, Expect};
use crate::protocol::ClassAnswer;
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
    /// counts as right, or within a `factor` of it either way where one is given (a ratio: "3x"
    /// against a measured 3.1 is right, "1x", no faster at all, is not). `range`: the measurement the
    /// lesson relies on (`lesson check` fails outside it).
    Number {
        measure: Measure,
        tolerance: f64,
        range: Option<[f64; 2]>,
        factor: Option<f64>,
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
    /// The probability the model gave the last token written, in percent (as the transcript shows it:
    /// the model's own, before any sampler setting).
    LastTokenPercent,
}

impl Measure {
    /// The measure's name, as a lesson file writes it (`number = "prefill_speedup"`).
    pub fn name(self) -> &'static str {
        match self {
            Measure::PrefillSpeedup => "prefill_speedup",
            Measure::PromptTokens => "prompt_tokens",
            Measure::TokensFed => "tokens_fed",
            Measure::LoopPeriod => "loop_period",
            Measure::Entropy => "entropy",
            Measure::Js => "js",
            Measure::Top1Percent => "top1_percent",
            Measure::LastTokenPercent => "last_token_percent",
        }
    }

    /// The measurement's unit, after a number ("×", " tokens", ...).
    pub fn unit(self) -> &'static str {
        match self {
            Measure::PrefillSpeedup => "×",
            Measure::PromptTokens | Measure::TokensFed | Measure::LoopPeriod => " tokens",
            Measure::Entropy | Measure::Js => " nats",
            Measure::Top1Percent | Measure::LastTokenPercent => "%",
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
    #[serde(default)]
    within_factor: Option<f64>,
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
            (None, None, Some(_)) if t.tolerance.is_some() && t.within_factor.is_some() => {
                return Err(E::custom(
                    "a number question takes `tolerance` (within so much) or `within_factor` \
                     (within a factor either way), not both",
                ))
            }
            (None, None, Some(measure)) => QuestionKind::Number {
                measure,
                tolerance: t.tolerance.unwrap_or(0.0),
                range: t.range,
                factor: t.within_factor,
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

    /// Whether the class answers with a guess at the next token (a vocabulary search), not in words.
    pub fn is_token(&self) -> bool {
        self.kind == QuestionKind::Token
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
                tolerance,
                range,
                factor,
                ..
            } => {
                if !(tolerance.is_finite() && *tolerance >= 0.0) {
                    return Some(format!("tolerance {tolerance}: expected 0 or more"));
                }
                if let Some(f) = factor.filter(|f| !(f.is_finite() && *f > 1.0)) {
                    return Some(format!("within_factor {f}: expected more than 1"));
                }
                match range {
                    Some([lo, hi]) if lo.partial_cmp(hi).is_none_or(|o| o.is_gt()) => {
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
            (
                QuestionKind::Number {
                    factor: Some(f), ..
                },
                Given::Number(c),
                Answer::Number(m),
            ) => {
                // Both positive, and neither more than `f` times the other.
                let ratio = (c / m).max(m / c);
                let right = *c > 0.0 && *m > 0.0 && ratio <= *f;
                let detail = format!("a factor of {ratio:.2} off; within a factor of {f} counts");
                (number_within(*c, 0.1), right, detail)
            }
            (QuestionKind::Number { tolerance, .. }, Given::Number(c), Answer::Number(m)) => {
                let off = (c - m).abs();
                let off_text = number_within(off, *tolerance);
                let detail = format!("off by {off_text}; within {tolerance} counts");
                (number_within(*c, *tolerance), off <= *tolerance, detail)
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

pub fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// `v` written to the precision a question scores it at: one decimal more than its `tolerance` has
/// (at most four), trailing zeros dropped. So the numbers on screen tell the score: 0.588 nats within
/// 0.15 shows as "0.588", never as a "0.6" that a class's 0.75 would seem to be within; 46 tokens
/// within 1 shows as "46"; a class's 0.45 stays "0.45".
pub fn number_within(v: f64, tolerance: f64) -> String {
    let tol_decimals = (0..4)
        .find(|&d| {
            let scaled = tolerance.abs() * 10f64.powi(d);
            (scaled - scaled.round()).abs() < 1e-9
        })
        .unwrap_or(3);
    let text = format!("{v:.*}", tol_decimals as usize + 1);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match text {
        "-0" => "0".into(),
        t => t.into(),
    }
}
