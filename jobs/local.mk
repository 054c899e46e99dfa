# jobs/: what make install puts in $(pkgdatadir), $prefix/share/erase
# (issue 37; docs/install.md): the job scripts users run, with their run and
# model files, the Slurm templates and their site file, and the shipped data
# the jobs convert (data/, as in the source tree: the jobs find it, and the
# programs, through jobs/paths.sh). jobs/setup, jobs/test and the package
# lists belong to the source tree only.
nobase_dist_pkgdata_SCRIPTS = jobs/workstation jobs/mnist jobs/shakespeare jobs/nanochat jobs/plot jobs/trace-svg jobs/tensorboard \
	jobs/train-1node.sbatch jobs/train-multinode.sbatch
# the daily retraining pipeline: one day, its Slurm job, the chain of days (issue 36)
nobase_dist_pkgdata_SCRIPTS += jobs/daily jobs/daily.sbatch jobs/daily-chain
EXTRA_DIST += docs/daily.md bench/daily-phases.sh
nobase_dist_pkgdata_DATA = jobs/job.sh jobs/paths.sh jobs/site.sh jobs/slurm-train.sh \
	jobs/criteo-sample.run jobs/mnist.run jobs/shakespeare.run jobs/mnist-mlp.cfg jobs/gpt-shakespeare.cfg \
	jobs/gpt-shakespeare-pp.cfg jobs/gpt-shakespeare-char-pp.cfg jobs/gpt-nanochat.cfg \
	jobs/nanochat.run jobs/nanochat-d4.cfg jobs/nanochat-d4-cuts.cfg \
	jobs/ctr-multihot.cfg \
	data/criteo/SOURCES.md data/criteo/kaggle-train-first9999.tsv \
	data/mnist/SOURCES.md data/mnist/t10k-images-idx3-ubyte.gz data/mnist/t10k-labels-idx1-ubyte.gz \
	data/text/SOURCES.md data/text/tinyshakespeare.txt
# the dcn model's file, MLPerf DLRM-DCNv2's sizes (issue 36)
nobase_dist_pkgdata_DATA += jobs/dcn.cfg
