#!/usr/bin/python3
"""PyTorch quality reference for erase's gpt on token shards (issue 33).

Trains the gpt model of bench/gpt_torch.py (the same architecture and
GPT-2 initialisation as erase's gpt, no cuts) on the tokens of erase's
shards (erase-convert text: DIR/train and DIR/eval, /tokens uint16), with
AdamW (lr constant, weight decay 0) and batches of --batch windows of
--context + 1 tokens whose starts are drawn uniformly from every position
of the training tokens (nanoGPT's get_batch: every batch from across the
whole corpus). At each step of --eval-at it prints one JSON line with the
mean cross entropy (nats per token) over the eval part cut as erase cuts it:
windows of T + 1 tokens starting every T tokens, every position counted.

With --model nanochat (issue 34) it trains nanochat's reference model
instead (bench/nanochat_torch.py: the class Nanochat of
tests/reference/make_nanochat_reference.py, kv_heads = heads, softcap 15)
with nanochat's initialisation as erase's lib/nn/nanochat.c gives it
(init_weights of nanochat's first release: c_q, c_k, c_v, c_fc normal
with std 1/sqrt(fan_in) x min(1, sqrt(fan_out/fan_in)), both c_proj and
lm_head zero, wte normal with std 1). --order windows draws the batches as
erase-train's default shuffle pool does on this data (every pool holding
all windows: a uniform shuffle each epoch of the training windows of
T + 1 tokens starting every T tokens) instead of nanoGPT's get_batch; the
line then also gives "bits_per_byte" (nats / ln 2: one byte a token).

Usage: /work/venv-torch/bin/python bench/gpt_quality_torch.py --data DIR --seed 1 --eval-at 300,2000
       /work/venv-torch/bin/python bench/gpt_quality_torch.py --model nanochat --layers 2 --width 128 \
           --heads 1 --order windows --data DIR --eval-at 1000
"""

import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch  # noqa: E402  (the model; sets the BLAS up as torch_ctr does)

import math  # noqa: E402

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402


def tokens(folder):
    parts = sorted(glob.glob(os.path.join(folder, "*.h5")))
    return np.concatenate([h5py.File(p, "r")["tokens"][:].astype(np.int64) for p in parts])


def nanochat(layers, width, heads, context):
    """nanochat's reference model, initialised as erase initialises it (above)."""
    import nanochat_torch
    m = nanochat_torch.NanochatLoss(dict(layers=layers, width=width, heads=heads, context=context, vocab=256))
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("wte.weight"):
                torch.nn.init.normal_(p, 0.0, 1.0)
            elif name.endswith("c_proj.weight") or name.startswith("lm_head"):
                torch.nn.init.zeros_(p)
            else:
                fan_out, fan_in = p.shape
                torch.nn.init.normal_(p, 0.0, min(1.0, math.sqrt(fan_out / fan_in)) / math.sqrt(fan_in))
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-at", default="300,2000")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model", choices=["gpt", "nanochat"], default="gpt")
    ap.add_argument("--order", choices=["uniform", "windows"], default="uniform")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    train, ev = tokens(os.path.join(a.data, "train")), tokens(os.path.join(a.data, "eval"))
    T = a.context
    if a.model == "nanochat":
        m = nanochat(a.layers, a.width, a.heads, T)
    else:
        m = gpt_torch.Gpt(a.layers, a.width, a.heads, T, 256)
    opt = torch.optim.AdamW(m.parameters(), lr=a.lr, weight_decay=0.0)
    nev = (len(ev) - 1) // T
    ev_x = torch.from_numpy(np.stack([ev[w * T:w * T + T] for w in range(nev)]))
    ev_y = torch.from_numpy(np.stack([ev[w * T + 1:w * T + T + 1] for w in range(nev)]))
    at = sorted(int(s) for s in a.eval_at.split(","))
    order = []
    for step in range(1, at[-1] + 1):
        if a.order == "windows":
            while len(order) < a.batch:  # a new epoch: every window once, shuffled
                order.extend(T * rng.permutation((len(train) - 1) // T))
            starts, order = order[:a.batch], order[a.batch:]
        else:
            starts = rng.integers(0, len(train) - T, a.batch)
        x = torch.from_numpy(np.stack([train[s:s + T] for s in starts]))
        y = torch.from_numpy(np.stack([train[s + 1:s + T + 1] for s in starts]))
        opt.zero_grad(set_to_none=True)
        m(x, y).backward()
        opt.step()
        if step in at:
            with torch.no_grad():
                tot = sum(float(m(ev_x[i:i + 256], ev_y[i:i + 256])) * len(ev_x[i:i + 256])
                          for i in range(0, nev, 256))
            line = {"framework": "pytorch", "seed": a.seed, "step": step, "eval_loss": tot / nev}
            if a.order == "windows":
                line.update(model=a.model, bits_per_byte=tot / nev / math.log(2))
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
