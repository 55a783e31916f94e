//! `GET /api/result`'s JSON (docs/CLASS.md): a student's guess scored, the model's likeliest, the
//! class's guesses and the student's running score.

use crate::protocol::class::{ClassResults, StudentId};
use crate::protocol::GuessToken;
use serde_json::{json, Value};

/// How many of the model's likeliest the result lists.
const MODEL_TOP: usize = 10;

fn bits(logprob: f32) -> f64 {
    -f64::from(logprob) / std::f64::consts::LN_2
}

fn token(g: &GuessToken) -> Value {
    json!({"id": g.token.id, "text": g.token.text, "prob": g.prob})
}

pub fn result(r: &ClassResults, id: StudentId, round: u64) -> Value {
    let poll = &r.poll;
    let mine = r.students.get(&id);
    let guess = mine.and_then(|m| m.guess.as_ref());
    let score = mine.map(|m| m.score).unwrap_or_default();
    let n = poll.guesses();
    json!({
        "round": round,
        "position": poll.position,
        "step": r.step,
        "guess": guess.map(|g| json!({
            "id": g.token.id,
            "text": g.token.text,
            "prob": g.prob,
            "rank": g.rank + 1,
            "surprise_bits": bits(g.logprob),
            "top1": g.rank == 0,
        })),
        "rank": guess.map(|g| g.rank + 1),
        "prob": guess.map(|g| g.prob),
        "model_top": poll.model_top.iter().take(MODEL_TOP).map(token).collect::<Vec<_>>(),
        "class": poll.rows.iter().map(|row| json!({
            "id": row.guess.token.id,
            "text": row.guess.token.text,
            "count": row.count,
            "share": f64::from(row.count) / f64::from(n.max(1)),
            "prob": row.guess.prob,
        })).collect::<Vec<_>>(),
        "class_size": n,
        "score": {
            "guesses": score.guesses,
            "top1": score.top1,
            "top5": score.top5,
            "mean_rank": score.mean_rank(),
            "surprise_bits": score.surprise_bits,
            "place": score.place,
            "of": score.of,
        },
    })
}
