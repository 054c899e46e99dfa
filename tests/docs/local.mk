# The manual (issue 37): README.md is the front door, docs/ the manual by
# task; every ```sh block of both is run by test-doc-commands.sh.
EXTRA_DIST += docs/training.md docs/data.md docs/checkpoints.md docs/sharding.md \
	docs/cluster.md docs/gpu.md docs/benchmarks.md docs/troubleshooting.md
