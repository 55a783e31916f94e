#!/usr/bin/env python3
"""Runs `nexttoken bench --json` and `llama_cpp_bench.py --json` back to back, interleaved twice, and
prints the ratios per test (nexttoken / llama.cpp), quiet and then with a CPU hog keeping another
core busy (`--busy`), then a summary: each test's ratio in every round against issue 29's targets.
Not run by CI. Usage, from the repository root after
`cargo build --release`:  python3 benches/compare.py [--threads 2] [--model PATH] [--binary PATH]
Both sides read the same GGUF file (default: the SmolLM2 file under models/).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


HOG = "import time\nend = time.time() + {secs}\nwhile time.time() < end:\n    pass\n"


def ours(args, depths):
    out = subprocess.run(
        [args.binary, "bench", "--json", "--threads", str(args.threads), "--model", args.model,
         "-p", "64,512", "-n", "128", "-d", depths, "-r", "3", "--no-cache-lens", "64,256", "--isa", args.isa,
         "--kv", args.kv],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def theirs(args, depths):
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "llama_cpp_bench.py"), "--json", "--threads", str(args.threads),
         "--model", args.model, "-p", "64,512", "-n", "128", "-d", depths, "-r", "3", "--ctx", "4096"],
        check=True, capture_output=True, text=True, env=llama_env(args)).stdout
    return json.loads(out)


def llama_env(args):
    """The environment for llama.cpp's side: `--llama-path` first on the module path, when given."""
    env = dict(os.environ)
    if args.llama_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.llama_path, env.get("PYTHONPATH")]))
    return env


def busy(n, secs=900):
    """`n` processes that each keep a core busy, for at most `secs` seconds (killed by the caller)."""
    return [subprocess.Popen([sys.executable, "-c", HOG.format(secs=secs)]) for _ in range(n)]


# Issue 29's targets: (test as the summary names it, at least / at most, the line). "peak RSS" is
# nexttoken's peak over llama.cpp's (its process, interpreter included, at n_ctx 4096); "decode
# efficiency" is tg128 against this machine's speed of light (bytes a step reads over the bandwidth).
TARGETS = {
    "pp512": (">=", 3.0),
    "tg128": (">=", 1.5),
    "tg128 @ d2048": (">=", 1.6),
    "step overhead": ("<=", 1.03),
    "peak RSS": ("<=", 1.0),
    "decode efficiency": (">=", 0.8),
}
# Gemma 3 270M's: its own pp512 line; the issue sets no depth, overhead or efficiency line for it.
GEMMA_TARGETS = {"pp512": (">=", 2.0), "tg128": (">=", 1.5), "peak RSS": ("<=", 1.0)}


def targets_for(model):
    """The targets of the model at path `model` (Gemma 3's when its file name says gemma)."""
    return GEMMA_TARGETS if "gemma" in os.path.basename(model).lower() else TARGETS


def table(a, b, label, seen, suffix=""):
    """Prints one part's table and records each ratio in `seen[test + suffix]`."""
    rates_b = {row["test"]: row["median_tok_s"] for row in b["rows"]}
    print(f"{label}, load {os.getloadavg()[0]:.2f}")
    print("| test | nexttoken tok/s | llama.cpp tok/s | ratio |")
    print("|---|---:|---:|---:|")
    for row in a["rows"]:
        t = row["test"]
        if t in rates_b:
            ratio = row["median_tok_s"] / rates_b[t]
            seen.setdefault(t + suffix, []).append(ratio)
            print(f"| {t} | {row['median_tok_s']:.1f} | {rates_b[t]:.1f} | {ratio:.2f}x |")


def summary(seen, targets):
    """Each test's ratio in every round, and whether it met its target (of `targets`) in each."""
    rounds = max(len(v) for v in seen.values())
    print(f"summary over {rounds} round(s): nexttoken / llama.cpp (step overhead: step / bare forward)")
    print("| test | each round | target | rounds met |")
    print("|---|---|---|---:|")
    for test, ratios in seen.items():
        each = ", ".join(f"{r:.2f}x" if test != "step overhead" else f"{r:.3f}x" for r in ratios)
        if test in targets:
            op, line = targets[test]
            met = sum(r >= line if op == ">=" else r <= line for r in ratios)
            sign = "≥" if op == ">=" else "≤"
            print(f"| {test} | {each} | {sign} {line}x | {met} of {len(ratios)} |")
        else:
            print(f"| {test} | {each} | | |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--model", default=DEFAULT_MODEL, help="the GGUF file both sides read")
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ap.add_argument("--binary", default=os.path.join(target, "release", "nexttoken"),
                    help="the nexttoken binary (default: release/nexttoken under $CARGO_TARGET_DIR or target/)")
    ap.add_argument("--depths", default="0,512,2048", help="KV depths for tg, comma-separated")
    ap.add_argument("--busy", type=int, default=1,
                    help="after the quiet runs, run both engines again (depth 0) with this many CPU hogs "
                         "keeping cores busy (default 1: the other core of a 2-core machine; 0 skips)")
    ap.add_argument("--isa", default="best", choices=["best", "avx512", "avx2", "scalar"],
                    help="nexttoken's matmul kernels, at most (`bench --isa`): avx2 on an AVX-512 machine "
                         "stands in for an AVX2-only CPU; pair it with an AVX2-only llama.cpp (--llama-path)")
    ap.add_argument("--kv", default="f32", choices=["f32", "f16"],
                    help="nexttoken's KV cache (`bench --kv`): f16 stores it as llama.cpp does (its default "
                         "cache type), half the bytes a deep decode step reads; f32 (the default) keeps "
                         "candle's bits")
    ap.add_argument("--llama-path", default=None,
                    help="a folder holding another llama_cpp build (pip install --target DIR ...), "
                         "put first on llama.cpp's module path")
    args = ap.parse_args()
    args.model = os.path.abspath(args.model)
    print(f"model: {args.model}")
    seen_isa = False
    seen = {}
    for r in range(args.rounds):
        a, b = ours(args, args.depths), theirs(args, args.depths)
        if not seen_isa:
            seen_isa = True
            print(f"nexttoken's matmul kernels: {a.get('isa', '?')}, KV cache {a.get('kv_cache', 'f32')}; "
                  f"llama.cpp (KV cache f16): {b.get('system_info', '?')}")
        table(a, b, f"round {r + 1}: threads {args.threads}, quiet", seen)
        seen.setdefault("step overhead", []).append(a["step_overhead"])
        if b.get("peak_rss_mib"):
            seen.setdefault("peak RSS", []).append(a["peak_rss_mib"] / b["peak_rss_mib"])
            print(f"peak RSS: nexttoken {a['peak_rss_mib']:.0f} MiB, llama.cpp {b['peak_rss_mib']:.0f} MiB "
                  f"({b['rss_before_model_mib']:.0f} MiB of it the interpreter's before the model)")
        for row in a["rows"]:
            light = row.get("speed_of_light")
            if row["test"] == "tg128" and light:
                seen.setdefault("decode efficiency", []).append(light["efficiency"])
                print(f"tg128 against the speed of light: {light['efficiency']:.0%} of "
                      f"{light['ceiling_tok_s']:.0f} tok/s ({light['bandwidth_gb_s']:.1f} GB/s)")
        print(f"step overhead {a['step_overhead']:.3f}x, load {a['load_ms']:.0f} ms, "
              f"peak RSS {a['peak_rss_mib']:.0f} MiB, max |p_fast - p_exact| {a['max_prob_diff_fast_vs_exact']:.1e}, "
              f"decode matmuls on {a.get('decode_threads', '?')} thread(s), "
              f"prefetch {'on' if a.get('decode_prefetch', True) else 'off'}")
        for row in a["rows"]:
            if "no-kv" in row["test"]:
                print(f"  {row['test']}: {row['median_ms']:.1f} ms per step")
        if args.busy > 0:
            hogs = busy(args.busy)
            try:
                a, b = ours(args, "0"), theirs(args, "0")
                table(a, b, f"round {r + 1}: threads {args.threads}, {args.busy} core(s) kept busy", seen,
                      ", busy")
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
        print()
    summary(seen, targets_for(args.model))


if __name__ == "__main__":
    main()
