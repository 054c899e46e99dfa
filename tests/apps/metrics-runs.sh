# Sourced by tests/apps drivers that read the metrics files of every task
# (test-plot.sh, test-tensorboard.sh), after tests/comm/mpi.sh and workdir.

# metrics_train NAME ARGS...: erase-train ARGS on 2 ranks for 6 steps (log
# every 2, evaluate every 3), metrics in $dir/NAME.jsonl, output in
# $dir/NAME.out (copied into the TAP stream when it fails)
metrics_train() {
    name=$1; shift
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train "$@" --steps 6 --log-every 2 --eval-every 3 \
        --metrics "$dir/$name.jsonl" --quiet >"$dir/$name.out" 2>&1 || tap_report "$dir/$name.out"
}

# metrics_runs [CTR_ARGS...]: a small run of each task: $dir/ctr.jsonl (ctr
# on 4,000 synthetic rows, batch 32, CTR_ARGS added), $dir/classify.jsonl
# (jobs/mnist-mlp.cfg on 600 MNIST images), $dir/lm.jsonl (a 1-block gpt,
# $dir/gpt.cfg, on 100 kB of text, global batch 8)
metrics_runs() {
    apps/erase-convert synth -q -o "$dir/ctr" --rows 4000 >/dev/null 2>&1
    metrics_train ctr --train "$dir/ctr" --eval-fraction 0.2 --batch 32 "$@"
    apps/erase-convert mnist -q "${srcdir:-.}/data/mnist/t10k-images-idx3-ubyte.gz" \
        "${srcdir:-.}/data/mnist/t10k-labels-idx1-ubyte.gz" -o "$dir/mnist" --split 600,200 >/dev/null 2>&1
    metrics_train classify --model "${srcdir:-.}/jobs/mnist-mlp.cfg" --train "$dir/mnist/train" \
        --eval "$dir/mnist/eval" --batch 16
    head -c 100000 "${srcdir:-.}/data/text/tinyshakespeare.txt" >"$dir/text.txt"
    apps/erase-convert text -q -o "$dir/text" "$dir/text.txt" >/dev/null 2>&1
    printf 'model = "gpt";\nseed = 3;\ngpt: { layers = 1; heads = 2; width = 16; context = 32; vocab = 256; };\n' \
        >"$dir/gpt.cfg"
    metrics_train lm --model "$dir/gpt.cfg" --train "$dir/text/train" --eval "$dir/text/eval" --global-batch 8
}
