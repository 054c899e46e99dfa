"""Check an erase-export file with the safetensors library (issue 37).

    python export_check.py FORMAT FILE.safetensors CKPT [CKPT.stage1 ...]

Reads FILE with safetensors (safe_open, numpy) and the checkpoint's
parameters with h5py (/params/<block>/<path> of every file given: a
pipeline checkpoint's stage files together hold the model), maps erase's
names to FORMAT's as docs/export.md describes (written here again, from
that description, not from erase's C table), and checks that the file
holds exactly those tensors, each float32 with the expected shape
(Hugging Face GPT-2's Conv1D weights transposed; a local head dropped in
hf-gpt2 and nanochat) and bitwise the
checkpoint's values, and that its metadata gives the format, the step and
the model text of the checkpoint. Prints one line; exit status 0 equal,
1 different.
"""

import re
import sys

import h5py
import numpy as np
from safetensors import safe_open

CONV1D = ("attn/c_attn/weight", "attn/c_proj/weight", "mlp/c_fc/weight", "mlp/c_proj/weight")


def checkpoint_params(paths):
    params, meta = {}, None
    for p in paths:
        with h5py.File(p, "r") as f:
            if meta is None:
                meta = {k: f["meta"].attrs[k] for k in ("model", "step")}
            def visit(name, obj):
                if isinstance(obj, h5py.Dataset):
                    params[name] = np.array(obj, dtype=np.float32)
            f["params"].visititems(visit)
    text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
    return params, text(meta["model"]), int(meta["step"])


def expected(fmt, params, model):
    kind = re.search(r'model\s*=\s*"(\w+)"', model).group(1)
    out = {}
    if fmt == "erase":
        return dict(params)
    if fmt == "torch":
        for name, v in params.items():
            key = name.replace("/", ".")
            if kind == "ctr" and re.fullmatch(r"input/emb/\d+", name):
                key += ".weight"
            out[key] = v
        return out
    layers = int(re.search(r"layers\s*=\s*(\d+)", model).group(1))
    if fmt == "nanochat":
        for name, v in params.items():
            k, path = re.fullmatch(r"h(\d+)/(.*)", name).groups()
            if path == "wte/weight":
                out["transformer.wte.weight"] = v
            elif path == "lm_head/weight":
                if int(k) == layers - 1:
                    out["lm_head.weight"] = v
            else:
                out["transformer.h.%s.%s" % (k, path.replace("/", "."))] = v
        return out
    for name, v in params.items():
        k, path = re.fullmatch(r"h(\d+)/(.*)", name).groups()
        k = int(k)
        if path in ("wte", "wpe"):
            out["transformer.%s.weight" % path] = v
        elif path.startswith(("ln_f/", "lm_head/")):
            if k == layers - 1:
                out["lm_head.weight" if path == "lm_head/weight" else "transformer." + path.replace("/", ".")] = v
        else:
            out["transformer.h.%d.%s" % (k, path.replace("/", "."))] = v.T if path in CONV1D else v
    return out


def main():
    fmt, path, ckpts = sys.argv[1], sys.argv[2], sys.argv[3:]
    params, model, step = checkpoint_params(ckpts)
    want = expected(fmt, params, model)
    problems = []
    with safe_open(path, framework="np") as f:
        meta = f.metadata() or {}
        got = set(f.keys())
        for name in sorted(set(want) - got):
            problems.append("%s missing" % name)
        for name in sorted(got - set(want)):
            problems.append("%s not expected" % name)
        for name in sorted(got & set(want)):
            a, b = f.get_tensor(name), want[name]
            if a.dtype != np.float32 or a.shape != b.shape:
                problems.append("%s: %s %s, expected float32 %s" % (name, a.dtype, a.shape, b.shape))
            elif not np.array_equal(a.view(np.uint32), np.ascontiguousarray(b).view(np.uint32)):
                problems.append("%s: values differ" % name)
    for key, value in (("format", "pt"), ("erase_format", fmt), ("step", str(step)), ("model", model)):
        if meta.get(key) != value:
            problems.append("metadata %s = %r, expected %r" % (key, meta.get(key), value))
    if problems:
        print("%s: %d problems: %s" % (path, len(problems), "; ".join(problems[:8])))
        return 1
    print("%s: %d tensors, names, shapes, float32 and values as the checkpoint's (%s)" % (path, len(want), fmt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
