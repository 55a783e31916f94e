//! The command line as a new user meets it, run as the real binary: errors are whole sentences with no
//! backtrace, each subcommand lists only its own flags, and out-of-range values are refused.

use crate::support;

use std::process::{Command, Output};

fn nexttoken(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .args(args)
        .env("NEXTTOKEN_MODEL", support::real_model())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_truncated_model_is_one_short_message_even_with_rust_backtrace_set() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(support::real_model()).unwrap();
    let cut = dir.path().join("truncated.gguf");
    // Cut inside the header (the vocabulary alone is ~1 MB), where candle itself reports the error.
    std::fs::write(&cut, &bytes[..4096]).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .args(["trace", "--prompt", "hi", "--model"])
        .arg(&cut)
        .env("RUST_BACKTRACE", "1")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("truncated"), "{err}");
    assert!(
        err.lines().count() <= 3,
        "a short message, no backtrace:\n{err}"
    );
    assert!(
        !err.contains("backtrace") && !err.contains(" at /"),
        "{err}"
    );
}

/// `--kv f16` reaches `trace` (its header names the cache's type; each step's cache holds half the
/// bytes), and with `--server`, whose cache is the server's, it is refused with what to drop.
#[test]
fn kv_f16_halves_the_cache_and_is_refused_for_a_served_model() {
    let lines = |extra: &[&str]| -> Vec<serde_json::Value> {
        let mut args = vec!["trace", "--steps", "2", "--greedy"];
        args.extend(extra);
        let out = nexttoken(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (half, full) = (lines(&["--kv", "f16"]), lines(&[]));
    assert_eq!(half[0]["kv_type"], "f16");
    assert_eq!(full[0]["kv_type"], "f32");
    let bytes = |v: &serde_json::Value| v["kv_bytes"].as_u64().unwrap();
    assert!(bytes(&half[1]) > 0 && 2 * bytes(&half[1]) == bytes(&full[1]));
    let out = nexttoken(&["trace", "--server", "http://127.0.0.1:9", "--kv", "f16"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .contains("--kv sets a local model's KV cache; a served model keeps its server's"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn temperature_zero_is_greedy() {
    let ids = |flag: &str| -> Vec<u64> {
        let out = nexttoken(&["trace", "--steps", "6", flag, "--seed", "3"]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
            .lines()
            .skip(1)
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["token"]["id"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    let greedy = ids("--greedy");
    assert_eq!(ids("--temperature=0"), greedy);
    assert_ne!(
        ids("--temperature=1.5"),
        greedy,
        "a hot sampler wanders from the argmax"
    );
}

#[test]
fn the_tui_checks_its_model_before_taking_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.gguf");
    let out = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .arg("--model")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("not found") && err.contains("nexttoken fetch"),
        "the whole message: {err}"
    );
    assert!(
        !stdout(&out).contains("\x1b[?1049h"),
        "the alternate screen was never entered"
    );
}

#[test]
fn out_of_range_sampler_values_are_refused_with_the_range() {
    for (args, says) in [
        (
            &["trace", "--repeat-penalty", "0"][..],
            "repeat-penalty 0 is out of range: use 1 to 3",
        ),
        (&["trace", "--top-p", "2"][..], "top-p 2 is out of range"),
        (
            &["trace", "--temperature", "100"][..],
            "temperature 100 is out of range",
        ),
        (&["--temperature=-1"][..], "temperature -1 is out of range"),
        (
            &["trace", "--dry-multiplier", "9"][..],
            "dry-multiplier 9 is out of range: use 0 to 5",
        ),
        (
            &["trace", "--dry-base", "0.5"][..],
            "dry-base 0.5 is out of range: use 1 to 5",
        ),
        (
            &["trace", "--dry-allowed-length", "0"][..],
            "dry-allowed-length 0 is out of range: use 1 to 20",
        ),
        (
            &["trace", "--dry-penalty-last-n", "-2"][..],
            "dry-penalty-last-n -2 is out of range: use -1 to 131072",
        ),
        (
            &["trace", "--dry-sequence-breaker", ""][..],
            "use 1 to 40 bytes",
        ),
        (
            &["trace", "--frequency-penalty", "3"][..],
            "frequency-penalty 3 is out of range: use -2 to 2 (0 turns it off)",
        ),
        (
            &["trace", "--presence-penalty", "-2.5"][..],
            "presence-penalty -2.5 is out of range: use -2 to 2 (0 turns it off)",
        ),
        (
            &["trace", "--penalty-last-n", "200000"][..],
            "penalty-last-n 200000 is out of range: use 0 to 131072 (0 turns the penalties off)",
        ),
    ] {
        let out = nexttoken(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn each_subcommand_lists_only_its_own_flags() {
    let help = |args: &[&str]| stdout(&nexttoken(args));
    // The flags a help text lists, each as written before its value or description.
    let flags = |text: &str| -> Vec<String> {
        text.split_whitespace()
            .filter(|w| w.starts_with("--"))
            .map(|w| w.trim_end_matches(',').to_string())
            .collect()
    };
    let bench = help(&["bench", "--help"]);
    for absent in ["--temperature", "--prompt", "--greedy", "--theme", "--chat"] {
        assert!(
            !flags(&bench).iter().any(|f| f == absent),
            "bench --help lists {absent}:\n{bench}"
        );
    }
    assert!(
        bench.contains("--prompt-lens") && bench.contains("--model"),
        "{bench}"
    );
    // Each variable once: clap adds "[env: …]" itself (a doc comment that said it too had doubled it).
    let main = help(&["--help"]);
    assert_eq!(main.matches("NEXTTOKEN_API_KEY").count(), 1, "{main}");
    let trace = help(&["trace", "--help"]);
    for present in ["--prompt", "--temperature", "--steps", "--force", "--model"] {
        assert!(trace.contains(present), "trace --help lacks {present}");
    }
    assert!(!trace.contains("--theme"), "{trace}");
    assert!(
        !trace.contains("TUI"),
        "descriptions fit the subcommand: {trace}"
    );
    let fetch = help(&["fetch", "--help"]);
    assert!(
        !fetch.contains("--prompt") && !fetch.contains("--temperature"),
        "{fetch}"
    );
    let top = help(&["--help"]);
    assert!(top.contains("--theme") && top.contains("--prompt"), "{top}");
    assert!(
        top.contains("[default: 0.8"),
        "defaults are documented: {top}"
    );
}

/// The model's flags are global, so clap lists them under every subcommand: one that does not use a
/// flag refuses it and says why (`fetch --model gemma3-270m` had fetched SmolLM2 without a word); the
/// `--model` that `NEXTTOKEN_MODEL` sets is not refused. `--threads` is 1 to four per core.
#[test]
fn a_subcommand_refuses_the_model_flags_it_does_not_use() {
    let refused = |args: &[&str], says: &[&str]| {
        let out = nexttoken(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        for s in says {
            assert!(err.contains(s), "{args:?}: {s} missing from {err}");
        }
    };
    refused(
        &["fetch", "--model", "gemma3-270m"],
        &[
            "`nexttoken fetch` does not use --model",
            "nexttoken fetch gemma3-270m",
        ],
    );
    refused(
        &["export", "x.json", "--kv", "f16", "--threads", "1"],
        &["does not use --threads, --kv", "needs no model"],
    );
    refused(
        &["lesson", "list", "--tokenizer", "t.json"],
        &["`nexttoken lesson list` does not use --tokenizer"],
    );
    refused(
        &["bench", "--server", "http://127.0.0.1:9"],
        &["`nexttoken bench` does not use --server"],
    );
    // NEXTTOKEN_MODEL (set by `nexttoken()`) is no flag: the list prints.
    let out = nexttoken(&["lesson", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (n, says) in [
        ("0", "0 threads cannot run the model"),
        ("100000", "would only wait on each other"),
    ] {
        let out = nexttoken(&["trace", "--threads", n]);
        assert_eq!(out.status.code(), Some(2), "clap's usage error");
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
}

#[test]
fn the_model_has_a_name_a_class_can_read() {
    use nexttoken::engine::gguf::GgufFile;
    use nexttoken::engine::load::display_name;
    let path = support::real_model();
    let g = GgufFile::open(&path).unwrap();
    assert_eq!(display_name(&g, &path), "SmolLM2 135M Instruct · Q4_1");
    // Renamed to something uninformative, the metadata names it.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("model.gguf");
    assert_eq!(display_name(&g, &plain), "smollm2 135M · Q4_1");
}

#[test]
fn dry_flags_reach_the_trace_settings() {
    let out = nexttoken(&[
        "trace",
        "--steps",
        "1",
        "--dry-multiplier",
        "0.8",
        "--dry-penalty-last-n",
        "-1",
        "--dry-sequence-breaker",
        "\\n",
        "--dry-sequence-breaker",
        "END",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let first = stdout(&out).lines().next().unwrap().to_string();
    let prefill: serde_json::Value = serde_json::from_str(&first).unwrap();
    let s = &prefill["sampler"];
    assert_eq!(s["dry_multiplier"], 0.8f32 as f64);
    assert_eq!(s["dry_base"], 1.75);
    assert_eq!(s["dry_allowed_length"], 2);
    assert_eq!(s["dry_penalty_last_n"], -1);
    // The first --dry-sequence-breaker replaces the defaults; `\n` is read as a newline.
    assert_eq!(s["dry_sequence_breakers"], serde_json::json!(["\n", "END"]));
    let none = nexttoken(&["trace", "--steps", "1", "--dry-sequence-breaker", "none"]);
    assert!(none.status.success(), "{}", stderr(&none));
    let first = stdout(&none).lines().next().unwrap().to_string();
    let prefill: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(
        prefill["sampler"]["dry_sequence_breakers"],
        serde_json::json!([])
    );
    let help = stdout(&nexttoken(&["trace", "--help"]));
    for flag in [
        "--dry-multiplier",
        "--dry-base",
        "--dry-allowed-length",
        "--dry-penalty-last-n",
        "--dry-sequence-breaker",
    ] {
        assert!(help.contains(flag), "trace --help lacks {flag}");
    }
    assert!(help.contains("[default: 1.75"), "{help}");
}

#[test]
fn penalty_flags_reach_the_trace_settings() {
    let out = nexttoken(&[
        "trace",
        "--steps",
        "1",
        "--frequency-penalty",
        "0.5",
        "--presence-penalty",
        "-0.25",
        "--penalty-last-n",
        "16",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let first = stdout(&out).lines().next().unwrap().to_string();
    let prefill: serde_json::Value = serde_json::from_str(&first).unwrap();
    let s = &prefill["sampler"];
    assert_eq!(s["frequency_penalty"], 0.5);
    assert_eq!(s["presence_penalty"], -0.25);
    assert_eq!(s["penalty_last_n"], 16);
    for sub in [
        &["trace", "--help"][..],
        &["compare", "--help"],
        &["--help"],
    ] {
        let help = stdout(&nexttoken(sub));
        for flag in [
            "--frequency-penalty",
            "--presence-penalty",
            "--penalty-last-n",
        ] {
            assert!(help.contains(flag), "{sub:?} lacks {flag}");
        }
        assert!(help.contains("[default: 64; use 0 to 131072"), "{help}");
    }
}

/// `nexttoken bench --json` with one short prefill (8 tokens) and one repetition, then `extra`.
fn quick_bench(extra: &[&str]) -> Output {
    let args = ["bench", "--json", "-p", "8", "-r", "1"];
    nexttoken(&[&args[..], extra].concat())
}

/// `bench --depth` measures decode with a prompt already in the cache, as llama-bench's `-d`; a depth
/// past the context is refused before anything is measured.
#[test]
fn bench_measures_decode_at_a_kv_depth() {
    let out = quick_bench(&["-n", "4", "--no-cache-lens", "8", "-d", "0,64"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let tests: Vec<&str> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["test"].as_str().unwrap())
        .collect();
    assert_eq!(tests, ["pp8", "tg4", "tg4 @ d64", "tg@8 no-kv"]);
    for row in report["rows"].as_array().unwrap() {
        assert!(row["median_tok_s"].as_f64().unwrap() > 0.0, "{row}");
    }
    let out = nexttoken(&["bench", "-n", "128", "-d", "8192"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("--depth 8192") && err.contains("context holds"),
        "{err}"
    );
}

/// `bench --json` sets each decode row against the speed of light: the bytes a step reads are the
/// model's tensor bytes (the file's tensor data) plus the KV cache at the run's mean depth, within 15%,
/// and the measured rate is a fraction of the ceiling the measured bandwidth allows.
#[test]
fn bench_sets_decode_against_the_speed_of_light() {
    let out = quick_bench(&["-n", "4", "--no-cache-lens", "8", "-d", "0,64"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let path = support::real_model();
    let mut f = std::fs::File::open(&path).unwrap();
    let content = candle_core::quantized::gguf_file::Content::read(&mut f).unwrap();
    let tensor_bytes =
        (std::fs::metadata(&path).unwrap().len() as usize) - content.tensor_data_offset as usize;
    let c = nexttoken::engine::gguf::LlamaConfig::from_gguf(
        &nexttoken::engine::gguf::GgufFile::open(&path).unwrap(),
    )
    .unwrap();
    let kv_at = |pos: usize| 2 * c.n_layer * c.n_kv_head * c.head_dim * pos * 4;
    // The kernels' peak, measured in the same run, is above what a memory-bound decode step computes
    // (at least 2 FLOP per weight, and the model has over 100 M of them).
    let peak = report["peak_gflops"].as_f64().unwrap();
    let tg = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["test"] == "tg4")
        .unwrap();
    let decode_gflops = tg["median_tok_s"].as_f64().unwrap() * 2.0 * 100e6 / 1e9;
    assert!(
        peak > decode_gflops,
        "peak {peak} GFLOP/s, decode {decode_gflops}"
    );
    for row in report["rows"].as_array().unwrap() {
        let test = row["test"].as_str().unwrap();
        let light = &row["speed_of_light"];
        let depth = match test {
            "tg4" => 0,
            "tg4 @ d64" => 64,
            _ => {
                assert!(light.is_null(), "{test} is no decode row: {row}");
                continue;
            }
        };
        let want = (tensor_bytes + kv_at(depth + 1)) as f64;
        let got = light["bytes_per_token"].as_f64().unwrap();
        assert!(
            (got / want - 1.0).abs() < 0.15,
            "{test}: {got} bytes against {want}"
        );
        let e = light["efficiency"].as_f64().unwrap();
        assert!(e > 0.0 && e <= 1.2, "{test}: efficiency {e}");
        assert!(light["bandwidth_gb_s"].as_f64().unwrap() > 0.0);
        let ceiling = light["bandwidth_gb_s"].as_f64().unwrap() * 1e9 / got;
        assert!((light["ceiling_tok_s"].as_f64().unwrap() / ceiling - 1.0).abs() < 1e-9);
    }
}

/// `bench --draft` measures plain and speculative decoding in one run, on the same greedy text.
#[test]
fn bench_with_a_draft_reports_both_rates_and_the_acceptance() {
    let out = quick_bench(&[
        "-n",
        "12",
        "--no-cache-lens",
        "4",
        "--draft",
        "layers:20",
        "--draft-k",
        "4",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let b = &report["speculative"];
    let num = |k: &str| b[k].as_f64().unwrap_or_else(|| panic!("{k} in {b}"));
    assert_eq!(b["draft"], "layers:20");
    assert!(num("plain_tok_s") > 0.0 && num("speculative_tok_s") > 0.0);
    assert!((num("speedup") - num("speculative_tok_s") / num("plain_tok_s")).abs() < 1e-9);
    assert!((0.0..=1.0).contains(&num("acceptance")));
    let per_pass = num("tokens_per_target_pass");
    assert!((1.0..=5.0).contains(&per_pass), "{per_pass}");
    assert!(num("target_passes_per_token") <= 1.0, "{b}");
    // 20 of 30 layers, and the whole output head.
    let bytes = num("draft_bytes_ratio");
    assert!(bytes > 20.0 / 30.0 && bytes < 0.9, "{bytes}");
}

/// `bench --isa` runs (and reports) the kernels it is capped at, with the same probabilities as the
/// exact path; a kernel set the CPU lacks is refused with what it runs.
#[test]
fn bench_runs_the_kernels_it_is_capped_at() {
    let run = |isa: &str| quick_bench(&["-n", "2", "--no-cache-lens", "4", "--isa", isa]);
    #[cfg(target_arch = "x86_64")]
    let (has_avx2, has_avx512) = (
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni"),
    );
    #[cfg(not(target_arch = "x86_64"))]
    let (has_avx2, has_avx512) = (false, false);
    for (isa, runs) in [("scalar", true), ("avx2", has_avx2), ("avx512", has_avx512)] {
        let out = run(isa);
        if !runs {
            assert!(!out.status.success(), "--isa {isa} ran on a CPU without it");
            let err = stderr(&out);
            assert!(
                err.contains(&format!("cannot run the {isa} kernels")) && err.contains("scalar"),
                "{err}"
            );
            continue;
        }
        assert!(out.status.success(), "--isa {isa}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(report["isa"], isa, "{report}");
        assert_eq!(report["max_prob_diff_fast_vs_exact"], 0.0, "{report}");
    }
}

mod sampler_flags {
    use clap::Parser;
    use nexttoken::cli::SamplerArgs;
    use nexttoken::protocol::{self as p, SamplerSettings};
    use proptest::prelude::*;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        sampler: SamplerArgs,
    }

    /// Settings within the ranges the command line accepts.
    fn settings() -> impl Strategy<Value = SamplerSettings> {
        let texts = prop::collection::vec(
            prop::sample::select(vec!["\n", ":", "\"", "*", "\\", "ab", "\t"]),
            0..4,
        );
        (
            (
                any::<bool>(),
                0.0f32..=5.0,
                0usize..200,
                0.01f32..=1.0,
                0.0f32..=0.99,
            ),
            (1.0f32..=3.0, -2.0f32..=2.0, -2.0f32..=2.0, 0usize..4096),
            (
                0.0f32..=5.0,
                1.0f32..=5.0,
                1usize..=20,
                -1i32..4096,
                texts,
                any::<u64>(),
            ),
        )
            .prop_map(|(a, b, c)| SamplerSettings {
                greedy: a.0,
                temperature: a.1,
                top_k: a.2,
                top_p: a.3,
                min_p: a.4,
                repeat_penalty: b.0,
                frequency_penalty: b.1,
                presence_penalty: b.2,
                penalty_last_n: b.3,
                dry_multiplier: c.0,
                dry_base: c.1,
                dry_allowed_length: c.2,
                dry_penalty_last_n: c.3,
                dry_sequence_breakers: c.4.into_iter().map(String::from).collect(),
                seed: c.5,
            })
    }

    proptest! {
        /// `SamplerSettings::flags` (the handout's replay command) read back by `SamplerArgs` gives the
        /// same settings, for any settings the ranges allow.
        #[test]
        fn the_flags_read_back_as_the_same_settings(s in settings()) {
            let mut argv = vec!["nexttoken".to_string()];
            for (flag, value) in s.flags() {
                argv.push(format!("--{flag}"));
                argv.extend(value);
            }
            let back = Flags::try_parse_from(&argv).unwrap().sampler.settings().unwrap();
            prop_assert_eq!(back, s, "{:?}", argv);
        }
    }

    /// A value the setting's type cannot hold is refused by clap with the flag and what is wrong.
    #[test]
    fn a_malformed_value_names_its_flag_and_what_is_wrong() {
        for (argv, says) in [
            (
                ["nexttoken", "--temperature", "warm"],
                "--temperature: \"warm\" is not a number",
            ),
            (
                ["nexttoken", "--sample-top-k", "-3"],
                "--sample-top-k: \"-3\" is not a whole number",
            ),
            (
                ["nexttoken", "--seed", "1.5"],
                "--seed: \"1.5\" is not a whole number",
            ),
        ] {
            let err = Flags::try_parse_from(argv)
                .err()
                .expect("refused")
                .to_string();
            assert!(err.contains(says), "{argv:?}: {err}");
        }
    }

    #[test]
    fn the_default_settings_need_no_flag_and_greedy_is_one_rule() {
        assert!(SamplerSettings::default().flags().is_empty());
        let zero = SamplerSettings {
            temperature: 0.0,
            ..SamplerSettings::default()
        };
        assert!(zero.is_greedy() && !zero.greedy);
        let argv = ["nexttoken", "--temperature", "0"];
        let s = Flags::try_parse_from(argv)
            .unwrap()
            .sampler
            .settings()
            .unwrap();
        assert!(
            s.is_greedy(),
            "--temperature 0 means greedy, as in llama.cpp"
        );
        assert!(p::TEMPERATURE.note.contains("greedy"));
    }
}

/// clap's sampler flags are the settings table's, in its order, each with its help, default and range.
fn the_flags_are_the_tables_rows() {
    use clap::CommandFactory;
    use nexttoken::protocol::{SamplerSettings, SETTINGS};

    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        sampler: nexttoken::cli::SamplerArgs,
    }
    let cmd = Flags::command();
    let clap_flags: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    let table_flags: Vec<&str> = SETTINGS.iter().map(|s| s.flag).collect();
    assert_eq!(clap_flags, table_flags);
    for a in cmd.get_arguments() {
        let help = a.get_help().unwrap().to_string();
        let setting = SETTINGS
            .iter()
            .find(|s| Some(s.flag) == a.get_long())
            .unwrap();
        assert!(help.starts_with(setting.help), "{help}");
        if let Some(range) = SamplerSettings::range_text(setting.setting) {
            assert!(
                help.contains(&range),
                "--{} names its range: {help}",
                setting.flag
            );
        }
    }
    assert!(cmd.get_arguments().any(|a| a
        .get_help()
        .unwrap()
        .to_string()
        .contains("[default: 0.8; use 0 to 5")));
}

/// The sampler's settings are declared once (`protocol::settings`): clap's flags are the table's, in
/// its order, each with its help, default and range; every key is a field of the saved settings and a
/// key a lesson's `sampler` table takes; every range is named by its flag; `Setting::names` finds each
/// setting's own row; the panel's rows are the table's.
#[test]
fn the_sampler_settings_are_one_table_that_the_flags_lessons_and_panel_follow() {
    use nexttoken::app::sampler_panel::FIELDS;
    use nexttoken::protocol::{self as p, SamplerPatch, SamplerSettings, Setting, SETTINGS};

    the_flags_are_the_tables_rows();
    let saved = serde_json::to_value(SamplerSettings::default()).unwrap();
    let saved_keys: Vec<&str> = saved
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut table_keys: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
    let mut sorted = saved_keys.clone();
    sorted.sort();
    table_keys.sort();
    assert_eq!(sorted, table_keys);
    for s in SETTINGS {
        let value = toml::Value::try_from(&saved[s.key]).unwrap();
        let text = format!("{} = {value}", s.key);
        let patch: SamplerPatch = toml::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(patch.settings(), SamplerSettings::default(), "{text}");
    }
    assert!(toml::from_str::<SamplerPatch>("top_q = 1").is_err());
    // A file saved before a setting existed still loads, with that setting's default.
    let old: SamplerSettings = serde_json::from_str(r#"{"temperature": 0.5}"#).unwrap();
    assert_eq!(old.temperature, 0.5);
    assert_eq!(old.dry_base, SamplerSettings::default().dry_base);

    for (name, key) in [
        (p::TEMPERATURE.name, "temperature"),
        (p::TOP_P.name, "top_p"),
        (p::MIN_P.name, "min_p"),
        (p::REPEAT_PENALTY.name, "repeat_penalty"),
        (p::FREQUENCY_PENALTY.name, "frequency_penalty"),
        (p::PRESENCE_PENALTY.name, "presence_penalty"),
        (p::PENALTY_LAST_N.name, "penalty_last_n"),
        (p::DRY_MULTIPLIER.name, "dry_multiplier"),
        (p::DRY_BASE.name, "dry_base"),
        (p::DRY_ALLOWED_LENGTH.name, "dry_allowed_length"),
        (p::DRY_PENALTY_LAST_N.name, "dry_penalty_last_n"),
    ] {
        let setting = Setting::ALL.iter().find(|s| s.names().key == key).unwrap();
        assert_eq!(name, setting.names().flag);
    }
    for (i, s) in Setting::ALL.iter().enumerate() {
        assert_eq!(s.names().setting, *s);
        assert_eq!(SETTINGS[i].setting, *s);
    }
    assert_eq!(
        FIELDS,
        Setting::ALL,
        "the panel's rows, in the table's order"
    );
}

/// Input that had been taken without a word: a `--force` past the last step, a model name `fetch`
/// does not know (the message lists those it does), a handout asked for as a PDF.
#[test]
fn input_that_would_be_ignored_is_refused_with_what_to_do() {
    let out = nexttoken(&["trace", "--force", "99:abc", "--steps", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--force at step 99 is past the last step (0)"),
        "{}",
        stderr(&out)
    );
    let out = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .args(["trace", "--model", "llama7b"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("the names `fetch` knows are smollm2-135m, gemma3-270m"),
        "{}",
        stderr(&out)
    );
    let dir = tempfile::tempdir().unwrap();
    let pdf = dir.path().join("h.pdf");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/handout-session.json"
    );
    let out = nexttoken(&["export", fixture, "-o", pdf.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("print it to PDF from a browser"),
        "{}",
        stderr(&out)
    );
    assert!(!pdf.exists());
}
