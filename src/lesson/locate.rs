//! Where in a lesson file a problem is: a byte offset as line and column, the step it falls in, the key
//! written there, and toml's error message said plainly.

use super::parse::LessonError;
use std::ops::Range;

/// A toml error as a [`LessonError`]: the span gives the line, column and (from the text there) the
/// field.
pub(super) fn from_toml(file: &str, text: &str, e: &toml::de::Error) -> LessonError {
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
pub(super) fn key_span(text: &str, key: &str) -> Option<Range<usize>> {
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
pub(super) fn step_at(text: &str, offset: usize) -> Option<usize> {
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
