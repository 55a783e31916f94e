#!/usr/bin/env python3
"""llama.cpp baseline for nexttoken, measured the way llama-bench measures.

Not run by CI. Needs the llama-cpp-python package (see benches/README.md).

Tests (same definitions as llama-bench):
  ppN   one llama_decode of N deterministic token ids, starting from an empty
        KV cache (split into n_batch-sized decodes only if N > --batch);
        logits are requested for the last token only.
  tgN   N single-token llama_decode calls, starting from an empty KV cache,
        positions 0..N-1, logits requested for every token (as in generation).
  tgN @ dD  the same N decodes after D tokens were read into the cache
        (untimed), positions D..D+N-1, as llama-bench's -d.
        Token ids are deterministic pseudo-random ids, not sampled.

Each test gets one untimed warm-up run of the same shape, then --reps timed
runs. The KV cache is cleared (untimed) before every run. The timer covers only
the decode calls plus llama_synchronize. tok/s = N / elapsed per run; we report
the median and the sample standard deviation over the runs (plus the mean,
which is what llama-bench prints as "t/s").

Uses the low-level ctypes API (llama_cpp.llama_decode with a llama_batch),
so no sampling, detokenization or Python-side logits copies are timed.
"""

import argparse
import ctypes
import json
import os
import platform
import random
import statistics
import sys
import time

try:
    import llama_cpp
    from llama_cpp import llama_cpp as L
except ImportError:  # pragma: no cover
    sys.exit("llama_cpp not importable; install it first (see benches/README.md)")

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODEL = os.path.join(HERE, "..", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def _fn(*names):
    """First of the given llama_cpp functions that exists in the installed version."""
    for n in names:
        f = getattr(L, n, None)
        if f is not None:
            return f
    raise RuntimeError("installed llama_cpp has none of: " + ", ".join(names))


def _quiet_logs(verbose):
    if verbose:
        return None

    @L.llama_log_callback
    def _drop(level, text, user_data):  # noqa: ARG001
        pass

    L.llama_log_set(_drop, ctypes.c_void_p(0))
    return _drop  # keep a reference alive


def _ggml_info():
    """ggml version/commit baked in at build time, when the library exports them."""
    out = {}
    lib = getattr(L, "_lib", None)
    if lib is None:
        return out
    for key in ("ggml_version", "ggml_commit"):
        try:
            f = getattr(lib, key)
        except AttributeError:
            continue
        f.restype = ctypes.c_char_p
        f.argtypes = []
        v = f()
        if v:
            out[key] = v.decode("utf-8", "replace")
    return out


class Bench:
    def __init__(self, model_path, threads, n_ctx, n_batch, n_ubatch, seed):
        L.llama_backend_init()
        mparams = L.llama_model_default_params()
        mparams.n_gpu_layers = 0
        load = _fn("llama_model_load_from_file", "llama_load_model_from_file")
        self.model = load(model_path.encode(), mparams)
        if not self.model:
            raise RuntimeError("failed to load model " + model_path)

        cparams = L.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_batch
        cparams.n_ubatch = n_ubatch
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        self.flash_attn = getattr(cparams, "flash_attn_type", getattr(cparams, "flash_attn", None))
        init = _fn("llama_init_from_model", "llama_new_context_with_model")
        self.ctx = init(self.model, cparams)
        if not self.ctx:
            raise RuntimeError("failed to create context")

        if hasattr(L, "llama_model_get_vocab"):
            vocab = L.llama_model_get_vocab(self.model)
            self.n_vocab = L.llama_vocab_n_tokens(vocab)
            self.add_bos = bool(L.llama_vocab_get_add_bos(vocab))
            self.bos = L.llama_vocab_bos(vocab)
        else:
            self.n_vocab = L.llama_n_vocab(self.model)
            self.add_bos = bool(L.llama_add_bos_token(self.model))
            self.bos = L.llama_token_bos(self.model)

        self.n_ctx = L.llama_n_ctx(self.ctx)
        self.n_batch = n_batch
        self.seed = seed
        self.batch = L.llama_batch_init(n_batch, 0, 1)

        if hasattr(L, "llama_memory_clear"):
            mem = L.llama_get_memory(self.ctx)
            self._clear = lambda: L.llama_memory_clear(mem, False)
            self.clear_fn = "llama_memory_clear"
        elif hasattr(L, "llama_kv_self_clear"):
            self._clear = lambda: L.llama_kv_self_clear(self.ctx)
            self.clear_fn = "llama_kv_self_clear"
        else:
            self._clear = lambda: L.llama_kv_cache_clear(self.ctx)
            self.clear_fn = "llama_kv_cache_clear"

    def close(self):
        L.llama_batch_free(self.batch)
        L.llama_free(self.ctx)
        _fn("llama_model_free", "llama_free_model")(self.model)

    # -- token ids: deterministic, BOS first when the model adds one (like llama-bench)
    def tokens(self, n, salt):
        rng = random.Random(self.seed * 1_000_003 + salt)
        ids = [rng.randrange(self.n_vocab) for _ in range(n)]
        if self.add_bos and n > 0:
            ids[0] = self.bos
        return ids

    def _fill(self, ids, pos0, last_logits_only):
        b = self.batch
        n = len(ids)
        b.n_tokens = n
        for i, t in enumerate(ids):
            b.token[i] = t
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 0 if (last_logits_only and i != n - 1) else 1

    def _decode(self):
        rc = L.llama_decode(self.ctx, self.batch)
        if rc != 0:
            raise RuntimeError("llama_decode returned %d" % rc)

    def run_pp(self, ids):
        """One timed prompt run; returns elapsed ns. Batch filling is untimed when N <= n_batch."""
        self._clear()
        chunks = [ids[i:i + self.n_batch] for i in range(0, len(ids), self.n_batch)]
        if len(chunks) == 1:
            self._fill(chunks[0], 0, True)
            t0 = time.perf_counter_ns()
            self._decode()
            L.llama_synchronize(self.ctx)
            return time.perf_counter_ns() - t0
        t0 = time.perf_counter_ns()
        pos = 0
        for k, c in enumerate(chunks):
            # only the very last token of the prompt needs logits
            self._fill(c, pos, True)
            if k != len(chunks) - 1:
                self.batch.logits[len(c) - 1] = 0
            self._decode()
            pos += len(c)
        L.llama_synchronize(self.ctx)
        return time.perf_counter_ns() - t0

    def _read_untimed(self, ids):
        """Reads `ids` into the cache from position 0, in n_batch chunks, untimed."""
        for start in range(0, len(ids), self.n_batch):
            chunk = ids[start:start + self.n_batch]
            self._fill(chunk, start, True)
            self._decode()
        L.llama_synchronize(self.ctx)

    def run_tg(self, ids, depth_ids=()):
        """N single-token decodes after `depth_ids` (read untimed); returns elapsed ns."""
        self._clear()
        self._read_untimed(list(depth_ids))
        depth = len(depth_ids)
        b = self.batch
        b.n_tokens = 1
        b.n_seq_id[0] = 1
        b.seq_id[0][0] = 0
        b.logits[0] = 1
        ctx = self.ctx
        t0 = time.perf_counter_ns()
        for p, t in enumerate(ids):
            b.token[0] = t
            b.pos[0] = depth + p
            rc = L.llama_decode(ctx, b)
            if rc != 0:
                raise RuntimeError("llama_decode returned %d" % rc)
            L.llama_synchronize(ctx)
        return time.perf_counter_ns() - t0


def measure(bench, kind, n, reps, depth=0):
    ids = bench.tokens(n, salt=(0 if kind == "pp" else 1) * 100_000 + n)
    if kind == "pp":
        run = bench.run_pp
    else:
        depth_ids = bench.tokens(depth, salt=200_000 + depth)
        run = lambda ids: bench.run_tg(ids, depth_ids)  # noqa: E731
    run(ids)  # warm-up, untimed
    samples = [run(ids) for _ in range(reps)]
    bench._clear()
    tps = [n * 1e9 / s for s in samples]
    test = "%s%d" % (kind, n) + (" @ d%d" % depth if depth else "")
    return {
        "test": test,
        "tokens": n,
        "median_tok_s": round(statistics.median(tps), 2),
        "stddev_tok_s": round(statistics.stdev(tps), 2) if len(tps) > 1 else 0.0,
        "mean_tok_s": round(statistics.fmean(tps), 2),
        "best_tok_s": round(max(tps), 2),  # least-disturbed run on a shared machine
        "median_ms": round(statistics.median(samples) / 1e6, 3),
        "samples_ms": [round(s / 1e6, 3) for s in samples],
    }


def _int_list(s):
    return [int(x) for x in s.split(",") if x.strip()] if s else []


def _peak_rss_mib():
    """This process's peak resident set size in MiB (ru_maxrss is in KiB on Linux)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=DEFAULT_MODEL)
    ap.add_argument("-t", "--threads", type=int, default=2, help="n_threads and n_threads_batch (default 2)")
    ap.add_argument("-p", "--n-prompt", default="8,64,512", help="comma list of prompt sizes (default 8,64,512)")
    ap.add_argument("-n", "--n-gen", default="128", help="comma list of generation lengths (default 128)")
    ap.add_argument("-d", "--depth", default="0", help="comma list of KV depths for tg (default 0)")
    ap.add_argument("-r", "--reps", type=int, default=3, help="timed repetitions per test (default 3)")
    ap.add_argument("--ctx", type=int, default=1024, help="n_ctx (default 1024)")
    ap.add_argument("-b", "--batch", type=int, default=512, help="n_batch (default 512)")
    ap.add_argument("-ub", "--ubatch", type=int, default=512, help="n_ubatch (default 512)")
    ap.add_argument("--seed", type=int, default=1234, help="seed for the token ids (default 1234)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a markdown table")
    ap.add_argument("-v", "--verbose", action="store_true", help="keep llama.cpp's log output")
    a = ap.parse_args()

    pp, tg, depths = _int_list(a.n_prompt), _int_list(a.n_gen), _int_list(a.depth) or [0]
    for n in pp + [g + d for g in tg for d in depths]:
        if n > a.ctx:
            ap.error("test size %d exceeds --ctx %d" % (n, a.ctx))

    _keep = _quiet_logs(a.verbose)  # noqa: F841
    load_before = [round(x, 2) for x in os.getloadavg()]
    rss_before = _peak_rss_mib()
    bench = Bench(os.path.abspath(a.model), a.threads, a.ctx, a.batch, a.ubatch, a.seed)
    try:
        rows = [measure(bench, "pp", n, a.reps) for n in pp]
        rows += [measure(bench, "tg", n, a.reps, d) for n in tg for d in depths]
    finally:
        sysinfo = L.llama_print_system_info().decode("utf-8", "replace").strip()
        meta = {
            "threads": a.threads,
            "llama_cpp_python": getattr(llama_cpp, "__version__", "unknown"),
            **_ggml_info(),
            "model": os.path.basename(a.model),
            "n_ctx": bench.n_ctx,
            "n_batch": a.batch,
            "n_ubatch": a.ubatch,
            "flash_attn": bench.flash_attn,
            "reps": a.reps,
            "warmup": 1,
            "kv_clear": bench.clear_fn,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_before": load_before,  # 1/5/15-min; the machine is shared
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "system_info": sysinfo,
            # This process's peak resident memory: the interpreter's own (before the model) and all.
            "rss_before_model_mib": rss_before,
            "peak_rss_mib": _peak_rss_mib(),
        }
        bench.close()

    if a.json:
        print(json.dumps({**meta, "rows": rows}, indent=1))
        return

    ver = meta["llama_cpp_python"]
    if "ggml_commit" in meta:
        ver += " (ggml %s, commit %s)" % (meta.get("ggml_version", "?"), meta["ggml_commit"])
    print("llama-cpp-python %s, %s, threads=%d, n_ctx=%d, n_batch=%d, n_ubatch=%d, reps=%d (+1 warm-up)"
          % (ver, meta["model"], a.threads, meta["n_ctx"], a.batch, a.ubatch, a.reps))
    print(sysinfo)
    print("load average (1/5/15 min) before %s, after %s on %d CPUs" % (
        meta["loadavg_before"], meta["loadavg_after"], meta["cpus"]))
    print()
    print("| test | tokens | median tok/s | stddev tok/s | mean tok/s | best tok/s | median ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.3f |" % (
            r["test"], r["tokens"], r["median_tok_s"], r["stddev_tok_s"], r["mean_tok_s"], r["best_tok_s"],
            r["median_ms"]))


if __name__ == "__main__":
    main()
