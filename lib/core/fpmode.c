/* Flush-to-zero and denormals-are-zero per thread (see fpmode.h). */
#include "lib/core/fpmode.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#define FP_X86 1
#elif defined(__aarch64__) && defined(__GNUC__)
#define FP_ARM64 1
#define FPCR_FZ (1u << 24) /* flushes subnormal inputs and outputs */
#endif

static struct {
    pthread_once_t once;
    int on;
    char value[64]; /* an invalid ERASE_FTZ, for the error */
} policy = { .once = PTHREAD_ONCE_INIT };

static void read_policy(void)
{
    const char *v = getenv("ERASE_FTZ");
    policy.on = 1;
    if (v && strcmp(v, "0") == 0)
        policy.on = 0;
    else if (v && *v && strcmp(v, "1") != 0) {
        strncpy(policy.value, v, sizeof policy.value - 1);
        policy.value[sizeof policy.value - 1] = '\0';
    }
}

int erase_fp_flush_supported(void)
{
#if defined(FP_X86) || defined(FP_ARM64)
    return 1;
#else
    return 0;
#endif
}

erase_status_t erase_fp_flush_policy(int *on)
{
    pthread_once(&policy.once, read_policy);
    *on = policy.on;
    if (policy.value[0])
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "ERASE_FTZ must be 0 (keep subnormal floats) or 1 (flush them to zero, "
                           "the default), got '%s'", policy.value);
    return ERASE_OK;
}

unsigned erase_fp_flush_state(void)
{
#if defined(FP_X86)
    return (_MM_GET_FLUSH_ZERO_MODE() == _MM_FLUSH_ZERO_ON ? ERASE_FP_FTZ : 0) |
           (_MM_GET_DENORMALS_ZERO_MODE() == _MM_DENORMALS_ZERO_ON ? ERASE_FP_DAZ : 0);
#elif defined(FP_ARM64)
    return (__builtin_aarch64_get_fpcr() & FPCR_FZ) ? ERASE_FP_FTZ | ERASE_FP_DAZ : 0;
#else
    return 0;
#endif
}

unsigned erase_fp_flush_set(int on)
{
#if defined(FP_X86)
    _MM_SET_FLUSH_ZERO_MODE(on ? _MM_FLUSH_ZERO_ON : _MM_FLUSH_ZERO_OFF);
    _MM_SET_DENORMALS_ZERO_MODE(on ? _MM_DENORMALS_ZERO_ON : _MM_DENORMALS_ZERO_OFF);
#elif defined(FP_ARM64)
    unsigned fpcr = __builtin_aarch64_get_fpcr();
    __builtin_aarch64_set_fpcr(on ? fpcr | FPCR_FZ : fpcr & ~FPCR_FZ);
#else
    (void)on;
#endif
    return erase_fp_flush_state();
}

unsigned erase_fp_thread_init(void)
{
    pthread_once(&policy.once, read_policy);
    return erase_fp_flush_set(policy.on);
}

const char *erase_fp_flush_describe(void)
{
    pthread_once(&policy.once, read_policy);
    if (!erase_fp_flush_supported())
        return "flush-to-zero unsupported";
    return policy.on ? "flush-to-zero on" : "flush-to-zero off (ERASE_FTZ=0)";
}
