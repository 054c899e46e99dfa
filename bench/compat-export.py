#!/usr/bin/env python3
"""erase-export and --init-from against the real libraries (issue 37; outside
CI: transformers and PyTorch are multi-GB). Run from the repository root of a
built tree with a Python that has torch, transformers, safetensors and h5py
(/work/venv-torch here; no model is downloaded):

    /work/venv-torch/bin/python bench/compat-export.py [--build _build]

1. gpt -> transformers: a byte-level gpt (2 layers, width 64, 4 heads,
   context 32, tied head) trained 20 steps by erase-train on tinyshakespeare,
   exported with --format hf-gpt2, loaded into GPT2LMHeadModel built from a
   GPT2Config of erase's sizes (gelu_new, LayerNorm eps 1e-5, no dropout):
   its logits on a prompt against erase's (tests/ckpt/gpt-logits, erase's
   training forward), max |difference| <= 1e-5.
2. transformers -> erase: a GPT2LMHeadModel of the same sizes, random
   initialisation (seed 0), saved with save_pretrained(safe_serialization=True),
   started from by erase-train --init-from model.safetensors --init-format
   hf-gpt2 (one step at lr 1e-30, erase-train's lr being > 0: a change of
   about 1e-30, to have a checkpoint of the imported weights): erase's logits
   against transformers', <= 1e-5; then fine-tuned 20 steps (its loss).
3. nanochat -> PyTorch: a byte-level nanochat (2 layers, width 64, 4 heads,
   2 kv heads, context 32, softcap 15) trained 20 steps on tinyshakespeare,
   exported with --format nanochat, loaded (strict) into the PyTorch
   nanochat reference (Nanochat in tests/reference/make_nanochat_reference.py):
   its logits on the prompt against erase's, <= 1e-5.
4. PyTorch -> erase: that reference of the same sizes, random
   initialisation (seed 0), its state dict saved with safetensors'
   save_file, started from by erase-train --init-from --init-format
   nanochat (one step at lr 1e-30, as in 2): logits against the
   reference's, <= 1e-5.
5. ctr -> PyTorch: a small ctr (26 tables of 101 rows, D 4, bottom 8-4, two
   sub-architectures of width 16) trained 60 steps on synthetic data,
   exported with --format torch, loaded (strict) into the DLRM module below,
   whose predictions on the 4,000 rows are compared with erase-score's,
   max |difference| <= 1e-6.
Prints one line per check and exits 1 if one fails.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests/reference"))
from make_nanochat_reference import Nanochat  # noqa: E402

GPT = dict(layers=2, heads=4, width=64, context=32, vocab=256)
NANOCHAT = dict(layers=2, heads=4, kv_heads=2, width=64, context=32, vocab=256, softcap=15.0)
CTR_ROWS, CTR_DIM, CTR_FIELDS = 101, 4, 26
PROMPT = b"ROMEO:\nWhat light through yonder"
failed = []


def run(*cmd):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("failed (%d): %s\n%s%s" % (r.returncode, " ".join(map(str, cmd)), r.stdout[-2000:], r.stderr[-2000:]))
    return r.stdout + r.stderr


def check(name, diff, bound):
    ok = diff <= bound
    print("%s %s: max |difference| %.3g (bound %g)" % ("ok  " if ok else "FAIL", name, diff, bound))
    if not ok:
        failed.append(name)


def gpt_config():
    return GPT2Config(vocab_size=GPT["vocab"], n_positions=GPT["context"], n_embd=GPT["width"],
                      n_layer=GPT["layers"], n_head=GPT["heads"], activation_function="gelu_new",
                      layer_norm_epsilon=1e-5, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                      tie_word_embeddings=True)


def erase_logits(build, ckpt, tokens):
    out = run(os.path.join(build, "tests/ckpt/gpt-logits"), ckpt, ",".join(map(str, tokens)))
    return np.array([[float(x) for x in line.split()] for line in out.strip().split("\n")], np.float64)


def hf_logits(model, tokens):
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].double().numpy()


def gpt_model_file(path):
    with open(path, "w") as f:
        f.write('model = "gpt";\ngpt: {\n  layers = %(layers)d;\n  heads = %(heads)d;\n  width = %(width)d;\n'
                '  context = %(context)d;\n  vocab = %(vocab)d;\n};\n' % GPT)


def text_data(build, w):
    """$w/text: the first 200,000 bytes of tinyshakespeare, byte-level."""
    with open(os.path.join(ROOT, "data/text/tinyshakespeare.txt"), "rb") as f:
        text = f.read(200000)
    with open(os.path.join(w, "text.txt"), "wb") as f:
        f.write(text)
    run(os.path.join(build, "apps/erase-convert"), "text", "-q", os.path.join(w, "text.txt"), "-o",
        os.path.join(w, "text"))


def gpt_checks(build, w):
    apps = os.path.join(build, "apps")
    cfg = os.path.join(w, "gpt.cfg")
    gpt_model_file(cfg)
    train = [os.path.join(apps, "erase-train"), "--train", os.path.join(w, "text/train"), "--device", "cpu",
             "--quiet", "--global-batch", "8", "--model", cfg]
    run(*train, "--steps", "20", "--lr", "0.003", "--checkpoint-dir", os.path.join(w, "gpt"))
    st = os.path.join(w, "gpt.safetensors")
    run(os.path.join(apps, "erase-export"), os.path.join(w, "gpt"), "-o", st, "--format", "hf-gpt2", "--quiet")
    model = GPT2LMHeadModel(gpt_config()).eval()
    missing, unexpected = model.load_state_dict(load_file(st), strict=False)
    missing = [k for k in missing if k != "lm_head.weight" and not k.endswith(".attn.bias")]
    if missing or unexpected:
        failed.append("gpt names")
        print("FAIL gpt names: missing %s, unexpected %s" % (missing, unexpected))
    model.tie_weights()
    tokens = list(PROMPT)
    a, b = erase_logits(build, os.path.join(w, "gpt/ckpt-20.h5"), tokens), hf_logits(model, tokens)
    check("gpt erase-export -> transformers GPT2LMHeadModel: logits of %d positions x %d (|logit| up to %.2f)"
          % (a.shape[0], a.shape[1], np.abs(b).max()), np.abs(a - b).max(), 1e-5)

    torch.manual_seed(0)
    ref = GPT2LMHeadModel(gpt_config()).eval()
    ref.save_pretrained(os.path.join(w, "hf"), safe_serialization=True)
    hf_file = os.path.join(w, "hf/model.safetensors")
    run(*train, "--init-from", hf_file, "--init-format", "hf-gpt2", "--steps", "1", "--lr", "1e-30",
        "--checkpoint-dir", os.path.join(w, "imported"))
    a, b = erase_logits(build, os.path.join(w, "imported/ckpt-1.h5"), tokens), hf_logits(ref, tokens)
    check("transformers save_pretrained -> erase-train --init-from: logits of %d positions (|logit| up to %.2f)"
          % (a.shape[0], np.abs(b).max()), np.abs(a - b).max(), 1e-5)
    out = run(*train, "--init-from", hf_file, "--init-format", "hf-gpt2", "--steps", "20", "--lr", "0.003",
              "--eval-every", "20", "--checkpoint-dir", os.path.join(w, "tuned"))
    print("     fine-tuned by erase from it: " + [l for l in out.split("\n") if l.startswith("eval")][-1])


def nanochat_logits(model, tokens):
    """The reference's logits at the prompt's positions (padded with 0 to the context, as gpt-logits does)."""
    padded = list(tokens) + [0] * (NANOCHAT["context"] - len(tokens))
    with torch.no_grad():
        return model(torch.tensor([padded]))[0, :len(tokens)].double().numpy()


def nanochat_checks(build, w):
    apps = os.path.join(build, "apps")
    cfg = os.path.join(w, "nanochat.cfg")
    with open(cfg, "w") as f:
        f.write('model = "nanochat";\nnanochat: {\n  layers = %(layers)d;\n  heads = %(heads)d;\n'
                '  kv_heads = %(kv_heads)d;\n  width = %(width)d;\n  context = %(context)d;\n  vocab = %(vocab)d;\n'
                '  softcap = %(softcap)r;\n};\n' % NANOCHAT)
    train = [os.path.join(apps, "erase-train"), "--train", os.path.join(w, "text/train"), "--device", "cpu",
             "--quiet", "--global-batch", "8", "--model", cfg]
    run(*train, "--steps", "20", "--lr", "0.003", "--checkpoint-dir", os.path.join(w, "nanochat"))
    st = os.path.join(w, "nanochat.safetensors")
    run(os.path.join(apps, "erase-export"), os.path.join(w, "nanochat"), "-o", st, "--format", "nanochat", "--quiet")
    model = Nanochat(NANOCHAT).eval()
    model.load_state_dict(load_file(st), strict=True)
    tokens = list(PROMPT)
    a, b = erase_logits(build, os.path.join(w, "nanochat/ckpt-20.h5"), tokens), nanochat_logits(model, tokens)
    check("nanochat erase-export -> PyTorch nanochat reference (strict): logits of %d positions x %d (|logit| up to "
          "%.2f)" % (a.shape[0], a.shape[1], np.abs(b).max()), np.abs(a - b).max(), 1e-5)

    torch.manual_seed(0)
    ref = Nanochat(NANOCHAT).eval()
    ref_file = os.path.join(w, "nanochat-ref.safetensors")
    save_file(ref.state_dict(), ref_file)
    run(*train, "--init-from", ref_file, "--init-format", "nanochat", "--steps", "1", "--lr", "1e-30",
        "--checkpoint-dir", os.path.join(w, "nanochat-imported"))
    a, b = erase_logits(build, os.path.join(w, "nanochat-imported/ckpt-1.h5"), tokens), nanochat_logits(ref, tokens)
    check("PyTorch nanochat reference save_file -> erase-train --init-from: logits of %d positions (|logit| up to "
          "%.2f)" % (a.shape[0], np.abs(b).max()), np.abs(a - b).max(), 1e-5)


class Dlrm(nn.Module):
    """erase's ctr model (docs/models.md) with erase-export --format torch's names."""

    def __init__(self, rows, dim, bottom, width, subarchs):
        super().__init__()
        self.input = nn.Module()
        self.input.emb = nn.ModuleList([nn.Embedding(r, dim) for r in rows])
        widths = [13] + bottom
        self.input.bottom = nn.ModuleList([nn.Linear(a, b) for a, b in zip(widths, widths[1:])])
        inter = dim + (CTR_FIELDS + 1) * CTR_FIELDS // 2
        self.input.head = nn.Linear(inter, 1)
        self.rows = rows
        self.subs = []
        n_in = inter
        for s in range(1, subarchs + 1):
            m = nn.Module()
            m.fc0, m.fc1, m.head = nn.Linear(n_in, width), nn.Linear(width, width), nn.Linear(width, 1)
            self.add_module("sub%d" % s, m)
            self.subs.append(m)
            n_in = width

    def forward(self, dense, sparse):
        x = torch.log1p(torch.clamp(torch.nan_to_num(dense, nan=0.0), min=0.0))
        for layer in self.input.bottom:
            x = F.relu(layer(x))
        vs = [x]
        for f, table in enumerate(self.input.emb):
            ids = sparse[:, f].astype(np.int64)
            rows = np.where(sparse[:, f] == 0xFFFFFFFF, self.rows[f] - 1, ids % (self.rows[f] - 1))
            vs.append(table(torch.from_numpy(rows)))
        v = torch.stack(vs, 1)
        dots = v @ v.transpose(1, 2)
        i, j = torch.triu_indices(v.shape[1], v.shape[1], 1)
        x = torch.cat([x, dots[:, i, j]], 1)
        for m in self.subs:
            x = F.relu(m.fc1(F.relu(m.fc0(x))))
            logit = m.head(x)
        return torch.sigmoid(logit[:, 0])


def ctr_checks(build, w):
    apps = os.path.join(build, "apps")
    data = os.path.join(w, "ctr-data")
    run(os.path.join(apps, "erase-convert"), "synth", "-q", "-o", data, "--rows", "4000", "--shard-rows", "2000")
    cfg = os.path.join(w, "ctr.cfg")
    with open(cfg, "w") as f:
        f.write('model = "ctr";\nctr: {\n  embedding_dim = 4;\n  table_rows = 101;\n  bottom_mlp = [8, 4];\n'
                '  subarch_width = 16;\n  subarchs = 2;\n  cuts = "all";\n};\n')
    run(os.path.join(apps, "erase-train"), "--train", data, "--model", cfg, "--device", "cpu", "--quiet",
        "--global-batch", "64", "--steps", "60", "--checkpoint-dir", os.path.join(w, "ctr"))
    st = os.path.join(w, "ctr.safetensors")
    run(os.path.join(apps, "erase-export"), os.path.join(w, "ctr"), "-o", st, "--format", "torch", "--quiet")
    scores = os.path.join(w, "scores.h5")
    run(os.path.join(apps, "erase-score"), os.path.join(w, "ctr"), data, "-o", scores, "--quiet")
    model = Dlrm([CTR_ROWS] * CTR_FIELDS, CTR_DIM, [8, 4], 16, 2).eval()
    model.load_state_dict(load_file(st), strict=True)
    dense, sparse = [], []
    for line in open(os.path.join(data, "index.txt")):
        if line.startswith("#") or not line.strip():
            continue
        with h5py.File(os.path.join(data, line.split()[0]), "r") as f:
            dense.append(np.array(f["dense"], np.float32))
            sparse.append(np.array(f["sparse"], np.uint32))
    with torch.no_grad():
        p = model(torch.from_numpy(np.concatenate(dense)), np.concatenate(sparse)).double().numpy()
    with h5py.File(scores, "r") as f:
        q = np.array(f["p"], np.float64)
    check("ctr erase-export --format torch -> PyTorch DLRM module: predictions of %d rows (p in [%.3f, %.3f])"
          % (len(q), q.min(), q.max()), np.abs(p - q).max(), 1e-6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "_build"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    import transformers
    print("torch %s, transformers %s" % (torch.__version__, transformers.__version__))
    with tempfile.TemporaryDirectory() as w:
        text_data(os.path.abspath(args.build), w)
        gpt_checks(os.path.abspath(args.build), w)
        nanochat_checks(os.path.abspath(args.build), w)
        ctr_checks(os.path.abspath(args.build), w)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
