"""erase's BPE tokenizer against the references nanochat uses (issue 33 item 4).

usage: python tokenizer_compat.py TOOL TEXT DOCS WORKDIR VOCAB PATTERN SEED
  TOOL     apps/erase-tokenizer; TEXT the shipped text; DOCS docs/tokenizer.md
  PATTERN  nanochat or gpt4

Trains erase and rustbpe on the first 90% of TEXT (cut at a line) and checks:
  1. the merges: erase's file lists the tokens of rustbpe's
     get_mergeable_ranks(), every one, in the same order;
  2. encoding: tiktoken built from erase's file (by the snippet of DOCS) and
     erase-tokenizer encode give the same ids, token for token, on the
     held-out 10%, on a sample of unicode, whitespace runs, digits and
     contractions, on text with special tokens (allowed), and on seeded
     random strings of assigned code points.
Prints TAP lines (the driver counts them); exits 0.
"""
import os
import random
import re
import subprocess
import sys
import time
import unicodedata

import rustbpe

tool, text_path, docs, work, vocab, pattern_name, seed = sys.argv[1:8]
vocab, seed = int(vocab), int(seed)
tap_n = 0


def tap(ok, what, detail=""):
    global tap_n
    tap_n += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (tap_n, what))
    if detail and not ok:
        for line in detail.splitlines():
            print("# " + line)


# the snippet that docs/tokenizer.md shows, run as it is
snippet = re.search(r"```python\n(.*?)```", open(docs, encoding="utf-8").read(), re.S).group(1)
exec(snippet)

text = open(text_path, encoding="utf-8", newline="").read()
cut = text.rindex("\n", 0, len(text) * 9 // 10) + 1
train, held_out = text[:cut], text[cut:]
train_path = os.path.join(work, "train-%d.txt" % vocab)
with open(train_path, "w", encoding="utf-8", newline="") as f:
    f.write(train)
tok_path = os.path.join(work, "%s-%d.tok" % (pattern_name, vocab))
t0 = time.time()
subprocess.run([tool, "train", "-q", train_path, "--vocab", str(vocab), "--pattern", pattern_name, "-o", tok_path],
               check=True)
erase_s = time.time() - t0

# 1. the merges
NANOCHAT = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
ref = rustbpe.Tokenizer()
t0 = time.time()
ref.train_from_iterator([train], vocab - 9, pattern=NANOCHAT if pattern_name == "nanochat" else None)
ref_s = time.time() - t0
ref_ranks = [bytes(b) for b, r in sorted(ref.get_mergeable_ranks(), key=lambda x: x[1])]
enc = load_erase_tokenizer(tok_path)
ours = sorted(enc._mergeable_ranks.items(), key=lambda x: x[1]) if hasattr(enc, "_mergeable_ranks") else None
ours = [b for b, r in ours]
first = next((i for i, (a, b) in enumerate(zip(ref_ranks, ours)) if a != b), None)
tap(len(ref_ranks) == len(ours) and first is None and len(ours) > 256,
    "V=%d %s: erase's %d tokens (%d merges) equal rustbpe's %d, in order (erase %.2f s, rustbpe %.2f s)"
    % (vocab, pattern_name, len(ours), len(ours) - 256, len(ref_ranks), erase_s, ref_s),
    "first difference at rank %s: rustbpe %r, erase %r" % (first, ref_ranks[first] if first is not None else None,
                                                         ours[first] if first is not None else None))
tap(enc._pat_str == ref.get_pattern(),
    "V=%d %s: the file's pattern is rustbpe's" % (vocab, pattern_name))


def erase_encode(texts, specials=False):
    paths = []
    for i, t in enumerate(texts):
        p = os.path.join(work, "in-%d.txt" % i)
        with open(p, "wb") as f:
            f.write(t.encode("utf-8"))
        paths.append(p)
    out = subprocess.run([tool, "encode", "--tokenizer", tok_path] + (["--specials"] if specials else []) + paths,
                         check=True, capture_output=True).stdout.decode().split("\n")
    return [[int(x) for x in line.split()] for line in out[: len(texts)]]


def compare(name, texts, specials=False):
    mine = erase_encode(texts, specials)
    ref = [enc.encode(t, allowed_special="all") if specials else enc.encode_ordinary(t) for t in texts]
    bad = [i for i in range(len(texts)) if mine[i] != ref[i]]
    detail = ""
    if bad:
        i = bad[0]
        j = next(k for k in range(max(len(mine[i]), len(ref[i]))) if k >= len(mine[i]) or k >= len(ref[i])
                 or mine[i][k] != ref[i][k])
        detail = "text %d %r: at token %d tiktoken %s, erase %s" % (i, texts[i][:200], j, ref[i][j:j + 6],
                                                                    mine[i][j:j + 6])
    tap(not bad, "V=%d %s: %s: erase's ids equal tiktoken's (%d texts, %d tokens)"
        % (vocab, pattern_name, name, len(texts), sum(map(len, ref))), detail)


compare("the held-out 10%", [held_out])
sample = ("Hello world, caf\u00e9 na\u00efve \u00c9COLE \u4f60\u597d\u4e16\u754c \u3053\u3093\u306b\u3061\u306f "
          "\u0645\u0631\u062d\u0628\u0627 \u0928\u092e\u0938\u094d\u0924\u0947 \U0001F600\U0001F680!!\n"
          "numbers 1 12 123 1234 12345 3.14159 1,000,000 \u0661\u0662\u0663 \u2163 \u00bd \u2460\u2461\n"
          "don't DON'T I'LL you're WE'VE she'd it'S 'twas '\u017f x'\u212a\n"
          "  two  spaces\tand\ttabs   \n\n\n\r\n \r\n\t\n   trailing   \u00a0nbsp\u2003em\u3000ideo\u2028ls\n"
          "(parens) [brackets] {braces} <angle> \"quotes\" ...ellipsis --dashes-- @#$%^&*\n    ")
compare("unicode, whitespace runs, digits, contractions", [sample, sample.strip(), " " * 7, "\n" * 5, "a\n\n b"])
words = re.findall(r"[a-z]+", held_out.lower())
compare("long pieces (letters, CJK, punctuation, spaces: merged by the heap)",
        ["".join(words[:3000]), "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(3000)),
         "-=" * 2000 + "-" * 1001, " " * 3000 + "x", "\n" * 2000, "".join(words[:500]).upper() + "'s"])
compare("special tokens", ["<|bos|>" + held_out[:2000] + "<|user_start|>hi<|user_end|><|assistant_start|>"
                           "12345<|assistant_end|><|python_start|>x=1<|python_end|><|output_start|>1<|output_end|>",
                           "<|bos|><|bos|> <|bos|>\n<|bos"], specials=True)

rng = random.Random(seed)
assigned = [cp for cp in range(0x30000) if unicodedata.category(chr(cp)) not in ("Cn", "Cs")]
spaces = [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2005, 0x200A, 0x2028, 0x2029,
          0x202F, 0x205F, 0x3000]
pieces = ["'s", "'LL", "'Ve", " the", "\r\n", "   ", "1234567", " 42", "!!", "...", "\u017f"]


def fuzz_string():
    out = []
    for _ in range(rng.randrange(1, 120)):
        k = rng.random()
        if k < 0.45:
            out.append(chr(rng.randrange(0x20, 0x7F)))
        elif k < 0.6:
            out.append(chr(rng.choice(spaces)))
        elif k < 0.7:
            out.append(rng.choice(pieces))
        elif k < 0.75:
            out.append(held_out[rng.randrange(len(held_out) - 40):][:rng.randrange(40)])
        elif k < 0.85:
            out.append(chr(rng.choice(assigned)))
        else:  # any code point (Python's unicodedata may be older than the regex crate's Unicode)
            cp = rng.randrange(0x40000)
            out.append(chr(cp if not 0xD800 <= cp < 0xE000 else 0xE9))
    return "".join(out)


compare("random strings of code points (seed %d)" % seed, [fuzz_string() for _ in range(400)])
