#!/bin/sh
# The training knobs nanochat and nanoGPT users set (issue 34, item 4):
# --lr-decay wsd (warm-up, stable, linear warm-down over the last
# --warmdown-fraction of the steps to --final-lr-fraction x --lr) gives
# nanochat's get_lr_multiplier at every step; cosine starts at --lr and
# heads for --min-lr, reached after the last step;
# --beta1 --beta2 --eps reach AdamW (a run with them differs from the
# defaults) and are taken from the checkpoint on resume (bitwise equal to
# the uninterrupted run); each refuses a setting it cannot take, naming it.
. "$(dirname "$0")/ckpt.sh"
setup_data
echo "1..9"

# ---- wsd against nanochat's multiplier, step by step (the metrics' lr,
# a float printed with 6 digits: relative error <= 1e-5)
out=$dir/wsd.out
train 1 --steps 20 --batch 16 --log-every 1 --lr 0.02 --warmup-steps 3 --lr-decay wsd --warmdown-fraction 0.25 \
    --final-lr-fraction 0.1 --metrics "$dir/wsd.jsonl"
lr_per_step "$dir/wsd.jsonl" >"$dir/wsd.lr"
# nanochat: it = step - 1; warm-up (it + 1) / 3; stable while it <= 20 - 5;
# then p = (20 - it) / 5, p + (1 - p) x 0.1
awk 'BEGIN { bad = 0 }
     { it = $1 - 1
       if (it < 3) m = (it + 1) / 3; else if (it <= 15) m = 1; else { p = (20 - it) / 5; m = p + (1 - p) * 0.1 }
       want = 0.02 * m; d = $2 - want; if (d < 0) d = -d
       if (d > 1e-5 * want) { printf "# step %d: lr %s, nanochat %.9g\n", $1, $2, want; bad = 1 } }
     END { if (NR != 20) { printf "# %d steps in the metrics, expected 20\n", NR; bad = 1 }; exit bad }' "$dir/wsd.lr"
tap $? "--lr-decay wsd: the lr of each of 20 steps is nanochat's (warm-up 3, stable to 15, warm-down 5 to 0.1 x lr): $(sed -n '1p;4p;17p;20p' "$dir/wsd.lr" | tr '\n' ' ')"
[ $rc = 0 ] || show "$out"

# ---- cosine towards --min-lr: step s of 12 at t = (s - 1) / 12
out=$dir/cos.out
train 1 --steps 12 --batch 16 --log-every 1 --lr 0.02 --lr-decay cosine --min-lr 0.005 --metrics "$dir/cos.jsonl"
lr_per_step "$dir/cos.jsonl" >"$dir/cos.lr"
awk 'BEGIN { bad = 0; pi = atan2(0, -1) }
     { want = 0.005 + 0.015 * 0.5 * (1 + cos(pi * ($1 - 1) / 12)); d = $2 - want; if (d < 0) d = -d
       if (d > 1e-5 * want) { printf "# step %d: lr %s, expected %.9g\n", $1, $2, want; bad = 1 } }
     END { if (NR != 12) { printf "# %d steps in the metrics, expected 12\n", NR; bad = 1 }; exit bad }' "$dir/cos.lr"
ok=$?
[ $rc = 0 ] && [ $ok = 0 ] && [ "$(sed -n 1p "$dir/cos.lr")" = "1 0.02" ]
tap $? "--lr-decay cosine --min-lr 0.005: step 1 at --lr, each of 12 steps on the cosine, the last above --min-lr: $(sed -n '1p;12p' "$dir/cos.lr" | tr '\n' ' ')"

# ---- AdamW's betas and eps: used, and carried by the checkpoint
ARGS="--steps 12 --batch 12 --checkpoint-every 6 --keep-checkpoints 3"
out=$dir/betas.out
train 2 $ARGS --beta1 0.8 --beta2 0.95 --eps 1e-6 --checkpoint-dir "$dir/betas"
r1=$rc
out=$dir/default.out
train 2 $ARGS --checkpoint-dir "$dir/default"
tests/ckpt/ckpt-tool compare "$dir/betas/ckpt-12.h5" "$dir/default/ckpt-12.h5" >"$dir/cmp-default.out" 2>&1
c=$?
[ $r1 = 0 ] && [ $rc = 0 ] && [ $c = 1 ]
tap $? "--beta1 0.8 --beta2 0.95 --eps 1e-6 train other parameters than the defaults (status $r1, $rc; compare $c)"

mkdir "$dir/resumed" && cp "$dir/betas/ckpt-6.h5" "$dir/resumed/"
out=$dir/resumed.out
train 2 $ARGS --checkpoint-dir "$dir/resumed" --resume auto
tests/ckpt/ckpt-tool compare "$dir/betas/ckpt-12.h5" "$dir/resumed/ckpt-12.h5" >"$dir/cmp-resumed.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ] && grep -q "^note   taken from the run of .*: beta1 0.8; beta2 0.95; eps 1e-06$" "$out"
tap $? "resumed from ckpt-6.h5 without the betas: they come from the checkpoint, ckpt-12.h5 bitwise equal (status $rc, compare $c)"
[ $rc = 0 ] && [ $c = 0 ] || { show "$out"; show "$dir/cmp-resumed.out"; }

# ---- settings refused, naming the option (usage status 2)
refused "--min-lr 0.1 above --lr 0.01: cosine decays from --lr to --min-lr" --lr 0.01 --min-lr 0.1
tap $? "--min-lr above --lr: refused (status $rc)"
[ $rc = 2 ] || show "$out"
refused "--warmdown-fraction: only with --lr-decay wsd (this run's is cosine)" --warmdown-fraction 0.3
tap $? "--warmdown-fraction with cosine: refused (status $rc)"
refused "--beta2: only with --optimizer adamw or muon (this run's is sgd)" --optimizer sgd --beta2 0.95
tap $? "--beta2 with sgd: refused (status $rc)"

# ---- a run file's settings of another optimizer or schedule
printf 'optimizer = "muon";\nvector_lr = 0.005;\nlr_decay = "wsd";\nwarmdown_fraction = 0.3;\n' >"$dir/muon.run"
out=$dir/yield.out
train 1 --steps 2 --batch 16 --config "$dir/muon.run" --optimizer adamw --lr-decay cosine
[ $rc = 0 ] && grep -q -x -F "note   run file $dir/muon.run: unused, the command line chose otherwise: --warmdown-fraction (only with --lr-decay wsd; the command line's is cosine), --vector-lr (only with --optimizer muon; the command line's is adamw)" "$out"
tap $? "a run file's --vector-lr and --warmdown-fraction yield to the command line's adamw and cosine, noted (status $rc)"
[ $rc = 0 ] || show "$out"
printf 'optimizer = "sgd";\nbeta1 = 0.8;\n' >"$dir/sgd.run"
refused "--beta1: only with --optimizer adamw or muon (this run's is sgd); set in the run file $dir/sgd.run" --config "$dir/sgd.run"
tap $? "a run file that sets sgd and --beta1: refused, naming the run file (status $rc)"
[ $rc = 2 ] || show "$out"
