#!/usr/bin/python3
"""Generate tests/data/reference/muon.h5: three steps of erase's Muon
optimizer (lib/nn/optim.h, --optimizer muon) in PyTorch, for
tests/nn/test-muon to compare against within 1e-5.

The algorithm is Muon as nanochat's nanochat/muon.py (initial commit)
applies it, written here from its description in single precision (nanochat
runs the Newton-Schulz iteration in bfloat16): per 2-D hidden weight W
[out, in] with gradient G,
    buf = lerp(buf, G, 1 - momentum);  U = lerp(G, buf, momentum)
    X = U (U^T when out > in), X /= ||X||_F + 1e-7
    5 x: A = X X^T; B = b A + c A A; X = a X + B X   (a, b, c) = (3.4445, -4.7750, 2.0315)
    W -= lr * sqrt(max(1, out / in)) * X (transposed back)
and torch.optim.AdamW for the other parameters in groups, each at its own
rate: heads at unembedding_lr, 1-D parameters (biases) at vector_lr. The
momentum of step it (0-based) rises as nanochat's base_train.py
get_muon_momentum does, over momentum_warmup steps: 0.85, 0.90, 0.95.

The model: an mlp (docs/models.md) of 10 inputs, hidden [6, 12], 3 classes:
layer0/fc/weight [6, 10] is a wide hidden matrix, layer1/fc/weight [12, 6]
a tall one, the heads [3, 6] and [3, 12] and the biases take AdamW.

Rerun from the repository root (needs torch, numpy, h5py):

    python3 tests/reference/make_muon_reference.py

Deterministic (seeded numpy RNG, one torch thread, no HDF5 timestamps).

File layout (float32 datasets):
  attributes   model_file, lr, momentum, momentum_warmup, unembedding_lr, vector_lr, beta1, beta2, eps,
               steps
  /params/<name>           the parameters before the first step
  /grad/<step>/<name>      the gradient of step 1..steps
  /after/<name>            the parameters after the last step
  /momentum/<name>         Muon's momentum buffer after the last step (hidden matrices)
"""

import os

import h5py
import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "reference", "muon.h5")
NS = (3.4445, -4.7750, 2.0315)
LR, MOMENTUM, UNEMBEDDING_LR, VECTOR_LR = 0.02, 0.95, 0.003, 0.005
MOMENTUM_WARMUP = 2  # steps: nanochat's get_muon_momentum over 2 steps instead of 300
BETAS, EPS, STEPS = (0.8, 0.95), 1e-10, 3
INPUTS, HIDDEN, CLASSES = 10, (6, 12), 3
MODEL = ('model = "mlp";\nseed = 1;\nmlp: {\n  inputs = %d;\n  hidden = [%d, %d];\n  classes = %d;\n'
         '  cuts = "none";\n  local_loss_weight = 0.0;\n};\n' % (INPUTS, HIDDEN[0], HIDDEN[1], CLASSES))


def orthogonalize(g):
    """Newton-Schulz quintic, 5 steps, single precision."""
    a, b, c = NS
    x = g.mT if g.size(0) > g.size(1) else g
    x = x / (x.norm() + 1e-7)
    for _ in range(5):
        A = x @ x.mT
        B = b * A + c * (A @ A)
        x = a * x + B @ x
    return x.mT if g.size(0) > g.size(1) else x


def shapes():
    out, width = [], INPUTS
    for k, h in enumerate(HIDDEN):
        out += [("layer%d/fc/weight" % k, (h, width), "hidden"), ("layer%d/fc/bias" % k, (h,), "vector"),
                ("layer%d/head/weight" % k, (CLASSES, h), "head"), ("layer%d/head/bias" % k, (CLASSES,), "vector")]
        width = h
    return out


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(34)
    spec = shapes()
    init = {n: (rng.standard_normal(s) * 0.3).astype(np.float32) for n, s, _ in spec}
    grads = [{n: rng.standard_normal(s).astype(np.float32) for n, s, _ in spec} for _ in range(STEPS)]
    P = {n: torch.tensor(init[n]) for n, _, _ in spec}
    hidden = [n for n, _, r in spec if r == "hidden"]
    groups = [dict(params=[P[n] for n, _, r in spec if r == "head"], lr=UNEMBEDDING_LR),
              dict(params=[P[n] for n, _, r in spec if r == "vector"], lr=VECTOR_LR)]
    adamw = torch.optim.AdamW(groups, betas=BETAS, eps=EPS, weight_decay=0.0)
    buf = {n: torch.zeros_like(P[n]) for n in hidden}
    for step in range(STEPS):
        frac = min(step / MOMENTUM_WARMUP, 1)
        momentum = (1 - frac) * 0.85 + frac * MOMENTUM
        for n, _, _ in spec:
            P[n].grad = torch.tensor(grads[step][n])
        adamw.step()
        with torch.no_grad():
            for n in hidden:
                w = P[n]
                g = w.grad.clone()
                buf[n].lerp_(g, 1 - momentum)
                u = g.lerp_(buf[n], momentum)
                w.add_(orthogonalize(u), alpha=-LR * max(1, w.size(0) / w.size(1)) ** 0.5)

    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V18, h5py.h5f.LIBVER_V18)
    fid = h5py.h5f.create(OUT.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    with h5py.File(fid) as f:
        for key, v in (("lr", LR), ("momentum", MOMENTUM), ("unembedding_lr", UNEMBEDDING_LR),
                       ("vector_lr", VECTOR_LR), ("beta1", BETAS[0]), ("beta2", BETAS[1]), ("eps", EPS)):
            f.attrs[key] = np.float64(v)
        f.attrs["steps"] = np.int32(STEPS)
        f.attrs["momentum_warmup"] = np.int32(MOMENTUM_WARMUP)
        f.attrs["model_file"] = np.bytes_(MODEL.encode("ascii"))
        f.attrs["generator"] = np.bytes_(("tests/reference/make_muon_reference.py, torch %s"
                                          % torch.__version__).encode("ascii"))

        def ds(name, a):
            f.create_dataset(name, data=np.asarray(a, dtype=np.float32), track_times=False)

        for n, _, _ in spec:
            ds("params/" + n, init[n])
            ds("after/" + n, P[n].detach().numpy())
            for step in range(STEPS):
                ds("grad/%d/%s" % (step + 1, n), grads[step][n])
        for n in hidden:
            ds("momentum/" + n, buf[n].numpy())


if __name__ == "__main__":
    main()
