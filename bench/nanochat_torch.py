#!/usr/bin/python3
"""PyTorch training-speed baseline for erase's `nanochat` model (issue 34), CPU.

Trains the reference model class Nanochat of
tests/reference/make_nanochat_reference.py (nanochat's GPT as nanochat's
gpt.py defines it: RMSNorm without parameters, rotary embedding, QK-norm,
relu^2 MLP, untied head, logit softcap 15; no biases; kv_heads = heads;
attention written out as softmax(QK^T)V, no fused kernel), no cuts, fp32,
eager, with AdamW(lr=1e-3, weight_decay=0) on every parameter, as erase's
`--optimizer adamw` trains it in erase-bench model: the same optimizer on
both sides (not nanochat's Muon). The loss is the mean cross entropy of
every position's next token; the batch is random tokens (seed 0) reused.

Sizes: nanochat's of a depth (base_train.py: width 64 x depth, heads
ceil(width / 128)), context 256, vocab 256, batch 8:
  4  4 layers, width 256, 2 heads     6  6 layers, width 384, 3 heads
or any size with --layers --width --heads --context --batch --vocab.

FLOPs per token as nanochat's estimate_flops counts them: 6 N + 12 L C T,
N every parameter but the token embedding: N = L 12 C^2 + V C (the head).

Timing, threads, BLAS and the JSON line are bench/gpt_torch.py's (its
bench() and main()), with "model": "nanochat".

Usage (repository root):
  /work/venv-torch/bin/python bench/nanochat_torch.py --size 4 --threads 1,2 --steps 10
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "tests", "reference"))
import gpt_torch  # noqa: E402  (bench(), main(); sets the BLAS up as torch_ctr does)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from make_nanochat_reference import Nanochat  # noqa: E402

SIZES = {str(d): dict(layers=d, width=64 * d, heads=(64 * d + 127) // 128, context=256, batch=8, vocab=256)
         for d in (4, 6)}


class NanochatLoss(Nanochat):
    """The reference model with kv_heads = heads and softcap 15; forward(tokens,
    targets) -> the mean cross entropy (gpt_torch's interface)."""

    def __init__(self, m):
        super().__init__(dict(m, kv_heads=m["heads"], softcap=15.0))

    def forward(self, tokens, targets):
        logits = super().forward(tokens)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def flops_per_token(m):
    L, C, T, V = m["layers"], m["width"], m["context"], m["vocab"]
    n = L * 12 * C * C + V * C
    return n, 6 * n + 12 * L * C * T


NANOCHAT = dict(name="nanochat", sizes=SIZES, default="4", attention="explicit", build=NanochatLoss, flops=flops_per_token,
                uncounted=lambda model: model.transformer.wte.weight)

if __name__ == "__main__":
    gpt_torch.main(NANOCHAT, __doc__)
