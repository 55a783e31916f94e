//! A refused request: its HTTP status and a sentence saying what is wrong and what to do.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
}

impl Refusal {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Refusal {
            status,
            message: message.into(),
        }
    }

    /// 400: the request itself is wrong.
    pub fn bad(message: impl Into<String>) -> Self {
        Refusal::new(400, message)
    }

    /// 403: an id the room does not know.
    pub fn unknown_student() -> Self {
        Refusal::new(
            403,
            "unknown student: join the class again (the teacher may have restarted it)",
        )
    }

    /// 429: too many requests.
    pub fn too_fast() -> Self {
        Refusal::new(429, "too many requests: wait a moment and try again")
    }
}
