#!/usr/bin/python3
"""Generate tests/data/reference/embedding_bag.h5: multi-hot embedding bags
(issue 35) pooled by torch.nn.EmbeddingBag with offsets (mode "sum" and
"mean"), and the gradients of its weights, for tests/ops/test-op-bag to
compare erase_embedding_bag_forward / _backward against within 1e-6.

The batch layout is lib/nn/batch.h's: ids [B, H] uint32 with field f at
columns [off_f, off_f + hotness[f]), the first lengths[b, f] present and
the rest padding (0xFFFFFFFF here: never read); an id maps to its table
row as erase_embedding_row (lib/ops/ops.h) does: 0xFFFFFFFF -> rows - 1,
else id % (rows - 1). The bags hold repeated ids, the missing value, an id
that wraps, and bags of one and of the field's full hotness.

Rerun from the repository root (needs torch, numpy, h5py):

    python3 tests/reference/make_embedding_bag_reference.py

Deterministic (seeded numpy RNG, one torch thread, no HDF5 timestamps).

File layout:
  /hotness [F] int32, /rows [F] uint32, /ids [B, H] uint32,
  /lengths [B, F] uint32, /dout [B, F, D] float32,
  /table/<f> [rows[f], D] float32
  /<mode>/out [B, F, D] float32             EmbeddingBag's outputs
  /<mode>/grad/<f> [rows[f], D] float32     the weights' gradient of sum(out * dout)
  for mode in sum, mean.
"""

import os

import h5py
import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "reference", "embedding_bag.h5")
HOTNESS = [3, 1, 5, 2]
ROWS = [11, 7, 23, 5]
B, D = 6, 4
MISSING = 0xFFFFFFFF


def row_of(i, rows):
    return rows - 1 if i == MISSING else i % (rows - 1)


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(35)
    F, H = len(HOTNESS), sum(HOTNESS)
    offset = np.concatenate([[0], np.cumsum(HOTNESS)[:-1]])
    ids = np.full((B, H), MISSING, dtype=np.uint32)
    lengths = np.zeros((B, F), dtype=np.uint32)
    for b in range(B):
        for f, h in enumerate(HOTNESS):
            n = h if b == 0 else 1 if b == 1 else int(rng.integers(1, h + 1))
            lengths[b, f] = n
            for j in range(n):
                pick = rng.integers(0, 10)
                if pick == 0:
                    v = MISSING
                elif pick == 1:
                    v = ROWS[f] - 1  # wraps to row 0
                elif pick == 2 and j > 0:
                    v = ids[b, offset[f]]  # a repeat inside the bag
                else:
                    v = int(rng.integers(0, 2**32 - 1))
                ids[b, offset[f] + j] = v
    tables = [(rng.standard_normal((r, D)) * 0.5).astype(np.float32) for r in ROWS]
    dout = rng.standard_normal((B, F, D)).astype(np.float32)
    with h5py.File(OUT, "w", track_order=False) as h5:
        h5.create_dataset("hotness", data=np.array(HOTNESS, dtype=np.int32))
        h5.create_dataset("rows", data=np.array(ROWS, dtype=np.uint32))
        h5.create_dataset("ids", data=ids)
        h5.create_dataset("lengths", data=lengths)
        h5.create_dataset("dout", data=dout)
        for f in range(F):
            h5.create_dataset("table/%d" % f, data=tables[f])
        for mode in ("sum", "mean"):
            out = np.zeros((B, F, D), dtype=np.float32)
            for f in range(F):
                flat, offsets = [], []
                for b in range(B):
                    offsets.append(len(flat))
                    flat += [row_of(int(ids[b, offset[f] + j]), ROWS[f]) for j in range(lengths[b, f])]
                bag = torch.nn.EmbeddingBag(ROWS[f], D, mode=mode, _weight=torch.from_numpy(tables[f].copy()))
                y = bag(torch.tensor(flat, dtype=torch.int64), torch.tensor(offsets, dtype=torch.int64))
                (y * torch.from_numpy(dout[:, f, :])).sum().backward()
                out[:, f, :] = y.detach().numpy()
                h5.create_dataset("%s/grad/%d" % (mode, f), data=bag.weight.grad.numpy().astype(np.float32))
            h5.create_dataset("%s/out" % mode, data=out)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
