# tests/slurm: the repository's Slurm jobs (jobs/*.sbatch) on a real
# single-node Slurm cluster that the driver starts on localhost and stops
# (Debian's slurm-wlm and munge, as root; skipped where they are missing).
SLURM_TEST_DRIVERS = tests/slurm/test-sbatch.sh tests/slurm/test-sbatch-multinode.sh
TESTS += $(SLURM_TEST_DRIVERS)
EXTRA_DIST += $(SLURM_TEST_DRIVERS) tests/slurm/cluster.sh tests/slurm/jobs.sh \
	jobs/README.md jobs/site.sh jobs/slurm-train.sh \
	jobs/train-1node.sbatch jobs/train-multinode.sbatch
