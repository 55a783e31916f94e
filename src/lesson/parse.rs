//! Reading a lesson file: TOML into [`Lesson`], with errors that name the file, the line and column,
//! the field, and what was expected. Never panics.

use crate::protocol::lesson::format::{Action, Lesson, LessonSettings, Step};
use serde::Deserialize;
use std::fmt;
use std::ops::Range;
use toml::Spanned;

use super::locate::{from_toml, key_span, line_col, step_at};
use crate::engine::catalog;

/// A lesson file that cannot be used, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LessonError {
    /// The file as the user named it (or `assets/lessons/NAME.toml` for a built-in).
    pub file: String,
    /// 1-based line and column, when known.
    pub line: Option<usize>,
    pub col: Option<usize>,
    /// The field (key) at fault, when known.
    pub field: Option<String>,
    /// The step (1-based) the problem is in, when it is in one.
    pub step: Option<usize>,
    /// What went wrong and what was expected.
    pub message: String,
}

impl fmt::Display for LessonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.col {
                write!(f, ":{col}")?;
            }
        }
        write!(f, ":")?;
        if let Some(step) = self.step {
            write!(f, " step {step}:")?;
        }
        if let Some(field) = &self.field {
            write!(f, " field `{field}`:")?;
        }
        write!(f, " {}", self.message)
    }
}

impl std::error::Error for LessonError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLesson {
    title: String,
    summary: String,
    minutes: u32,
    #[serde(default)]
    models: Vec<String>,
    #[serde(default)]
    settings: LessonSettings,
    #[serde(rename = "step")]
    steps: Spanned<Vec<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    #[serde(default)]
    title: Option<String>,
    narration: String,
    #[serde(default)]
    actions: Vec<Spanned<Action>>,
}

/// Parses lesson text. `name` is the lesson's name; `file` is how messages name the file.
pub fn parse(name: &str, file: &str, text: &str) -> Result<Lesson, LessonError> {
    let raw: RawLesson = toml::from_str(text).map_err(|e| from_toml(file, text, &e))?;
    let at = |span: Range<usize>, field: &str, message: String| {
        let (line, col) = line_col(text, span.start);
        LessonError {
            file: file.to_string(),
            line: Some(line),
            col: Some(col),
            field: Some(field.to_string()),
            step: step_at(text, span.start),
            message,
        }
    };
    check_header(&raw, text, &at)?;
    if raw.steps.get_ref().is_empty() {
        let span = raw.steps.span();
        return Err(at(span, "step", "expected at least one [[step]]".into()));
    }
    let mut steps = Vec::new();
    let mut prompted = false;
    for s in raw.steps.into_inner() {
        let mut actions = Vec::new();
        let mut lines = Vec::new();
        let mut keys_taken = false;
        for a in s.actions {
            let span = a.span();
            let action = a.into_inner();
            check_action(&action).map_err(|(field, m)| at(span.clone(), field, m))?;
            // The sampler and branch panels take the keyboard: a question after them in the same
            // step could not be answered with `/` (the dice lesson's `/ c a t` set a temperature).
            keys_taken |= matches!(&action, Action::Panel(p) if p.panel.takes_keys());
            if keys_taken && matches!(action, Action::Ask(_)) {
                let m = "this question comes after a panel that takes the keyboard (sampler or \
                         branches): the class could not answer it; open the panel after the `ask`";
                return Err(at(span, "ask", m.into()));
            }
            prompted |= matches!(action, Action::Prompt(_) | Action::Chat(_));
            if !prompted && needs_prompt(&action) {
                let m =
                    "this needs a prompt first: start with `prompt = \"...\"` or `chat = \"...\"`";
                return Err(at(span, key_of(&action), m.into()));
            }
            lines.push(line_col(text, span.start).0);
            actions.push(action);
        }
        steps.push(Step {
            title: s.title,
            narration: s.narration.trim().to_string(),
            actions,
            action_lines: lines,
        });
    }
    Ok(Lesson {
        name: name.to_string(),
        title: raw.title,
        summary: raw.summary,
        minutes: raw.minutes,
        models: raw.models,
        settings: raw.settings,
        steps,
    })
}

/// The lesson's own fields: a one-line summary, 1 to 60 minutes, models `fetch` knows, a positive
/// `pause_above`. `at` makes the error for a span of `text`.
fn check_header(
    raw: &RawLesson,
    text: &str,
    at: &dyn Fn(Range<usize>, &str, String) -> LessonError,
) -> Result<(), LessonError> {
    if raw.summary.contains('\n') || raw.summary.trim().is_empty() {
        let span = key_span(text, "summary").unwrap_or(0..0);
        return Err(at(span, "summary", "expected one non-empty line".into()));
    }
    if raw.minutes == 0 || raw.minutes > 60 {
        let span = key_span(text, "minutes").unwrap_or(0..0);
        let m = format!("{} minutes: expected 1 to 60", raw.minutes);
        return Err(at(span, "minutes", m));
    }
    if let Some(name) = raw.models.iter().find(|m| catalog::known(m).is_none()) {
        let span = key_span(text, "models").unwrap_or(0..0);
        let names: Vec<&str> = catalog::KNOWN.iter().map(|m| m.name).collect();
        let m = format!(
            "\"{name}\" is not a model `fetch` knows: expected some of {}",
            names.join(", ")
        );
        return Err(at(span, "models", m));
    }
    if let Some(level) = raw.settings.pause_above {
        if !(level > 0.0 && level.is_finite()) {
            let span = key_span(text, "pause_above").unwrap_or(0..0);
            let m = format!("{level}: expected an entropy in nats above 0, e.g. 2.0");
            return Err(at(span, "pause_above", m));
        }
    }
    Ok(())
}

/// Whether an action needs the model to have read a prompt.
fn needs_prompt(a: &Action) -> bool {
    !matches!(
        a,
        Action::Sampler(_)
            | Action::Panel(_)
            | Action::Ask(_)
            | Action::KvCache(_)
            | Action::Draft(_)
    )
}

/// The key an action is written with.
fn key_of(a: &Action) -> &'static str {
    match a {
        Action::Prompt(_) => "prompt",
        Action::Chat(_) => "chat",
        Action::Sampler(_) => "sampler",
        Action::Step(_) => "step",
        Action::Autoplay(_) => "autoplay",
        Action::Force(_) => "force",
        Action::ForceId(_) => "force_id",
        Action::ForceText(_) => "force_text",
        Action::Rewind(_) => "rewind",
        Action::Branch(_) => "branch",
        Action::Panel(_) => "panel",
        Action::KvCache(_) => "kv_cache",
        Action::Draft(_) => "draft",
        Action::Rounds(_) => "rounds",
        Action::Ask(_) => "ask",
        Action::Expect(_) => "expect",
    }
}

/// What serde cannot see: combinations of fields, and sampler values out of range.
fn check_action(a: &Action) -> Result<(), (&'static str, String)> {
    match a {
        Action::Sampler(p) => p
            .settings()
            .validate()
            .map_err(|e| ("sampler", field_names(&e))),
        Action::Expect(e) => e.problem().map_or(Ok(()), |m| Err(("expect", m))),
        Action::Ask(q) => q.problem().map_or(Ok(()), |m| Err(("ask", m))),
        Action::Draft(d) => match (crate::engine::draft::DraftSpec::parse(&d.name), d.k) {
            (Err(m), _) => Err(("draft", m)),
            (_, Some(k)) if !(1..=crate::engine::draft::MAX_DRAFT_K).contains(&k) => {
                Err(("k", format!("{k}: a round drafts 1 to 16 tokens")))
            }
            _ => Ok(()),
        },
        Action::Force(t) | Action::ForceText(t) | Action::Prompt(t) | Action::Chat(t)
            if t.is_empty() =>
        {
            Err(("text", "expected non-empty text".into()))
        }
        _ => Ok(()),
    }
}

/// `validate`'s message names a setting as a flag does (`top-p 2 is ...`); a lesson file spells it
/// `top_p`.
fn field_names(message: &str) -> String {
    match message.split_once(' ') {
        Some((name, rest)) => format!("{} {rest}", name.replace('-', "_")),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::lesson::format::{Count, Expect, Panel};

    const HEAD: &str = "title = \"T\"\nsummary = \"S\"\nminutes = 3\n";

    fn err(body: &str) -> LessonError {
        parse("t", "t.toml", &format!("{HEAD}{body}")).unwrap_err()
    }

    #[test]
    fn parses_actions() {
        let l = parse(
            "t",
            "t.toml",
            &format!(
                "{HEAD}[[step]]\nnarration = \"hi\"\nactions = [\n  {{ prompt = \"A\" }},\n  {{ step = 3 }},\n  {{ panel = {{ name = \"attention\", layer = 2, head = 1 }} }},\n  {{ expect = {{ top1 = \" Paris\" }} }},\n]\n"
            ),
        )
        .unwrap();
        let s = &l.steps[0];
        assert_eq!(s.actions[0], Action::Prompt("A".into()));
        assert_eq!(s.actions[1], Action::Step(Count(3)));
        assert!(
            matches!(&s.actions[2], Action::Panel(p) if p.panel == Panel::Attention && p.layer == Some(1) && p.head == Some(0))
        );
        assert_eq!(
            s.actions[3],
            Action::Expect(Box::new(Expect {
                top1: Some(" Paris".into()),
                ..Default::default()
            }))
        );
        assert_eq!(s.action_lines, vec![7, 8, 9, 10]);
    }

    #[test]
    fn array_of_tables_form() {
        let l = parse(
            "t",
            "t.toml",
            &format!("{HEAD}[[step]]\nnarration = \"hi\"\n[[step.actions]]\nprompt = \"A\"\n[[step.actions]]\nrewind = 2\n[[step.actions]]\nbranch = \"previous\"\n"),
        )
        .unwrap();
        assert_eq!(l.steps[0].actions.len(), 3);
    }

    #[test]
    fn negative_count_names_line_and_field() {
        let e = err("[[step]]\nnarration = \"x\"\nactions = [ { step = -2 } ]\n");
        assert_eq!(e.line, Some(6));
        assert_eq!(e.field.as_deref(), Some("step"));
        assert!(e.message.contains("1 to"), "{e}");
    }

    #[test]
    fn unknown_panel_and_action() {
        let e = err("[[step]]\nnarration = \"x\"\nactions = [ { panel = \"atention\" } ]\n");
        assert_eq!(e.line, Some(6));
        assert!(e.to_string().contains("attention"), "{e}");
        let e = err("[[step]]\nnarration = \"x\"\nactions = [ { stepp = 1 } ]\n");
        assert_eq!(e.field.as_deref(), Some("stepp"));
    }

    #[test]
    fn sampler_out_of_range() {
        let e =
            err("[[step]]\nnarration = \"x\"\nactions = [ { sampler = { temperature = 9.0 } } ]\n");
        assert_eq!(e.line, Some(6));
        assert_eq!(e.field.as_deref(), Some("sampler"));
        assert!(e.message.contains("temperature"), "{e}");
    }

    #[test]
    fn a_step_before_any_prompt_is_refused() {
        let e = err(
            "[[step]]\nnarration = \"x\"\nactions = [ { sampler = { seed = 1 } }, { step = 2 } ]\n",
        );
        assert_eq!(e.line, Some(6));
        assert_eq!(e.field.as_deref(), Some("step"));
        assert!(e.message.contains("prompt"), "{e}");
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("", 0), (1, 1));
    }
}
