//! The shape of the house, read from the source: imports only point down the layers, and no function
//! in `src/` runs over 80 lines. `scripts/long-functions` prints the second list.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each top-level module of `src/` and the modules it may use (`crate::NAME`), bottom of the house
/// first. docs/ARCHITECTURE.md ("Layers") draws the same table; `cmd`, `main.rs` and `lib.rs` sit on
/// top and may use everything.
const LAYERS: &[(&str, &[&str])] = &[
    ("analysis", &[]),
    ("protocol", &["analysis"]),
    ("fmt", &["protocol", "analysis"]),
    ("engine", &["protocol", "analysis"]),
    ("lesson", &["engine", "protocol", "analysis"]),
    ("worker", &["lesson", "engine", "protocol", "analysis"]),
    ("app", &["protocol", "analysis", "fmt"]),
    ("ui", &["app", "protocol", "analysis", "fmt"]),
    ("export", &["engine", "protocol", "analysis", "fmt"]),
    ("cli", &["engine", "protocol", "export"]),
    ("class", &["protocol"]),
];

/// Outside crates that only some layers may name: the terminal stays out of the engine's side, the
/// model's crates out of the front end's, the command line's parser in `cli/`.
const FORBIDDEN_CRATES: &[(&str, &[&str])] = &[
    (
        "ratatui",
        &[
            "analysis", "protocol", "fmt", "engine", "lesson", "worker", "export", "class",
        ],
    ),
    (
        "crossterm",
        &[
            "analysis", "protocol", "fmt", "engine", "lesson", "worker", "export", "ui", "class",
        ],
    ),
    // Every flag is declared in `cli/` (parsed in `main.rs`, dispatched in `cmd/`).
    (
        "clap",
        &[
            "analysis", "protocol", "fmt", "engine", "lesson", "worker", "export", "app", "ui",
            "class",
        ],
    ),
    // The web server's stack stays in the room (`class`): nothing else waits on a socket.
    (
        "axum",
        &[
            "analysis", "protocol", "fmt", "engine", "lesson", "worker", "export", "ui", "app",
            "cli",
        ],
    ),
    (
        "tokio",
        &[
            "analysis", "protocol", "fmt", "engine", "lesson", "worker", "export", "ui", "app",
            "cli",
        ],
    ),
    (
        "candle_core",
        &[
            "analysis", "protocol", "fmt", "app", "ui", "export", "cli", "class",
        ],
    ),
    (
        "candle_nn",
        &[
            "analysis", "protocol", "fmt", "app", "ui", "export", "cli", "class",
        ],
    ),
    (
        "tokenizers",
        &[
            "analysis", "protocol", "fmt", "app", "ui", "export", "cli", "class",
        ],
    ),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every source file with its top-level module ("app" for src/app/update.rs, "fmt" for src/fmt.rs).
fn files() -> Vec<(String, PathBuf)> {
    let mut all = vec![];
    rust_files(&src(), &mut all);
    all.sort();
    all.into_iter()
        .map(|p| {
            let rel = p.strip_prefix(src()).unwrap();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            (first.trim_end_matches(".rs").to_string(), p)
        })
        .collect()
}

/// The source with comments and the insides of string and char literals blanked out (newlines kept,
/// so line numbers hold): what is left is code.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1).copied() == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1).copied() == Some('*') {
            i = blank_block_comment(&c, i, &mut out);
        } else if c[i] == 'r'
            && (c.get(i + 1).copied() == Some('"') || c.get(i + 1).copied() == Some('#'))
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            i = blank_raw_string(&c, i, &mut out);
        } else if c[i] == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c[i] == '\'' && c.get(i + 1).copied() == Some('\\') {
            // An escaped char literal: '\n', '\'', '\u{..}'.
            out.push('\'');
            i += 2;
            while i < c.len() && c[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push_str(" '");
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2).copied() == Some('\'') {
            out.push_str("' '");
            i += 3;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// A character of a comment or literal as `code_only` leaves it: a newline stays, the rest is a space.
fn blank(ch: char) -> char {
    if ch == '\n' {
        '\n'
    } else {
        ' '
    }
}

/// Blanks the block comment (nested ones too) that starts at `c[i]`; returns the index after it.
fn blank_block_comment(c: &[char], mut i: usize, out: &mut String) -> usize {
    let mut depth = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1).copied() == Some('*') {
            depth += 1;
            out.push_str("  ");
            i += 2;
        } else if c[i] == '*' && c.get(i + 1).copied() == Some('/') {
            depth -= 1;
            out.push_str("  ");
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            out.push(blank(c[i]));
            i += 1;
        }
    }
    i
}

/// Blanks the inside of the raw string (`r"..."` or `r#"..."#`) that starts at `c[i]`, keeping its
/// quotes; an `r` that starts none is kept. Returns the index after it.
fn blank_raw_string(c: &[char], i: usize, out: &mut String) -> usize {
    let mut hashes = 0;
    let mut j = i + 1;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if c.get(j) != Some(&'"') {
        out.push(c[i]);
        return i + 1;
    }
    out.push('"');
    j += 1;
    while j < c.len() {
        if c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#')) {
            j += 1 + hashes;
            break;
        }
        out.push(blank(c[j]));
        j += 1;
    }
    out.push('"');
    j
}

/// `crate::NAME` uses in the code of a file: (line, NAME).
fn crate_uses(code: &str) -> Vec<(usize, String)> {
    let mut out = vec![];
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let before = rest[..i].chars().last();
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !name.is_empty() {
                out.push((n + 1, name));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn imports_only_point_down_the_layers() {
    let allowed: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let mut wrong = vec![];
    for (module, path) in files() {
        let code = code_only(&std::fs::read_to_string(&path).unwrap());
        let rel = path
            .strip_prefix(src().parent().unwrap())
            .unwrap()
            .display()
            .to_string();
        if let Some(may) = allowed.get(module.as_str()) {
            for (line, used) in crate_uses(&code) {
                if used != module && !may.contains(&used.as_str()) {
                    wrong.push(format!(
                        "{rel}:{line} uses crate::{used}, but {module} may use only [{}]: {used} \
                         is not below {module} in the house",
                        may.join(", ")
                    ));
                }
            }
        }
        for (krate, not_in) in FORBIDDEN_CRATES {
            if not_in.contains(&module.as_str()) {
                for (n, line) in code.lines().enumerate() {
                    let hit = line.match_indices(krate).any(|(i, _)| {
                        let before = line[..i].chars().last();
                        let after = line[i + krate.len()..].chars().next();
                        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    });
                    if hit {
                        wrong.push(format!(
                            "{rel}:{} names {krate}, which {module} must not",
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that run back up (the layers are in tests/it/house.rs and docs/ARCHITECTURE.md):\n{}",
        wrong.join("\n")
    );
}

/// Every top-level module of `src/` has its place in the table (a new one must be given a layer).
#[test]
fn every_module_has_a_layer() {
    let mut top: Vec<String> = files().into_iter().map(|(m, _)| m).collect();
    top.dedup();
    let known: Vec<&str> = LAYERS.iter().map(|(m, _)| *m).collect();
    for m in top {
        assert!(
            known.contains(&m.as_str()) || ["cmd", "main", "lib"].contains(&m.as_str()),
            "src/{m} has no layer: add it to LAYERS in tests/it/house.rs and to docs/ARCHITECTURE.md"
        );
    }
}

/// A function longer than this many lines must carry a comment saying why it stays whole.
pub const MAX_FN_LINES: usize = 80;

/// Functions in `src/`, `tests/` and `benches/` longer than [`MAX_FN_LINES`]: "path:line name (N
/// lines)", longest first. A function whose doc or attribute lines above say "kept whole" (and why)
/// is left off.
pub fn long_functions() -> Vec<(usize, String)> {
    let root = src().parent().unwrap().to_path_buf();
    let mut paths = vec![];
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut paths);
    }
    paths.sort();
    let mut out = vec![];
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let code = code_only(&text);
        let rel = path
            .strip_prefix(src().parent().unwrap())
            .unwrap()
            .display()
            .to_string();
        let lines: Vec<&str> = text.lines().collect();
        for (start, end, name) in functions(&code) {
            let n = end - start + 1;
            if n > MAX_FN_LINES && !kept_whole(&lines, start) {
                out.push((n, format!("{rel}:{} {name} ({n} lines)", start + 1)));
            }
        }
    }
    out.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    out
}

/// Whether the comment and attribute lines just above line `start` (0-based) say "kept whole".
fn kept_whole(lines: &[&str], start: usize) -> bool {
    lines[..start]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("//") || l.starts_with("#["))
        .any(|l| l.to_ascii_lowercase().contains("kept whole"))
}

/// Every `fn` with a body in `code` (comments and literals blanked): (first line, last line, name),
/// 0-based.
fn functions(code: &str) -> Vec<(usize, usize, String)> {
    let chars: Vec<char> = code.chars().collect();
    let mut line_of = Vec::with_capacity(chars.len());
    let mut line = 0;
    for &c in &chars {
        line_of.push(line);
        if c == '\n' {
            line += 1;
        }
    }
    let word_at = |i: usize| -> String {
        chars[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect()
    };
    let mut out = vec![];
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if !(starts_word && word_at(i) == "fn") {
            i += 1;
            continue;
        }
        let mut j = i + 2;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        let name = word_at(j);
        // The body's opening brace, unless a `;` ends a declaration first (trait items, extern fns).
        let mut k = j;
        let mut nesting = 0i32;
        while k < chars.len() {
            match chars[k] {
                '(' | '[' | '<' => nesting += 1,
                ')' | ']' => nesting -= 1,
                '>' if chars[k - 1] != '-' && chars[k - 1] != '=' => nesting -= 1,
                '{' if nesting <= 0 => break,
                ';' if nesting <= 0 => break,
                _ => {}
            }
            k += 1;
        }
        if name.is_empty() || k >= chars.len() || chars[k] == ';' {
            i = k.max(i + 2);
            continue;
        }
        let mut depth = 0;
        let mut end = k;
        while end < chars.len() {
            match chars[end] {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
        out.push((line_of[i], line_of[end.min(chars.len() - 1)], name));
        // Go on inside the body: a nested fn is a function of its own.
        i = k + 1;
    }
    out
}

#[test]
fn no_function_runs_over_80_lines() {
    let long = long_functions();
    for (_, f) in &long {
        println!("{f}");
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them, or say above one why it is kept whole):\n{}",
        long.iter().map(|(_, f)| f.as_str()).collect::<Vec<_>>().join("\n")
    );
}

/// The scanner itself: a function is measured from `fn` to its closing brace, braces in strings,
/// chars and comments do not count, and a declaration without a body is no function.
#[test]
fn the_function_scanner_counts_what_it_should() {
    let code = code_only(
        "trait T { fn d(&self); }\nfn a() {\n    let s = \"}}{\";\n    let c = '}';\n    // }\n    let r = r#\"{\"#;\n}\nfn b<'a>(x: &'a str) -> Vec<u8> where u8: Copy { vec![] }\n",
    );
    let f = functions(&code);
    assert_eq!(
        f,
        vec![(1, 6, "a".to_string()), (7, 7, "b".to_string())],
        "{code}"
    );
    assert!(kept_whole(&["// Kept whole: one loop.", "fn x() {"], 1));
    assert!(!kept_whole(&["// A loop.", "fn x() {"], 1));
}

/// The layer check catches an arrow that runs back up, and not one in a comment or a string.
#[test]
fn the_layer_scanner_sees_code_not_comments() {
    let code = code_only("use crate::ui::fmt; // crate::lesson\nlet s = \"crate::cmd\";\n");
    let uses: Vec<String> = crate_uses(&code).into_iter().map(|(_, m)| m).collect();
    assert_eq!(uses, vec!["ui".to_string()]);
}

/// Every file and folder docs/ARCHITECTURE.md names in backticks (`src/worker/mod.rs`, `cmd/tui.rs`,
/// `tests/it/worker.rs`, a bare `edit.rs` in a row about `src/engine/session/`) exists: the map of the
/// house moves with the house.
#[test]
fn the_architecture_names_only_files_that_exist() {
    let root = src().parent().unwrap().to_path_buf();
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let mut all = vec![];
    rust_files(&src(), &mut all);
    let mut missing = vec![];
    for line in doc.lines() {
        let ticked: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
        // Names in a row about `src/engine/session/` (or `src/engine/model.rs`) are relative to it.
        let base = ticked.iter().find(|t| t.starts_with("src/")).map(|t| {
            let p = root.join(t);
            if t.ends_with('/') {
                p
            } else {
                p.parent().unwrap().to_path_buf()
            }
        });
        for t in ticked {
            let t = t.trim_end_matches(',');
            let looks_like_path = (t.ends_with(".rs") || t.ends_with(".md") || t.ends_with('/'))
                && !t.contains(' ')
                && !t.contains("::");
            if !looks_like_path {
                continue;
            }
            let found = root.join(t).exists()
                || src().join(t).exists()
                || base.as_ref().is_some_and(|b| b.join(t).exists())
                || all.iter().any(|p| match t.strip_suffix('/') {
                    Some(dir) => p.to_string_lossy().contains(&format!("/{dir}/")),
                    None => p.ends_with(t),
                });
            if !found {
                missing.push(format!("{t} (in: {})", line.trim()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names what is not there:\n{}",
        missing.join("\n")
    );
}
