//! Bad input gives a clear error, never a panic: missing, non-GGUF, truncated, non-llama, unknown
//! pre-tokenizer, unsupported tokenizer model, unreadable tokenizer.json.

use crate::support;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use nexttoken::engine::gguf::{GgufFile, LlamaConfig, LoadError};
use nexttoken::engine::tokenizer::Vocab;
use std::path::{Path, PathBuf};

/// Opening must fail; returns the error and its message.
fn open_err(path: &Path) -> (LoadError, String) {
    match GgufFile::open(path) {
        Ok(_) => panic!("{} opened, but it should not", path.display()),
        Err(e) => {
            let msg = e.to_string();
            (e, msg)
        }
    }
}

/// The first `n` bytes of the real model, as a new file.
fn truncated_copy(dir: &Path, n: u64) -> PathBuf {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(support::real_model())
        .unwrap()
        .take(n)
        .read_to_end(&mut bytes)
        .unwrap();
    assert_eq!(bytes.len() as u64, n);
    let p = dir.join(format!("cut-{n}.gguf"));
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A tiny GGUF with the given metadata and one small tensor.
fn write_gguf(path: &Path, metadata: &[(&str, Value)]) {
    let t = Tensor::zeros((4, 32), candle_core::DType::F32, &Device::Cpu).unwrap();
    let q = QTensor::quantize(&t, GgmlDType::F32).unwrap();
    let md: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (*k, v)).collect();
    let mut f = std::fs::File::create(path).unwrap();
    gguf_file::write(&mut f, &md, &[("token_embd.weight", &q)]).unwrap();
}

fn strings(xs: &[&str]) -> Value {
    Value::Array(xs.iter().map(|s| Value::String(s.to_string())).collect())
}

/// Tokenizer metadata for a toy byte-level BPE vocabulary, with the given pre-tokenizer.
fn tokenizer_metadata(model: &str, pre: &str) -> Vec<(&'static str, Value)> {
    let tokens = ["<|endoftext|>", "a", "b", "ab", "Ġ", "Ġab"];
    let types = [3, 1, 1, 1, 1, 1];
    vec![
        ("general.architecture", Value::String("llama".into())),
        ("tokenizer.ggml.model", Value::String(model.into())),
        ("tokenizer.ggml.pre", Value::String(pre.into())),
        ("tokenizer.ggml.tokens", strings(&tokens)),
        ("tokenizer.ggml.merges", strings(&["a b", "Ġ ab"])),
        (
            "tokenizer.ggml.token_type",
            Value::Array(types.iter().map(|&t| Value::I32(t)).collect()),
        ),
        ("tokenizer.ggml.eos_token_id", Value::U32(0)),
    ]
}

#[test]
fn missing_file() {
    let (e, msg) = open_err(Path::new("/definitely/not/here/model.gguf"));
    assert!(matches!(e, LoadError::Missing(_)), "{e:?}");
    assert!(msg.contains("not found"), "{msg}");
    assert!(msg.contains("/definitely/not/here/model.gguf"), "{msg}");
    assert!(
        msg.contains("--model PATH") && msg.contains("fetch"),
        "{msg}"
    );
}

/// The binary run with `args` (the real model by default) must fail before the screen; its stderr.
fn cli_error(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .args(args)
        .env("NEXTTOKEN_MODEL", support::real_model())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} ran");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_missing_file_says_once_what_is_wrong_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let nope = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let folder = dir.path().to_str().unwrap().to_string();
    let cases: [(Vec<String>, &[&str]); 4] = [
        (
            vec!["--model".into(), nope("nope.gguf")],
            &[
                "model file not found",
                "nope.gguf",
                "nexttoken fetch",
                "--model PATH",
            ],
        ),
        (
            vec!["--load".into(), nope("nope.json")],
            &[
                "no session file at",
                "nope.json",
                "S in the TUI",
                "trace --save",
            ],
        ),
        (
            vec!["--lesson".into(), nope("nope.toml")],
            &[
                "no lesson",
                "nope.toml",
                "no such file",
                "lesson file (.toml)",
                "typewriter",
            ],
        ),
        (
            vec!["--model".into(), folder.clone()],
            &["is not a GGUF file (it is a folder)", "--model PATH"],
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = cli_error(&args);
        for s in says {
            assert!(err.contains(s), "{args:?}: {s}: {err}");
        }
        assert!(
            !err.contains("os error"),
            "the OS's own words, never repeated: {err}"
        );
        assert_eq!(err.matches("nexttoken:").count(), 1, "one message: {err}");
    }
}

#[test]
fn not_a_gguf_file() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("notes.gguf");
    std::fs::write(&p, "These are my lecture notes, not a model.\n").unwrap();
    let (e, msg) = open_err(&p);
    assert!(matches!(e, LoadError::NotGguf { .. }), "{e:?}");
    assert!(msg.contains("not a GGUF file"), "{msg}");
    // Shorter than the magic itself.
    let tiny = tmp.path().join("tiny.gguf");
    std::fs::write(&tiny, b"GG").unwrap();
    assert!(matches!(open_err(&tiny).0, LoadError::NotGguf { .. }));
    // An empty file.
    let empty = tmp.path().join("empty.gguf");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(open_err(&empty).0, LoadError::NotGguf { .. }));
}

#[test]
fn truncated_in_the_header() {
    let tmp = tempfile::tempdir().unwrap();
    // The vocabulary alone makes the real header about 1.5 MB long; cut well inside it.
    for n in [4, 24, 100_000] {
        let (e, msg) = open_err(&truncated_copy(tmp.path(), n));
        assert!(matches!(e, LoadError::Truncated { .. }), "{n} bytes: {e:?}");
        assert!(msg.contains("truncated or corrupt"), "{msg}");
        assert!(msg.contains("header"), "{msg}");
    }
}

#[test]
fn truncated_in_the_tensor_data() {
    let tmp = tempfile::tempdir().unwrap();
    let full = std::fs::metadata(support::real_model()).unwrap().len();
    for n in [full / 2, full - 1] {
        let (e, msg) = open_err(&truncated_copy(tmp.path(), n));
        assert!(matches!(e, LoadError::Truncated { .. }), "{n} bytes: {e:?}");
        assert!(msg.contains("truncated or corrupt"), "{msg}");
        assert!(msg.contains(&format!("only {n} bytes")), "{msg}");
    }
}

#[test]
fn architecture_not_llama() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("gpt2.gguf");
    write_gguf(
        &p,
        &[
            ("general.architecture", Value::String("gpt2".into())),
            ("gpt2.block_count", Value::U32(2)),
            ("gpt2.embedding_length", Value::U32(32)),
        ],
    );
    let g = GgufFile::open(&p).expect("a well-formed GGUF opens");
    let e = LlamaConfig::from_gguf(&g).unwrap_err();
    assert!(
        matches!(&e, LoadError::UnsupportedArchitecture(a) if a == "gpt2"),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(msg.contains("`gpt2`") && msg.contains("llama"), "{msg}");
}

#[test]
fn unknown_pre_tokenizer_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("klingon.gguf");
    write_gguf(&p, &tokenizer_metadata("gpt2", "klingon"));
    let g = GgufFile::open(&p).unwrap();
    let e = match Vocab::from_gguf(&g) {
        Ok(_) => panic!("an unknown pre-tokenizer must not build"),
        Err(e) => e,
    };
    assert!(
        matches!(&e, LoadError::UnknownPreTokenizer(v) if v == "klingon"),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("klingon") && msg.contains("--tokenizer"),
        "{msg}"
    );
}

#[test]
fn known_pre_tokenizers_build_the_toy_vocabulary() {
    // The control for the test above: the same metadata with a known `pre` builds and encodes.
    let tmp = tempfile::tempdir().unwrap();
    for pre in ["smollm", "gpt2", "default", "llama-bpe"] {
        let p = tmp.path().join(format!("{pre}.gguf"));
        write_gguf(&p, &tokenizer_metadata("gpt2", pre));
        let v =
            Vocab::from_gguf(&GgufFile::open(&p).unwrap()).unwrap_or_else(|e| panic!("{pre}: {e}"));
        assert_eq!(v.encode("ab ab").unwrap(), [3, 5], "{pre}");
        assert_eq!(v.encode("<|endoftext|>ab").unwrap(), [0, 3], "{pre}");
        assert_eq!(v.eos_ids(), [0]);
    }
}

#[test]
fn unsupported_tokenizer_model_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("wpm.gguf");
    write_gguf(&p, &tokenizer_metadata("bert", "default"));
    let e = Vocab::from_gguf(&GgufFile::open(&p).unwrap())
        .err()
        .expect("must fail");
    let msg = e.to_string();
    assert!(
        msg.contains("`bert`") && msg.contains("--tokenizer"),
        "{msg}"
    );
    // A SentencePiece-style vocabulary needs its scores; without them the error names the key.
    let p = tmp.path().join("spm.gguf");
    write_gguf(&p, &tokenizer_metadata("llama", "default"));
    let e = Vocab::from_gguf(&GgufFile::open(&p).unwrap())
        .err()
        .expect("must fail");
    assert!(e.to_string().contains("tokenizer.ggml.scores"), "{e}");
}

#[test]
fn missing_tokenizer_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("no-vocab.gguf");
    let mut md = tokenizer_metadata("gpt2", "smollm");
    md.retain(|(k, _)| *k != "tokenizer.ggml.tokens");
    write_gguf(&p, &md);
    let e = Vocab::from_gguf(&GgufFile::open(&p).unwrap())
        .err()
        .expect("must fail");
    assert!(
        matches!(&e, LoadError::MissingKey(k) if k == "tokenizer.ggml.tokens"),
        "{e:?}"
    );
}

#[test]
fn bad_tokenizer_json() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("toy.gguf");
    write_gguf(&p, &tokenizer_metadata("gpt2", "smollm"));
    let g = GgufFile::open(&p).unwrap();
    let missing = tmp.path().join("nope/tokenizer.json");
    let msg = Vocab::from_tokenizer_json(&missing, &g)
        .err()
        .expect("must fail")
        .to_string();
    assert!(
        msg.contains("not found") && msg.contains("nope/tokenizer.json"),
        "{msg}"
    );
    let garbage = tmp.path().join("tokenizer.json");
    std::fs::write(&garbage, "{ \"not\": \"a tokenizer\" }").unwrap();
    let msg = Vocab::from_tokenizer_json(&garbage, &g)
        .err()
        .expect("must fail")
        .to_string();
    assert!(msg.contains("tokenizer.json"), "{msg}");
}

/// Overwrites 8 bytes at `at` with `value` (little-endian).
fn patch_u64(path: &Path, at: usize, value: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn corrupt_tensor_sizes_are_errors_not_overflows() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("corrupt.gguf");
    write_gguf(
        &p,
        &[("general.architecture", Value::String("llama".into()))],
    );
    let bytes = std::fs::read(&p).unwrap();
    let name = b"token_embd.weight";
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len();
    // After the name: n_dims (u32), then dims (u64 each), dtype (u32), offset (u64).
    let dims_at = at + 4;
    let offset_at = dims_at + 16 + 4;

    patch_u64(&p, dims_at, 1 << 40);
    patch_u64(&p, dims_at + 8, 1 << 40);
    let (e, msg) = open_err(&p);
    assert!(matches!(e, LoadError::Truncated { .. }), "{e:?}");
    assert!(msg.contains("impossible size"), "{msg}");

    write_gguf(
        &p,
        &[("general.architecture", Value::String("llama".into()))],
    );
    patch_u64(&p, offset_at, u64::MAX - 3);
    let (e, msg) = open_err(&p);
    assert!(matches!(e, LoadError::Truncated { .. }), "{e:?}");
    assert!(msg.contains("token_embd.weight"), "{msg}");
}
