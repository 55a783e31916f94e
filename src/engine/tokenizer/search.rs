//! Vocabulary search for the `/` box: which ids match a query, best first.

use super::Vocab;

impl Vocab {
    /// Vocabulary search for the `/` box, case-insensitive: exact matches first, then prefixes, then
    /// substrings. Leading spaces in a token are ignored when matching, so "paris" finds " Paris".
    /// Within a tier: exact case first, then the leading spaces the place wants (after a word, one:
    /// "the" after "is" finds " the" first, as a guess reads it; else fewer), shorter, lower id.
    pub fn search(&self, query: &str, limit: usize, after_word: bool) -> Vec<u32> {
        if query.is_empty() || limit == 0 {
            return Vec::new();
        }
        let q = query.to_lowercase();
        let mut hits: Vec<(u8, bool, usize, usize, u32)> = Vec::new();
        for (id, key) in self.keys.iter().enumerate() {
            let trimmed = key.trim_start();
            let tier = if key == &q || trimmed == q {
                0
            } else if key.starts_with(&q) || trimmed.starts_with(&q) {
                1
            } else if key.contains(&q) {
                2
            } else {
                continue;
            };
            let text = &self.views[id].text;
            let case_differs = !text.trim_start().starts_with(query) && !text.starts_with(query);
            let lead = match key.len() - trimmed.len() {
                n if after_word => n.abs_diff(1),
                n => n,
            };
            hits.push((tier, case_differs, lead, key.len(), id as u32));
        }
        hits.sort_unstable();
        hits.into_iter().take(limit).map(|h| h.4).collect()
    }
}
