/*
 * Values in erase-train's JSON-lines metrics file (--metrics): JSON has no
 * NaN or infinity, so a non-finite number is written as null (an NE of an
 * evaluation set with one class, a loss that diverged), and strings (paths)
 * are escaped.
 */
#ifndef ERASE_APPS_TRAIN_JSON_H
#define ERASE_APPS_TRAIN_JSON_H

#include <math.h>
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

#endif
