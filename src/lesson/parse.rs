//! Reading a lesson file: TOML into [`Lesson`], with errors that name the file, the line and column,
//! the field, and what was expected. Never panics.

use super::format::{Action, Lesson, LessonSettings, Step};
use serde::Deserialize;
use std::fmt;
use std::ops::Range;
use toml::Spanned;

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
    if raw.summary.contains('\n') || raw.summary.trim().is_empty() {
        let span = key_span(text, "summary").unwrap_or(0..0);
        return Err(at(span, "summary", "expected one non-empty line".into()));
    }
    if raw.minutes == 0 || raw.minutes > 60 {
        let span = key_span(text, "minutes").unwrap_or(0..0);
        let m = format!("{} minutes: expected 1 to 60", raw.minutes);
        return Err(at(span, "minutes", m));
    }
    if raw.steps.get_ref().is_empty() {
        let span = raw.steps.span();
        return Err(at(span, "step", "expected at least one [[step]]".into()));
    }
    let mut steps = Vec::new();
    let mut prompted = false;
    for s in raw.steps.into_inner() {
        let mut actions = Vec::new();
        let mut lines = Vec::new();
        for a in s.actions {
            let span = a.span();
            let action = a.into_inner();
            check_action(&action).map_err(|(field, m)| at(span.clone(), field, m))?;
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
        settings: raw.settings,
        steps,
    })
}

/// Whether an action needs the model to have read a prompt.
fn needs_prompt(a: &Action) -> bool {
    !matches!(
        a,
        Action::Sampler(_) | Action::Panel(_) | Action::Ask(_) | Action::KvCache(_)
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

/// A toml error as a [`LessonError`]: the span gives the line, column and (from the text there) the
/// field.
fn from_toml(file: &str, text: &str, e: &toml::de::Error) -> LessonError {
    let message = plain(e.message().trim());
    let span = e.span();
    let (line, col) = match &span {
        Some(s) => {
            let (l, c) = line_col(text, s.start);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    // A missing or unknown key is named in the message; otherwise the key is the one at the span
    // (an unknown action's key, or the key of a value of the wrong type or an unknown variant).
    let named = named_in_message(&message);
    let field = named
        .clone()
        .filter(|_| !message.starts_with("unknown value"))
        .or_else(|| span.as_ref().and_then(|s| key_at(text, s)))
        .or(named)
        .or_else(|| span.as_ref().and_then(|s| line_key(text, s.start)));
    LessonError {
        file: file.to_string(),
        line,
        col,
        field,
        step: span.and_then(|s| step_at(text, s.start)),
        message,
    }
}

/// serde's words in a lesson author's: "unknown variant" is an unknown action or value, `u32` is a
/// whole number.
fn plain(message: &str) -> String {
    let action = message.contains("`prompt`, `chat`");
    let mut m = message.replace(
        "unknown variant",
        if action {
            "unknown action"
        } else {
            "unknown value"
        },
    );
    for t in ["u32", "u64", "usize"] {
        m = m.replace(
            &format!("expected {t}"),
            "expected a whole number, 0 or more",
        );
    }
    for t in ["f32", "f64"] {
        m = m.replace(&format!("expected {t}"), "expected a number");
    }
    m
}

/// The field a serde message names: "missing field `narration`", "unknown field `x`", "unknown
/// variant `stepp`".
fn named_in_message(message: &str) -> Option<String> {
    for prefix in [
        "missing field `",
        "unknown field `",
        "unknown action `",
        "unknown value `",
    ] {
        if let Some(rest) = message.strip_prefix(prefix) {
            return rest.split('`').next().map(str::to_string);
        }
    }
    None
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The key of the `key = value` a span points into: the span itself when it is a bare key, else the
/// key just before the `=` that precedes it.
fn key_at(text: &str, span: &Range<usize>) -> Option<String> {
    let start = span.start.min(text.len());
    let end = span.end.min(text.len()).max(start);
    let here = text.get(start..end)?.trim();
    if !here.is_empty()
        && here.chars().all(is_key_char)
        && !here.chars().all(|c| c.is_ascii_digit())
    {
        let after = text[end..].trim_start();
        if after.starts_with('=') {
            return Some(here.to_string());
        }
    }
    // An inline table `{ step = -3 }`: the error is about its one key.
    if let Some(inner) = here.strip_prefix('{') {
        let inner = inner.trim_start();
        let key: String = inner.chars().take_while(|&c| is_key_char(c)).collect();
        if !key.is_empty() && inner[key.len()..].trim_start().starts_with('=') {
            return Some(key);
        }
    }
    let before = text.get(..start)?.trim_end();
    let before = before.strip_suffix('=')?.trim_end();
    let key: String = before
        .chars()
        .rev()
        .take_while(|&c| is_key_char(c) || c == '.')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!key.is_empty()).then_some(key)
}

/// The key a line starts with (`narration = "...`): for a syntax error part-way through a value.
fn line_key(text: &str, offset: usize) -> Option<String> {
    let start = text
        .get(..offset.min(text.len()))?
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?.trim_start();
    let key: String = line.chars().take_while(|&c| is_key_char(c)).collect();
    let rest = line[key.len()..].trim_start();
    (!key.is_empty() && rest.starts_with('=')).then_some(key)
}

/// The span of the first top-level `key =`.
fn key_span(text: &str, key: &str) -> Option<Range<usize>> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(key) {
            if rest.trim_start().starts_with('=') {
                let start = offset + (line.len() - t.len());
                return Some(start..start + key.len());
            }
        }
        offset += line.len();
    }
    None
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Which `[[step]]` (1-based) a byte offset falls in, if any: the headers that start at or before it.
fn step_at(text: &str, offset: usize) -> Option<usize> {
    let mut start = 0;
    let mut n = 0;
    for line in text.split_inclusive('\n') {
        if start > offset {
            break;
        }
        n += usize::from(line.trim_start().starts_with("[[step]]"));
        start += line.len();
    }
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lesson::format::{Count, Expect, Panel};

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
            matches!(&s.actions[2], Action::Panel(p) if p.panel == Panel::Attention && p.layer == Some(2))
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
