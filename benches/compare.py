#!/usr/bin/env python3
"""Runs `nexttoken bench --json` and `llama_cpp_bench.py --json` back to back, interleaved twice, and
prints the ratios per test (nexttoken / llama.cpp). Not run by CI. Usage, from the repository root after
`cargo build --release`:  python3 benches/compare.py [--threads 2]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def ours(threads):
    out = subprocess.run(
        [os.path.join(ROOT, "target/release/nexttoken"), "bench", "--json", "--threads", str(threads),
         "-p", "64,512", "-n", "128", "-d", "0,512,2048", "-r", "3", "--no-cache-lens", "64,256"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def theirs(threads):
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "llama_cpp_bench.py"), "--json", "--threads", str(threads),
         "-p", "64,512", "-n", "128", "-d", "0,512,2048", "-r", "3", "--ctx", "4096"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    for r in range(args.rounds):
        a, b = ours(args.threads), theirs(args.threads)
        rates_b = {row["test"]: row["median_tok_s"] for row in b["rows"]}
        print(f"round {r + 1}: threads {args.threads}, load {os.getloadavg()[0]:.2f}")
        print("| test | nexttoken tok/s | llama.cpp tok/s | ratio |")
        print("|---|---:|---:|---:|")
        for row in a["rows"]:
            t = row["test"]
            if t in rates_b:
                print(f"| {t} | {row['median_tok_s']:.1f} | {rates_b[t]:.1f} | {row['median_tok_s'] / rates_b[t]:.2f}x |")
        print(f"step overhead {a['step_overhead']:.3f}x, load {a['load_ms']:.0f} ms, "
              f"peak RSS {a['peak_rss_mib']:.0f} MiB, max |p_fast - p_exact| {a['max_prob_diff_fast_vs_exact']:.1e}")
        for row in a["rows"]:
            if "no-kv" in row["test"]:
                print(f"  {row['test']}: {row['median_ms']:.1f} ms per step")
        print()


if __name__ == "__main__":
    main()
