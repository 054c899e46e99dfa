#!/usr/bin/python3
"""PyTorch training-speed baseline for erase's `gpt` model (docs/models.md), CPU.

Trains the GPT-2 architecture of erase's gpt model, no cuts: token and
learned position embeddings, L pre-LayerNorm blocks (causal self-attention
with one fused QKV projection with bias and an output projection with
bias; MLP width -> 4 width -> width with GELU, tanh form), a final
LayerNorm, the LM head tied to the token embedding (no bias); LayerNorm eps
1e-5, no dropout; fp32; AdamW(lr=1e-3, weight_decay=0) on every parameter;
the loss the mean cross entropy of every position's next token. Weights
follow GPT-2's initialisation (seed 0); the batch is random tokens (seed 0)
generated once and reused. Attention is torch's scaled_dot_product_attention
(causal) where the torch has it (2.x), else the explicit softmax(QK^T)V of
torch 1.13; the line says which ("attention").

Sizes (the anchors of issue 15):
  S  4 layers, width 128, 4 heads, context 64, batch 16, vocab 256
  M  6 layers, width 384, 6 heads, context 256, batch 8, vocab 256
or any size with --layers --width --heads --context --batch --vocab.

FLOPs per token as nanoGPT and PaLM count them: 6 N + 12 L C T, N the
parameters without the position embedding (the tied head counted once):
N = L (12 C^2 + 13 C) + 2 C + V C. S: N = 826,112, 5.35 MFLOP/token;
M: N = 10,745,856, 71.55 MFLOP/token (the anchors' figures; vocab 256 is
the one that gives them).

Each training step (zero the gradients, forward, backward, AdamW step) is
timed with time.perf_counter after --warmup untimed steps (with `--device
cuda`: model and batch on the GPU, eager, timed between two
torch.cuda.synchronize() calls, as erase-bench times erase's step between
stream synchronizations); for every
thread count it prints one JSON line:

  {"framework": "pytorch", "torch": ..., "model": "gpt", "size": "S",
   "layers": 4, "width": 128, "heads": 4, "context": 64, "vocab": 256,
   "batch": 16, "threads": 1, "steps": 10, "params": N, "flops_per_token": F,
   "tokens_per_s_median": ..., "tokens_per_s_min": ..., "tokens_per_s_max": ...,
   "step_ms_median": ..., "attention": "sdpa", "device": "cpu", "mfu": 0.47,
   "peak_gflops": 175.6}

"mfu" (model FLOPs utilisation: F x tokens/s median over the peak) only
with --peak-gflops (erase-bench model passes the peak it measured). Threads
and the OpenBLAS kernel are set as bench/torch_ctr.py sets them (its
--blas-core; torch.set_num_threads and OpenBLAS's own thread count); the
line names the BLAS ("OpenBLAS SkylakeX", or "MKL" for PyPI's torch).

Usage (repository root):
  /usr/bin/python3 bench/gpt_torch.py --size S --threads 1,2 --steps 20
  /work/venv-torch/bin/python bench/gpt_torch.py --size M --threads 1 --peak-gflops 175.6
  python3 bench/gpt_torch.py --device cuda --blas-core env --layers 12 --width 768 --heads 12 \
      --context 1024 --vocab 50257 --batch 8        # GPT-2 124M on a GPU
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ctr  # noqa: E402  (sets OPENBLAS_CORETYPE, imports torch; its openblas() and int_list())

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SIZES = {"S": dict(layers=4, width=128, heads=4, context=64, batch=16, vocab=256),
         "M": dict(layers=6, width=384, heads=6, context=256, batch=8, vocab=256)}
SDPA = hasattr(F, "scaled_dot_product_attention")


class Block(nn.Module):
    def __init__(self, c, heads, context):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(c, eps=1e-5), nn.LayerNorm(c, eps=1e-5)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.fc_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        if not SDPA:
            self.register_buffer("mask", torch.triu(torch.full((context, context), float("-inf")), 1))

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if SDPA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            a = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads)) + self.mask[:t, :t]
            y = F.softmax(a, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, width, heads, context, vocab):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, context) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, eps=1e-5)
        for name, p in self.named_parameters():  # GPT-2's initialisation
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "ln" in name:
                nn.init.ones_(p)
            else:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied head, no bias
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def flops_per_token(m):
    """(N, 6 N + 12 L C T): N without the position embedding (nanoGPT's count)."""
    L, C, T, V = m["layers"], m["width"], m["context"], m["vocab"]
    n = L * (12 * C * C + 13 * C) + 2 * C + V * C
    return n, 6 * n + 12 * L * C * T


# What bench() and main() train: the model's name, its sizes and default
# size, its module from a size (forward(tokens, targets) -> the mean loss),
# (N, FLOPs per token) of a size, the parameter N leaves out and the
# attention's name (bench/nanochat_torch.py gives nanochat's).
GPT = dict(name="gpt", sizes=SIZES, default="S", attention="sdpa" if SDPA else "explicit",
           build=lambda m: Gpt(m["layers"], m["width"], m["heads"], m["context"], m["vocab"]),
           flops=flops_per_token, uncounted=lambda model: model.wpe.weight)


def bench(args, m, threads, spec=GPT):
    torch.set_num_threads(threads)
    blas = torch_ctr.openblas()
    if blas is not None:
        blas.openblas_set_num_threads(threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = spec["build"](m)
    window = torch.from_numpy(rng.integers(0, m["vocab"], (m["batch"], m["context"] + 1)))
    tokens, targets = window[:, :-1].contiguous(), window[:, 1:].contiguous()
    cuda = args.device == "cuda"
    if cuda:  # parameters moved before the optimizer's first step creates its state
        model.to("cuda")
        tokens, targets = tokens.to("cuda"), targets.to("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    times = []
    for i in range(args.warmup + args.steps):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, targets)
        loss.backward()
        opt.step()
        sync()
        t1 = time.perf_counter()
        if i >= args.warmup:
            times.append(t1 - t0)
    assert math.isfinite(float(loss.detach()))
    n, fpt = spec["flops"](m)
    assert n == sum(p.numel() for p in model.parameters()) - spec["uncounted"](model).numel()
    rate = m["batch"] * m["context"] / np.array(times)
    out = {"framework": "pytorch", "torch": torch.__version__, "model": spec["name"], "size": args.size}
    out.update(m)
    out.update({"threads": threads, "steps": args.steps, "params": n, "flops_per_token": fpt,
                "tokens_per_s_median": round(float(np.median(rate)), 1),
                "tokens_per_s_min": round(float(rate.min()), 1),
                "tokens_per_s_max": round(float(rate.max()), 1),
                "step_ms_median": round(float(np.median(times)) * 1e3, 3),
                "attention": spec["attention"], "device": args.device})
    if cuda:
        out["gpu"] = torch.cuda.get_device_name()
    if args.peak_gflops:
        out["mfu"] = round(fpt * float(np.median(rate)) / (args.peak_gflops * 1e9), 4)
        out["peak_gflops"] = args.peak_gflops
    if blas is not None:
        out["blas"] = "OpenBLAS " + blas.openblas_get_corename().decode()
        out["blas_threads"] = blas.openblas_get_num_threads()
    elif torch.backends.mkl.is_available():
        out["blas"] = "MKL"
    return out


def main(spec=GPT, doc=__doc__):
    sizes = spec["sizes"]
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--size", choices=sorted(sizes) + ["custom"], default=spec["default"])
    for key in ("layers", "width", "heads", "context", "batch", "vocab"):
        ap.add_argument("--" + key, type=int, help="overrides the size's " + key)
    ap.add_argument("--threads", type=torch_ctr.int_list, default=[1])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--peak-gflops", type=float, default=0.0)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--blas-core", default="auto",
                    help="OpenBLAS kernel: auto (as erase), env (leave the environment's) or a name")
    args = ap.parse_args()
    m = dict(sizes.get(args.size, sizes[spec["default"]]))
    for key in m:
        if getattr(args, key) is not None:
            m[key] = getattr(args, key)
            args.size = "custom"
    if min(m.values()) < 1 or m["width"] % m["heads"] or args.steps < 1 or args.warmup < 0:
        ap.error("sizes and --steps must be >= 1, --warmup >= 0, width a multiple of heads")
    for threads in args.threads:
        print(json.dumps(bench(args, m, threads, spec)), flush=True)


if __name__ == "__main__":
    main()
