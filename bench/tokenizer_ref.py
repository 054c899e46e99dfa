"""One round of the references for `erase-bench tokenizer --reference PYTHON`
(issue 33 item 5): rustbpe's training and tiktoken's encoding, in process.

usage: PYTHON tokenizer_ref.py TEXT VOCAB TOKENIZER REPEAT
  trains rustbpe on TEXT (one string) for VOCAB - 9 tokens with nanochat's
  pattern (RAYON_NUM_THREADS sets its threads); builds tiktoken from erase's
  TOKENIZER file (the same tokens) and encodes TEXT REPEAT times on 1 thread
  (encode_ordinary) and on 2 threads (encode_ordinary_batch of the text's two
  halves, cut at a line, num_threads=2).
Prints one line: "train_s S encode1_mbs X encode2_mbs Y tokens N".
"""
import base64
import sys
import time

import rustbpe
import tiktoken

text_path, vocab, tok_path, repeat = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
text = open(text_path, encoding="utf-8", newline="").read()
NANOCHAT = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""

t0 = time.perf_counter()
tok = rustbpe.Tokenizer()
tok.train_from_iterator([text], vocab - 9, pattern=NANOCHAT)
train_s = time.perf_counter() - t0

ranks, specials, pattern = {}, {}, None
for line in open(tok_path, "rb").read().splitlines():
    if line.startswith(b"#pattern "):
        pattern = line[len(b"#pattern "):].decode()
    elif line.startswith(b"#special "):
        _, name, rank = line.split()
        specials[name.decode()] = int(rank)
    elif not line.startswith(b"#"):
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
enc = tiktoken.Encoding(name="erase", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
nbytes = len(text.encode("utf-8"))
enc.encode_ordinary(text[:1000])  # warm up

t0 = time.perf_counter()
for _ in range(repeat):
    tokens = len(enc.encode_ordinary(text))
one = nbytes * repeat / (time.perf_counter() - t0) / 1e6

cut = text.index("\n", len(text) // 2) + 1
halves = [text[:cut], text[cut:]]
t0 = time.perf_counter()
for _ in range(repeat):
    enc.encode_ordinary_batch(halves, num_threads=2)
two = nbytes * repeat / (time.perf_counter() - t0) / 1e6
print("train_s %.6f encode1_mbs %.3f encode2_mbs %.3f tokens %d" % (train_s, one, two, tokens))
