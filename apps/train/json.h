/*
 * Values in erase-train's JSON-lines metrics file (--metrics): JSON has no
 * NaN or infinity, so a non-finite number is written as null (an NE of an
 * evaluation set with one class, a loss that diverged), and strings (paths)
 * are escaped. Every line starts alike (json_line_start).
 */
#ifndef ERASE_APPS_TRAIN_JSON_H
#define ERASE_APPS_TRAIN_JSON_H

#include "lib/core/timer.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* v formatted with the printf format `fmt` (one double conversion) into
 * buf, or "null" when v is NaN or infinite. Returns buf or "null". */
static inline const char *json_number(char buf[48], const char *fmt, double v)
{
    if (!isfinite(v))
        return "null";
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(buf, 48, fmt, v);
#pragma GCC diagnostic pop
    return buf;
}

/* s as a JSON string, quotes included: '"' and '\' escaped, control
 * characters as \u00XX. */
static inline void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The start of one line of the metrics file, every type alike:
 * {"type":TYPE,"step":STEP,"time":unix seconds now,"samples":SAMPLES
 * (training samples of all ranks since step 0); the caller adds its own
 * fields, then "}\n". */
static inline void json_line_start(FILE *f, const char *type, int64_t step, int64_t samples)
{
    fprintf(f, "{\"type\":\"%s\",\"step\":%lld,\"time\":%.3f,\"samples\":%lld", type, (long long)step,
            erase_unix_time_s(), (long long)samples);
}

#endif
