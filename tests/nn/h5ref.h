/* Reading the reference files of tests/data/reference (HDF5) in tests. */
#ifndef ERASE_TESTS_NN_H5REF_H
#define ERASE_TESTS_NN_H5REF_H

#include <hdf5.h>
#include <stddef.h>

/* Open a reference file by its name under tests/data/reference; exits
 * the test (fail) when it cannot. */
hid_t h5ref_open(const char *name);

/* Read a dataset of `n` elements of HDF5 type `type` into `out`; returns 0,
 * or -1 when the dataset is missing or has another element count. */
int h5ref_read(hid_t file, const char *path, hid_t type, void *out, size_t n);

/* Elements of a dataset, or -1 when it is missing. */
long h5ref_count(hid_t file, const char *path);

/* A root attribute: a string (malloc'd; NULL if missing) or an int. */
char *h5ref_attr_string(hid_t file, const char *name);
long h5ref_attr_long(hid_t file, const char *name);
/* A root attribute as a double (NaN if missing). */
double h5ref_attr_double(hid_t file, const char *name);

#endif
