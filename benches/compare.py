#!/usr/bin/env python3
"""Runs `nexttoken bench --json` and `llama_cpp_bench.py --json` back to back, interleaved twice, and
prints the ratios per test (nexttoken / llama.cpp), quiet and then with a CPU hog keeping another
core busy (`--busy`). Not run by CI. Usage, from the repository root after
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
         "-p", "64,512", "-n", "128", "-d", depths, "-r", "3", "--no-cache-lens", "64,256"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def theirs(args, depths):
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "llama_cpp_bench.py"), "--json", "--threads", str(args.threads),
         "--model", args.model, "-p", "64,512", "-n", "128", "-d", depths, "-r", "3", "--ctx", "4096"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def busy(n, secs=900):
    """`n` processes that each keep a core busy, for at most `secs` seconds (killed by the caller)."""
    return [subprocess.Popen([sys.executable, "-c", HOG.format(secs=secs)]) for _ in range(n)]


def table(a, b, label):
    rates_b = {row["test"]: row["median_tok_s"] for row in b["rows"]}
    print(f"{label}, load {os.getloadavg()[0]:.2f}")
    print("| test | nexttoken tok/s | llama.cpp tok/s | ratio |")
    print("|---|---:|---:|---:|")
    for row in a["rows"]:
        t = row["test"]
        if t in rates_b:
            print(f"| {t} | {row['median_tok_s']:.1f} | {rates_b[t]:.1f} | {row['median_tok_s'] / rates_b[t]:.2f}x |")


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
    args = ap.parse_args()
    args.model = os.path.abspath(args.model)
    print(f"model: {args.model}")
    for r in range(args.rounds):
        a, b = ours(args, args.depths), theirs(args, args.depths)
        table(a, b, f"round {r + 1}: threads {args.threads}, quiet")
        print(f"step overhead {a['step_overhead']:.3f}x, load {a['load_ms']:.0f} ms, "
              f"peak RSS {a['peak_rss_mib']:.0f} MiB, max |p_fast - p_exact| {a['max_prob_diff_fast_vs_exact']:.1e}, "
              f"decode matmuls on {a.get('decode_threads', '?')} thread(s)")
        for row in a["rows"]:
            if "no-kv" in row["test"]:
                print(f"  {row['test']}: {row['median_ms']:.1f} ms per step")
        if args.busy > 0:
            hogs = busy(args.busy)
            try:
                a, b = ours(args, "0"), theirs(args, "0")
                table(a, b, f"round {r + 1}: threads {args.threads}, {args.busy} core(s) kept busy")
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
        print()


if __name__ == "__main__":
    main()
