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

Usage: /work/venv-torch/bin/python bench/gpt_quality_torch.py --data DIR --seed 1 --eval-at 300,2000
"""

import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch  # noqa: E402  (the model; sets the BLAS up as torch_ctr does)

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402


def tokens(folder):
    parts = sorted(glob.glob(os.path.join(folder, "*.h5")))
    return np.concatenate([h5py.File(p, "r")["tokens"][:].astype(np.int64) for p in parts])


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
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    train, ev = tokens(os.path.join(a.data, "train")), tokens(os.path.join(a.data, "eval"))
    T = a.context
    m = gpt_torch.Gpt(a.layers, a.width, a.heads, T, 256)
    opt = torch.optim.AdamW(m.parameters(), lr=a.lr, weight_decay=0.0)
    nev = (len(ev) - 1) // T
    ev_x = torch.from_numpy(np.stack([ev[w * T:w * T + T] for w in range(nev)]))
    ev_y = torch.from_numpy(np.stack([ev[w * T + 1:w * T + T + 1] for w in range(nev)]))
    at = sorted(int(s) for s in a.eval_at.split(","))
    for step in range(1, at[-1] + 1):
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
            print(json.dumps({"framework": "pytorch", "seed": a.seed, "step": step, "eval_loss": tot / nev}),
                  flush=True)


if __name__ == "__main__":
    main()
