//! Command-line arguments: the TUI by default, and the `fetch`, `trace`, `compare`, `bench`, `lesson`
//! and `export` subcommands. Each subcommand has its own flags; the model's (`--model`, `--tokenizer`,
//! `--threads`, `--verbose`, `--kv` and the server's) are global, so clap lists them under every
//! subcommand, and one that does not use a flag refuses it (`cmd::refuse_unused_model_flags`).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

mod draft;
mod export;
pub mod force;
mod sampler;
pub mod served;

pub use draft::DraftArgs;
pub use export::ExportArgs;
pub use sampler::SamplerArgs;

/// The prompt when none is given: short, and its first prediction is a confident fact.
pub const DEFAULT_PROMPT: &str = "The capital of France is";

#[derive(Debug, Parser)]
#[command(
    name = "nexttoken",
    version,
    about = "Watch a real language model write, one token at a time.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub sampler: SamplerArgs,
    /// Colour theme (`projector`: high contrast and bold, for the back of a classroom) [default:
    /// `default`; `projector` in presenter mode or when the lesson asks for it].
    #[arg(long, value_enum)]
    pub theme: Option<Theme>,
    #[command(flatten)]
    pub classroom: ClassroomArgs,
    #[command(flatten)]
    pub ab: AbArgs,
    #[command(flatten)]
    pub draft: DraftArgs,
    /// Open a saved session (from the `S` key or `trace --save`) instead of reading the prompt.
    #[arg(long, value_name = "FILE")]
    pub load: Option<PathBuf>,
    /// With --load: open a session saved with a different model file anyway.
    #[arg(long, requires = "load")]
    pub ignore_model_mismatch: bool,
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

/// Teaching a class: a lesson, predict-then-reveal, presenter mode.
#[derive(Debug, Args, Clone)]
pub struct ClassroomArgs {
    /// Open a lesson: a built-in's name (`nexttoken lesson list`) or a lesson TOML file.
    #[arg(long, value_name = "NAME|PATH", conflicts_with = "load")]
    pub lesson: Option<String>,
    /// Predict-then-reveal: each next-token distribution stays hidden until the class has guessed.
    #[arg(long)]
    pub predict: bool,
    /// With --predict, autoplay stops for a guess where the model's entropy is at least this many
    /// nats, and runs through the steps where it is confident [default: 2.0].
    #[arg(long, value_name = "NATS", allow_negative_numbers = true)]
    pub pause_above: Option<f32>,
    /// Presenter mode, for a projector: the narration, the transcript, the chosen token in large
    /// type and wide bars.
    #[arg(long)]
    pub presenter: bool,
    /// Class mode (docs/CLASS.md): every student guesses the next token from their own device. Serves
    /// the page on ADDR (127.0.0.1:7878 when none: this machine only; 0.0.0.0:PORT lets the room
    /// in) and turns predict mode on.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:7878", conflicts_with = "server")]
    pub class: Option<String>,
    /// With --class: at most this many students join.
    #[arg(long, value_name = "N", default_value_t = 200, requires = "class", value_parser = clap::value_parser!(u16).range(1..=2000))]
    pub class_max: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Theme {
    Default,
    Projector,
}

#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// A GGUF file of the llama, qwen2, qwen3 or gemma3 architecture, or a name `fetch` knows
    /// (smollm2-135m, gemma3-270m; fetched when missing) [default: the fetched SmolLM2-135M-Instruct Q4_1].
    #[arg(long, global = true, env = "NEXTTOKEN_MODEL")]
    pub model: Option<PathBuf>,
    /// A tokenizer.json to use instead of the one built from the GGUF metadata.
    #[arg(long, global = true)]
    pub tokenizer: Option<PathBuf>,
    /// Worker threads for the model, 1 or more [default: all cores].
    #[arg(long, global = true, value_parser = thread_count)]
    pub threads: Option<usize>,
    /// On an error, print its whole chain and any captured backtrace.
    #[arg(long, global = true)]
    pub verbose: bool,
    /// What the model's KV cache stores: `f32` keeps the bits of candle's models; `f16` (llama.cpp's
    /// default) halves the cache and what a deep decode step reads, for one more rounding of every
    /// key and value. A draft and model B keep `f32`; a served model, its server's.
    #[arg(long, global = true, value_enum, default_value_t = KvCacheType::F32)]
    pub kv: KvCacheType,
    #[command(flatten)]
    pub server: served::ServerArgs,
}

/// What the model reads first.
#[derive(Debug, Args, Clone)]
pub struct SessionArgs {
    /// The prompt the model reads first.
    #[arg(long, default_value = DEFAULT_PROMPT)]
    pub prompt: String,
    /// Wrap the prompt in the model's chat template, as a user's turn.
    #[arg(long)]
    pub chat: bool,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Download a model into models/: the default (SmolLM2-135M-Instruct Q4_1), or gemma3-270m (Gemma 3
    /// 270M Q4_K_M, under the Gemma Terms of Use). `--model NAME` then loads it.
    Fetch {
        /// The model: smollm2-135m (the default) or gemma3-270m.
        #[arg(default_value = "smollm2-135m", value_parser = known_model_name)]
        name: String,
        /// Download again even if the file is present and verified.
        #[arg(long)]
        force: bool,
    },
    /// Print a session as JSON Lines: one line for the prefill, one per step.
    Trace(TraceArgs),
    /// Compare two paths from one prompt, step by step, as JSON Lines: a forced token against free
    /// running (`--force`), or teacher forcing a reference against free running (`--reference`).
    Compare(CompareArgs),
    /// Measure prefill and decode speed.
    Bench(BenchArgs),
    /// Lessons: list the built-ins, or check one headless on the real model.
    Lesson(LessonArgs),
    /// Write a handout of a saved session: one self-contained HTML page, or Markdown (no model needed).
    Export(ExportArgs),
}

#[derive(Debug, Args, Clone)]
pub struct LessonArgs {
    #[command(subcommand)]
    pub command: LessonCmd,
}

#[derive(Debug, Subcommand, Clone)]
pub enum LessonCmd {
    /// Print the built-in lessons: name, length in minutes, summary.
    List,
    /// Run a lesson headless on the real model and check every `expect`; exits 1 at the first that
    /// does not hold.
    Check {
        /// A built-in lesson's name, or the path to a lesson file (.toml).
        lesson: String,
    },
}

#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub sampler: SamplerArgs,
    /// Generated steps per path [default: 16, or the reference's length with --reference].
    #[arg(long)]
    pub steps: Option<usize>,
    /// Path B: at generated step STEP take this text (`STEP:TEXT`) or token id (`STEP:ID`) instead of
    /// the sampler's choice, then run free. Repeatable; path A runs free throughout.
    #[arg(long, conflicts_with_all = ["reference", "model_b", "requant_b"])]
    pub force: Vec<String>,
    /// Teacher-force this continuation (path B) and score each of its tokens, against free running
    /// from the same start (path A).
    #[arg(long, conflicts_with_all = ["model_b", "requant_b"])]
    pub reference: Option<String>,
    #[command(flatten)]
    pub ab: AbArgs,
}

/// A/B: a second model beside the first at every step of the first one's path.
#[derive(Debug, Args, Clone, Default)]
pub struct AbArgs {
    /// A/B: a second model (a GGUF path, or a name `fetch` knows) with the same vocabulary reads model
    /// A's path; both next-token distributions are compared at every step.
    #[arg(long, conflicts_with = "requant_b")]
    pub model_b: Option<PathBuf>,
    /// A/B: model B is model A re-quantised at load: q8_0, q4_0, q3_k, q2_k, or exact (the same
    /// weights in f32, without 8-bit activations). Rows that are not a multiple of 256 fall back to
    /// q4_0 for the K-quants.
    #[arg(long, value_parser = requant_name)]
    pub requant_b: Option<String>,
}

impl AbArgs {
    /// Model B, if one was asked for: `--model-b` resolved as `--model` is (a known name is fetched
    /// when missing).
    pub fn spec(&self) -> anyhow::Result<Option<crate::engine::twin::TwinSpec>> {
        use crate::engine::{fetch, requant::Requant, twin::TwinSpec};
        Ok(match (&self.model_b, &self.requant_b) {
            (Some(b), _) => Some(TwinSpec::File(fetch::resolve_model(Some(b))?)),
            (None, Some(r)) => Requant::from_name(r).map(TwinSpec::Requant),
            (None, None) => None,
        })
    }
}

/// A re-quantisation `--requant-b` knows, or the error listing them.
fn requant_name(name: &str) -> Result<String, String> {
    use crate::engine::requant::Requant;
    match Requant::from_name(name) {
        Some(r) => Ok(r.name().to_string()),
        None => Err(format!("use one of {}", Requant::NAMES.join(", "))),
    }
}

#[derive(Debug, Args, Clone)]
pub struct TraceArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub sampler: SamplerArgs,
    /// Tokens to generate.
    #[arg(long, default_value_t = 16)]
    pub steps: usize,
    /// Force tokens at steps: `STEP:ID` or `STEP:text` (text is tokenised and all of it forced from that
    /// step on). Repeatable.
    #[arg(long, conflicts_with = "draft")]
    pub force: Vec<String>,
    #[command(flatten)]
    pub draft: DraftArgs,
    /// Candidates to list per step.
    #[arg(long, default_value_t = 10)]
    pub top_k: usize,
    /// Add attention of the newest query row: `mean` (over heads, per layer) or `all` (every layer and head).
    #[arg(long, value_enum)]
    pub attention: Option<AttentionMode>,
    /// Run without the KV cache (every step re-reads the whole sequence).
    #[arg(long)]
    pub no_kv_cache: bool,
    /// Add the logit lens to each step: what every layer would predict, and the chosen token's rank
    /// and probability at each layer (one extra pass per step).
    #[arg(long, conflicts_with = "draft")]
    pub logit_lens: bool,
    /// Add the head map to each step: every head's previous-token score, induction score and
    /// attention entropy at the position the token was chosen from (one extra pass per step).
    #[arg(long, conflicts_with = "draft")]
    pub head_map: bool,
    /// Also write the session it ran to this file (JSON, see docs/SESSIONS.md), to open with
    /// `nexttoken --load FILE`.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AttentionMode {
    Mean,
    All,
}

#[derive(Debug, Args, Clone)]
pub struct BenchArgs {
    /// Prompt lengths to prefill, comma-separated.
    #[arg(short = 'p', long, value_delimiter = ',', default_value = "8,64,512")]
    pub prompt_lens: Vec<usize>,
    /// Tokens to decode.
    #[arg(short = 'n', long, default_value_t = 128)]
    pub gen_len: usize,
    /// KV depths for decode, comma-separated: each decode test starts with this many tokens already
    /// in the cache (read untimed), as llama-bench's `-d`. Decode costs more as the context grows.
    #[arg(short = 'd', long, value_delimiter = ',', default_value = "0")]
    pub depths: Vec<usize>,
    /// Repetitions of each test (after one warm-up).
    #[arg(short = 'r', long, default_value_t = 3)]
    pub reps: usize,
    /// Sequence lengths for decode with the KV cache off.
    #[arg(long, value_delimiter = ',', default_value = "16,64,128")]
    pub no_cache_lens: Vec<usize>,
    /// Print JSON instead of a markdown table.
    #[arg(long)]
    pub json: bool,
    /// The SIMD kernels (matmuls and attention) to run, at most: `avx2` measures on an AVX-512
    /// machine what a CPU with only AVX2 runs (the rest of the pass is the same code on both).
    #[arg(long, value_enum, default_value_t = KernelCap::Best)]
    pub isa: KernelCap,
    /// With --draft: also decode -n tokens greedily with speculative decoding, against plain steps
    /// in the same run.
    #[command(flatten)]
    pub draft: DraftArgs,
}

/// `bench --isa`: the fastest matmul kernel set a run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KernelCap {
    /// The fastest this CPU runs.
    Best,
    Avx512,
    Avx2,
    Scalar,
}

/// `--kv`: what the KV cache stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KvCacheType {
    F32,
    F16,
}

impl KvCacheType {
    pub fn precision(self) -> crate::engine::forward::kv_cache::KvPrecision {
        use crate::engine::forward::kv_cache::KvPrecision;
        match self {
            KvCacheType::F32 => KvPrecision::F32,
            KvCacheType::F16 => KvPrecision::F16,
        }
    }
}

/// A name `fetch` knows, or the error listing the names it does.
/// `--threads`: 1 or more, and at most four per core (more only wait on each other: 500 on 2 cores
/// had run for minutes without a word).
fn thread_count(s: &str) -> Result<usize, String> {
    let n: usize = s
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number of threads"))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match n {
        0 => Err("0 threads cannot run the model: give 1 or more (leave it out for all cores)".into()),
        n if n > 4 * cores => Err(format!(
            "{n} threads on this machine's {cores} cores would only wait on each other: give at most {} (leave it out for all {cores})",
            4 * cores
        )),
        n => Ok(n),
    }
}

fn known_model_name(name: &str) -> Result<String, String> {
    match crate::engine::fetch::known(name) {
        Some(m) => Ok(m.name.to_string()),
        None => {
            let names: Vec<&str> = crate::engine::fetch::KNOWN.iter().map(|m| m.name).collect();
            Err(format!(
                "unknown model `{name}`; known: {}",
                names.join(", ")
            ))
        }
    }
}
