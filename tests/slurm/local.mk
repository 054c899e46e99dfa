# tests/slurm: the repository's Slurm jobs (jobs/*.sbatch) on a real
# single-node Slurm cluster that the driver starts on localhost and stops
# (Debian's slurm-wlm and munge, as root; skipped where they are missing).
# The ThreadSanitizer build skips them (187 s of its pass in CI's 40
# minutes): they test the job scripts and Slurm's plumbing; erase-train's
# threads, signals and ranks run under ThreadSanitizer in tests/ckpt
# (test-kill-resume, SIGUSR1 in test-pipeline) and tests/sched.
# test-sbatch-lock.sh: a --checkpoint-dir's lock through Slurm: a requeue
# waits for its previous allocation, a second job is refused (issue 32)
SLURM_TEST_DRIVERS = tests/slurm/test-sbatch.sh tests/slurm/test-sbatch-multinode.sh \
	tests/slurm/test-sbatch-lock.sh
# test-sbatch-daily.sh: jobs/daily-chain's days through Slurm: a day signalled, requeued and resumed
# bitwise, a corrupted day stopping the chain (issue 36)
SLURM_TEST_DRIVERS += tests/slurm/test-sbatch-daily.sh
if !ERASE_TSAN
TESTS += $(SLURM_TEST_DRIVERS)
endif
EXTRA_DIST += $(SLURM_TEST_DRIVERS) tests/slurm/cluster.sh tests/slurm/jobs.sh tests/slurm/tiny-ctr.cfg \
	jobs/README.md jobs/site.sh jobs/slurm-train.sh \
	jobs/train-1node.sbatch jobs/train-multinode.sbatch
