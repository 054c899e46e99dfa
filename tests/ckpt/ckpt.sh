# Sourced by the checkpoint test drivers (tests/ckpt/test-*.sh, soak.sh):
# mpirun set-up (tests/comm/mpi.sh), a scratch directory with a small
# synthetic dataset and a tiny model, and helpers to run erase-train.
# Run from the top build directory (make check does).

. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
need apps/erase-inspect
need apps/erase-sample
need tests/ckpt/ckpt-tool
# Open MPI leaks at exit; io/'s leaks are checked by tests/ckpt/test-checkpoint.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
unset ERASE_DEBUG_KILL_AT_STEP ERASE_DEBUG_CKPT_SLEEP_MS ERASE_DEBUG_SAMPLE_LOG

# setup_dir: a scratch directory $dir in the build tree (removed at exit
# unless ERASE_KEEP_TEST_DIR=1).
setup_dir() {
    dir=$(mktemp -d "$PWD/tmp-ckpt-XXXXXX") || exit 99
    if [ "${ERASE_KEEP_TEST_DIR:-0}" = 1 ]; then echo "# keeping $dir"; else trap 'rm -rf "$dir"' EXIT; fi
}

# setup_data: setup_dir with data/ (4,000 synthetic rows: 3,200 train,
# 800 eval) and model.cfg (ctr_model).
setup_data() {
    setup_dir
    apps/erase-convert synth -q -o "$dir/data" --rows 4000 --chunk-rows 256 --shard-rows 2000 \
        >"$dir/convert.log" 2>&1 || { sed 's/^/# /' "$dir/convert.log"; echo "Bail out! erase-convert synth failed"; exit 0; }
    ctr_model "$dir/model.cfg"
}

# ctr_model FILE: a tiny ctr model (26 tables of 101 rows, D = 4, 3 blocks).
ctr_model() {
    cat >"$1" <<'CFG'
model = "ctr";
ctr: {
  embedding_dim = 4;
  table_rows = 101;
  bottom_mlp = [8, 4];
  subarch_width = 16;
  subarchs = 2;
  cuts = "all";
};
CFG
}

# setup_gpt FILE KEY: $dir/text/{train,eval} (the first 64 KiB of
# tinyshakespeare, byte-level) and FILE, a tiny GPT (2 layers, width 32, 4
# heads, context 16, vocab 256) with the model key KEY (e.g. "cuts = [1];").
setup_gpt() {
    head -c 65536 "${srcdir:-.}/data/text/tinyshakespeare.txt" >"$dir/shakespeare-64k.txt"
    apps/erase-convert text -q "$dir/shakespeare-64k.txt" -o "$dir/text" >"$dir/convert.log" 2>&1 ||
        { sed 's/^/# /' "$dir/convert.log"; echo "Bail out! erase-convert text failed"; exit 0; }
    printf 'model = "gpt";\ngpt: {\n  layers = 2;\n  heads = 4;\n  width = 32;\n  context = 16;\n  vocab = 256;\n  %s\n};\n' \
        "$2" >"$1"
}

# setup_mnist FILE: $dir/mnist/{train,eval} (512 and 256 rows of MNIST's
# t10k set; train holds 410 of the 512 when --eval-fraction holds out the
# rest) and FILE, a small mlp (784-64-64-64-10, 3 blocks, every layer cut).
setup_mnist() {
    apps/erase-convert mnist -q "${srcdir:-.}/data/mnist/t10k-images-idx3-ubyte.gz" \
        "${srcdir:-.}/data/mnist/t10k-labels-idx1-ubyte.gz" -o "$dir/mnist" --split 512,256 --chunk-rows 64 \
        >"$dir/convert.log" 2>&1 || { sed 's/^/# /' "$dir/convert.log"; echo "Bail out! erase-convert mnist failed"; exit 0; }
    cat >"$1" <<'CFG'
model = "mlp";
mlp: {
  inputs = 784;
  hidden = [64, 64, 64];
  classes = 10;
  cuts = "all";
};
CFG
}

# random N: sets $r to a pseudo-random integer in [0, N) drawn from $seed
# (printed by the driver, so a failure can be replayed with ERASE_TEST_SEED).
# Not in $(...): the subshell would not advance $seed.
seed=${ERASE_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
random() {
    seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
    r=$(( seed / 65536 % $1 ))
}

# train NP ARGS...: erase-train on NP ranks, the data and model of setup_data,
# in the foreground; output in $out (stdout and stderr); rc = exit status.
train() {
    np=$1; shift
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-train --train "$dir/data" \
        --model "$dir/model.cfg" --device cpu --quiet "$@" >"$out" 2>&1
    rc=$?
}

# train_bg NP ARGS...: the same in the background: $job (pid of timeout).
train_bg() {
    np=$1; shift
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-train --train "$dir/data" \
        --model "$dir/model.cfg" --device cpu --quiet "$@" >"$out" 2>&1 &
    job=$!
}

# rank_pid R: pid of world rank R of the background job ("" if none).
rank_pid() {
    for mp in $(pgrep -P "$job"); do
        for p in $(pgrep -P "$mp"); do
            if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
                echo "$p"
                return
            fi
        done
    done
}

# mpirun_pid: pid of mpirun of the background job.
mpirun_pid() { pgrep -P "$job" | head -1; }

# model_data MODEL: $data = the training data of MODEL: ctr $dir/data
# (setup_data), gpt $dir/text/train (setup_gpt), mlp $dir/mnist/train
# (setup_mnist).
model_data() {
    case $1 in
    ctr) data="$dir/data" ;;
    gpt) data="$dir/text/train" ;;
    *) data="$dir/mnist/train" ;;
    esac
}

# ptrain MODEL NP ARGS...: erase-train on NP ranks, --pp 2 unless ARGS say
# otherwise (a one-rank run: --pp 1 --schedule none --micro-batches 0), the
# model file $dir/MODEL.cfg on its data: ctr on $dir/data (setup_data), gpt
# on $dir/text/train (setup_gpt), mlp on $dir/mnist/train (setup_mnist); 12
# steps of global batch 24 (ctr), 16 (gpt) or 48 (mlp: 8 steps an epoch),
# checkpoints every 4 steps (--checkpoint-every again in ARGS overrides).
# Output in $out, status $rc.
ptrain() {
    model=$1 np=$2; shift 2
    model_data "$model"
    case $model in
    ctr) margs="--global-batch 24 --micro-batches 3" ;;
    gpt) margs="--global-batch 16 --micro-batches 2 --optimizer adamw --lr 0.003" ;;
    *) margs="--global-batch 48 --micro-batches 2 --optimizer adamw --lr 0.002" ;;
    esac
    # shellcheck disable=SC2086
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-train --train "$data" --model "$dir/$model.cfg" \
        --device cpu --quiet --pp 2 --steps 12 --warmup-steps 2 --lr-decay cosine --checkpoint-every 4 \
        --keep-checkpoints 5 $margs "$@" >"$out" 2>&1
    rc=$?
}

# stages CKPT: $stages_n = the stages of the pipeline checkpoint CKPT
# (ckpt-<step>.h5): 1 + its stage files CKPT.stage1, CKPT.stage2, ...
stages() {
    stages_n=1
    while [ -f "$1.stage$stages_n" ]; do stages_n=$((stages_n + 1)); done
}

# same A B: ckpt-12.h5 and its stage files (ckpt-12.h5.stage1, ...) of
# directories A and B are bitwise equal (tensors, cursor, clock); the
# comparisons in $dir/cmp<s>.out.
same() {
    stages "$1/ckpt-12.h5"
    stage_n=0
    while [ $stage_n -lt $stages_n ]; do
        f=ckpt-12.h5.stage$stage_n
        [ $stage_n = 0 ] && f=ckpt-12.h5
        tests/ckpt/ckpt-tool compare "$1/$f" "$2/$f" >"$dir/cmp$stage_n.out" 2>&1 || return 1
        stage_n=$((stage_n + 1))
    done
}

# lr_per_step FILE: "step lr" of every train line of a metrics file, one per
# step (a resumed run repeats steps after its checkpoint: same values).
lr_per_step() {
    grep '"type":"train"' "$1" | sed 's/.*"step":\([0-9]*\),.*"lr":\([^,]*\),.*/\1 \2/' | sort -n -u
}

# refused WANT ARGS...: a 2-step run of ARGS (train 1) exits with the usage
# status 2 and prints "erase-train: WANT" (output in $out, status $rc).
refused() {
    want=$1; shift
    out=$dir/refused.out
    train 1 --steps 2 "$@"
    [ $rc = 2 ] && grep -q -F "erase-train: $want" "$out"
}

# show FILE: a log in the TAP stream as comments.
show() { sed 's/^/#   /' "$1"; }

# The task tests' common checks (test-train-classify.sh, test-train-lm.sh),
# on a run of $ARGS ending at step 40 with checkpoints in $dir/<mode>:
# modes_equal: one TAP line, off, blocking and async end bitwise equal to graph.
modes_equal() {
    same=0
    for mode in off blocking async; do
        tests/ckpt/ckpt-tool compare "$dir/graph/ckpt-40.h5" "$dir/$mode/ckpt-40.h5" >"$dir/compare-$mode.out" 2>&1 ||
            { same=1; echo "# $mode differs from graph:"; show "$dir/compare-$mode.out"; }
    done
    tap $same "off, blocking, async and graph end with bitwise-equal checkpoints (parameters, optimizer, cursor)"
}

# kill_resume: two TAP lines: a rank of a 2-rank graph run kills itself
# (SIGKILL) after a random step; resumed with --resume auto, the run ends
# bitwise equal to $dir/graph's.
kill_resume() {
    random 25; step=$((8 + r)); random 2; rank=$r
    out=$dir/kill.out
    # shellcheck disable=SC2086 # ARGS are options
    ERASE_DEBUG_KILL_AT_STEP=$step:$rank train 2 $ARGS --early-backward graph --checkpoint-dir "$dir/kill" --resume auto
    [ $rc != 0 ] && [ $rc != 124 ]; tap $? "rank $rank killed itself (SIGKILL) after step $step (mpirun status $rc)"
    out=$dir/resume.out
    # shellcheck disable=SC2086
    train 2 $ARGS --early-backward graph --checkpoint-dir "$dir/kill" --resume auto
    tests/ckpt/ckpt-tool compare "$dir/graph/ckpt-40.h5" "$dir/kill/ckpt-40.h5" >"$dir/compare-kill.out" 2>&1
    c=$?
    [ $rc = 0 ] && [ $c = 0 ] && grep -q '^resume from ' "$out"
    tap $? "resumed with --resume auto: ends bitwise equal to the uninterrupted run (status $rc)"
    grep '^resume from' "$out" | sed 's/^/# /'
    [ $c = 0 ] || show "$dir/compare-kill.out"
}

# field "K1":V1 "K2":V2 ... KEY: the value of KEY in such a list (the summaries
# other_ranks' callers compare).
field() { echo "$1" | sed "s/.*\"$2\":\([^ ]*\).*/\1/"; }

# other_ranks: one TAP line per run: the graph run again on 1 and on 4
# ranks ($dir/np1.jsonl, $dir/np4.jsonl next to $dir/graph.jsonl).
other_ranks() {
    for np in 1 4; do
        out=$dir/np$np.out
        # shellcheck disable=SC2086
        train $np $ARGS --early-backward graph --checkpoint-dir "$dir/np$np" --metrics "$dir/np$np.jsonl"
        [ $rc = 0 ]; tap $? "the same run on $np rank(s) (status $rc)"
        [ $rc = 0 ] || show "$out"
    done
}
