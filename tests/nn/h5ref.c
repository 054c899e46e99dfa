#include "tests/nn/h5ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ERASE_TEST_DATA
#error "ERASE_TEST_DATA (the tests/data directory) must be defined"
#endif

hid_t h5ref_open(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/reference/%s", ERASE_TEST_DATA, name);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        fprintf(stderr, "cannot open reference file %s\n", path);
        exit(1);
    }
    return f;
}

long h5ref_count(hid_t file, const char *path)
{
    if (H5Lexists(file, path, H5P_DEFAULT) <= 0)
        return -1;
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    hid_t sp = H5Dget_space(d);
    long n = (long)H5Sget_simple_extent_npoints(sp);
    H5Sclose(sp);
    H5Dclose(d);
    return n;
}

int h5ref_read(hid_t file, const char *path, hid_t type, void *out, size_t n)
{
    if (h5ref_count(file, path) != (long)n)
        return -1;
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    herr_t rc = H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
    H5Dclose(d);
    return rc < 0 ? -1 : 0;
}

char *h5ref_attr_string(hid_t file, const char *name)
{
    if (H5Aexists(file, name) <= 0)
        return NULL;
    hid_t a = H5Aopen(file, name, H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    char *text = NULL;
    if (H5Tis_variable_str(t) > 0) {
        char *v = NULL;
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        if (H5Aread(a, mt, &v) >= 0 && v) {
            text = strdup(v);
            H5free_memory(v);
        }
        H5Tclose(mt);
    } else {
        size_t n = H5Tget_size(t);
        text = calloc(n + 1, 1);
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, n);
        H5Aread(a, mt, text);
        H5Tclose(mt);
    }
    H5Tclose(t);
    H5Aclose(a);
    return text;
}

long h5ref_attr_long(hid_t file, const char *name)
{
    long v = -1;
    if (H5Aexists(file, name) <= 0)
        return -1;
    hid_t a = H5Aopen(file, name, H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_LONG, &v);
    H5Aclose(a);
    return v;
}

double h5ref_attr_double(hid_t file, const char *name)
{
    double v = NAN;
    if (H5Aexists(file, name) <= 0)
        return v;
    hid_t a = H5Aopen(file, name, H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_DOUBLE, &v);
    H5Aclose(a);
    return v;
}
