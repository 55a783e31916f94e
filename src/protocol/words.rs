//! Counts in words, for every layer that writes one on screen: "1 token", "3 tokens".

/// `n` and `noun`, plural unless `n` is 1: `count(1, "token")` is "1 token", `count(0, "step")`
/// "0 steps".
pub fn count(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1, "token"), "1 token");
        assert_eq!(super::count(0, "step"), "0 steps");
        assert_eq!(super::count(5, "round"), "5 rounds");
    }
}
