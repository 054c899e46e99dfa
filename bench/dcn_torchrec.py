#!/usr/bin/env python3
"""TorchRec training-speed anchor for erase's dcn and ctr models (issue 36):
TorchRec's own DLRM_DCN (MLPerf DLRM-DCNv2) or DLRM (dot interaction),
its EmbeddingBagCollection sharded by DistributedModelParallel into
FBGEMM's fused table-batched embeddings, trained on one fixed synthetic
batch; bench/dcn-vs-torchrec.sh runs it interleaved with erase-bench.

Models (the sizes of erase's, docs/models.md):
  dcn   DLRM_DCN(dense_arch_layer_sizes 512-256-128, 26 tables of D = 128,
        dcn_num_layers 3, dcn_low_rank_dim 512, over_arch_layer_sizes
        1024-1024-512-256-1): mlcommons/training recommendation_v2/
        torchrec_dlrm's run command; erase's `model = "dcn"` (no cuts).
  dlrm  DLRM(dense_arch_layer_sizes 64-16, 26 tables of D = 16,
        over_arch_layer_sizes 256 x 12 then 1): erase's `ctr` without cuts
        (six sub-architectures of two 256-wide layers, the logit).
Every table has --rows rows; one id per feature (one-hot, as erase's
default hotness), uniform in [0, rows); 13 dense features log1p(uniform
integers 0..999); labels uniform in {0, 1}: the distribution of
erase_batch_random.

Optimizers, as erase's defaults (lib/nn/optim.c): the tables by FBGEMM's
fused EXACT_ROWWISE_ADAGRAD (lr 0.02, eps 1e-8: applied in the backward,
torchrec.optim.apply_optimizer_in_backward(RowWiseAdagrad)), the dense
parameters by torch.optim.AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, no
weight decay). Loss: BCE with logits, mean over the batch.

Ranks: --ranks R starts R processes (torch.multiprocessing, gloo on
127.0.0.1), each --threads threads and batch / R samples; DMP's planner
picks the sharding (printed: on 2 ranks it places whole tables, TorchRec's
table-wise model parallelism with all-to-all) and the dense part is
data-parallel (DDP over gloo). One rank: the same DMP on a world of one.
Each timed step: zero_grad, forward, backward (the tables updated inside
it), AdamW step; rank 0's perf_counter around it; --warmup steps first.
Prints one JSON line with samples/s (global batch over the step) min,
median, max over the timed steps and the versions.

Environment (outside the repository; PyPI only; made on 2026-12-05):
torchrec 1.9.2 needs fbgemm-gpu-cpu 1.9.0, whose libraries are built
against torch 2.14 (on torch 2.15 fbgemm_gpu_py.so fails: undefined symbol
_ZN3c1015report_overflowEPKc). PyPI's torch 2.14.1 is the CUDA build and
loads libcufile/libcublas at import; the CUDA 13 libraries of an existing
torch 2.15 venv serve it (same sonames):
  python3 -m venv /work/venv-torchrec
  /work/venv-torchrec/bin/pip install --no-deps torch==2.14.1 \\
      fbgemm-gpu-cpu==1.9.0 torchrec==1.9.2 tensordict
  /work/venv-torchrec/bin/pip install filelock typing-extensions sympy \\
      'mpmath<1.4' networkx jinja2 fsspec numpy tqdm pyre-extensions \\
      torchmetrics==1.0.3 cloudpickle 'pyvers<0.3' 'setuptools>=77.0.3'
  ln -s /work/venv-torch/lib/python3.11/site-packages/nvidia \\
      /work/venv-torchrec/lib/python3.11/site-packages/nvidia
(without a CUDA-13 venv to borrow from: pip install torch==2.14.1 with its
dependencies, several GB of NVIDIA wheels). Check:
  /work/venv-torchrec/bin/python bench/dcn_torchrec.py --model dcn \\
      --batch 64 --rows 1000 --steps 2 --warmup 1

Usage: bench/dcn_torchrec.py --model dcn|dlrm --batch B --threads T
       [--ranks R] [--rows N] [--steps N] [--warmup N]
"""

import argparse
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

DENSE, FIELDS = 13, 26
MODELS = {
    "dcn": dict(dim=128, bottom=[512, 256, 128], top=[1024, 1024, 512, 256, 1], cross=3, rank=512),
    "dlrm": dict(dim=16, bottom=[64, 16], top=[256] * 12 + [1]),
}


def build(args):
    """The unsharded model on the meta device (DMP materialises it)."""
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig
    from torchrec.models.dlrm import DLRM, DLRM_DCN

    m = MODELS[args.model]
    tables = [EmbeddingBagConfig(name="t_cat_%d" % f, embedding_dim=m["dim"], num_embeddings=args.rows,
                                 feature_names=["cat_%d" % f]) for f in range(FIELDS)]
    ebc = EmbeddingBagCollection(tables=tables, device=torch.device("meta"))
    if args.model == "dcn":
        return DLRM_DCN(embedding_bag_collection=ebc, dense_in_features=DENSE,
                        dense_arch_layer_sizes=m["bottom"], over_arch_layer_sizes=m["top"],
                        dcn_num_layers=m["cross"], dcn_low_rank_dim=m["rank"], dense_device=torch.device("cpu"))
    return DLRM(embedding_bag_collection=ebc, dense_in_features=DENSE, dense_arch_layer_sizes=m["bottom"],
                over_arch_layer_sizes=m["top"], dense_device=torch.device("cpu"))


def batch_of(args, n, seed):
    """n samples: dense [n, 13], a KeyedJaggedTensor of one id per feature,
    labels [n]."""
    from torchrec import KeyedJaggedTensor

    rng = np.random.default_rng(seed)
    dense = torch.from_numpy(np.log1p(rng.integers(0, 1000, (n, DENSE))).astype(np.float32))
    ids = torch.from_numpy(rng.integers(0, args.rows, (FIELDS, n)).reshape(-1))
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=["cat_%d" % f for f in range(FIELDS)], values=ids,
                                              lengths=torch.ones(FIELDS * n, dtype=torch.int32))
    label = torch.from_numpy(rng.integers(0, 2, n).astype(np.float32))
    return dense, kjt, label


def worker(rank, args, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), LOCAL_WORLD_SIZE=str(args.ranks))
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.optim.optimizers import in_backward_optimizer_filter
    from torchrec.optim.rowwise_adagrad import RowWiseAdagrad
    from torch.distributed.optim import _apply_optimizer_in_backward as apply_in_backward

    torch.manual_seed(0)
    model = build(args)
    apply_in_backward(RowWiseAdagrad, model.sparse_arch.parameters(), {"lr": 0.02, "eps": 1e-8})
    model = DistributedModelParallel(module=model, device=torch.device("cpu"))
    dense_opt = torch.optim.AdamW(dict(in_backward_optimizer_filter(model.named_parameters())).values(), lr=1e-3,
                                  betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    dense, kjt, label = batch_of(args, args.batch // args.ranks, 7 + rank)
    times = []
    for i in range(args.warmup + args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        dense_opt.zero_grad(set_to_none=True)
        logits = model(dense, kjt).squeeze(-1)
        loss = F.binary_cross_entropy_with_logits(logits, label)
        loss.backward()
        dense_opt.step()
        t1 = time.perf_counter()
        if i >= args.warmup:
            times.append(t1 - t0)
    if rank == 0:
        import fbgemm_gpu
        import torchrec

        rate = args.batch / np.array(times)
        plan = str(model.plan).replace("|", " ").replace(",", " ").splitlines()
        if args.print_plan:
            print(model.plan, flush=True)
        kinds = sorted({w for line in plan for w in ("table_wise", "row_wise", "data_parallel", "column_wise",
                                                       "table_row_wise", "fused", "dense") if w in line.split()})
        out.put({"framework": "torchrec", "torch": torch.__version__, "torchrec": torchrec.__version__,
                 "fbgemm_gpu": fbgemm_gpu.__version__, "model": args.model, "batch": args.batch,
                 "threads": args.threads, "ranks": args.ranks, "rows": args.rows, "steps": args.steps,
                 "sharding": ",".join(kinds) or "?", "loss": float(loss.detach()),
                 "dense_parameters": sum(p.numel() for n, p in model.named_parameters() if "embedding" not in n),
                 "fused_optimizer": type(model.fused_optimizer).__name__,
                 "samples_per_s_min": round(float(rate.min()), 1),
                 "samples_per_s_median": round(float(np.median(rate)), 1),
                 "samples_per_s_max": round(float(rate.max()), 1),
                 "step_ms_median": round(float(np.median(times)) * 1e3, 2)})
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="dcn")
    ap.add_argument("--batch", type=int, default=1024, help="global batch (split over the ranks)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--rows", type=int, default=10007, help="rows of every table")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--port", type=int, default=29533)
    ap.add_argument("--print-plan", action="store_true", help="print DMP's sharding plan")
    args = ap.parse_args()
    if args.batch % args.ranks:
        ap.error("--batch %d: not a multiple of --ranks %d" % (args.batch, args.ranks))
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.spawn(worker, args=(args, args.port, out), nprocs=args.ranks, join=True)
    print(json.dumps(out.get()), flush=True)


if __name__ == "__main__":
    main()
