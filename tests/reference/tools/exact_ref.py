#!/usr/bin/env python3
"""Independent float64 reference forward for a llama-architecture GGUF (e.g. SmolLM2-135M-Instruct.Q4_1.gguf).

"Exact model" here means: the weights exactly as the GGUF stores them (Q4_1 / Q8_0 blocks dequantised in float64,
d*q + m with no float32 rounding), and every activation, norm, rope, softmax and matmul in float64.  No 8-bit
activation quantisation, no f16 KV cache.

Uses `gguf` (llama.cpp's gguf-py) only to parse the file; the block dequantisers are written out here in float64
and cross-checked against gguf.quants.dequantize (float32) on load when --check is passed.

Rope: llama.cpp's convert_hf_to_gguf.py permutes HF's attn_q/attn_k rows for the llama arch, so in a GGUF the
rotation pairs are adjacent (2i, 2i+1) ("normal"/GPT-J rope, LLAMA_ROPE_TYPE_NORM).  --rope neox uses (i, i+d/2).

Optional simulations (NOT the reference; for judging how much deviation 8-bit activations cause by themselves):
  act="q8"  : round each quantised matmul's input the ggml way (Q8_1 blocks of 32 for Q4_1 weights, including the f16
              rounding of d and s = d*sum(q); Q8_0 blocks for Q8_0 weights), then multiply in float64.
  kv16=True : additionally round q, k, v (after rope) and the attention probabilities to f16 (llama.cpp's f16 KV cache).

usage:
  exact_ref.py --ids 504,3575,282,4649,314 [--top 10] [--rope norm|neox] [--all-positions]
  python3 -c 'import exact_ref; m = exact_ref.Model(path); p = m.probs(ids)'   # probs: (T, vocab) float64
"""
import argparse, json, os, sys
import numpy as np

DEFAULT_MODEL = "models/SmolLM2-135M-Instruct.Q4_1.gguf"  # run from the repository root


def _f16(b):
    return b.view(np.float16).astype(np.float64)


def q4_1_mins(t):
    """Per-block m of a Q4_1 tensor as float64, shape (rows, ne0/32)."""
    blk = np.ascontiguousarray(t.data).reshape(-1, 20)
    ne = [int(x) for x in t.shape]
    return _f16(blk[:, 2:4].copy())[:, 0].reshape(-1, ne[0] // 32)


def quant_act(x, with_s):
    """ggml quantize_row_q8_1 / q8_0 (ref): per 32-block, f32 d = amax/127, q = round-half-away(x/d) in f32, f16 d.
    Returns (x_dequant float64 = f16(d)*q, s_err float64 per block = f16(d*sum q) - f16(d)*sum q, or None)."""
    T, n = x.shape
    xb = x.astype(np.float32).reshape(T, n // 32, 32)
    amax = np.max(np.abs(xb), axis=2, keepdims=True)
    d = amax / np.float32(127.0)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    v = (xb * idv).astype(np.float32)
    q = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))
    d16 = d.astype(np.float16).astype(np.float64)
    xd = (d16 * q.astype(np.float64)).reshape(T, n)
    if not with_s:
        return xd, None
    sq = q.sum(axis=2)                                            # (T, nb), exact integers
    s16 = (d[..., 0] * sq.astype(np.float32)).astype(np.float16).astype(np.float64)
    return xd, s16 - d16[..., 0] * sq


def dequant_f64(t):
    """Dequantise a GGUFReader tensor to a float64 array of numpy shape reversed(ne), i.e. (rows, ne0)."""
    from gguf import GGMLQuantizationType as Q
    ne = [int(x) for x in t.shape]          # ne[0] innermost
    shape = tuple(reversed(ne))
    raw = np.ascontiguousarray(t.data)
    qt = t.tensor_type
    if qt == Q.F32:
        return raw.astype(np.float64).reshape(shape)
    if qt == Q.F16:
        return raw.astype(np.float64).reshape(shape)
    b = raw.reshape(-1)
    if qt == Q.Q8_0:                         # block: d f16, qs int8[32]
        blk = b.reshape(-1, 34)
        d = _f16(blk[:, 0:2].copy())[:, 0:1]
        q = blk[:, 2:34].view(np.int8).astype(np.float64)
        return (d * q).reshape(shape)
    if qt == Q.Q4_1:                         # block: d f16, m f16, qs u8[16]; lo nibbles -> 0..15, hi -> 16..31
        blk = b.reshape(-1, 20)
        d = _f16(blk[:, 0:2].copy())[:, 0:1]
        m = _f16(blk[:, 2:4].copy())[:, 0:1]
        qs = blk[:, 4:20]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float64)
        return (d * q + m).reshape(shape)
    if qt == Q.Q4_0:                         # block: d f16, qs u8[16]; (q - 8) * d
        blk = b.reshape(-1, 18)
        d = _f16(blk[:, 0:2].copy())[:, 0:1]
        qs = blk[:, 2:18]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float64) - 8.0
        return (d * q).reshape(shape)
    # fall back to gguf-py (float32) for anything else
    from gguf import quants
    return quants.dequantize(t.data, qt).astype(np.float64).reshape(shape)


class Model:
    def __init__(self, path=DEFAULT_MODEL, rope="norm", check=False, act="exact", kv16=False):
        from gguf import GGUFReader
        r = GGUFReader(path)
        f = lambda k: r.fields[k].contents()
        arch = f("general.architecture")
        assert arch == "llama", arch
        self.n_layer = int(f("llama.block_count"))
        self.dim = int(f("llama.embedding_length"))
        self.n_head = int(f("llama.attention.head_count"))
        self.n_kv = int(f("llama.attention.head_count_kv"))
        self.head_dim = self.dim // self.n_head
        self.n_rot = int(f("llama.rope.dimension_count")) if "llama.rope.dimension_count" in r.fields else self.head_dim
        self.theta = float(f("llama.rope.freq_base"))
        self.eps = float(f("llama.attention.layer_norm_rms_epsilon"))
        self.rope = rope
        self.act, self.kv16 = act, kv16
        self.w = {}
        self.qtype = {}
        self.mins = {}
        for t in r.tensors:
            a = dequant_f64(t)
            if check and t.tensor_type.name != "F32":
                from gguf import quants
                ref = quants.dequantize(t.data, t.tensor_type).astype(np.float64).reshape(a.shape)
                err = np.max(np.abs(ref - a)) / max(1e-30, np.max(np.abs(a)))
                assert err < 1e-6, (t.name, err)
            self.w[t.name] = a
            self.qtype[t.name] = t.tensor_type.name
            if act == "q8" and t.tensor_type.name == "Q4_1":
                self.mins[t.name] = q4_1_mins(t)
        self.tok = self.w["token_embd.weight"]          # (vocab, dim)
        self.out = self.w.get("output.weight", self.tok)  # tied head when absent
        self.vocab = self.tok.shape[0]

    def mm(self, x, name):
        """x @ W^T for weight `name`, exact or with simulated 8-bit activations."""
        W = self.w[name]
        qt = self.qtype.get(name, "F32")
        if self.act != "q8" or qt not in ("Q4_1", "Q8_0"):
            return x @ W.T
        xd, serr = quant_act(x, with_s=(qt == "Q4_1"))
        y = xd @ W.T
        if serr is not None:
            y += serr @ self.mins[name].T
        return y

    def f16(self, a):
        return a.astype(np.float16).astype(np.float64) if self.kv16 else a

    def rms(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def apply_rope(self, x, pos):
        # x: (T, H, hd)
        hd, nr = self.head_dim, self.n_rot
        i = np.arange(nr // 2, dtype=np.float64)
        inv = self.theta ** (-2.0 * i / nr)                  # (nr/2,)
        ang = pos[:, None].astype(np.float64) * inv[None, :]  # (T, nr/2)
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        y = x.copy()
        if self.rope == "norm":
            a, b = x[..., 0:nr:2], x[..., 1:nr:2]
            y[..., 0:nr:2] = a * c - b * s
            y[..., 1:nr:2] = a * s + b * c
        elif self.rope == "neox":
            a, b = x[..., : nr // 2], x[..., nr // 2 : nr]
            y[..., : nr // 2] = a * c - b * s
            y[..., nr // 2 : nr] = a * s + b * c
        else:
            raise ValueError(self.rope)
        return y

    def logits(self, ids):
        """Float64 logits for every position: (T, vocab)."""
        ids = np.asarray(ids, dtype=np.int64)
        T, H, KV, hd = len(ids), self.n_head, self.n_kv, self.head_dim
        rep = H // KV
        pos = np.arange(T)
        x = self.tok[ids].copy()
        mask = np.triu(np.full((T, T), -np.inf), k=1)
        for L in range(self.n_layer):
            w = lambda n: self.w[f"blk.{L}.{n}.weight"]
            h = self.rms(x, w("attn_norm"))
            n = lambda s: f"blk.{L}.{s}.weight"
            q = self.mm(h, n("attn_q")).reshape(T, H, hd)
            k = self.mm(h, n("attn_k")).reshape(T, KV, hd)
            v = self.f16(self.mm(h, n("attn_v")).reshape(T, KV, hd))
            q, k = self.f16(self.apply_rope(q, pos)), self.f16(self.apply_rope(k, pos))
            o = np.empty((T, H, hd))
            for hh in range(H):
                kv = hh // rep                                   # ggml broadcast / HF repeat_kv
                sc = q[:, hh, :] @ k[:, kv, :].T / np.sqrt(hd) + mask
                sc -= sc.max(axis=1, keepdims=True)
                p = np.exp(sc)
                p /= p.sum(axis=1, keepdims=True)
                o[:, hh, :] = self.f16(p) @ v[:, kv, :]
            x = x + self.mm(o.reshape(T, H * hd), n("attn_output"))
            h = self.rms(x, w("ffn_norm"))
            g = self.mm(h, n("ffn_gate"))
            u = self.mm(h, n("ffn_up"))
            x = x + self.mm(g / (1.0 + np.exp(-g)) * u, n("ffn_down"))
        x = self.rms(x, self.w["output_norm.weight"])
        return self.mm(x, "output.weight" if "output.weight" in self.w else "token_embd.weight")

    def probs(self, ids):
        z = self.logits(ids)
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--ids", required=True, help="comma-separated token ids (no BOS is added)")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--rope", default="norm", choices=["norm", "neox"])
    ap.add_argument("--all-positions", action="store_true")
    ap.add_argument("--check", action="store_true", help="cross-check dequantisation against gguf-py")
    ap.add_argument("--sim-q8", action="store_true", help="simulate ggml 8-bit activations (not the reference)")
    ap.add_argument("--sim-kv16", action="store_true", help="simulate f16 q/k/v and attention probs (not the reference)")
    a = ap.parse_args()
    m = Model(a.model, rope=a.rope, check=a.check, act="q8" if a.sim_q8 else "exact", kv16=a.sim_kv16)
    ids = [int(s) for s in a.ids.split(",") if s.strip()]
    P = m.probs(ids)
    rows = range(len(ids)) if a.all_positions else [len(ids) - 1]
    for t in rows:
        top = np.argsort(-P[t])[: a.top]
        print(json.dumps({"position": t, "top": [[int(i), float(P[t, i])] for i in top]}))


if __name__ == "__main__":
    main()
