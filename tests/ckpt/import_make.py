"""safetensors files for erase-train --init-from's tests (issue 37), made by
the safetensors library, not by erase:

    python import_make.py hf CKPT OUT
        the gpt parameters of checkpoint CKPT (h5py) in Hugging Face
        GPT2LMHeadModel's names and layouts (Conv1D weights [in, out]),
        plus the attention-mask buffer older transformers saved
        (transformer.h.0.attn.bias), no metadata: a file as made elsewhere
    python import_make.py rename IN OUT NAME NEW | dtype IN OUT NAME |
                          untranspose IN OUT NAME | extra IN OUT NAME
        IN with tensor NAME renamed NEW, stored as float16, stored
        transposed, or with a tensor NAME more
"""

import re
import sys

import h5py
import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

CONV1D = ("attn/c_attn/weight", "attn/c_proj/weight", "mlp/c_fc/weight", "mlp/c_proj/weight")


def hf(ckpt, out):
    tensors = {}
    with h5py.File(ckpt, "r") as f:
        model = f["meta"].attrs["model"]
        model = model.decode() if isinstance(model, bytes) else str(model)
        context = int(re.search(r"context\s*=\s*(\d+)", model).group(1))
        for block in f["params"]:
            def visit(name, obj, block=block):
                if not isinstance(obj, h5py.Dataset):
                    return
                v, k = np.array(obj, dtype=np.float32), int(block[1:])
                if name in ("wte", "wpe"):
                    tensors["transformer.%s.weight" % name] = v
                elif name.startswith("ln_f/"):
                    tensors["transformer." + name.replace("/", ".")] = v
                elif name == "lm_head/weight":
                    tensors["lm_head.weight"] = v
                else:
                    tensors["transformer.h.%d.%s" % (k, name.replace("/", "."))] = v.T if name in CONV1D else v
            f["params"][block].visititems(visit)
    tensors["transformer.h.0.attn.bias"] = np.tril(np.ones((context, context), np.float32))[None, None]
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, out)


def main():
    what = sys.argv[1]
    if what == "hf":
        return hf(sys.argv[2], sys.argv[3])
    src, out, name = sys.argv[2], sys.argv[3], sys.argv[4]
    with safe_open(src, framework="np") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    if what == "rename":
        tensors[sys.argv[5]] = tensors.pop(name)
    elif what == "dtype":
        tensors[name] = tensors[name].astype(np.float16)
    elif what == "untranspose":
        tensors[name] = np.ascontiguousarray(tensors[name].T)
    elif what == "extra":
        tensors[name] = np.zeros((2,), np.float32)
    save_file(tensors, out, metadata=meta)


if __name__ == "__main__":
    main()
