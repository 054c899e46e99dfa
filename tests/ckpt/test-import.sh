#!/bin/sh
# erase-train --init-from FILE.safetensors (issue 37; docs/export.md): a
# tiny gpt trained 3 steps, then fine-tuned 2 steps from its checkpoint
# (the reference), from its erase-export (hf-gpt2 names, the model taken
# from the file's metadata; on 1 and on 2 ranks) and from a file the
# safetensors library wrote from numpy arrays in Hugging Face
# GPT2LMHeadModel's names and layouts
# (tests/ckpt/import_make.py: Conv1D weights [in, out], an attention-mask
# buffer, no metadata; --model and --init-format given): each run's
# checkpoint bitwise the reference's (equal parameters before the first
# step, so equal logits). A ctr exported with --format torch and a
# nanochat exported with --format nanochat start runs the same way. Wrong files: a name missing, a dtype, a shape, a tensor the
# model has not, a format that does not fit: one line naming the tensor,
# exit 1; a truncated file: exit 2 (refused before the run is built, its
# model being read first); no checkpoint written (nothing trained).
# --init-format with a checkpoint, --eval-only with a safetensors file:
# usage errors.
. "$(dirname "$0")/ckpt.sh"
. "$(dirname "$0")/../venv.sh"
need apps/erase-export
venv_need safetensors numpy h5py
setup_data
echo "1..14"
out=$dir/train.out
make_st="$venv_python ${srcdir:-.}/tests/ckpt/import_make.py"
setup_gpt "$dir/gpt.cfg" ""
G="apps/erase-train --train $dir/text/train --device cpu --quiet --global-batch 8"
$G --model "$dir/gpt.cfg" --steps 3 --checkpoint-every 3 --checkpoint-dir "$dir/base" >"$out" 2>&1 || tap_report "$out"
apps/erase-export "$dir/base" -o "$dir/gpt.safetensors" --format hf-gpt2 --quiet || echo "# erase-export failed"
$make_st hf "$dir/base/ckpt-3.h5" "$dir/hf.safetensors" || echo "# import_make.py hf failed"

# tune NAME ARGS...: 2 steps from ARGS' --init-from into $dir/NAME; status $rc, output $out
tune() {
    name=$1
    shift
    $G --steps 2 --checkpoint-every 2 --checkpoint-dir "$dir/$name" "$@" >"$out" 2>&1
    rc=$?
}
tune ref --init-from "$dir/base/ckpt-3.h5"
[ $rc = 0 ] || tap_report "$out"
tune exported --init-from "$dir/gpt.safetensors"
tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-2.h5" "$dir/exported/ckpt-2.h5" >"$dir/cmp.out" 2>&1 &&
    grep -q "^init   from $dir/gpt.safetensors (safetensors, hf-gpt2 names, step 3): 28 parameters loaded; this run starts at step 0 on its own data$" "$out"
tap $? "gpt from its erase-export (hf-gpt2, the model from the metadata): fine-tuned bitwise as from the checkpoint (status $rc)"
tune hf --init-from "$dir/hf.safetensors" --model "$dir/gpt.cfg" --init-format hf-gpt2
tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-2.h5" "$dir/hf/ckpt-2.h5" >"$dir/cmp.out" 2>&1
tap $? "gpt from a file the safetensors library wrote in Hugging Face names and layouts: fine-tuned bitwise as from the checkpoint (status $rc)"
# the same on 2 ranks: rank 0 imports, the others receive the parameters
tune2() {
    name=$1
    shift
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 $G --steps 2 --checkpoint-every 2 --checkpoint-dir "$dir/$name" "$@" >"$out" 2>&1
    rc=$?
}
tune2 ref2 --init-from "$dir/base/ckpt-3.h5"
tune2 exported2 --init-from "$dir/gpt.safetensors"
tests/ckpt/ckpt-tool compare "$dir/ref2/ckpt-2.h5" "$dir/exported2/ckpt-2.h5" >"$dir/cmp.out" 2>&1
tap $? "gpt from its erase-export on 2 ranks: bitwise as from the checkpoint on 2 ranks (status $rc)"
tune noformat --init-from "$dir/hf.safetensors" --model "$dir/gpt.cfg"
[ $rc = 1 ] && [ "$(grep '^erase-train:' "$out" | tail -1)" = "erase-train: --init-from $dir/hf.safetensors: the file does not say its format (it was not written by erase-export): give --init-format erase|hf-gpt2|torch|nanochat" ]
tap $? "a file without metadata and no --init-format: refused naming the option (status $rc)"

# ctr in torch names
train 1 --global-batch 24 --steps 2 --checkpoint-every 2 --checkpoint-dir "$dir/ctr" || true
apps/erase-export "$dir/ctr" -o "$dir/ctr.safetensors" --format torch --quiet || echo "# erase-export ctr failed"
train 1 --global-batch 24 --steps 2 --checkpoint-every 2 --init-from "$dir/ctr/ckpt-2.h5" --checkpoint-dir "$dir/ctr-ref"
train 1 --global-batch 24 --steps 2 --checkpoint-every 2 --init-from "$dir/ctr.safetensors" --checkpoint-dir "$dir/ctr-st"
tests/ckpt/ckpt-tool compare "$dir/ctr-ref/ckpt-2.h5" "$dir/ctr-st/ckpt-2.h5" >"$dir/cmp.out" 2>&1
tap $? "ctr from its erase-export (torch names): trained bitwise as from the checkpoint (status $rc)"

# nanochat in nanochat's names (issue 37), on 2 ranks
printf 'model = "nanochat";\nnanochat: { layers = 2; width = 32; heads = 2; kv_heads = 1; context = 16; vocab = 256; };\n' \
    >"$dir/nanochat.cfg"
$G --model "$dir/nanochat.cfg" --steps 3 --checkpoint-every 3 --checkpoint-dir "$dir/nc-base" >"$out" 2>&1 || tap_report "$out"
apps/erase-export "$dir/nc-base" -o "$dir/nc.safetensors" --format nanochat --quiet || echo "# erase-export nanochat failed"
tune2 nc-ref --init-from "$dir/nc-base/ckpt-3.h5"
tune2 nc-st --init-from "$dir/nc.safetensors"
tests/ckpt/ckpt-tool compare "$dir/nc-ref/ckpt-2.h5" "$dir/nc-st/ckpt-2.h5" >"$dir/cmp.out" 2>&1 &&
    grep -q "^init   from $dir/nc.safetensors (safetensors, nanochat names, step 3): 14 parameters loaded; this run starts at step 0 on its own data$" "$out"
tap $? "nanochat from its erase-export (nanochat names) on 2 ranks: fine-tuned bitwise as from the checkpoint (status $rc)"

# ---- wrong files: one line naming the tensor, exit 1, nothing trained
# refused CASE FILE LINE ARGS...: tune from FILE fails with LINE as its last error line, no checkpoint
refused() {
    what=$1 file=$2 line=$3
    shift 3
    rm -rf "$dir/bad"
    tune bad --init-from "$file" "$@"
    [ $rc = 1 ] && [ "$(grep -c '^erase-train: ' "$out")" = 2 ] &&
        [ "$(grep '^erase-train: ' "$out" | tail -1)" = "erase-train: --init-from $file: $line" ] &&
        [ -z "$(ls "$dir/bad" 2>/dev/null | grep 'ckpt-')" ]
    tap $? "$what: exit 1, one line naming the tensor, nothing trained (status $rc)"
    [ $? = 0 ] || tap_report "$out"
}
$make_st rename "$dir/gpt.safetensors" "$dir/renamed.safetensors" transformer.h.1.ln_2.bias transformer.h.1.ln_2.b
refused "a name missing" "$dir/renamed.safetensors" \
    "tensor transformer.h.1.ln_2.bias missing (this run's h1/ln_2/bias, hf-gpt2 names)"
$make_st dtype "$dir/gpt.safetensors" "$dir/f16.safetensors" transformer.wpe.weight
refused "a float16 tensor" "$dir/f16.safetensors" \
    "tensor transformer.wpe.weight: dtype F16, expected F32 (float32; this run's h0/wpe)"
$make_st untranspose "$dir/gpt.safetensors" "$dir/shape.safetensors" transformer.h.0.attn.c_attn.weight
refused "a Conv1D weight in Linear's layout" "$dir/shape.safetensors" \
    "tensor transformer.h.0.attn.c_attn.weight: shape [96, 32], this run's h0/attn/c_attn/weight needs [32, 96]"
$make_st extra "$dir/gpt.safetensors" "$dir/extra.safetensors" transformer.h.0.attn.rotary
refused "a tensor the model has not" "$dir/extra.safetensors" \
    "tensor transformer.h.0.attn.rotary: not a parameter of this run's gpt model in hf-gpt2 names"
size=$(stat -c %s "$dir/gpt.safetensors")
head -c $((size - 100)) "$dir/gpt.safetensors" >"$dir/cut.safetensors"
tune bad --init-from "$dir/cut.safetensors"
[ $rc = 2 ] && grep '^erase-train: ' "$out" | tail -1 |
    grep -q "^erase-train: $dir/cut.safetensors: tensor transformer.ln_f.bias: data \[[0-9]*, [0-9]*) past the end of the file's [0-9]* bytes of data (truncated)$" &&
    [ -z "$(ls "$dir/bad" 2>/dev/null | grep 'ckpt-')" ]
tap $? "a truncated file: refused before the run is built (exit 2), one line naming the tensor, nothing trained (status $rc)"
[ $? = 0 ] || tap_report "$out"
rm -rf "$dir/bad"
train 1 --global-batch 24 --steps 2 --checkpoint-dir "$dir/bad" --init-from "$dir/hf.safetensors" --init-format hf-gpt2
[ $rc = 1 ] && [ "$(grep '^erase-train: ' "$out" | tail -1)" = "erase-train: --init-format hf-gpt2: the model is ctr; hf-gpt2 holds gpt models only (--init-format erase holds any)" ] &&
    [ -z "$(ls "$dir/bad" 2>/dev/null | grep 'ckpt-')" ]
tap $? "hf-gpt2 names for a ctr run: exit 1, one line, nothing trained (status $rc)"
[ $? = 0 ] || tap_report "$out"

# ---- usage errors (status 2)
tune usage --init-from "$dir/base/ckpt-3.h5" --init-format hf-gpt2
[ $rc = 2 ] && [ "$(grep '^erase-train: ' "$out")" = "erase-train: --init-format hf-gpt2: only with --init-from FILE.safetensors" ]
tap $? "--init-format with a checkpoint: usage error (status $rc)"
$G --init-from "$dir/gpt.safetensors" --eval-only >"$out" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(grep '^erase-train: ' "$out")" = "erase-train: --eval-only --init-from $dir/gpt.safetensors: evaluates checkpoints; a run started from the file (--steps 1 and --checkpoint-dir) makes one" ]
tap $? "--eval-only with a safetensors file: usage error (status $rc)"
