#!/usr/bin/python3
"""Generate the PyTorch reference files of the dcn model (DLRM-DCNv2) that
tests/nn/test-models compares against.

What it writes: tests/data/reference/dcn_*.h5, in make_reference.py's layout
(read its docstring), for a small dcn (docs/models.md): embedding_dim 4,
tables of 5..11 rows, dense arch 13-8-4, 3 cross layers of width
W = 27 x 4 = 108, over arch 8-6-5-1, batch 16, local loss weight 0.5:

  dcn_cuts_none.h5      low rank 3, no cuts: TorchRec's DLRM_DCN exactly
  dcn_cuts_all.h5       low rank 3, every boundary a cut (a local head on
                        every block but the last)
  dcn_full_cuts_2_5.h5  full-rank cross layers (TorchRec's CrossNet), cuts at
                        2 (inside the cross network) and 5

A cross block's body is the pair (x0, x_{C+1}) stored [2][B][W] (x0's rows,
then x_{C+1}'s), the last cross block's x_L alone; a cut detaches both.

The blocks are the composition of torchrec/models/dlrm.py's DLRM_DCN
(DenseArch, SparseArch, InteractionDCNArch, OverArch) written out layer by
layer, so that cuts can sit between its layers; the chain of cross layers
is checked against TorchRec's own modules, LowRankCrossNet and CrossNet of
torchrec/modules/crossnet.py, with the same kernels (the module file is
loaded from an installed torchrec by path, as it needs only torch). Where `import torchrec` works (its
fbgemm_gpu must match torch), the no-cut case is also run through
torchrec.models.dlrm.DLRM_DCN with the same weights and must agree within
1e-6. Without torchrec installed, the same formulas in plain PyTorch
(TorchRec's published definitions) are used and the file says so in its
`generator` attribute.

Rerun from the repository root (torch, numpy, h5py; torchrec optional):

    python3 tests/reference/make_dcn_reference.py
"""

import glob
import importlib.util
import math
import os
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference as ref  # noqa: E402  (the layout, inputs, checks)

DCN = dict(dim=4, rows=[5 + (f % 7) for f in range(ref.CTR_FIELDS)], bottom=[8, 4], cross=3, rank=3,
           top=[8, 6, 5, 1], lam=0.5)


# ---------------------------------------------------------------- TorchRec

def load_crossnet():
    """torchrec/modules/crossnet.py of an installed torchrec, loaded by path
    (it imports only torch), or None."""
    for site in sys.path:
        for path in glob.glob(os.path.join(site, "torchrec", "modules", "crossnet.py")):
            spec = importlib.util.spec_from_file_location("torchrec_crossnet", path)
            mod = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(mod)
                return mod
            except Exception as e:  # a torchrec too old or too new for this torch
                print("cannot load %s: %s" % (path, e))
    return None


CROSSNET = load_crossnet()


def cross_layer(P, C, rank, x0, xl):
    """x_{C+1} = x0 * (W_C (V_C x_C) + b_C) + x_C (full rank: K_C x_C), the
    formula of TorchRec's LowRankCrossNet / CrossNet forward (checked against
    the modules themselves by check_whole_crossnet)."""
    pre = "cross%d/inter_arch/crossnet/" % C
    if rank > 0:
        u = F.linear(F.linear(xl, P[pre + "V_kernels/%d" % C]), P[pre + "W_kernels/%d" % C])
    else:
        u = F.linear(xl, P[pre + "kernels/%d" % C])
    return x0 * (u + P[pre + "bias/%d" % C].reshape(-1)) + xl


def check_whole_crossnet(P, m, x0):
    """The chain of our one-layer cross steps equals TorchRec's whole
    LowRankCrossNet / CrossNet of cross layers with the same kernels (the
    x0 of every layer is the network's input)."""
    if CROSSNET is None:
        return
    W = x0.shape[1]
    with torch.no_grad():
        if m["rank"] > 0:
            net = CROSSNET.LowRankCrossNet(in_features=W, num_layers=m["cross"], low_rank=m["rank"])
        else:
            net = CROSSNET.CrossNet(in_features=W, num_layers=m["cross"])
        for C in range(m["cross"]):
            pre = "cross%d/inter_arch/crossnet/" % C
            if m["rank"] > 0:
                net.W_kernels[C].copy_(P[pre + "W_kernels/%d" % C])
                net.V_kernels[C].copy_(P[pre + "V_kernels/%d" % C])
            else:
                net.kernels[C].copy_(P[pre + "kernels/%d" % C])
            net.bias[C].copy_(P[pre + "bias/%d" % C].reshape(net.bias[C].shape))
        whole = net(x0)
        xl = x0
        for C in range(m["cross"]):
            xl = cross_layer(P, C, m["rank"], x0, xl)
    err = float((whole - xl).abs().max())
    assert err < 1e-5, "TorchRec's crossnet differs from the layer chain by %g" % err
    print("  TorchRec %s of %d layers = the chain of cross blocks (max |diff| %.1e)"
          % (type(net).__name__, m["cross"], err))


# ---------------------------------------------------------------- model

def dcn_params(rng, m):
    """name -> float32 array (docs/models.md names: TorchRec's state dict).
    Larger spreads than TorchRec's initialisation, so every path shows in
    the gradients; the cross biases are not zero."""
    p = {}
    d = m["dim"]
    W = (ref.CTR_FIELDS + 1) * d
    n_in = ref.CTR_DENSE
    for i, w in enumerate(m["bottom"]):
        ref.linear_params(rng, p, "input/dense_arch/model/_mlp/%d/_linear" % i, n_in, w)
        n_in = w
    for f, rows in enumerate(m["rows"]):
        p["input/emb/%d" % f] = rng.uniform(-0.5, 0.5, (rows, d))
    return p, W


def dcn_case(rng, m, cut_set):
    p, W = dcn_params(rng, m)
    nb = 1 + m["cross"] + len(m["top"]) - 1
    has_head = lambda b: b == nb - 1 or (b + 1) in cut_set
    if has_head(0):
        ref.linear_params(rng, p, "input/head", W, 1)
    for C in range(m["cross"]):
        pre = "cross%d/inter_arch/crossnet/" % C
        std = math.sqrt(2.0 / (W + (m["rank"] or W)))
        if m["rank"] > 0:
            p[pre + "W_kernels/%d" % C] = rng.normal(0.0, 3 * std, (W, m["rank"]))
            p[pre + "V_kernels/%d" % C] = rng.normal(0.0, 3 * std, (m["rank"], W))
        else:
            p[pre + "kernels/%d" % C] = rng.normal(0.0, 3 * std, (W, W))
        # TorchRec 1.9's shapes: LowRankCrossNet's bias [W], CrossNet's [W, 1]
        p[pre + "bias/%d" % C] = rng.normal(0.0, 0.1, (W,) if m["rank"] > 0 else (W, 1))
        if has_head(1 + C):
            ref.linear_params(rng, p, "cross%d/head" % C, W, 1)
    n_in = W
    for J, w in enumerate(m["top"][:-1]):
        b = 1 + m["cross"] + J
        ref.linear_params(rng, p, "over%d/over_arch/model/0/_mlp/%d/_linear" % (J, J), n_in, w)
        if b == nb - 1:
            ref.linear_params(rng, p, "over%d/over_arch/model/1" % J, w, m["top"][-1])
        elif has_head(b):
            ref.linear_params(rng, p, "over%d/head" % J, w, 1)
        n_in = w
    return {k: v.astype(np.float32) for k, v in p.items()}, nb, has_head


def dcn_blocks(m, inp, nb, has_head):
    B = inp["dense"].shape[0]
    L = m["cross"]
    lin = lambda P, x, n: F.linear(x, P[n + "/weight"], P[n + "/bias"])

    def input_block(P, _x):
        v = torch.from_numpy(inp["dense"])
        for i in range(len(m["bottom"])):
            v = ref.relu(lin(P, v, "input/dense_arch/model/_mlp/%d/_linear" % i))
        embs = [F.embedding(ref.emb_rows(inp["sparse"][:, f], rows), P["input/emb/%d" % f])
                for f, rows in enumerate(m["rows"])]
        # InteractionDCNArch: cat(dense.unsqueeze(1), sparse [B, F, D]) -> [B, (F+1) D]
        x0 = torch.cat([v.unsqueeze(1), torch.stack(embs, dim=1)], dim=1).reshape(B, -1)
        return x0, lin(P, x0, "input/head") if has_head(0) else None

    def cross_block(C):
        def f(P, x):
            x0, xl = (x, x) if C == 0 else (x[:B], x[B:])
            y = cross_layer(P, C, m["rank"], x0, xl)
            body = torch.cat([x0, y], dim=0) if C < L - 1 else y
            return body, lin(P, y, "cross%d/head" % C) if has_head(1 + C) else None
        return f

    def over_block(J):
        b = 1 + L + J

        def f(P, x):
            y = ref.relu(lin(P, x, "over%d/over_arch/model/0/_mlp/%d/_linear" % (J, J)))
            if b == nb - 1:
                return y, lin(P, y, "over%d/over_arch/model/1" % J)
            return y, lin(P, y, "over%d/head" % J) if has_head(b) else None
        return f

    names = ["input"] + ["cross%d" % C for C in range(L)] + ["over%d" % J for J in range(len(m["top"]) - 1)]
    fns = [input_block] + [cross_block(C) for C in range(L)] + [over_block(J) for J in range(len(m["top"]) - 1)]
    label = torch.from_numpy(inp["label"])
    loss = lambda logits: (torch.zeros(()) if logits is None
                           else F.binary_cross_entropy_with_logits(logits[:, 0], label))
    return names, fns, loss


def check_torchrec_dlrm_dcn(m, params, inp, out):
    """No cuts: torchrec.models.dlrm.DLRM_DCN with the same weights gives the
    same logits (when torchrec imports)."""
    try:
        from torchrec.models.dlrm import DLRM_DCN
        from torchrec.modules.embedding_configs import EmbeddingBagConfig
        from torchrec.modules.embedding_modules import EmbeddingBagCollection
        from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
    except Exception as e:
        print("  torchrec.models.dlrm.DLRM_DCN not importable (%s): the composition is this script's"
              % str(e).splitlines()[0][:120])
        return "cross layers checked against TorchRec's crossnet.py modules; DLRM_DCN not importable"
    keys = ["cat_%d" % f for f in range(ref.CTR_FIELDS)]
    ebc = EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(name="t_" + k, embedding_dim=m["dim"], num_embeddings=rows, feature_names=[k])
        for k, rows in zip(keys, m["rows"])])
    model = DLRM_DCN(embedding_bag_collection=ebc, dense_in_features=ref.CTR_DENSE,
                     dense_arch_layer_sizes=m["bottom"], over_arch_layer_sizes=m["top"],
                     dcn_num_layers=m["cross"], dcn_low_rank_dim=m["rank"])
    names = {}
    for i in range(len(m["bottom"])):
        for t in ("weight", "bias"):
            names["dense_arch.model._mlp.%d._linear.%s" % (i, t)] = \
                "input/dense_arch/model/_mlp/%d/_linear/%s" % (i, t)
    for f, k in enumerate(keys):
        names["sparse_arch.embedding_bag_collection.embedding_bags.t_%s.weight" % k] = "input/emb/%d" % f
    for C in range(m["cross"]):
        for t in ("W_kernels", "V_kernels", "bias"):
            names["inter_arch.crossnet.%s.%d" % (t, C)] = "cross%d/inter_arch/crossnet/%s/%d" % (C, t, C)
    last = len(m["top"]) - 2
    for J in range(len(m["top"]) - 1):
        for t in ("weight", "bias"):
            names["over_arch.model.0._mlp.%d._linear.%s" % (J, t)] = \
                "over%d/over_arch/model/0/_mlp/%d/_linear/%s" % (J, J, t)
    for t in ("weight", "bias"):
        names["over_arch.model.1.%s" % t] = "over%d/over_arch/model/1/%s" % (last, t)
    state = model.state_dict()
    with torch.no_grad():
        for k in state:
            state[k].copy_(torch.from_numpy(params[names[k]]).reshape(state[k].shape))
    rows = [ref.emb_rows(inp["sparse"][:, f], r) for f, r in enumerate(m["rows"])]
    values = torch.cat(rows)
    B = inp["dense"].shape[0]
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=keys, values=values, lengths=torch.ones(len(keys) * B,
                                                                                       dtype=torch.int32))
    logits = model(torch.from_numpy(inp["dense"]), kjt)
    err = float((logits - out["over%d" % last]["logits"]).abs().max())
    assert err < 1e-6, "torchrec DLRM_DCN differs by %g" % err
    print("  torchrec.models.dlrm.DLRM_DCN logits = the blocks' (max |diff| %.1e)" % err)
    import torchrec
    return "torchrec %s DLRM_DCN (checked)" % torchrec.__version__


def model_file(m, cuts):
    ints = lambda xs: "[" + ", ".join(str(x) for x in xs) + "]"
    cuts_text = '"%s"' % cuts if isinstance(cuts, str) else ints(cuts)
    return ('model = "dcn";\nseed = 1;\ndcn: {\n  embedding_dim = %d;\n  table_rows = %s;\n  bottom_mlp = %s;\n'
            '  cross_layers = %d;\n  cross_rank = %d;\n  top_mlp = %s;\n  cuts = %s;\n  local_loss_weight = %r;\n};\n'
            % (m["dim"], ints(m["rows"]), ints(m["bottom"]), m["cross"], m["rank"], ints(m["top"]), cuts_text,
               m["lam"]))


def make_case(filename, m, cuts, seed):
    nb = 1 + m["cross"] + len(m["top"]) - 1
    cut_set = set(range(1, nb)) if cuts == "all" else set() if cuts == "none" else set(cuts)
    for tries in range(200):  # the first seed with every ReLU input away from 0
        rng = np.random.default_rng(seed + tries)
        params, nb, has_head = dcn_case(rng, m, cut_set)
        inputs = ref.ctr_inputs(rng, ref.BATCH)
        names, fns, loss_fn = dcn_blocks(m, inputs, nb, has_head)
        out, total, grads = ref.run(params, names, fns, loss_fn, None, cut_set, m["lam"])
        margin = min(float(t.abs().min()) for t in ref.RELU_INPUTS)
        if margin > ref.RELU_MARGIN:
            break
    else:
        raise AssertionError("no seed from %d keeps the ReLU inputs away from 0" % seed)
    for k, g in grads.items():
        assert g.shape == params[k].shape and np.isfinite(g).all(), k
        assert np.any(g != 0), "all-zero gradient: " + k
    P = {k: torch.from_numpy(v) for k, v in params.items()}
    check_whole_crossnet(P, m, out["input"]["body"].detach())
    generator = ("cross layers checked against TorchRec's crossnet.py modules" if CROSSNET
                 else "plain PyTorch (TorchRec's formulas; torchrec not installed)")
    if not cut_set and m["rank"] > 0:
        generator = check_torchrec_dlrm_dcn(m, params, inputs, out) if CROSSNET else generator
    ref.check_cuts(filename, params, names, fns, loss_fn, None, cut_set, m["lam"], grads)
    path = os.path.join(ref.OUT_DIR, filename)
    ref.write(path, model_file(m, cuts), ref.BATCH, inputs, params, out, total, grads)
    with h5py.File(path, "r+") as f:
        f.attrs["generator"] = ref.ascii_attr("tests/reference/make_dcn_reference.py (seed %d), torch %s, %s"
                                              % (seed + tries, torch.__version__, generator))
    print("%s: %d blocks, total loss %.6f, min |ReLU input| %.1e, %d bytes"
          % (os.path.relpath(path, ref.ROOT), nb, float(total.detach()), margin, os.path.getsize(path)))


def main():
    torch.set_num_threads(1)
    os.makedirs(ref.OUT_DIR, exist_ok=True)
    print("torch %s, TorchRec crossnet.py %s" % (torch.__version__, "loaded" if CROSSNET else "not found"))
    make_case("dcn_cuts_none.h5", DCN, "none", 61)
    make_case("dcn_cuts_all.h5", DCN, "all", 62)
    make_case("dcn_full_cuts_2_5.h5", dict(DCN, rank=0), [2, 5], 63)


if __name__ == "__main__":
    main()
