//! The three parsers of files a user hands us (GGUF models, lesson TOML, session JSON), fed arbitrary
//! bytes and mutated valid files: never a panic (nor an allocation the size of a bogus length), and an
//! error always names the file and says what is wrong.
//!
//! The mutations: bytes flipped, the file cut at any point, bytes spliced in or copied about, lines
//! dropped or repeated, and the numbers in it (a GGUF header's counts, lengths, types and offsets; the
//! numbers written in a TOML or JSON file) replaced by extreme values. Cases that once failed are kept
//! in `parsers_prop.proptest-regressions` and as plain tests at the end.

use crate::support;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use nexttoken::engine::gguf::GgufFile;
use nexttoken::engine::session_file;
use nexttoken::lesson;
use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

const CASES: u32 = 256;

// ---------------------------------------------------------------------------------------------------
// Edits: what a mutation does to a valid file.

/// One change to a file's bytes. Positions are taken modulo the length, so any `usize` is an edit.
#[derive(Debug, Clone)]
enum Edit {
    /// XOR one byte with a non-zero mask.
    Flip(usize, u8),
    /// Cut the file at this point.
    Truncate(usize),
    /// Replace `len` bytes at a point with these.
    Splice(usize, usize, Vec<u8>),
    /// Copy `len` bytes from one point to another (inserted).
    Copy(usize, usize, usize),
    /// Replace the n-th number field (see `Fields`) with the k-th extreme value.
    Extreme(usize, usize),
    /// Drop, or repeat, the n-th line.
    DropLine(usize),
    DupLine(usize),
    /// Insert the k-th fragment (see `FRAGMENTS`) at the start of the n-th line.
    Fragment(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        1 => (any::<usize>(), 1..=255u8).prop_map(|(i, m)| Edit::Flip(i, m)),
        1 => any::<usize>().prop_map(Edit::Truncate),
        1 => (any::<usize>(), 0..48usize, prop::collection::vec(any::<u8>(), 0..24))
            .prop_map(|(i, n, b)| Edit::Splice(i, n, b)),
        1 => (any::<usize>(), any::<usize>(), 1..200usize).prop_map(|(a, b, n)| Edit::Copy(a, b, n)),
        3 => (any::<usize>(), any::<usize>()).prop_map(|(i, k)| Edit::Extreme(i, k)),
        1 => any::<usize>().prop_map(Edit::DropLine),
        1 => any::<usize>().prop_map(Edit::DupLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(i, k)| Edit::Fragment(i, k)),
    ]
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(edit(), 1..5)
}

/// Where a file's numbers are: (offset, length), and how to write an extreme value over one.
enum Fields {
    /// Little-endian integers of 1, 2, 4 or 8 bytes (a GGUF header).
    Binary(Vec<(usize, usize)>),
    /// Numbers written as text (TOML, JSON).
    Text(Vec<(usize, usize)>),
}

/// Values that break careless arithmetic and allocation: huge, just past a limit, zero, one.
const EXTREME_INTS: [u64; 16] = [
    u64::MAX,
    u64::MAX - 7,
    i64::MAX as u64,
    1 << 62,
    1 << 40,
    1 << 32,
    u32::MAX as u64,
    (1 << 30) + 1,
    1 << 30,
    i32::MAX as u64,
    65_536,
    4_097,
    5,
    3,
    1,
    0,
];

const EXTREME_TEXT: [&str; 14] = [
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "4294967295",
    "-1",
    "0",
    "1e400",
    "-0.0",
    "1.5",
    "nan",
    "inf",
    "99999999999999999999999999999999",
];

/// Text a lesson or session author might get wrong, spliced in at the start of a line.
const FRAGMENTS: [&str; 16] = [
    "[[step]]\n",
    "[[step.actions]]\n",
    "narration = \"\"\n",
    "actions = [ { step = 0 } ]\n",
    "actions = [ { panel = { name = \"attention\", layer = 0, head = 0 } } ]\n",
    "actions = [ { ask = { number = \"x\", tolerance = -1.0 } } ]\n",
    "actions = [ { expect = { top1 = \"\" } }, { rewind = 99999 }, { branch = -1 } ]\n",
    "[settings]\npause_above = -inf\n",
    "\"\"\"\n",
    "'''",
    "\u{0}\u{feff}é\r\n",
    "\"parent\": 18446744073709551615,\n",
    "\"current\": 18446744073709551615,\n",
    "\"nodes\": [],\n",
    "[[[[[[[[[[[[[[[[",
    "}]}]\n",
];

fn apply(mut b: Vec<u8>, edits: &[Edit], fields: &Fields) -> Vec<u8> {
    for e in edits {
        let n = b.len();
        match e {
            Edit::Flip(i, m) if n > 0 => b[i % n] ^= m,
            Edit::Truncate(i) => b.truncate(i % (n + 1)),
            Edit::Splice(i, len, with) => {
                let at = i % (n + 1);
                let end = (at + len).min(n);
                b.splice(at..end, with.iter().copied());
            }
            Edit::Copy(from, to, len) if n > 0 => {
                let from = from % n;
                let piece = b[from..(from + len).min(n)].to_vec();
                let to = to % (n + 1);
                b.splice(to..to, piece);
            }
            Edit::Extreme(i, k) => extreme(&mut b, fields, *i, *k),
            Edit::DropLine(i) | Edit::DupLine(i) => {
                let lines = line_spans(&b);
                let (s, e2) = lines[i % lines.len()];
                let line = b[s..e2].to_vec();
                let with = if matches!(e, Edit::DupLine(_)) {
                    [line.clone(), line].concat()
                } else {
                    vec![]
                };
                b.splice(s..e2, with);
            }
            Edit::Fragment(i, k) => {
                let lines = line_spans(&b);
                let at = lines[i % lines.len()].0;
                b.splice(at..at, FRAGMENTS[k % FRAGMENTS.len()].bytes());
            }
            _ => {}
        }
    }
    b
}

/// Each line's span, its newline included; one empty line for an empty file.
fn line_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            spans.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < b.len() || spans.is_empty() {
        spans.push((start, b.len()));
    }
    spans
}

/// Writes the k-th extreme over the i-th number field, if it is still inside the (edited) file.
fn extreme(b: &mut Vec<u8>, fields: &Fields, i: usize, k: usize) {
    match fields {
        Fields::Binary(f) if !f.is_empty() => {
            let (at, width) = f[i % f.len()];
            let v = EXTREME_INTS[k % EXTREME_INTS.len()].to_le_bytes();
            if at + width <= b.len() {
                b[at..at + width].copy_from_slice(&v[..width]);
            }
        }
        Fields::Text(f) if !f.is_empty() => {
            let (at, len) = f[i % f.len()];
            if at + len <= b.len() {
                b.splice(at..at + len, EXTREME_TEXT[k % EXTREME_TEXT.len()].bytes());
            }
        }
        _ => {}
    }
}

/// The numbers written in a text file: runs of digits, with a leading `-` and any `.`, `e`, `+` inside.
fn text_numbers(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = if i > 0 && b[i - 1] == b'-' { i - 1 } else { i };
            let mut end = i;
            while end < b.len() && (b[end].is_ascii_digit() || b".eE+-".contains(&b[end])) {
                end += 1;
            }
            out.push((start, end - start));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------
// The rule every error must keep.

/// An error names the file and says, in a few words, what is wrong.
fn names_file_and_problem(msg: &str, file: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        msg.contains(file),
        "the error does not name the file `{file}`: {msg}"
    );
    let rest = msg.replace(file, "");
    let words = rest
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .count();
    prop_assert!(words >= 2, "the error does not say what is wrong: {msg:?}");
    Ok(())
}

/// Runs `f`, failing the case (not the process) if it panics.
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let m = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestCaseError::fail(format!("{what} panicked: {m}"))
    })
}

// ---------------------------------------------------------------------------------------------------
// GGUF

/// A valid file's bytes, and where its numbers are (see `Fields`).
type Seed = (Vec<u8>, Vec<(usize, usize)>);

/// A small GGUF holding every metadata type (nested arrays too), `general.alignment`, and two tensors.
fn rich_gguf() -> Vec<u8> {
    let s = |x: &str| Value::String(x.to_string());
    let md: Vec<(&str, Value)> = vec![
        ("general.architecture", s("llama")),
        ("general.alignment", Value::U32(32)),
        ("general.name", s("rich")),
        ("t.u8", Value::U8(1)),
        ("t.i8", Value::I8(-1)),
        ("t.u16", Value::U16(2)),
        ("t.i16", Value::I16(-2)),
        ("t.u64", Value::U64(3)),
        ("t.i64", Value::I64(-3)),
        ("t.f32", Value::F32(0.5)),
        ("t.f64", Value::F64(0.25)),
        ("t.bool", Value::Bool(true)),
        ("t.strings", Value::Array(vec![s("a"), s("bc")])),
        ("t.u32s", Value::Array(vec![Value::U32(1), Value::U32(2)])),
        (
            "t.nested",
            Value::Array(vec![Value::Array(vec![Value::U8(1)]), Value::Array(vec![])]),
        ),
    ];
    let v = Tensor::from_vec(vec![0.5f32; 8], 8, &Device::Cpu).unwrap();
    let m = Tensor::from_vec(vec![0.25f32; 64], (2, 32), &Device::Cpu).unwrap();
    let ts = [
        ("a.weight", QTensor::quantize(&v, GgmlDType::F32).unwrap()),
        ("b.weight", QTensor::quantize(&m, GgmlDType::Q8_0).unwrap()),
    ];
    let md: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (*k, v)).collect();
    let ts: Vec<(&str, &QTensor)> = ts.iter().map(|(k, t)| (*k, t)).collect();
    let mut out = std::io::Cursor::new(Vec::new());
    gguf_file::write(&mut out, &md, &ts).unwrap();
    out.into_inner()
}

/// The seeds: the small GGUF above, the tiny llama the engine tests run, and the real model's first
/// 8 KiB (a header cut short). Each with the offsets of its header's numbers.
fn gguf_seeds() -> &'static [Seed] {
    static SEEDS: OnceLock<Vec<Seed>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let tiny = std::fs::read(support::tiny::write(dir.path())).unwrap();
        let mut real = Vec::new();
        use std::io::Read;
        std::fs::File::open(support::real_model())
            .unwrap()
            .take(8192)
            .read_to_end(&mut real)
            .unwrap();
        [rich_gguf(), tiny, real]
            .into_iter()
            .map(|b| {
                let f = gguf_fields(&b);
                (b, f)
            })
            .collect()
    })
}

/// The header's numbers in a GGUF v2/v3 (counts, lengths, value types, dimensions, dtypes, offsets,
/// scalar values): (offset, width). Stops where the header stops making sense.
fn gguf_fields(b: &[u8]) -> Vec<(usize, usize)> {
    let mut w = Walk {
        b,
        at: 8,
        out: vec![(4, 4)],
    };
    let _ = w.header();
    w.out
}

struct Walk<'a> {
    b: &'a [u8],
    at: usize,
    out: Vec<(usize, usize)>,
}

impl Walk<'_> {
    fn num(&mut self, width: usize) -> Option<u64> {
        let bytes = self.b.get(self.at..self.at + width)?;
        let mut v = [0u8; 8];
        v[..width].copy_from_slice(bytes);
        self.out.push((self.at, width));
        self.at += width;
        Some(u64::from_le_bytes(v))
    }

    fn string(&mut self) -> Option<()> {
        let n = usize::try_from(self.num(8)?).ok()?;
        self.at = self.at.checked_add(n).filter(|&e| e <= self.b.len())?;
        Some(())
    }

    fn value(&mut self, ty: u64) -> Option<()> {
        match ty {
            0 | 1 | 7 => self.num(1).map(drop),
            2 | 3 => self.num(2).map(drop),
            4..=6 => self.num(4).map(drop),
            10..=12 => self.num(8).map(drop),
            8 => self.string(),
            9 => {
                let t = self.num(4)?;
                let n = self.num(8)?;
                (n <= self.b.len() as u64).then_some(())?;
                (0..n).try_for_each(|_| self.value(t))
            }
            _ => None,
        }
    }

    fn header(&mut self) -> Option<()> {
        let tensors = self.num(8)?;
        let kvs = self.num(8)?;
        for _ in 0..kvs.min(self.b.len() as u64) {
            self.string()?;
            let t = self.num(4)?;
            self.value(t)?;
        }
        for _ in 0..tensors.min(self.b.len() as u64) {
            self.string()?;
            let dims = self.num(4)?.min(4);
            for _ in 0..dims {
                self.num(8)?;
            }
            self.num(4)?;
            self.num(8)?;
        }
        Some(())
    }
}

/// Opens `bytes` as a model file (and reads every tensor of one that opens): no panic, and an error
/// that names the file.
fn check_gguf(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.gguf");
    std::fs::write(&path, bytes).unwrap();
    let file = path.display().to_string();
    match no_panic("GgufFile::open", || GgufFile::open(&path))? {
        Ok(mut g) => {
            let names: Vec<String> = g.content.tensor_infos.keys().cloned().collect();
            for name in names {
                if let Err(e) = no_panic("GgufFile::tensor", || g.tensor(&name))? {
                    names_file_and_problem(&e.to_string(), &file)?;
                }
            }
            Ok(())
        }
        Err(e) => names_file_and_problem(&e.to_string(), &file),
    }
}

// ---------------------------------------------------------------------------------------------------
// Lessons

fn lesson_seeds() -> &'static [Seed] {
    static SEEDS: OnceLock<Vec<Seed>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        lesson::BUILTINS
            .iter()
            .map(|(_, text)| (text.as_bytes().to_vec(), text_numbers(text.as_bytes())))
            .collect()
    })
}

/// Parses `bytes` as a lesson, both through `lesson::load` (a file on disk) and `parse` (the text,
/// invalid UTF-8 replaced): no panic, an error that names the file, and a line inside the file.
fn check_lesson(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lesson.toml");
    std::fs::write(&path, bytes).unwrap();
    let file = path.display().to_string();
    if let Err(e) = no_panic("lesson::load", || lesson::load(&file))? {
        names_file_and_problem(&e.to_string(), &file)?;
        prop_assert!(!e.message.trim().is_empty(), "no message: {e}");
    }
    let text = String::from_utf8_lossy(bytes);
    let named = "lessons/mutated.toml";
    if let Err(e) = no_panic("lesson::parse", || lesson::parse("mutated", named, &text))? {
        names_file_and_problem(&e.to_string(), named)?;
        prop_assert!(!e.message.trim().is_empty(), "no message: {e}");
        let lines = text.split('\n').count();
        if let Some(line) = e.line {
            prop_assert!((1..=lines).contains(&line), "line {line} of {lines}: {e}");
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------
// Sessions

fn session_seed() -> &'static Seed {
    static SEED: OnceLock<Seed> = OnceLock::new();
    SEED.get_or_init(|| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/handout-session.json");
        let b = std::fs::read(p).unwrap();
        let f = text_numbers(&b);
        (b, f)
    })
}

/// Reads `bytes` as a session file: no panic, and an error that names the file.
fn check_session(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    std::fs::write(&path, bytes).unwrap();
    if let Err(e) = no_panic("session_file::read", || session_file::read(&path))? {
        names_file_and_problem(&e.to_string(), &path.display().to_string())?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------
// The properties

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn gguf_arbitrary_bytes(mut bytes in prop::collection::vec(any::<u8>(), 0..512), magic in any::<bool>()) {
        // Half the cases start with the magic, so the header reader is reached.
        if magic && bytes.len() >= 8 {
            bytes[..8].copy_from_slice(b"GGUF\x03\0\0\0");
        }
        check_gguf(&bytes)?;
    }

    #[test]
    fn gguf_mutated(seed in 0..3usize, edits in edits()) {
        let (bytes, fields) = &gguf_seeds()[seed];
        let fields = Fields::Binary(fields.clone());
        check_gguf(&apply(bytes.clone(), &edits, &fields))?;
    }

    #[test]
    fn lesson_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_lesson(&bytes)?;
    }

    #[test]
    fn lesson_arbitrary_text(text in "[\\[\\]{}=\"'#,.a-z0-9 \n-]{0,200}") {
        check_lesson(text.as_bytes())?;
    }

    #[test]
    fn lesson_mutated(seed in 0..lesson::BUILTINS.len(), edits in edits()) {
        let (bytes, fields) = &lesson_seeds()[seed];
        let fields = Fields::Text(fields.clone());
        check_lesson(&apply(bytes.clone(), &edits, &fields))?;
    }

    #[test]
    fn session_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_session(&bytes)?;
    }

    #[test]
    fn session_mutated(edits in edits()) {
        let (bytes, fields) = session_seed();
        let fields = Fields::Text(fields.clone());
        check_session(&apply(bytes.clone(), &edits, &fields))?;
    }
}

// ---------------------------------------------------------------------------------------------------
// Regressions: the cases the properties found, as plain tests.

/// A GGUF v3 written byte by byte: metadata as (key, value type, value bytes), tensors as (name,
/// dimensions, ggml type) all at offset 0, then `data` zero bytes after the 32-byte alignment.
fn hand_gguf(
    kvs: &[(&str, u32, Vec<u8>)],
    tensors: &[(&str, &[u64], u32)],
    data: usize,
) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend((tensors.len() as u64).to_le_bytes());
    b.extend((kvs.len() as u64).to_le_bytes());
    let string = |b: &mut Vec<u8>, s: &str| {
        b.extend((s.len() as u64).to_le_bytes());
        b.extend(s.bytes());
    };
    for (key, ty, value) in kvs {
        string(&mut b, key);
        b.extend(ty.to_le_bytes());
        b.extend(value);
    }
    for (name, dims, ty) in tensors {
        string(&mut b, name);
        b.extend((dims.len() as u32).to_le_bytes());
        dims.iter().for_each(|d| b.extend(d.to_le_bytes()));
        b.extend(ty.to_le_bytes());
        b.extend(0u64.to_le_bytes());
    }
    b.resize(b.len().div_ceil(32) * 32 + data, 0);
    b
}

/// Opens `bytes` as `model.gguf`; the error's message and the path it must name.
fn gguf_error(bytes: &[u8]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.gguf");
    std::fs::write(&path, bytes).unwrap();
    match GgufFile::open(&path) {
        Ok(_) => panic!("{} opened, but it should not", path.display()),
        Err(e) => (e.to_string(), path.display().to_string()),
    }
}

const U32: u32 = 4;
const U8: u32 = 0;

/// Found by `gguf_mutated`: `general.alignment` = 0 made candle's reader divide by zero.
#[test]
fn gguf_alignment_of_zero_is_an_error_not_a_division_by_zero() {
    let zero = ("general.alignment", U32, 0u32.to_le_bytes().to_vec());
    let fine = ("general.alignment", U32, 32u32.to_le_bytes().to_vec());
    let name = (
        "general.name",
        8,
        [&4u64.to_le_bytes()[..], b"tiny"].concat(),
    );
    let zero_u8 = ("general.alignment", U8, vec![0]);
    // The reader drops trailing NUL bytes from a key.
    let zero_nul = ("general.alignment\0\0", U32, 0u32.to_le_bytes().to_vec());
    // Arrays nested as deep as the reader goes (an empty one at depth 64), before the key.
    let mut deep: Vec<u8> = (0..64)
        .flat_map(|_| [&9u32.to_le_bytes()[..], &1u64.to_le_bytes()].concat())
        .collect();
    deep.extend([0u8; 12]);
    let deep = ("t.deep", 9, deep);
    for kvs in [
        vec![zero.clone()],
        vec![name.clone(), zero_u8],
        vec![zero_nul],
        vec![deep, zero.clone()],
        // The last of a repeated key is the one the reader keeps.
        vec![fine.clone(), name, zero],
    ] {
        let (msg, file) = gguf_error(&hand_gguf(&kvs, &[], 0));
        assert!(msg.contains(&file), "{msg}");
        assert!(msg.contains("`general.alignment` is 0"), "{msg}");
    }
    // 32 after 0: the file is fine.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.gguf");
    let zero = ("general.alignment", U32, 0u32.to_le_bytes().to_vec());
    std::fs::write(&path, hand_gguf(&[zero, fine], &[], 0)).unwrap();
    GgufFile::open(&path).unwrap();
}

/// Found by `gguf_mutated`: a tensor with a zero dimension opened, and reading it aborted the process
/// (candle views an empty, unaligned buffer as f32s).
#[test]
fn gguf_tensor_of_no_elements_is_refused() {
    let (msg, file) = gguf_error(&hand_gguf(&[], &[("t.weight", &[0, 4], 0)], 0));
    assert!(msg.contains(&file), "{msg}");
    assert!(msg.contains("tensor `t.weight` has no elements"), "{msg}");
}

/// Found by `gguf_mutated`: an error reading a tensor did not name the file.
#[test]
fn gguf_tensor_read_error_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.gguf");
    // A scalar (no dimensions): the header is fine, candle will not build the tensor.
    std::fs::write(&path, hand_gguf(&[], &[("s", &[], 0)], 4)).unwrap();
    let mut g = GgufFile::open(&path).unwrap();
    let msg = g.tensor("s").unwrap_err().to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("cannot read tensor `s`"), "{msg}");
}

/// A file shorter than the magic bytes says so, rather than showing four zero bytes it does not hold.
#[test]
fn gguf_shorter_than_the_magic() {
    let (msg, file) = gguf_error(b"GG");
    assert!(msg.contains(&file), "{msg}");
    assert!(msg.contains("only 2 bytes long"), "{msg}");
}

/// Found by `session_mutated`: a parent or current node of u64::MAX overflowed the shape check.
#[test]
fn session_node_numbers_at_u64_max_are_an_error() {
    let (seed, _) = session_seed();
    let v: serde_json::Value = serde_json::from_slice(seed).unwrap();
    let max = serde_json::json!(u64::MAX);
    for (pointer, says) in [
        ("/nodes/1/parent", "node 1 has parent"),
        ("/current", "is not in the tree"),
    ] {
        let mut bad = v.clone();
        *bad.pointer_mut(pointer).unwrap() = max.clone();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.json");
        std::fs::write(&path, serde_json::to_vec(&bad).unwrap()).unwrap();
        let msg = session_file::read(&path).unwrap_err().to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains(says), "{pointer}: {msg}");
    }
}
