"""Do erase's Unicode letters and numbers agree with the regex crate's in
tiktoken? (issue 33 item 4; tests/io/test-tokenizer-compat.sh)

usage: python tokenizer_classes.py TOOL UNICODE_CLASSES_C WORKDIR DOCS
  DOCS: docs/tokenizer.md, whose snippet loads the file into tiktoken

Probes: both ends of every range of io/unicode_classes.c and the code
points just outside them, and every 37th code point up to U+3FFFF (no
surrogates). A tokenizer file holds, for each probe c, the tokens "x" + c
and "1" + c (and their prefixes, each a merge of the one before and a
byte): "x" + c is one token only if the pre-tokenizer puts c in x's letter
run, "1" + c only if c is a number (nanochat's \\p{N}{1,2}). erase's ids of
the probes, a line each, must equal tiktoken's built from the same file.
Prints one TAP line.
"""
import base64
import re
import subprocess
import sys

tool, table, work, docs = sys.argv[1:5]
exec(re.search(r"```python\n(.*?)```", open(docs, encoding="utf-8").read(), re.S).group(1))

probes = set(range(0, 0x40000, 37))
for lo, hi in re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+),", open(table).read()):
    lo, hi = int(lo, 16), int(hi, 16)
    probes.update((lo - 1, lo, hi, hi + 1))
probes = sorted(cp for cp in probes if 0x80 <= cp <= 0x10FFFF and not 0xD800 <= cp < 0xE000)

tokens = set()
for cp in probes:
    for lead in ("x", "1"):
        b = (lead + chr(cp)).encode("utf-8")
        tokens.update(b[:k] for k in range(2, len(b) + 1))
tokens = sorted(tokens, key=lambda t: (len(t), t))
NANOCHAT = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
names = ["<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>", "<|assistant_end|>",
         "<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>"]
ranks = 256 + len(tokens)
path = work + "/classes.tok"
with open(path, "wb") as f:
    f.write(b"#erase-tokenizer 1\n#vocab %d\n#pattern %s\n" % (ranks + 9, NANOCHAT.encode()))
    for i, name in enumerate(names):
        f.write(b"#special %s %d\n" % (name.encode(), ranks + i))
    for r, t in enumerate([bytes([i]) for i in range(256)] + tokens):
        f.write(base64.b64encode(t) + b" %d\n" % r)

lines = ["x%s\n1%s\n" % (chr(cp), chr(cp)) for cp in probes]
with open(work + "/classes.txt", "wb") as f:
    f.write("".join(lines).encode("utf-8"))
mine = [int(x) for x in subprocess.run([tool, "encode", "--tokenizer", path, work + "/classes.txt"], check=True,
                                       capture_output=True).stdout.split()]
enc = load_erase_tokenizer(path)
ref = enc.encode_ordinary("".join(lines))
detail = ""
if mine != ref:
    k = next(i for i in range(min(len(mine), len(ref)) + 1) if i >= min(len(mine), len(ref)) or mine[i] != ref[i])
    at = len(enc.decode_bytes(ref[:k]).decode("utf-8", "replace").split("\n")) - 1
    cp = probes[min(at // 2, len(probes) - 1)]
    detail = "# first difference near U+%04X: tiktoken %s, erase %s" % (cp, ref[k:k + 4], mine[k:k + 4])
merged = sum(1 for t in ref if t >= 256)
print("%s - Unicode classes: erase's ids equal tiktoken's on %d probe code points (%d of the %d pairs one token)"
      % ("ok 1" if mine == ref else "not ok 1", len(probes), merged, 2 * len(probes)))
if detail:
    print(detail)
