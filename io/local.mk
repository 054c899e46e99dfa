# io/: HDF5 data files (CTR and classification shards: writers, validated
# reads, the batch reader with prefetch and its row formats),
# Criteo text parsing and conversion, synthetic data. Uses lib/core.
noinst_LIBRARIES += io/liberase_io.a
io_liberase_io_a_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS) $(ZLIB_CPPFLAGS) $(LIBDEFLATE_CPPFLAGS)
io_liberase_io_a_SOURCES = \
	io/h5_util.c io/h5_util.h \
	io/h5_rows.c io/h5_rows.h \
	io/h5_chunks.c io/h5_chunks.h \
	io/h5_shards.c io/h5_shards.h \
	io/idx.c io/idx.h \
	io/cls_shard.c io/cls_shard.h \
	io/cls_shard_write.c io/cls_shard_write.h \
	io/cls_stats.c io/cls_stats.h \
	io/cls_reader.c io/cls_reader.h \
	io/tok_shard.c io/tok_shard.h \
	io/tok_shard_write.c io/tok_shard_write.h \
	io/tok_reader.c io/tok_reader.h \
	io/tok_data_tokenizer.c io/tok_data_tokenizer.h \
	io/tok_convert.c io/tok_convert.h \
	io/tokenizer.h io/tokenizer.c io/tokenizer_internal.h io/tokenizer_train.c io/tokenizer_encode.c \
	io/pretokenize.h io/pretokenize.c io/unicode_classes.c \
	io/mnist_convert.c io/mnist_convert.h \
	io/criteo_parse.c io/criteo_parse.h \
	io/criteo_convert.c io/criteo_convert.h \
	io/convert_plan.c io/convert_plan.h io/convert_ranks.c io/convert_ranks.h \
	io/gz_members.c io/gz_members.h \
	io/ctr_shard.c io/ctr_shard.h io/ctr_shard_internal.h \
	io/ctr_shard_write.c io/ctr_shard_write.h \
	io/ctr_index.c io/ctr_index.h \
	io/ctr_dataset_write.c io/ctr_dataset_write.h \
	io/ctr_stats.c io/ctr_stats.h \
	io/distinct.c io/distinct.h \
	io/reader.c io/reader.h \
	io/ctr_reader.c io/ctr_reader.h \
	io/synth.c io/synth.h \
	io/checkpoint.c io/checkpoint.h io/checkpoint_internal.h io/checkpoint_dir.c \
	io/checkpoint_write.c io/checkpoint_read.c
# checkpoint tensors read a bounded block of rows at a time (issue 35)
io_liberase_io_a_SOURCES += io/checkpoint_stream.c io/checkpoint_stream.h
# synthetic days shaped like Criteo Terabyte's, and what both generators share (issue 35)
io_liberase_io_a_SOURCES += io/synth_days.c io/synth_days.h io/synth_common.c io/synth_common.h
EXTRA_DIST += bench/synth-days.sh
# safetensors files: erase-export's writer, --init-from's validating reader (issue 37)
io_liberase_io_a_SOURCES += io/safetensors.c io/safetensors.h
# frequency-thresholded vocabularies: counting pass, file, mapping (issue 35)
io_liberase_io_a_SOURCES += io/vocab.c io/vocab.h io/vocab_count.c io/vocab_count.h
EXTRA_DIST += io/README.md
# The generator of io/unicode_classes.c (the pre-tokenizer's Unicode classes; issue 33)
EXTRA_DIST += io/gen_unicode_classes.py

# What a program using io/ links, before $(ERASE_LIBS).
ERASE_IO_LIBS = io/liberase_io.a $(HDF5_LDFLAGS) $(HDF5_LIBS) $(MPI_LDFLAGS) $(MPI_LIBS) $(ZLIB_LIBS) $(LIBDEFLATE_LIBS)

# erase-convert criteo against pyarrow's CSV reader, 1 and 2 ranks (issue 35)
EXTRA_DIST += bench/convert-vs-pyarrow.sh
# The Criteo samples (data/criteo/SOURCES.md) used by tests and benchmarks.
EXTRA_DIST += data/criteo/SOURCES.md data/criteo/kaggle-train-first9999.tsv \
	data/criteo/paddlerec-part0.tsv data/criteo/deepctr-sample.csv
# The MNIST test split (data/mnist/SOURCES.md): erase-convert mnist, its tests.
EXTRA_DIST += data/mnist/SOURCES.md data/mnist/t10k-images-idx3-ubyte.gz data/mnist/t10k-labels-idx1-ubyte.gz
# The tinyshakespeare corpus (data/text/SOURCES.md): erase-convert text, the lm task's tests.
EXTRA_DIST += data/text/SOURCES.md data/text/tinyshakespeare.txt
