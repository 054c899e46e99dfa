#!/usr/bin/env python3
"""PyTorch reference files for erase's nanochat model (docs/models.md, `nanochat`).

The model is written here from the definition in nanochat's nanochat/gpt.py
(https://github.com/karpathy/nanochat, first release): token embedding, then
a parameter-free RMSNorm; per layer x + c_proj(attn(norm(x))) with q, k, v
from c_q, c_k, c_v (kv_heads key/value heads shared by heads/kv_heads query
heads), the rotary embedding (base 10000, half-split pairs) and then the
QK-norm on q and k, causal softmax attention; then x + mlp.c_proj(relu(
mlp.c_fc(norm(x)))^2); no biases; a head is norm, an untied lm_head and the
logit softcap softcap * tanh(z / softcap). Blocks are layers; a cut after a
block gives it a local head and loss, as for gpt.

What it writes: tests/data/reference/nanochat_*.h5 in the layout of
make_reference.py (whose run, check and write functions it uses): the model
file, the parameters (names "h<k>/attn/c_q/weight", ..., "h0/wte/weight",
"h<k>/lm_head/weight"), one batch of tokens and targets, every block's body
output, logits and loss, the total loss and every parameter's gradient.

Nanochat, an nn.Module with nanochat's state-dict names (transformer.wte,
transformer.h[k].attn.c_q, ..., lm_head: Linear weights without biases),
computes the same forward (by blocks below) for bench/compat-export.py,
which loads erase-export --format nanochat files into it (strict).

Rerun from the repository root with a Python that has torch, numpy and h5py:

    python3 tests/reference/make_nanochat_reference.py
"""

import math
import os
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference as ref  # noqa: E402  (run, check_cuts, write, ascii_attr)

BASE = 10000.0


def params_of(rng, m, heads_cut):
    """name -> float32 array: linears uniform in +-1/sqrt(fan_in), wte normal."""
    C, H, KV, V, L = m["width"], m["heads"], m["kv_heads"], m["vocab"], m["layers"]
    kvw = KV * (C // H)
    p = {}

    def lin(name, n_out, n_in):
        b = 1.0 / math.sqrt(n_in)
        p[name + "/weight"] = rng.uniform(-b, b, (n_out, n_in)).astype(np.float32)

    p["h0/wte/weight"] = rng.normal(0.0, 1.0, (V, C)).astype(np.float32)
    for k in range(L):
        h = "h%d/" % k
        lin(h + "attn/c_q", C, C)
        lin(h + "attn/c_k", kvw, C)
        lin(h + "attn/c_v", kvw, C)
        lin(h + "attn/c_proj", C, C)
        lin(h + "mlp/c_fc", 4 * C, C)
        lin(h + "mlp/c_proj", C, 4 * C)
        if k == L - 1 or (k + 1) in heads_cut:
            lin(h + "lm_head", V, C)
    return p


def norm(x):
    return F.rms_norm(x, (x.size(-1),))


def rotary_tables(T, hd):
    """nanochat's _precompute_rotary_embeddings, float32: [1, T, 1, hd/2]."""
    channel_range = torch.arange(0, hd, 2, dtype=torch.float32)
    inv_freq = 1.0 / (BASE ** (channel_range / hd))
    freqs = torch.outer(torch.arange(T, dtype=torch.float32), inv_freq)
    return freqs.cos()[None, :, None, :], freqs.sin()[None, :, None, :]


def apply_rotary(x, cos, sin):
    d = x.shape[3] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos + x2 * sin, x1 * (-sin) + x2 * cos], 3)


def blocks(m, inp, cuts):
    L, C, H, KV, T, V = m["layers"], m["width"], m["heads"], m["kv_heads"], m["context"], m["vocab"]
    hd, cap = C // H, m["softcap"]
    tokens = torch.from_numpy(inp["tokens"]).long()
    targets = torch.from_numpy(inp["targets"]).long()
    cos, sin = rotary_tables(T, hd)
    lin = lambda P, x, n: F.linear(x, P[n + "/weight"])

    def attention(P, x, h):
        B = x.shape[0]
        q = lin(P, x, h + "attn/c_q").view(B, T, H, hd)
        k = lin(P, x, h + "attn/c_k").view(B, T, KV, hd)
        v = lin(P, x, h + "attn/c_v").view(B, T, KV, hd)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        q, k = norm(q), norm(k)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, heads, T, hd)
        rep = H // KV
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)  # head h reads kv head h // rep
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)

    def layer(kk):
        h = "h%d/" % kk

        def f(P, x):
            if kk == 0:
                x = norm(F.embedding(tokens, P["h0/wte/weight"]))
            x = x + lin(P, attention(P, norm(x), h), h + "attn/c_proj")
            x = x + lin(P, F.relu(lin(P, norm(x), h + "mlp/c_fc")).square(), h + "mlp/c_proj")
            if kk < L - 1 and (kk + 1) not in cuts:
                return x, None
            logits = lin(P, norm(x), h + "lm_head")
            return x, cap * torch.tanh(logits / cap)
        return f

    names = ["h%d" % k for k in range(L)]
    loss = lambda logits: (torch.zeros(()) if logits is None
                           else F.cross_entropy(logits.view(-1, V), targets.view(-1)))
    return names, [layer(k) for k in range(L)], loss


class Nanochat(torch.nn.Module):
    """nanochat's GPT (no cuts) in nanochat's state-dict names; m: the sizes
    as in main() (layers, width, heads, kv_heads, context, vocab, softcap).
    forward(tokens [B, context] int64) -> softcapped logits [B, context, vocab]."""

    def __init__(self, m):
        super().__init__()
        C, H, KV, V = m["width"], m["heads"], m["kv_heads"], m["vocab"]
        kvw = KV * (C // H)
        lin = lambda n_in, n_out: torch.nn.Linear(n_in, n_out, bias=False)
        self.m = m
        self.transformer = torch.nn.Module()
        self.transformer.wte = torch.nn.Embedding(V, C)
        self.transformer.h = torch.nn.ModuleList()
        for _ in range(m["layers"]):
            block = torch.nn.Module()
            block.attn, block.mlp = torch.nn.Module(), torch.nn.Module()
            block.attn.c_q, block.attn.c_k, block.attn.c_v = lin(C, C), lin(C, kvw), lin(C, kvw)
            block.attn.c_proj = lin(C, C)
            block.mlp.c_fc, block.mlp.c_proj = lin(C, 4 * C), lin(4 * C, C)
            self.transformer.h.append(block)
        self.lm_head = lin(C, V)

    def forward(self, tokens):
        P = {"h0/wte/weight": self.transformer.wte.weight,
             "h%d/lm_head/weight" % (self.m["layers"] - 1): self.lm_head.weight}
        for name, w in self.transformer.h.named_parameters():
            k, path = name.split(".", 1)
            P["h%s/%s" % (k, path.replace(".", "/"))] = w
        inp = dict(tokens=tokens.numpy().astype(np.int32), targets=np.zeros(tuple(tokens.shape), np.int32))
        _, fns, _ = blocks(self.m, inp, set())
        x = None
        for f in fns:
            x, logits = f(P, x)
        return logits


def model_file(m, cuts):
    return ("model = \"nanochat\";\nnanochat: {\n  layers = %d;\n  heads = %d;\n  kv_heads = %d;\n"
            "  width = %d;\n  context = %d;\n  vocab = %d;\n  softcap = %r;\n  cuts = %s;\n"
            "  local_loss_weight = %r;\n};\n"
            % (m["layers"], m["heads"], m["kv_heads"], m["width"], m["context"], m["vocab"], m["softcap"],
               "\"none\"" if not cuts else "[" + ", ".join(str(c) for c in cuts) + "]", m["lam"]))


def make_case(filename, m, cuts, seed):
    rng = np.random.default_rng(seed)
    B, T, V = m["batch"], m["context"], m["vocab"]
    params = params_of(rng, m, set(cuts))
    inputs = dict(tokens=rng.integers(0, V, (B, T)).astype(np.int32),
                  targets=rng.integers(0, V, (B, T)).astype(np.int32))
    names, fns, loss_fn = blocks(m, inputs, set(cuts))
    out, total, grads = ref.run(params, names, fns, loss_fn, None, set(cuts), m["lam"])
    for k, g in grads.items():
        assert g.shape == params[k].shape and np.isfinite(g).all(), k
        # with one position each query attends only to itself: q and k get no gradient
        assert np.any(g != 0) or (T == 1 and ("c_q" in k or "c_k" in k)), "all-zero gradient: " + k
    capped = max(float(o["logits"].abs().max()) for o in out.values() if o["logits"] is not None)
    assert capped > 0.5 * m["softcap"], "the softcap barely bends the logits (max %g)" % capped
    ref.check_cuts(filename, params, names, fns, loss_fn, None, set(cuts), m["lam"], grads)
    path = os.path.join(ref.OUT_DIR, filename)
    ref.write(path, model_file(m, cuts), B, inputs, params, out, total, grads)
    with h5py.File(path, "r+") as f:
        f.attrs["generator"] = ref.ascii_attr("tests/reference/make_nanochat_reference.py, torch %s"
                                              % torch.__version__)
    print("%s: %d blocks, total loss %.6f, largest |logit| %.3f, %d bytes"
          % (os.path.relpath(path, ref.ROOT), len(names), float(total), capped, os.path.getsize(path)))


def main():
    torch.set_num_threads(1)
    os.makedirs(ref.OUT_DIR, exist_ok=True)
    print("torch %s" % torch.__version__)
    base = dict(layers=3, width=32, heads=4, kv_heads=2, context=8, vocab=50, softcap=2.0, lam=0.6, batch=3)
    # grouped-query attention (2 kv heads for 4 query heads), no cuts, T = context
    make_case("nanochat_gqa.h5", base, [], 61)
    # multi-head attention, every block its own head
    make_case("nanochat_cuts_1_2.h5", dict(base, kv_heads=4), [1, 2], 62)
    # one position (T = 1), multi-query attention (1 kv head), a cut at 2
    make_case("nanochat_t1.h5", dict(base, kv_heads=1, context=1, batch=4), [2], 63)


if __name__ == "__main__":
    main()
