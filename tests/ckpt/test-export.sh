#!/bin/sh
# erase-export (issue 37; docs/export.md): tiny ctr, mlp and gpt models
# trained a few steps, data-parallel, as a --pp 2 pipeline and with
# sharded tables (--embeddings table), exported in every format and read
# back with the safetensors library (tests/ckpt/export_check.py, in a venv
# of tests/venv.sh; skipped with the reason when PyPI is unreachable):
# every name, shape, dtype and value equal to the checkpoint's (read with
# h5py), metadata included. The pipeline checkpoint exported as it is (its
# stage files) is bitwise the export of its merge (erase-inspect merge),
# and the sharded run's export bitwise the replicated run's (their states
# are bitwise equal, tests/ckpt/test-shard-ckpt.sh). A gpt of BPE data
# carries its tokenizer's identity in the metadata. Bad input: a missing
# checkpoint, a ctr checkpoint for --format hf-gpt2, a gpt one for torch,
# a gpt one for nanochat, a damaged tensor (whole or sharded rows), an
# output directory that does not exist, an existing output, --format foo:
# one line each, the exit status, and nothing at -o. A nanochat with a cut
# (block 0 has a local head) exported with --format nanochat: nanochat's
# names, the local head dropped with one line.
. "$(dirname "$0")/ckpt.sh"
. "$(dirname "$0")/../venv.sh"
need apps/erase-export
need apps/erase-tokenizer
venv_need safetensors numpy h5py
setup_data
echo "1..25"
out=$dir/train.out
check="$venv_python ${srcdir:-.}/tests/ckpt/export_check.py"

# export CKPT FILE ARGS...: erase-export; status $rc, output in $dir/export.out
export_() {
    apps/erase-export "$@" >"$dir/export.out" 2>&1
    rc=$?
}

# checked FORMAT FILE CKPT...: export_check.py's verdict as a tap line
checked() {
    $check "$@" >"$dir/check.out" 2>&1
    c=$?
    tap $c "$(cat "$dir/check.out")"
}

# ---- ctr: replicated and sharded tables, 2 ranks, step 4
for kind in replicated table; do
    train 2 --global-batch 24 --steps 4 --checkpoint-every 4 --embeddings $kind --checkpoint-dir "$dir/ctr-$kind"
    [ $rc = 0 ] || tap_report "$out"
    export_ "$dir/ctr-$kind" -o "$dir/ctr-$kind.safetensors" --quiet
    [ $rc = 0 ] || tap_report "$dir/export.out"
done
checked erase "$dir/ctr-replicated.safetensors" "$dir/ctr-replicated/ckpt-4.h5"
checked erase "$dir/ctr-table.safetensors" "$dir/ctr-table/ckpt-4.h5"
cmp "$dir/ctr-replicated.safetensors" "$dir/ctr-table.safetensors" >/dev/null 2>&1
tap $? "ctr: the export of the sharded (--embeddings table) checkpoint is bitwise the replicated one's"
export_ "$dir/ctr-table/ckpt-4.h5" -o "$dir/ctr-torch.safetensors" --format torch
grep -q "^erase-export: $dir/ctr-torch.safetensors: 44 tensors of $dir/ctr-table/ckpt-4.h5 (ctr, step 4, 1 stage file) as torch$" "$dir/export.out"
tap $? "ctr --format torch: the summary line (status $rc)"
checked torch "$dir/ctr-torch.safetensors" "$dir/ctr-table/ckpt-4.h5"

# ---- gpt: a --pp 2 pipeline (--schedule local: its stage boundary is the cut, block 0 has a local
# head) and a tied data-parallel gpt
setup_gpt "$dir/gpt.cfg" "cuts = [1]; tie_head = false;"
ptrain gpt 2 --schedule local --steps 4 --checkpoint-every 4 --checkpoint-dir "$dir/gpt-pp"
[ $rc = 0 ] || tap_report "$out"
C=$dir/gpt-pp/ckpt-4.h5
apps/erase-inspect merge "$C" "$dir/gpt-merged.h5" >"$dir/merge.out" 2>&1 || tap_report "$dir/merge.out"
for f in erase hf-gpt2; do
    export_ "$C" -o "$dir/gpt-pp-$f.safetensors" --format $f
    [ $rc = 0 ] || tap_report "$dir/export.out"
    export_ "$dir/gpt-merged.h5" -o "$dir/gpt-merged-$f.safetensors" --format $f --quiet
    cmp "$dir/gpt-pp-$f.safetensors" "$dir/gpt-merged-$f.safetensors" >/dev/null 2>&1 &&
        ! cmp -s "$dir/gpt-pp-$f.safetensors" "$dir/ctr-torch.safetensors"
    tap $? "gpt --format $f: the pipeline checkpoint (2 stage files) exported as it is: bitwise the export of its merge"
done
grep -q "^erase-export: note: 3 tensors of local heads dropped (hf-gpt2 has no place for them; --format erase keeps them): h0/ln_f/weight, h0/ln_f/bias, h0/lm_head/weight$" "$dir/export.out"
tap $? "gpt with a cut --format hf-gpt2: one line names the local head's tensors dropped"
checked erase "$dir/gpt-pp-erase.safetensors" "$C" "$C.stage1"
checked hf-gpt2 "$dir/gpt-pp-hf-gpt2.safetensors" "$C" "$C.stage1"
printf 'model = "gpt";\ngpt: {\n  layers = 2;\n  heads = 4;\n  width = 32;\n  context = 16;\n  vocab = 256;\n};\n' >"$dir/gpt-tied.cfg"
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/text/train" --model "$dir/gpt-tied.cfg" \
    --device cpu --quiet --global-batch 8 --steps 3 --checkpoint-every 3 --checkpoint-dir "$dir/gpt-tied" >"$out" 2>&1 ||
    tap_report "$out"
export_ "$dir/gpt-tied" -o "$dir/gpt-tied.safetensors" --format hf-gpt2
checked hf-gpt2 "$dir/gpt-tied.safetensors" "$dir/gpt-tied/ckpt-3.h5"

# ---- nanochat (issue 37): 2 ranks, a cut (block 0's local head has no place in nanochat)
printf 'model = "nanochat";\nnanochat: { layers = 2; width = 32; heads = 2; kv_heads = 1; context = 16; vocab = 256; cuts = [1]; };\n' \
    >"$dir/nanochat.cfg"
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/text/train" --model "$dir/nanochat.cfg" \
    --device cpu --quiet --global-batch 8 --steps 3 --checkpoint-every 3 --checkpoint-dir "$dir/nanochat" >"$out" 2>&1 ||
    tap_report "$out"
export_ "$dir/nanochat" -o "$dir/nanochat.safetensors" --format nanochat
[ "$(cat "$dir/export.out")" = "erase-export: note: 1 tensor of local heads dropped (nanochat has no place for them; --format erase keeps them): h0/lm_head/weight
erase-export: $dir/nanochat.safetensors: 14 tensors of $dir/nanochat/ckpt-3.h5 (nanochat, step 3, 1 stage file) as nanochat" ]
tap $? "nanochat with a cut --format nanochat: one line names the local head dropped, then the summary (status $rc)"
[ $? = 0 ] || tap_report "$dir/export.out"
checked nanochat "$dir/nanochat.safetensors" "$dir/nanochat/ckpt-3.h5"

# ---- mlp, data-parallel on 2 ranks
setup_mnist "$dir/mlp.cfg"
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/mnist/train" --model "$dir/mlp.cfg" \
    --device cpu --quiet --global-batch 32 --steps 3 --checkpoint-every 3 --checkpoint-dir "$dir/mlp" >"$out" 2>&1 ||
    tap_report "$out"
export_ "$dir/mlp" -o "$dir/mlp.safetensors" --format torch
checked torch "$dir/mlp.safetensors" "$dir/mlp/ckpt-3.h5"

# ---- a gpt of BPE data: the tokenizer's identity in the metadata
head -c 100000 "${srcdir:-.}/data/text/tinyshakespeare.txt" >"$dir/bpe.txt"
apps/erase-tokenizer train "$dir/bpe.txt" --vocab 300 -o "$dir/tok" >"$dir/tok.out" 2>&1 || tap_report "$dir/tok.out"
id=$(apps/erase-tokenizer info "$dir/tok" | sed -n 's/.*identity \([0-9a-f]*\)$/\1/p')
apps/erase-convert text "$dir/bpe.txt" --tokenizer "$dir/tok" -o "$dir/bpe" >"$dir/tok.out" 2>&1 || tap_report "$dir/tok.out"
printf 'model = "gpt";\ngpt: { layers = 1; heads = 2; width = 16; context = 16; vocab = 300; };\n' >"$dir/bpe.cfg"
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/bpe/train" --model "$dir/bpe.cfg" \
    --device cpu --quiet --global-batch 8 --steps 2 --checkpoint-every 2 --checkpoint-dir "$dir/bpe-ck" >"$out" 2>&1 ||
    tap_report "$out"
export_ "$dir/bpe-ck" -o "$dir/bpe.safetensors" --quiet
got=$($venv_python -c 'import sys; from safetensors import safe_open; print(safe_open(sys.argv[1], "np").metadata().get("tokenizer"))' "$dir/bpe.safetensors" 2>&1)
[ -n "$id" ] && [ "$got" = "$id" ]
tap $? "a gpt of BPE data: metadata tokenizer = the tokenizer's identity ($got, erase-tokenizer info: $id)"

# ---- bad input: one line, the status, nothing at -o
# refused CASE STATUS LINE ARGS...: erase-export ARGS exits STATUS with exactly LINE and leaves no $dir/bad.safetensors
refused() {
    what=$1 want=$2 line=$3
    shift 3
    export_ "$@" -o "$dir/bad.safetensors"
    [ $rc = "$want" ] && [ "$(cat "$dir/export.out")" = "$line" ] && [ ! -e "$dir/bad.safetensors" ] &&
        [ -z "$(ls -A "$dir" | grep '\.tmp$')" ]
    tap $? "$what: exit $want, one line, nothing written (status $rc)"
    [ $? = 0 ] || tap_report "$dir/export.out"
}
refused "a missing checkpoint" 1 "erase-export: $dir/none.h5: cannot read: No such file or directory" "$dir/none.h5"
refused "a ctr checkpoint for --format hf-gpt2" 1 \
    "erase-export: $dir/ctr-table/ckpt-4.h5: --format hf-gpt2: the model is ctr; hf-gpt2 holds gpt models only (--format erase holds any)" \
    "$dir/ctr-table/ckpt-4.h5" --format hf-gpt2
refused "a gpt checkpoint for --format nanochat" 1 \
    "erase-export: $dir/gpt-tied/ckpt-3.h5: --format nanochat: the model is gpt; nanochat holds nanochat models only (--format erase holds any)" \
    "$dir/gpt-tied" --format nanochat
cp "$dir/ctr-replicated/ckpt-4.h5" "$dir/damaged.h5"
tests/ckpt/ckpt-tool flip "$dir/damaged.h5" /params/input/emb/3 >/dev/null 2>&1
export_ "$dir/damaged.h5" -o "$dir/bad.safetensors"
[ $rc = 1 ] && grep -q "^erase-export: $dir/damaged.h5: dataset /params/input/emb/3: checksum [0-9a-f]* does not match the stored [0-9a-f]* (damaged data)$" "$dir/export.out" &&
    [ "$(wc -l <"$dir/export.out")" = 1 ] && [ ! -e "$dir/bad.safetensors" ] && [ -z "$(ls -A "$dir" | grep '\.tmp$')" ]
tap $? "a damaged table (a whole-checksummed one, found after its rows were written): exit 1, one line naming the dataset, nothing at -o (status $rc)"
[ $? = 0 ] || tap_report "$dir/export.out"
cp "$dir/ctr-table/ckpt-4.h5" "$dir/damaged-rows.h5"
tests/ckpt/ckpt-tool flip "$dir/damaged-rows.h5" /params/input/emb/3 >/dev/null 2>&1
export_ "$dir/damaged-rows.h5" -o "$dir/bad.safetensors"
[ $rc = 1 ] && grep -q "^erase-export: $dir/damaged-rows.h5: dataset /params/input/emb/3: row [0-9]*: checksum [0-9a-f]* does not match the stored [0-9a-f]* (damaged data)$" "$dir/export.out" &&
    [ ! -e "$dir/bad.safetensors" ]
tap $? "a damaged row of a sharded table: exit 1, one line naming the dataset and row, nothing at -o (status $rc)"
[ $? = 0 ] || tap_report "$dir/export.out"
refused "--format foo" 2 "erase-export: --format foo: expected erase, hf-gpt2, torch or nanochat" "$dir/mlp" --format foo
export_ "$dir/mlp" -o "$dir/no-such-dir/mlp.safetensors"
[ $rc = 1 ] && [ "$(cat "$dir/export.out")" = "erase-export: $dir/no-such-dir/mlp.safetensors: cannot create: No such file or directory" ]
tap $? "an output directory that does not exist: exit 1, one line naming the file (status $rc)"
mkdir "$dir/a-dir.safetensors"
export_ "$dir/mlp" -o "$dir/a-dir.safetensors" --force
[ $rc = 2 ] && [ "$(cat "$dir/export.out")" = "erase-export: -o $dir/a-dir.safetensors: is a directory, expected a file (FILE.safetensors)" ] &&
    [ -z "$(ls -A "$dir" | grep '\.tmp$')" ]
tap $? "a directory for -o, even with --force: exit 2, one line before the checkpoint is read (status $rc)"
[ $? = 0 ] || tap_report "$dir/export.out"
mkfifo "$dir/a-fifo.safetensors"
export_ "$dir/mlp" -o "$dir/a-fifo.safetensors" --force
[ $rc = 2 ] && [ "$(cat "$dir/export.out")" = "erase-export: -o $dir/a-fifo.safetensors: is a FIFO, expected a file (FILE.safetensors)" ] &&
    [ -p "$dir/a-fifo.safetensors" ]
tap $? "a FIFO for -o, even with --force: exit 2, the FIFO left (a device likewise: --force never renames over one) (status $rc)"
[ $? = 0 ] || tap_report "$dir/export.out"
cp "$dir/mlp.safetensors" "$dir/keep.safetensors"
export_ "$dir/ctr-table" -o "$dir/mlp.safetensors"
[ $rc = 1 ] && [ "$(cat "$dir/export.out")" = "erase-export: $dir/mlp.safetensors: exists (not overwritten; --force replaces it)" ] &&
    cmp -s "$dir/mlp.safetensors" "$dir/keep.safetensors"
tap $? "an existing output without --force: exit 1, one line, the file kept (status $rc)"
