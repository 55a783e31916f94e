//! The built-in lessons, compiled in from `assets/lessons/*.toml`.

use super::parse::{parse, LessonError};
use crate::protocol::lesson::format::Lesson;

/// Name and text of each built-in lesson, in teaching order.
pub const BUILTINS: [(&str, &str); 9] = [
    (
        "typewriter",
        include_str!("../../assets/lessons/typewriter.toml"),
    ),
    (
        "reading-vs-writing",
        include_str!("../../assets/lessons/reading-vs-writing.toml"),
    ),
    ("dice", include_str!("../../assets/lessons/dice.toml")),
    (
        "exposure-bias",
        include_str!("../../assets/lessons/exposure-bias.toml"),
    ),
    (
        "repetition",
        include_str!("../../assets/lessons/repetition.toml"),
    ),
    (
        "chat-template",
        include_str!("../../assets/lessons/chat-template.toml"),
    ),
    (
        "attention",
        include_str!("../../assets/lessons/attention.toml"),
    ),
    (
        "speed-of-light",
        include_str!("../../assets/lessons/speed-of-light.toml"),
    ),
    (
        "speculative-decoding",
        include_str!("../../assets/lessons/speculative-decoding.toml"),
    ),
];

/// The built-in lesson `name`, parsed; `None` if there is none by that name.
pub fn builtin(name: &str) -> Option<Result<Lesson, LessonError>> {
    BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| parse(n, &format!("assets/lessons/{n}.toml"), text))
}
