# The manual (issue 37): README.md is the front door, docs/ the manual by
# task; every ```sh block of both is run by test-doc-commands.sh.
EXTRA_DIST += docs/training.md docs/data.md docs/checkpoints.md docs/sharding.md \
	docs/cluster.md docs/gpu.md docs/benchmarks.md docs/troubleshooting.md
# the doc test: every command block of README.md and docs/*.md runs, every relative link resolves (issue 37)
TESTS += tests/docs/test-doc-commands.sh
EXTRA_DIST += tests/docs/test-doc-commands.sh tests/docs/doc_blocks.py
