//! What each type of sampler setting means to the table's consumers: how it is written as a
//! command-line flag and read back, and how it is shown. One impl per type, so a new setting of a known
//! type needs nothing here.

/// How a setting is given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A flag without a value (`--greedy`).
    Switch,
    /// A whole number.
    Whole,
    /// A decimal number.
    Decimal,
    /// Texts: the flag repeats, one text each; `none` clears the list.
    Texts,
}

/// A type a sampler setting can have.
pub trait SettingValue: Clone + PartialEq + Sized {
    const KIND: Kind;

    /// The flag's values that give this value: `[None]` for a switch that is on, one text for a
    /// number, one text per item for texts (escaped as [`SettingValue::from_flag`] reads them).
    fn flag_values(&self) -> Vec<Option<String>>;

    /// The value the flag's values give (a switch given at all is on). The error says what is wrong
    /// with the value, not which flag it was given to.
    fn from_flag(values: &[String]) -> Result<Self, String>;

    /// The value as a panel or a summary shows it.
    fn show(&self) -> String;
}

impl SettingValue for bool {
    const KIND: Kind = Kind::Switch;
    fn flag_values(&self) -> Vec<Option<String>> {
        if *self {
            vec![None]
        } else {
            vec![]
        }
    }
    fn from_flag(_: &[String]) -> Result<Self, String> {
        Ok(true)
    }
    fn show(&self) -> String {
        if *self { "on" } else { "off" }.into()
    }
}

/// Numbers: written with Rust's shortest round-trip form, read with `FromStr`.
macro_rules! number {
    ($($t:ty => $kind:ident, $shown:expr;)*) => {$(
        impl SettingValue for $t {
            const KIND: Kind = Kind::$kind;
            fn flag_values(&self) -> Vec<Option<String>> {
                vec![Some(self.to_string())]
            }
            fn from_flag(values: &[String]) -> Result<Self, String> {
                let text = values.last().map(String::as_str).unwrap_or("");
                text.trim().parse().map_err(|_| {
                    let what = if Kind::$kind == Kind::Whole { "a whole number" } else { "a number" };
                    format!("{text:?} is not {what}")
                })
            }
            fn show(&self) -> String {
                let shown: fn(&$t) -> String = $shown;
                shown(self)
            }
        }
    )*};
}

number! {
    f32 => Decimal, |v| format!("{v:.2}");
    usize => Whole, |v| v.to_string();
    i32 => Whole, |v| v.to_string();
    u64 => Whole, |v| v.to_string();
}

impl SettingValue for Vec<String> {
    const KIND: Kind = Kind::Texts;
    fn flag_values(&self) -> Vec<Option<String>> {
        if self.is_empty() {
            return vec![Some("none".into())];
        }
        self.iter().map(|t| Some(escape(t))).collect()
    }
    /// As llama.cpp reads `--dry-sequence-breaker`: any use replaces the defaults, and `none` clears
    /// the list. Escapes are read so that a newline can be typed.
    fn from_flag(values: &[String]) -> Result<Self, String> {
        let mut out = vec![];
        for v in values {
            if v == "none" {
                out.clear();
            } else {
                out.push(unescape(v));
            }
        }
        Ok(out)
    }
    /// Space-separated, a newline as ↵ and a tab as ⇥; "none" for no texts.
    fn show(&self) -> String {
        if self.is_empty() {
            return "none".into();
        }
        let shown: Vec<String> = self
            .iter()
            .map(|t| t.replace('\n', "↵").replace('\t', "⇥"))
            .collect();
        shown.join(" ")
    }
}

/// A text as the command line reads it back: `\n`, `\t`, `\r`, `\\` and `\"` escaped.
fn escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// `\n`, `\t`, `\r`, `\\` and `\"` as the characters they stand for; any other backslash is kept.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}
