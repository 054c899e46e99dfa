/*
 * The SGEMM peak of a device as erase measures it (erase-bench model, the
 * MFU of erase-train): GFLOP/s of 1024 x 1024 x 1024 products on a stream.
 */
#include "lib/device/device.h"

#include "lib/core/timer.h"

#include <stdlib.h>

#define PEAK_N 1024
#define PEAK_REPS 3

erase_status_t erase_device_sgemm_peak(erase_device_t *dev, erase_stream_t *s, int samples, double *gflops)
{
    if (samples < 1 || samples > 64)
        return ERASE_ERROR(ERASE_ERR_INVALID, "SGEMM peak: %d samples (1 to 64)", samples);
    const size_t n = (size_t)PEAK_N * PEAK_N;
    float *host = malloc(n * sizeof(float));
    float *m[3] = { NULL, NULL, NULL };
    erase_status_t st = host ? ERASE_OK : ERASE_ERROR(ERASE_ERR_NOMEM, "SGEMM peak: no memory for %zu floats", n);
    for (size_t i = 0; st == ERASE_OK && i < n; i++)
        host[i] = (float)(i % 17) * 0.01f;
    for (int k = 0; st == ERASE_OK && k < 3; k++)
        st = erase_malloc(dev, n * sizeof(float), (void **)&m[k]);
    for (int k = 0; st == ERASE_OK && k < 2; k++)
        st = erase_memcpy_sync(dev, m[k], host, n * sizeof(float));
    for (int k = -1; st == ERASE_OK && k < samples; k++) { /* k = -1: warm-up */
        double t0 = erase_now_s();
        for (int r = 0; st == ERASE_OK && r < PEAK_REPS; r++)
            st = erase_sgemm(s, ERASE_NO_TRANS, ERASE_NO_TRANS, PEAK_N, PEAK_N, PEAK_N, 1.0f, m[0], PEAK_N, m[1],
                             PEAK_N, 0.0f, m[2], PEAK_N);
        if (st == ERASE_OK)
            st = erase_stream_synchronize(s);
        double sec = erase_now_s() - t0;
        if (k >= 0)
            gflops[k] = sec > 0 ? 2.0 * PEAK_N * PEAK_N * PEAK_N * PEAK_REPS / sec / 1e9 : 0;
    }
    for (int k = 0; k < 3; k++)
        erase_free(dev, m[k]);
    free(host);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        return st;
    }
    return ERASE_OK;
}
