//! A question whose answer the class can already read: the step's title or its narration above `---`
//! says the model's answer before the class gives its own.
//!
//! `lesson check` runs this on every answered question, once the model's answer is known: a token
//! question whose answer is written there, quoted as lessons write tokens ("The first time, the next
//! word was " has"", then "Which word will greedy take?") or, for a word of four letters or more,
//! bare; or a number question where a figure written there would be scored right (every figure: a
//! "layer 18" counts too, and a measure on the clock is judged against this machine's value).
//! Yes/no and choice questions name their options by design, so they are not read; nor is the
//! question's own text, which may name options too ("1 token, or 2?").

use crate::protocol::lesson::question::{Answer, Given, ModelAnswer};
use crate::protocol::lesson::Step;

/// What the class reads before the answer: the step's title and the narration above `---`.
fn read_before_answer(step: &Step) -> String {
    let title = step.title.as_deref().unwrap_or_default();
    let (before, _) = crate::protocol::lesson::format::split_at_reveal(&step.narration);
    format!("{title}\n{before}")
}

/// Where the text read before the answer already tells the model's answer: what gives it away, or
/// `None` when nothing does.
pub fn told(step: &Step, answer: &ModelAnswer) -> Option<String> {
    let text = read_before_answer(step);
    match &answer.value {
        Answer::Token(token) => {
            let word = token.trim();
            let letters = word.chars().filter(|c| c.is_alphanumeric()).count();
            // Quoted, as lessons write a token (`" has"`), any word of two letters or more; bare, a
            // word of four or more ("the", "is" stand in every narration).
            let quoted = [format!("\"{token}\""), format!("\"{word}\"")];
            let says = (letters >= 2 && quoted.iter().any(|q| has_word(&text, q)))
                || (letters >= 4 && has_word(&text, word));
            says.then(|| format!("the text before the answer says {word:?}, the model's answer"))
        }
        Answer::Number(_) => super::lint::numbers(&text).find_map(|figure| {
            let v: f64 = figure.replace(',', "").parse().ok()?;
            let scored = answer.question.score(0, &Given::Number(v), answer);
            scored.correct.then(|| {
                format!(
                    "the text before the answer says {figure}, which scores right against the model's {}",
                    answer.shown
                )
            })
        }),
        Answer::Yes(_) | Answer::Choice(_) => None,
    }
}

/// Whether `word` stands in `text` as a whole word, ignoring case.
fn has_word(text: &str, word: &str) -> bool {
    let (text, word) = (text.to_lowercase(), word.to_lowercase());
    let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    text.match_indices(&word).any(|(i, _)| {
        boundary(text[..i].chars().next_back()) && boundary(text[i + word.len()..].chars().next())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lesson::{parse, Action, Lesson};

    fn lesson(narration: &str, ask: &str) -> Lesson {
        titled("Next", narration, ask)
    }

    fn titled(title: &str, narration: &str, ask: &str) -> Lesson {
        let text = format!(
            "title = \"T\"\nsummary = \"S\"\nminutes = 3\n[[step]]\ntitle = \"{title}\"\nnarration = \"\"\"\n{narration}\n\"\"\"\nactions = [ {{ prompt = \"A\" }}, {{ ask = {ask} }} ]\n"
        );
        parse("t", "t.toml", &text).unwrap()
    }

    fn answer(l: &Lesson, value: Answer, shown: &str) -> ModelAnswer {
        let Action::Ask(question) = l.steps[0].actions[1].clone() else {
            panic!("no ask")
        };
        ModelAnswer {
            question,
            value,
            shown: shown.into(),
            checks: Vec::new(),
            problem: None,
        }
    }

    #[test]
    fn a_token_named_before_the_answer_is_told_and_one_named_after_is_not() {
        let ask = "\"Which word comes next?\"";
        let l = lesson("The first time, the next word was \\\" has\\\".", ask);
        let a = answer(&l, Answer::Token(" has".into()), "\" has\" (60%)");
        let found = told(&l.steps[0], &a).expect("told");
        assert!(found.contains("\"has\""), "{found}");
        let l = lesson(
            "Will it repeat itself?\n---\nIt wrote \\\" has\\\" again.",
            ask,
        );
        assert_eq!(told(&l.steps[0], &a), None);
        // A word inside another is not the word; a single letter is never read; a short word
        // counts only quoted.
        let l = lesson("It hasn't a clue, a or b, and has none.", ask);
        assert_eq!(told(&l.steps[0], &a), None);
        let a = answer(&l, Answer::Token(" a".into()), "\" a\" (9%)");
        assert_eq!(told(&l.steps[0], &a), None);
        // A long word counts bare too, in any case.
        let a = answer(&l, Answer::Token(" Paris".into()), "\" Paris\" (77%)");
        let l = lesson("PARIS is the capital.", ask);
        assert!(told(&l.steps[0], &a).is_some());
    }

    #[test]
    fn a_figure_that_would_score_right_is_told() {
        let ask =
            "{ question = \"How many tokens?\", number = \"prompt_tokens\", tolerance = 5.0 }";
        let l = lesson("Of 49,152 tokens, the chat message holds about 1,030.", ask);
        let a = answer(&l, Answer::Number(1027.0), "1027 tokens");
        let found = told(&l.steps[0], &a).expect("told");
        assert!(found.contains("1,030"), "{found}");
        let a = answer(&l, Answer::Number(1040.0), "1040 tokens");
        assert_eq!(told(&l.steps[0], &a), None, "1,030 is 10 off");
        let ask = "{ question = \"How many times faster?\", number = \"prefill_speedup\", within_factor = 1.5 }";
        let l = lesson("Reading ran 3.1 times faster.", ask);
        let a = answer(&l, Answer::Number(4.0), "4.0×");
        assert!(told(&l.steps[0], &a).is_some());
        let a = answer(&l, Answer::Number(9.0), "9.0×");
        assert_eq!(told(&l.steps[0], &a), None);
    }

    #[test]
    fn the_title_is_read_and_the_question_is_not() {
        let ask =
            "{ question = \"Is it 1 token, or 2?\", number = \"tokens_fed\", tolerance = 0.0 }";
        let l = lesson("We step once.", ask);
        let a = answer(&l, Answer::Number(1.0), "1 token");
        assert_eq!(told(&l.steps[0], &a), None, "the question may name options");
        let l = titled("1 token, 1 pass", "We step once.", ask);
        assert!(told(&l.steps[0], &a).is_some());
        let a = answer(&l, Answer::Yes(true), "yes");
        assert_eq!(told(&l.steps[0], &a), None, "a yes/no names its options");
    }
}
