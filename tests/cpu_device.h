/*
 * For tests (include after <cmocka.h>): open the CPU device in a cmocka
 * group setup. Kernels called directly need it too: the first CPU device
 * loads the BLAS.
 */
#ifndef ERASE_TESTS_CPU_DEVICE_H
#define ERASE_TESTS_CPU_DEVICE_H

#include <stdio.h>

#include "lib/device/device.h"

/* Open the CPU device into *dev with `blas_threads` BLAS threads and print
 * its description when `describe`; 0, or -1 with the reason on stderr. */
static inline int erase_test_cpu_open(int blas_threads, int describe, erase_device_t **dev)
{
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = blas_threads;
    if (erase_device_open(&o, dev) != ERASE_OK) {
        fprintf(stderr, "cannot open the CPU device: %s\n", erase_error_message());
        return -1;
    }
    if (describe) {
        char text[512];
        erase_device_describe(*dev, text, sizeof text);
        print_message("device: %s\n", text);
    }
    return 0;
}

#endif
