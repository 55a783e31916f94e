//! Whether the model loaded is one a lesson was written for (its `models`): a lesson's numbers and
//! quoted tokens are one model's, and the same lesson on another model would tell the class what is
//! not on its screen, so the lesson says it was written for another model on every step.

use crate::engine::catalog;
use crate::engine::session::Session;
use crate::protocol::lesson::format::Lesson;

/// The titles of the models `lesson` was written for ("SmolLM2-135M-Instruct Q4_1"), when the model
/// loaded in `session` is none of them; `None` when it is one, or the lesson names none. A model is
/// one of them when its file has that model's size and sha256 (hashed once per session, ~0.3 s for
/// 96 MB, and only when the size matches); a served model never is: its file cannot be read.
pub fn written_for(session: &Session, lesson: &Lesson) -> Option<String> {
    let models: Vec<_> = lesson
        .models
        .iter()
        .filter_map(|m| catalog::known(m))
        .collect();
    if models.is_empty() {
        return None;
    }
    let bytes = session.model_file_bytes();
    let is = |m: &catalog::KnownModel| {
        session.served().is_none()
            && m.bytes == bytes
            && session
                .model_sha256()
                .is_ok_and(|sha| sha.eq_ignore_ascii_case(m.sha256))
    };
    if models.iter().any(|m| is(m)) {
        return None;
    }
    let titles: Vec<&str> = models.iter().map(|m| m.title).collect();
    Some(titles.join(" or "))
}
