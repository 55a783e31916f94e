//! A class's running score over its guesses.

/// The running score of a class's guesses. A guess may be several tokens: it is "top-1" when it is
/// exactly the model's greedy continuation of the same length (for one token: the model's top-1), and
/// "top-5" when its first token is among the model's five likeliest; the mean rank is the first
/// token's. The class's log-prob is each guess's as a sequence; the model's, its own greedy
/// continuation's of the same length: the most a guess could have scored there.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Score {
    pub guesses: u32,
    /// Guesses that were the model's greedy continuation, and whose first token was in its top 5.
    pub hits1: u32,
    pub hits5: u32,
    /// Sum of the guesses' first tokens' 1-based ranks in the whole vocabulary.
    pub rank_sum: u64,
    /// Sum of the log-probs (nats) of the guesses, and of the model's greedy continuations.
    pub class_logprob: f64,
    pub model_logprob: f64,
}

impl Score {
    /// Adds one guess: its first token's 0-based rank, its log-prob, the model's greedy continuation's
    /// log-prob, and whether the guess was that continuation.
    pub fn record(&mut self, first_rank: usize, logprob: f64, model_logprob: f64, greedy: bool) {
        self.guesses += 1;
        self.hits1 += u32::from(greedy);
        self.hits5 += u32::from(first_rank < 5);
        self.rank_sum += first_rank as u64 + 1;
        self.class_logprob += logprob;
        self.model_logprob += model_logprob;
    }

    /// The mean 1-based rank, once there is a guess.
    pub fn mean_rank(&self) -> Option<f64> {
        (self.guesses > 0).then(|| self.rank_sum as f64 / f64::from(self.guesses))
    }

    /// For the status bar: "guesses 2/5 top-1 · 4/5 top-5 · rank 3.2", or "predict: no guesses yet".
    pub fn short(&self) -> String {
        match self.mean_rank() {
            None => "predict: no guesses yet".into(),
            Some(mean) => format!(
                "guesses {}/{n} top-1 · {}/{n} top-5 · rank {mean:.1}",
                self.hits1,
                self.hits5,
                n = self.guesses
            ),
        }
    }

    /// The summary's parts, most important first: "2/5 top-1", "4/5 top-5", "mean rank 3.2",
    /// "class −12.3 vs model −4.1 nats". Empty before any guess.
    pub fn parts(&self) -> Vec<String> {
        let Some(mean) = self.mean_rank() else {
            return vec![];
        };
        let n = self.guesses;
        vec![
            format!("{}/{n} top-1", self.hits1),
            format!("{}/{n} top-5", self.hits5),
            format!("mean rank {mean:.1}"),
            format!(
                "class {:.1} vs model {:.1} nats",
                self.class_logprob, self.model_logprob
            ),
        ]
    }

    /// "2/5 top-1 · 4/5 top-5 · mean rank 3.2 · class −12.3 vs model −4.1 nats".
    pub fn summary(&self) -> String {
        match self.guesses {
            0 => "no guesses yet".into(),
            _ => self.parts().join(" · "),
        }
    }
}
