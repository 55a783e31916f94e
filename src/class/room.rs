//! The room: who has joined, the open question and its guesses, and what the app last published.
//! Plain synchronous state behind one mutex: the HTTP handlers and the app's publish each hold it for
//! a few microseconds and never across a wait. Every rule of the room lives here (`http.rs` only
//! translates), and time comes in as an argument.

use super::limits::{Bucket, Lockouts};
use super::refusal::Refusal;
use super::vocab::VocabIndex;
use crate::protocol::class::{Ask, ClassMsg, ClassResults, Stage, StudentId};
use crate::protocol::TokenView;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

/// Longest nickname, in characters.
pub const MAX_NAME: usize = 24;

/// What the room tells the app: a join, a count, the closed guesses.
pub type Notify = Box<dyn Fn(ClassMsg) + Send + Sync>;

/// A student as the room knows them: their rate (their name is the app's, sent on joining).
struct Student {
    bucket: Bucket,
}

/// The question the room is taking guesses for (or took them for, once closed).
#[derive(Default)]
struct Poll {
    /// Counts the questions asked: a new one each time the app opens one, even at a position asked
    /// before (after a rewind).
    round: u64,
    position: usize,
    open: bool,
    guesses: HashMap<StudentId, TokenView>,
}

pub struct Room {
    code: String,
    max: usize,
    students: HashMap<StudentId, Student>,
    poll: Poll,
    stage: Option<Stage>,
    vocab: VocabIndex,
    lockouts: Lockouts,
    notify: Notify,
    model: String,
    /// A source of ids: random keys, a counter through them.
    ids: std::collections::hash_map::RandomState,
    minted: u64,
}

impl Room {
    pub fn new(code: String, max: usize, notify: Notify) -> Self {
        Room {
            code,
            max,
            students: HashMap::new(),
            poll: Poll::default(),
            stage: None,
            vocab: VocabIndex::default(),
            lockouts: Lockouts::default(),
            notify,
            model: String::new(),
            ids: std::collections::hash_map::RandomState::new(),
            minted: 0,
        }
    }

    /// The model's vocabulary (its text tokens), once it has loaded.
    pub fn set_vocabulary(&mut self, table: Vec<TokenView>) {
        self.vocab = VocabIndex::new(table);
    }

    /// The model's name, for the page's header.
    pub fn set_model(&mut self, model: &str) {
        self.model = model.to_string();
    }

    pub fn students(&self) -> usize {
        self.students.len()
    }

    /// `POST /api/join`.
    pub fn join(
        &mut self,
        code: &str,
        name: &str,
        ip: IpAddr,
        now: Instant,
    ) -> Result<(StudentId, String), Refusal> {
        if !self.lockouts.allowed(ip, now) {
            return Err(Refusal::new(
                429,
                "too many wrong join codes from this address: wait a minute, then type the code on the projector",
            ));
        }
        if code.trim() != self.code {
            self.lockouts.wrong_code(ip, now);
            return Err(Refusal::new(
                403,
                "wrong join code: type the six digits shown on the projector",
            ));
        }
        let name = check_name(name)?;
        if self.students.len() >= self.max {
            return Err(Refusal::new(
                503,
                format!("the class is full ({} students): ask the teacher", self.max),
            ));
        }
        let id = self.mint();
        self.students.insert(
            id,
            Student {
                bucket: Bucket::new(now),
            },
        );
        (self.notify)(ClassMsg::Joined {
            student: id,
            name: name.clone(),
        });
        Ok((id, name))
    }

    /// A fresh random id no student has.
    fn mint(&mut self) -> StudentId {
        use std::hash::BuildHasher;
        loop {
            self.minted += 1;
            let id = StudentId(self.ids.hash_one(self.minted));
            if !self.students.contains_key(&id) {
                return id;
            }
        }
    }

    /// A known student's request, within their rate.
    fn admit(&mut self, student: &str, now: Instant) -> Result<StudentId, Refusal> {
        let id: StudentId = student.parse().map_err(|_| Refusal::unknown_student())?;
        let s = self
            .students
            .get_mut(&id)
            .ok_or_else(Refusal::unknown_student)?;
        match s.bucket.take(now) {
            true => Ok(id),
            false => Err(Refusal::too_fast()),
        }
    }

    /// `POST /api/guess`: the student's guess for the open question, replacing their last.
    pub fn guess(
        &mut self,
        student: &str,
        text: &str,
        now: Instant,
    ) -> Result<(usize, TokenView), Refusal> {
        let id = self.admit(student, now)?;
        if !self.poll.open {
            return Err(Refusal::new(
                409,
                "guessing is closed: wait for the next question",
            ));
        }
        let before = self.stage.as_ref().map_or("", |s| s.text.as_str());
        let token = self.vocab.lookup(text, before)?;
        self.poll.guesses.insert(id, token.clone());
        (self.notify)(ClassMsg::Guessed {
            position: self.poll.position,
            count: self.poll.guesses.len(),
        });
        Ok((self.poll.position, token))
    }

    /// `GET /api/suggest`.
    pub fn suggest(
        &mut self,
        student: &str,
        query: &str,
        now: Instant,
    ) -> Result<Vec<TokenView>, Refusal> {
        self.admit(student, now)?;
        if query.len() > super::vocab::MAX_QUERY {
            return Err(Refusal::bad(format!(
                "a search is at most {} bytes",
                super::vocab::MAX_QUERY
            )));
        }
        Ok(self.vocab.suggest(query))
    }

    /// The app's newest stage: opens a question, or closes the open one when the app has revealed
    /// it (and tells the app every guess), or drops one the app moved away from.
    pub fn publish(&mut self, stage: Stage) {
        let p = stage.position;
        match stage.ask {
            Ask::Open if !self.poll.open || self.poll.position != p => {
                self.poll = Poll {
                    round: self.poll.round + 1,
                    position: p,
                    open: true,
                    guesses: HashMap::new(),
                };
            }
            Ask::Shown if self.poll.open && self.poll.position == p => {
                self.poll.open = false;
                let guesses = self
                    .poll
                    .guesses
                    .iter()
                    .map(|(id, t)| (*id, t.clone()))
                    .collect();
                (self.notify)(ClassMsg::Closed {
                    position: p,
                    guesses,
                });
            }
            Ask::Waiting | Ask::Shown | Ask::Aloud if self.poll.open => {
                // The app moved on without a reveal (a rewind, a new prompt): the question is gone.
                self.poll.open = false;
                self.poll.guesses.clear();
            }
            _ => {}
        }
        self.stage = Some(stage);
    }

    /// The results on screen, if they are this poll's.
    fn results(&self) -> Option<&Arc<ClassResults>> {
        let stage = self.stage.as_ref()?;
        let r = stage.results.as_ref()?;
        let ours = !self.poll.open && r.poll.position == self.poll.position;
        (ours && stage.position == self.poll.position && stage.ask == Ask::Shown).then_some(r)
    }

    /// "waiting", "guessing", "scoring" or "revealed" (docs/CLASS.md).
    pub fn phase(&self) -> &'static str {
        let Some(stage) = &self.stage else {
            return "waiting";
        };
        let here = self.poll.position == stage.position && self.poll.round > 0;
        match stage.ask {
            Ask::Open if self.poll.open && here => "guessing",
            Ask::Shown if here && self.results().is_some() => "revealed",
            Ask::Shown if here => "scoring",
            Ask::Aloud => "aloud",
            _ => "waiting",
        }
    }

    /// `GET /api/state` (and each live event).
    pub fn state(&self) -> Value {
        let s = self.stage.as_ref();
        json!({
            "round": self.poll.round,
            "step": s.map_or(0, |s| s.step),
            "position": s.map_or(0, |s| s.position),
            "phase": self.phase(),
            "question": s.map_or("", |s| s.question.as_str()),
            "text": s.map_or("", |s| s.text.as_str()),
            "guesses": self.poll.guesses.len(),
            "students": self.students.len(),
            "model": self.model,
        })
    }

    /// `GET /api/result`: the student's result at the reveal.
    pub fn result(&mut self, student: &str, now: Instant) -> Result<Value, Refusal> {
        let id = self.admit(student, now)?;
        let Some(r) = self.results() else {
            return Err(Refusal::new(
                409,
                "not revealed yet: the result comes when the teacher reveals the answer",
            ));
        };
        Ok(super::result_json::result(r, id, self.poll.round))
    }
}

/// A nickname as the room keeps it: trimmed, 1 to `MAX_NAME` characters, without control characters,
/// direction overrides or invisible characters (each would let a name disguise itself or others on
/// the page and in the terminal).
pub fn check_name(name: &str) -> Result<String, Refusal> {
    let name = name.trim();
    let n = name.chars().count();
    if n == 0 || n > MAX_NAME {
        return Err(Refusal::bad(format!(
            "a nickname is 1 to {MAX_NAME} characters"
        )));
    }
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}')
    };
    if name.chars().any(hidden) {
        return Err(Refusal::bad(
            "a nickname cannot hold control, invisible or direction-changing characters",
        ));
    }
    Ok(name.to_string())
}
