#!/usr/bin/python3
"""PyTorch training-speed baseline for the built-in models (docs/models.md), CPU or GPU.

Trains, on synthetic batches generated once and reused, either
  ctr  (default) the reference CTR model: D = 16, 26 tables of 10,007 rows,
       bottom MLP 13-64-16, six sub-architectures of width 256, all six
       boundaries cut, lambda = 1; dense parameters by AdamW(lr=1e-3), the
       embedding tables (nn.Embedding(sparse=True)) by Adagrad(lr=0.01);
  mlp  784-1024-1024-1024 with 10 classes, three blocks, both boundaries
       cut, lambda = 1, SGD(lr=0.01, momentum=0.9),
and times each training step (forward of all blocks, one backward of the
total loss, the optimizer steps) with time.perf_counter; with `--device
cuda` the model and batches live on the GPU, the step runs eagerly and is
timed between two torch.cuda.synchronize() calls (as erase-bench model
times erase's step between stream synchronizations). For every
(batch, threads) it prints one JSON line:

  {"framework": "pytorch", "torch": ..., "model": "ctr", "batch": B,
   "threads": T, "steps": N, "samples_per_s_p50": ..., "samples_per_s_p90": ...,
   "step_ms_p50": ...}

samples_per_s_p90 is the 90th percentile of samples/s (the fast end).
Threads: torch.set_num_threads(T), and OpenBLAS (which torch.set_num_threads
leaves alone) is given T threads too. BLAS kernel: OPENBLAS_CORETYPE is set
before torch loads OpenBLAS, by default as erase chooses its own (SkylakeX on
AVX-512 CPUs, see README "BLAS"), so both run the same GEMM kernel;
`--blas-core env` keeps the environment's, `--blas-core NAME` forces one. The
line then also has "blas": "OpenBLAS <kernel>" and "blas_threads": T.
`--embedding fused` keeps the 26 tables in one nn.Embedding (one lookup and
one sparse update per step, like torchrec's fused tables) and adds
"embedding": "fused" to the line; the default is one table per feature.

Usage (repository root):
  /usr/bin/python3 bench/torch_ctr.py --batch 256,1024,4096 --threads 1,2 --steps 30 --warmup 5
  /usr/bin/python3 bench/torch_ctr.py --model mlp --batch 256 --threads 1
  python3 bench/torch_ctr.py --device cuda --blas-core env --batch 1024,4096
"""

import argparse
import ctypes
import json
import math
import os
import sys
import time


def blas_core_arg():
    """--blas-core, read before torch is imported: OpenBLAS takes its kernel
    from OPENBLAS_CORETYPE when torch loads it. "auto" follows erase's rule
    (README, "BLAS"): SkylakeX on a CPU with AVX-512 F/BW/DQ/VL, else
    whatever the environment and OpenBLAS choose; "env" changes nothing."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--blas-core", default="auto")
    core = ap.parse_known_args()[0].blas_core
    if core == "auto":
        try:
            with open("/proc/cpuinfo") as f:
                flags = next((l.split() for l in f if l.startswith("flags")), [])
        except OSError:
            flags = []
        core = "SkylakeX" if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(flags) else "env"
    if core != "env":
        os.environ["OPENBLAS_CORETYPE"] = core


blas_core_arg()

import numpy as np  # noqa: E402  (after OPENBLAS_CORETYPE is set)
import torch  # noqa: E402
import torch.nn as nn
import torch.nn.functional as F

DENSE, FIELDS = 13, 26
CTR = dict(dim=16, rows=10007, bottom=[64, 16], width=256, subarchs=6, lam=1.0)
MLP = dict(inputs=784, hidden=[1024, 1024, 1024], classes=10, lam=1.0)


def mlp_layers(widths):
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers)


class Ctr(nn.Module):
    """Blocks input, sub1..sub6, every boundary cut; forward returns the
    total loss L = L_main + lambda * sum of the local losses."""

    def __init__(self, m, fused):
        super().__init__()
        self.m, self.fused = m, fused
        d, rows = m["dim"], m["rows"]
        n_tables = 1 if fused else FIELDS
        table_rows = rows * FIELDS if fused else rows
        self.emb = nn.ModuleList(nn.Embedding(table_rows, d, sparse=True) for _ in range(n_tables))
        for e in self.emb:
            nn.init.uniform_(e.weight, -math.sqrt(1 / rows), math.sqrt(1 / rows))
        self.register_buffer("offsets", torch.arange(FIELDS) * rows)
        self.bottom = mlp_layers([DENSE] + m["bottom"])
        inter = d + (FIELDS + 1) * FIELDS // 2
        self.input_head = nn.Linear(inter, 1)
        i, j = torch.triu_indices(FIELDS + 1, FIELDS + 1, offset=1)
        self.register_buffer("tri", i * (FIELDS + 1) + j)
        w = m["width"]
        self.subs = nn.ModuleList(mlp_layers([inter if s == 0 else w, w, w])
                                  for s in range(m["subarchs"]))
        self.heads = nn.ModuleList(nn.Linear(w, 1) for _ in range(m["subarchs"]))

    def forward(self, dense, rows, label):
        v = self.bottom(dense)
        if self.fused:
            e = self.emb[0](rows + self.offsets)                       # [B, 26, D]
        else:
            e = torch.stack([t(rows[:, f]) for f, t in enumerate(self.emb)], 1)
        V = torch.cat([v.unsqueeze(1), e], 1)                           # [B, 27, D]
        dots = torch.bmm(V, V.transpose(1, 2)).flatten(1)[:, self.tri]
        x = torch.cat([v, dots], 1)
        losses = [F.binary_cross_entropy_with_logits(self.input_head(x)[:, 0], label)]
        for sub, head in zip(self.subs, self.heads):
            x = sub(x.detach())                                         # every boundary cut
            losses.append(F.binary_cross_entropy_with_logits(head(x)[:, 0], label))
        return losses[-1] + self.m["lam"] * sum(losses[:-1])


class Mlp(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m
        widths = [m["inputs"]] + m["hidden"]
        self.fcs = nn.ModuleList(mlp_layers(widths[k:k + 2]) for k in range(len(m["hidden"])))
        self.heads = nn.ModuleList(nn.Linear(h, m["classes"]) for h in m["hidden"])

    def forward(self, x, label):
        losses = []
        for k, (fc, head) in enumerate(zip(self.fcs, self.heads)):
            x = fc(x.detach() if k > 0 else x)                          # every boundary cut
            losses.append(F.cross_entropy(head(x), label))
        return losses[-1] + self.m["lam"] * sum(losses[:-1])


def make_ctr(batch, rng, fused):
    model = Ctr(CTR, fused)
    dense = torch.from_numpy(np.log1p(rng.integers(0, 1000, (batch, DENSE))).astype(np.float32))
    # Ids already mapped to rows (h mod (rows - 1), the last row for missing).
    rows = torch.from_numpy(rng.integers(0, CTR["rows"], (batch, FIELDS)))
    label = torch.from_numpy(rng.integers(0, 2, batch).astype(np.float32))
    sparse = [p for n, p in model.named_parameters() if n.startswith("emb.")]
    dense_p = [p for n, p in model.named_parameters() if not n.startswith("emb.")]
    opts = [torch.optim.AdamW(dense_p, lr=1e-3), torch.optim.Adagrad(sparse, lr=0.01)]
    return model, (dense, rows, label), opts


def make_mlp(batch, rng):
    model = Mlp(MLP)
    x = torch.from_numpy(rng.normal(size=(batch, MLP["inputs"])).astype(np.float32))
    label = torch.from_numpy(rng.integers(0, MLP["classes"], batch))
    return model, (x, label), [torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)]


def step(model, inputs, opts):
    for o in opts:
        o.zero_grad(set_to_none=True)
    loss = model(*inputs)
    loss.backward()
    for o in opts:
        o.step()
    return loss


def openblas():
    """The OpenBLAS library torch loaded, or None (another BLAS, or no
    /proc): used to give OpenBLAS the same thread count as torch, which
    torch.set_num_threads does not do, and to report its kernel."""
    try:
        with open("/proc/self/maps") as f:
            path = next((l.split()[-1] for l in f if "libopenblas" in l), None)
    except OSError:
        return None
    if path is None:
        return None
    lib = ctypes.CDLL(path)
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib


def bench(args, batch, threads):
    torch.set_num_threads(threads)
    blas = openblas()
    if blas is not None:
        blas.openblas_set_num_threads(threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if args.model == "ctr":
        model, inputs, opts = make_ctr(batch, rng, args.embedding == "fused")
    else:
        model, inputs, opts = make_mlp(batch, rng)
    cuda = args.device == "cuda"
    if cuda:  # parameters moved before the optimizers' first step creates their state
        model.to("cuda")
        inputs = tuple(x.to("cuda") for x in inputs)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    times = []
    for i in range(args.warmup + args.steps):
        sync()
        t0 = time.perf_counter()
        loss = step(model, inputs, opts)
        sync()
        t1 = time.perf_counter()
        if i >= args.warmup:
            times.append(t1 - t0)
    assert math.isfinite(float(loss))
    rate = batch / np.array(times)
    out = {"framework": "pytorch", "torch": torch.__version__, "model": args.model,
           "batch": batch, "threads": threads, "steps": args.steps, "device": args.device,
           "samples_per_s_p50": round(float(np.percentile(rate, 50)), 1),
           "samples_per_s_p90": round(float(np.percentile(rate, 90)), 1),
           "step_ms_p50": round(float(np.percentile(times, 50)) * 1e3, 3)}
    if args.model == "ctr" and args.embedding == "fused":
        out["embedding"] = "fused"
    if cuda:
        out["gpu"] = torch.cuda.get_device_name()
    if blas is not None:
        out["blas"] = "OpenBLAS " + blas.openblas_get_corename().decode()
        out["blas_threads"] = blas.openblas_get_num_threads()
    return out


def int_list(s):
    return [int(x) for x in s.split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["ctr", "mlp"], default="ctr")
    ap.add_argument("--batch", type=int_list, default=[256, 1024, 4096])
    ap.add_argument("--threads", type=int_list, default=[1])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--embedding", choices=["tables", "fused"], default="tables")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--blas-core", default="auto",
                    help="OpenBLAS kernel: auto (as erase), env, or a core name")
    args = ap.parse_args()
    for batch in args.batch:
        for threads in args.threads:
            print(json.dumps(bench(args, batch, threads)), flush=True)


if __name__ == "__main__":
    main()
