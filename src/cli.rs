//! Command-line arguments: the TUI by default, and the `fetch`, `trace` and `bench` subcommands.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "nexttoken",
    version,
    about = "Watch a real language model write, one token at a time."
)]
pub struct Cli {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub sampler: SamplerArgs,
    /// Prompt to start the TUI with.
    #[arg(long, global = true)]
    pub prompt: Option<String>,
    /// Wrap the prompt in the model's chat template.
    #[arg(long, global = true)]
    pub chat: bool,
    /// Colour theme for the TUI (`projector` is high-contrast for classrooms).
    #[arg(long, value_enum, default_value_t = Theme::Default)]
    pub theme: Theme,
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Theme {
    Default,
    Projector,
}

#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// A llama-architecture GGUF file. Default: the fetched SmolLM2-135M-Instruct Q4_1.
    #[arg(long, global = true, env = "NEXTTOKEN_MODEL")]
    pub model: Option<PathBuf>,
    /// A tokenizer.json to use instead of the one built from the GGUF metadata.
    #[arg(long, global = true)]
    pub tokenizer: Option<PathBuf>,
    /// Worker threads for the model (default: all cores).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
}

#[derive(Debug, Args, Clone)]
pub struct SamplerArgs {
    /// Always take the most likely token.
    #[arg(long, global = true)]
    pub greedy: bool,
    #[arg(long, global = true)]
    pub temperature: Option<f32>,
    /// Sampler top-k (0 = off). Not to be confused with `--top-k`, the number of candidates shown.
    #[arg(long = "sample-top-k", global = true)]
    pub sample_top_k: Option<usize>,
    #[arg(long, global = true)]
    pub top_p: Option<f32>,
    #[arg(long, global = true)]
    pub min_p: Option<f32>,
    #[arg(long, global = true)]
    pub repeat_penalty: Option<f32>,
    #[arg(long, global = true)]
    pub seed: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Download the default model (SmolLM2-135M-Instruct Q4_1) into models/.
    Fetch {
        /// Download again even if the file is present and verified.
        #[arg(long)]
        force: bool,
    },
    /// Print a session as JSON Lines: one line for the prefill, one per step.
    Trace(TraceArgs),
    /// Measure prefill and decode speed.
    Bench(BenchArgs),
}

#[derive(Debug, Args, Clone)]
pub struct TraceArgs {
    /// Tokens to generate.
    #[arg(long, default_value_t = 16)]
    pub steps: usize,
    /// Force tokens at steps: `STEP:ID` or `STEP:text` (text is tokenised and forced from that step on).
    /// Repeatable.
    #[arg(long)]
    pub force: Vec<String>,
    /// Candidates to list per step.
    #[arg(long, default_value_t = 10)]
    pub top_k: usize,
    /// Add attention of the newest query row: `mean` (over heads, per layer) or `all` (every layer and head).
    #[arg(long, value_enum)]
    pub attention: Option<AttentionMode>,
    /// Run without the KV cache (every step re-reads the whole sequence).
    #[arg(long)]
    pub no_kv_cache: bool,
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
    /// Repetitions of each test (after one warm-up).
    #[arg(short = 'r', long, default_value_t = 3)]
    pub reps: usize,
    /// Sequence lengths for decode with the KV cache off.
    #[arg(long, value_delimiter = ',', default_value = "16,64,128")]
    pub no_cache_lens: Vec<usize>,
    /// Print JSON instead of a markdown table.
    #[arg(long)]
    pub json: bool,
}
