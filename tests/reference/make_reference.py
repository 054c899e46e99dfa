#!/usr/bin/python3
"""Generate the PyTorch reference files that the C tests compare against.

What it writes: tests/data/reference/<case>.h5, one file per case below, each
holding a small built-in model (docs/models.md) with random parameters, one
random batch, and PyTorch's forward outputs and gradients of the total loss
L = L_main + lambda * sum(local losses), all float32.

Rerun from the repository root (needs torch, numpy, h5py):

    /usr/bin/python3 tests/reference/make_reference.py

The output is deterministic (seeded numpy RNG, one torch thread, no HDF5
timestamps): rerunning with the same torch gives the same bytes. Each case's
seed was chosen so that no ReLU input lies within 1e-3 of 0 (asserted), so an
implementation that rounds differently cannot land on the other side of a kink
(gpt has no ReLU: its GELU is smooth). The gpt cases hold batch 3 (the
attribute), the others 16.

File layout (contiguous datasets, no compression):
  attributes   model_file  fixed-length ASCII string: a libconfig model file
                           (lib/nn/model_config.h) describing the same model
               batch       int32
               generator   fixed-length ASCII string
  /params/<name>           float32, the parameter's shape (names: docs/models.md)
  /input/dense             ctr: float32 [B, 13] (already log1p-transformed)
  /input/sparse            ctr: uint32 [B, 26] (0xFFFFFFFF = missing)
  /input/features          mlp: float32 [B, inputs]
  /input/label             ctr: float32 [B] in {0, 1}; mlp: int32 [B]
  /input/tokens            gpt: int32 [B, T] (positions 0..T-1 of each window)
  /input/targets           gpt: int32 [B, T] (the next tokens)
  /output/<block>/body     float32 [B, width] ([B, T, C] for gpt), what the next block reads
  /output/<block>/logits   float32 [B, 1] (ctr), [B, classes] (mlp) or [B, T, vocab]
                           (gpt; absent for a block without a head)
  /output/<block>/loss     float32 scalar, the block's unweighted mean loss (0 without a head)
  /output/total_loss       float32 scalar
  /grad/<name>             float32, dL/dparam (embedding tables: dense)

The script also checks, with assertions, that a block's gradients do not
depend on the losses of blocks beyond the next cut (rerun with those losses
doubled: bitwise the same), and, as a control, that they do depend on the
losses of later blocks that are not cut off. With cuts "all" this is: block
b's gradients ignore every later block's loss, for every b < last.
"""

import math
import os

import h5py
import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "tests", "data", "reference")
BATCH = 16
MISSING = 0xFFFFFFFF
CTR_DENSE, CTR_FIELDS = 13, 26
RELU_MARGIN = 1e-3         # smallest |ReLU input| allowed (see relu())

CTR = dict(dim=4, rows=[5 + (f % 7) for f in range(CTR_FIELDS)], bottom=[8, 4],
           width=8, subarchs=6, lam=0.5)
MLP = dict(inputs=12, hidden=[10, 9, 8], classes=5, lam=0.7)
GPT = dict(layers=3, heads=4, width=32, context=8, vocab=50, lam=0.6, batch=3)


# ---------------------------------------------------------------- parameters

def linear_params(rng, params, prefix, n_in, n_out):
    bound = 1.0 / math.sqrt(n_in)
    params[prefix + "/weight"] = rng.uniform(-bound, bound, (n_out, n_in))
    params[prefix + "/bias"] = rng.uniform(-bound, bound, (n_out,))


def ctr_params(rng, m):
    """name -> float32 numpy array, in the order of docs/models.md."""
    p = {}
    d = m["dim"]
    for f, rows in enumerate(m["rows"]):
        p["input/emb/%d" % f] = rng.uniform(-0.5, 0.5, (rows, d))
    n_in = CTR_DENSE
    for i, w in enumerate(m["bottom"]):
        linear_params(rng, p, "input/bottom/%d" % i, n_in, w)
        n_in = w
    inter = d + (CTR_FIELDS + 1) * CTR_FIELDS // 2
    linear_params(rng, p, "input/head", inter, 1)
    n_in = inter
    for s in range(1, m["subarchs"] + 1):
        linear_params(rng, p, "sub%d/fc0" % s, n_in, m["width"])
        linear_params(rng, p, "sub%d/fc1" % s, m["width"], m["width"])
        linear_params(rng, p, "sub%d/head" % s, m["width"], 1)
        n_in = m["width"]
    return {k: v.astype(np.float32) for k, v in p.items()}


def mlp_params(rng, m):
    p = {}
    n_in = m["inputs"]
    for k, h in enumerate(m["hidden"]):
        linear_params(rng, p, "layer%d/fc" % k, n_in, h)
        linear_params(rng, p, "layer%d/head" % k, h, m["classes"])
        n_in = h
    return {k: v.astype(np.float32) for k, v in p.items()}


def gpt_params(rng, m, cuts, tie):
    """GPT-2 (docs/models.md, gpt), block k = layer "h<k>". Random values of
    a larger spread than GPT-2's initialisation (every path matters in the
    gradients): weights normal(0, 0.2), biases normal(0, 0.1), LayerNorm
    weights 1 + normal(0, 0.1). The last head is tied to h0/wte when `tie`
    (no lm_head of its own)."""
    p = {}
    L, C, V, T = m["layers"], m["width"], m["vocab"], m["context"]
    w = lambda *shape: rng.normal(0.0, 0.2, shape)
    bias = lambda n: rng.normal(0.0, 0.1, (n,))
    ln = lambda n: 1.0 + rng.normal(0.0, 0.1, (n,))
    p["h0/wte"] = rng.normal(0.0, 0.5, (V, C))
    p["h0/wpe"] = rng.normal(0.0, 0.5, (T, C))
    for k in range(L):
        h = "h%d/" % k
        p[h + "ln_1/weight"], p[h + "ln_1/bias"] = ln(C), bias(C)
        p[h + "attn/c_attn/weight"], p[h + "attn/c_attn/bias"] = w(3 * C, C), bias(3 * C)
        p[h + "attn/c_proj/weight"], p[h + "attn/c_proj/bias"] = w(C, C), bias(C)
        p[h + "ln_2/weight"], p[h + "ln_2/bias"] = ln(C), bias(C)
        p[h + "mlp/c_fc/weight"], p[h + "mlp/c_fc/bias"] = w(4 * C, C), bias(4 * C)
        p[h + "mlp/c_proj/weight"], p[h + "mlp/c_proj/bias"] = w(C, 4 * C), bias(C)
        if k == L - 1 or (k + 1) in cuts:
            p[h + "ln_f/weight"], p[h + "ln_f/bias"] = ln(C), bias(C)
            if not (k == L - 1 and tie):
                p[h + "lm_head/weight"] = w(V, C)
    return {k: v.astype(np.float32) for k, v in p.items()}


# ---------------------------------------------------------------- inputs

def ctr_inputs(rng, batch):
    counts = rng.integers(0, 1000, (batch, CTR_DENSE))
    dense = np.log1p(counts.astype(np.float64))
    dense[rng.random((batch, CTR_DENSE)) < 0.2] = 0.0     # "missing" -> 0
    # Hashes: half drawn from a pool of 3 per field (repeated ids), half
    # fresh; about 10% missing. Uniform over 32 bits, so many are >= 2^31.
    pool = rng.integers(0, MISSING, (3, CTR_FIELDS), dtype=np.uint64)
    fresh = rng.integers(0, MISSING, (batch, CTR_FIELDS), dtype=np.uint64)
    pick = rng.integers(0, 3, (batch, CTR_FIELDS))
    pooled = pool[pick, np.arange(CTR_FIELDS)]
    sparse = np.where(rng.random((batch, CTR_FIELDS)) < 0.5, pooled, fresh)
    sparse[rng.random((batch, CTR_FIELDS)) < 0.1] = MISSING
    sparse[0, 0] = MISSING                                 # at least one
    label = rng.integers(0, 2, batch)
    label[0], label[1] = 0, 1                              # both classes
    return dict(dense=dense.astype(np.float32), sparse=sparse.astype(np.uint32),
                label=label.astype(np.float32))


def mlp_inputs(rng, batch, m):
    features = rng.normal(0.0, 1.0, (batch, m["inputs"]))
    label = rng.integers(0, m["classes"], batch)
    label[:m["classes"]] = np.arange(m["classes"])         # every class
    return dict(features=features.astype(np.float32), label=label.astype(np.int32))


def gpt_inputs(rng, m):
    """Windows of T+1 random tokens: tokens = positions 0..T-1, targets =
    1..T; every row of wte is not touched (the untouched rows' gradient is
    the tied head's alone)."""
    window = rng.integers(0, m["vocab"], (m["batch"], m["context"] + 1))
    return dict(tokens=window[:, :-1].astype(np.int32), targets=window[:, 1:].astype(np.int32))


# ---------------------------------------------------------------- models

RELU_INPUTS = []          # every ReLU input of the last forward


def relu(x):
    """ReLU that records its input, so that make_case can check that no
    pre-activation is so close to 0 that float rounding in another
    implementation could flip which side of the kink it lands on."""
    RELU_INPUTS.append(x.detach())
    return F.relu(x)

# A block is a function (params, x) -> (body, logits); the model runs the
# chain, detaching the input of block c when boundary c is a cut.

def emb_rows(ids, rows):
    """Row of each uint32 id: rows-1 if missing, else id mod (rows-1)."""
    ids = ids.astype(np.int64)
    return torch.from_numpy(np.where(ids == MISSING, rows - 1, ids % (rows - 1)))


def ctr_blocks(m, inp):
    def input_block(P, _x):
        v = torch.from_numpy(inp["dense"])
        for i in range(len(m["bottom"])):
            v = relu(F.linear(v, P["input/bottom/%d/weight" % i], P["input/bottom/%d/bias" % i]))
        vecs = [v] + [F.embedding(emb_rows(inp["sparse"][:, f], rows), P["input/emb/%d" % f])
                      for f, rows in enumerate(m["rows"])]
        V = torch.stack(vecs, dim=1)                       # [B, 27, D]
        dots = torch.bmm(V, V.transpose(1, 2))             # [B, 27, 27]
        i, j = torch.triu_indices(len(vecs), len(vecs), offset=1)  # i<j, row-major
        body = torch.cat([v, dots[:, i, j]], dim=1)
        return body, F.linear(body, P["input/head/weight"], P["input/head/bias"])

    def sub_block(s):
        def f(P, x):
            x = relu(F.linear(x, P["sub%d/fc0/weight" % s], P["sub%d/fc0/bias" % s]))
            x = relu(F.linear(x, P["sub%d/fc1/weight" % s], P["sub%d/fc1/bias" % s]))
            return x, F.linear(x, P["sub%d/head/weight" % s], P["sub%d/head/bias" % s])
        return f

    names = ["input"] + ["sub%d" % s for s in range(1, m["subarchs"] + 1)]
    fns = [input_block] + [sub_block(s) for s in range(1, m["subarchs"] + 1)]
    label = torch.from_numpy(inp["label"])
    loss = lambda logits: F.binary_cross_entropy_with_logits(logits[:, 0], label)
    return names, fns, loss


def mlp_blocks(m, inp):
    def layer(k):
        def f(P, x):
            x = relu(F.linear(x, P["layer%d/fc/weight" % k], P["layer%d/fc/bias" % k]))
            return x, F.linear(x, P["layer%d/head/weight" % k], P["layer%d/head/bias" % k])
        return f

    names = ["layer%d" % k for k in range(len(m["hidden"]))]
    fns = [layer(k) for k in range(len(m["hidden"]))]
    label = torch.from_numpy(inp["label"]).long()
    loss = lambda logits: F.cross_entropy(logits, label)
    return names, fns, loss


def gpt_blocks(m, inp, cuts, tie):
    """nanoGPT's Block and head as functions of the parameter dict."""
    L, C, H, T, V = m["layers"], m["width"], m["heads"], m["context"], m["vocab"]
    tokens = torch.from_numpy(inp["tokens"]).long()
    targets = torch.from_numpy(inp["targets"]).long()
    ln = lambda P, x, n: F.layer_norm(x, (C,), P[n + "/weight"], P[n + "/bias"], eps=1e-5)
    lin = lambda P, x, n: F.linear(x, P[n + "/weight"], P.get(n + "/bias"))

    def attention(qkv):
        B = qkv.shape[0]
        q, k, v = qkv.split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)

    def layer(kk):
        h = "h%d/" % kk

        def f(P, x):
            if kk == 0:
                x = F.embedding(tokens, P["h0/wte"]) + P["h0/wpe"][:T]
            x = x + lin(P, attention(lin(P, ln(P, x, h + "ln_1"), h + "attn/c_attn")), h + "attn/c_proj")
            y = F.gelu(lin(P, ln(P, x, h + "ln_2"), h + "mlp/c_fc"), approximate="tanh")
            x = x + lin(P, y, h + "mlp/c_proj")
            if kk < L - 1 and (kk + 1) not in cuts:
                return x, None
            W = P["h0/wte"] if kk == L - 1 and tie else P[h + "lm_head/weight"]
            return x, F.linear(ln(P, x, h + "ln_f"), W)
        return f

    names = ["h%d" % k for k in range(L)]
    fns = [layer(k) for k in range(L)]
    loss = lambda logits: (torch.zeros(()) if logits is None
                           else F.cross_entropy(logits.view(-1, V), targets.view(-1)))
    return names, fns, loss


def run(params, names, fns, loss_fn, x0, cuts, lam, scale=None):
    """Forward all blocks and backward L. `scale[b]` multiplies block b's
    loss in L (used only by the independence check). Returns the outputs and
    name -> gradient."""
    P = {k: torch.from_numpy(v.copy()).requires_grad_(True) for k, v in params.items()}
    RELU_INPUTS.clear()
    x, out, losses = x0, {}, []
    for b, (name, fn) in enumerate(zip(names, fns)):
        if b > 0 and b in cuts:
            x = x.detach()
        body, logits = fn(P, x)
        losses.append(loss_fn(logits))
        out[name] = dict(body=body, logits=logits, loss=losses[-1])
        x = body
    weights = [lam] * (len(losses) - 1) + [1.0]
    if scale is not None:
        weights = [w * s for w, s in zip(weights, scale)]
    total = sum(w * l for w, l in zip(weights, losses))
    total.backward()
    grads = {k: t.grad.detach().numpy().copy() for k, t in P.items()}
    return out, total, grads


# ---------------------------------------------------------------- checks

def block_of(name):
    return name.split("/", 1)[0]


def grads_change(params, names, fns, loss_fn, x0, cuts, lam, grads, b, first):
    """Rerun with the losses of blocks first..last doubled; True if any
    gradient of block b's parameters differs (bitwise) from `grads`."""
    scale = [1.0] * first + [2.0] * (len(names) - first)
    _, _, g2 = run(params, names, fns, loss_fn, x0, cuts, lam, scale)
    return any(not np.array_equal(grads[k], g2[k]) for k in params if block_of(k) == names[b])


def check_cuts(filename, params, names, fns, loss_fn, x0, cuts, lam, grads):
    """For each block b < last, with c the first cut after b: doubling the
    losses of blocks c.. must leave b's gradients bitwise unchanged, and
    doubling the losses of blocks b+1.. must change them when b+1 < c."""
    nb = len(names)
    for b in range(nb - 1):
        c = min([x for x in cuts if x > b], default=nb)
        if c < nb:
            assert not grads_change(params, names, fns, loss_fn, x0, cuts, lam, grads, b, c), \
                "%s: %s depends on the losses of blocks %s.." % (filename, names[b], names[c])
            print("  %s: %-6s grads unchanged with losses of %s..%s x2"
                  % (filename, names[b], names[c], names[-1]))
        if c > b + 1:
            assert grads_change(params, names, fns, loss_fn, x0, cuts, lam, grads, b, b + 1), \
                "%s: %s does not see the loss of %s" % (filename, names[b], names[b + 1])
            print("  %s: %-6s grads change    with losses of %s..%s x2 (no cut at %d)"
                  % (filename, names[b], names[b + 1], names[-1], b + 1))


# ---------------------------------------------------------------- output

def ascii_attr(s):
    return np.bytes_(s.encode("ascii"))


def model_file(kind, m, cuts, tie):
    if cuts == "all" or cuts == "none":
        cuts_text = '"%s"' % cuts
    else:
        cuts_text = "[" + ", ".join(str(c) for c in cuts) + "]"
    ints = lambda xs: "[" + ", ".join(str(x) for x in xs) + "]"
    if kind == "ctr":
        body = ("ctr: {\n  embedding_dim = %d;\n  table_rows = %s;\n  bottom_mlp = %s;\n"
                "  subarch_width = %d;\n  subarchs = %d;\n  cuts = %s;\n"
                "  local_loss_weight = %r;\n};\n"
                % (m["dim"], ints(m["rows"]), ints(m["bottom"]), m["width"],
                   m["subarchs"], cuts_text, m["lam"]))
    elif kind == "gpt":
        body = ("gpt: {\n  layers = %d;\n  heads = %d;\n  width = %d;\n  context = %d;\n"
                "  vocab = %d;\n  cuts = %s;\n  local_loss_weight = %r;\n%s};\n"
                % (m["layers"], m["heads"], m["width"], m["context"], m["vocab"], cuts_text, m["lam"],
                   "" if tie is None else "  tie_head = %s;\n" % ("true" if tie else "false")))
    else:
        body = ("mlp: {\n  inputs = %d;\n  hidden = %s;\n  classes = %d;\n  cuts = %s;\n"
                "  local_loss_weight = %r;\n};\n"
                % (m["inputs"], ints(m["hidden"]), m["classes"], cuts_text, m["lam"]))
    return 'model = "%s";\nseed = 1;\n%s' % (kind, body)


def write(path, text, batch, inputs, params, out, total, grads):
    # No timestamps on any object, so rerunning gives identical bytes.
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V18, h5py.h5f.LIBVER_V18)
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)

    def ds(name, a):
        parent = f
        for part in name.split("/")[:-1]:
            if part not in parent:
                h5py.h5g.create(parent.id, part.encode(), gcpl=gcpl)
            parent = parent[part]
        f.create_dataset(name, data=a, track_times=False)

    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    with h5py.File(fid) as f:
        f.attrs["model_file"] = ascii_attr(text)
        f.attrs["batch"] = np.int32(batch)
        f.attrs["generator"] = ascii_attr(
            "tests/reference/make_reference.py, torch %s" % torch.__version__)
        for k, v in params.items():
            ds("params/" + k, v)
        for k, v in inputs.items():
            ds("input/" + k, v)
        for block, o in out.items():
            for k in ("body", "logits", "loss"):
                if o[k] is not None:
                    ds("output/%s/%s" % (block, k), o[k].detach().numpy().astype(np.float32))
        ds("output/total_loss", total.detach().numpy().astype(np.float32))
        for k, v in grads.items():
            ds("grad/" + k, v)


def make_case(filename, kind, cuts, seed, tie=None):
    """tie (gpt): None leaves tie_head out of the model file (tied exactly
    without cuts), else its value."""
    rng = np.random.default_rng(seed)
    batch = BATCH
    if kind == "ctr":
        m = CTR
        params, inputs = ctr_params(rng, m), ctr_inputs(rng, BATCH)
        names, fns, loss_fn = ctr_blocks(m, inputs)
        x0 = None
    elif kind == "gpt":
        m = GPT
        batch = m["batch"]
        cut_list = list(range(1, m["layers"])) if cuts == "all" else [] if cuts == "none" else cuts
        tied = not cut_list if tie is None else tie
        params, inputs = gpt_params(rng, m, cut_list, tied), gpt_inputs(rng, m)
        names, fns, loss_fn = gpt_blocks(m, inputs, cut_list, tied)
        x0 = None
    else:
        m = MLP
        params, inputs = mlp_params(rng, m), mlp_inputs(rng, BATCH, m)
        names, fns, loss_fn = mlp_blocks(m, inputs)
        x0 = torch.from_numpy(inputs["features"])
    nb = len(names)
    cut_set = set(range(1, nb)) if cuts == "all" else set() if cuts == "none" else set(cuts)

    out, total, grads = run(params, names, fns, loss_fn, x0, cut_set, m["lam"])
    margin = min((float(t.abs().min()) for t in RELU_INPUTS), default=math.inf)
    assert margin > RELU_MARGIN, "a ReLU input is %g from 0; pick another seed" % margin
    for k, g in grads.items():
        assert g.shape == params[k].shape and np.isfinite(g).all(), k
        assert np.any(g != 0), "all-zero gradient: " + k
    if kind != "gpt":
        labels = np.unique(inputs["label"])
        assert len(labels) == (2 if kind == "ctr" else m["classes"])

    check_cuts(filename, params, names, fns, loss_fn, x0, cut_set, m["lam"], grads)

    path = os.path.join(OUT_DIR, filename)
    write(path, model_file(kind, m, cuts, tie), batch, inputs, params, out, total, grads)
    print("%s: %d blocks, total loss %.6f, %s, %d bytes"
          % (os.path.relpath(path, ROOT), nb, float(total),
             "min |ReLU input| %.1e" % margin if RELU_INPUTS else "no ReLU", os.path.getsize(path)))


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT_DIR, exist_ok=True)
    print("torch %s" % torch.__version__)
    make_case("ctr_cuts_none.h5", "ctr", "none", 33)
    make_case("ctr_cuts_all.h5", "ctr", "all", 12)
    make_case("ctr_cuts_2_4.h5", "ctr", [2, 4], 11)
    make_case("mlp_cuts_all.h5", "mlp", "all", 41)
    make_case("mlp_cuts_none.h5", "mlp", "none", 23)
    make_case("gpt_cuts_none.h5", "gpt", "none", 51)
    make_case("gpt_cuts_1_2.h5", "gpt", [1, 2], 52)
    make_case("gpt_untied.h5", "gpt", "none", 53, tie=False)


if __name__ == "__main__":
    main()
