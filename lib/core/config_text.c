/*
 * Checks of libconfig text before libconfig reads it (config_text.h).
 *
 * The scanner follows libconfig 1.5's lexer (scanner.l) just enough to find
 * numbers, strings, comments and @include lines: names are
 * [A-Za-z*][-A-Za-z0-9_*]*, integers [-+]?[0-9]+ (L or LL: 64-bit), hex
 * 0x[0-9A-Fa-f]+ (L or LL: 64-bit), and a number with '.' or an exponent is
 * a float. A plain integer is read by libconfig with atoi (hex: 32 bits),
 * which wraps what does not fit.
 */
#include "lib/core/config_text.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/core/fs.h"

/* libconfig 1.5 stops at 10 nested @include files. */
#define MAX_DEPTH 10

static erase_status_t read_whole(const char *path, const char *what, char **text, size_t *len);
static erase_status_t check(const char *t, size_t len, const char *name, int depth);

static int is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '*';
}

/* The number token at t[i..] (a sign or a digit first): its end in *end;
 * a too-large integer is an error naming `key`. */
static erase_status_t number(const char *t, size_t len, size_t i, const char *name, int line,
                             const char *key, int in_array, size_t *end)
{
    size_t j = i + (t[i] == '-' || t[i] == '+');
    int hex = j + 2 < len && t[j] == '0' && (t[j + 1] == 'x' || t[j + 1] == 'X') &&
              isxdigit((unsigned char)t[j + 2]);
    size_t k = hex ? j + 2 : j;
    while (k < len && (hex ? isxdigit((unsigned char)t[k]) : isdigit((unsigned char)t[k])))
        k++;
    if (!hex && k < len && (t[k] == '.' || t[k] == 'e' || t[k] == 'E')) { /* a float */
        while (k < len && (isdigit((unsigned char)t[k]) || t[k] == '.'))
            k++;
        if (k < len && (t[k] == 'e' || t[k] == 'E')) {
            k++;
            if (k < len && (t[k] == '+' || t[k] == '-'))
                k++;
            while (k < len && isdigit((unsigned char)t[k]))
                k++;
        }
        *end = k;
        return ERASE_OK;
    }
    int wide = k < len && t[k] == 'L';
    *end = k + wide + (wide && k + 1 < len && t[k + 1] == 'L');
    char digits[80];
    int n = (int)(k - i);
    if (n >= (int)sizeof digits) /* far beyond 64 bits */
        n = (int)sizeof digits - 1;
    memcpy(digits, t + i, (size_t)n);
    digits[n] = '\0';
    errno = 0;
    int fits;
    if (hex) {
        unsigned long long u = strtoull(digits + (j - i), NULL, 16);
        fits = errno == 0 && u <= (wide ? (unsigned long long)INT64_MAX : (unsigned long long)INT_MAX);
    } else {
        long long v = strtoll(digits, NULL, 10);
        fits = errno == 0 && (wide || (v >= INT_MIN && v <= INT_MAX));
    }
    if (fits && (int)(k - i) == n)
        return ERASE_OK;
    int shown = (int)(k - i);
    if (wide)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: %s: %.*sL does not fit 64 bits", name, line, key, shown,
                           t + i);
    return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: %s: %.*s does not fit 32 bits (libconfig would wrap it); "
                       "write %.*sL for a 64-bit integer%s", name, line, key, shown, t + i, shown, t + i,
                       in_array ? " (and every integer of this array with L: an array holds one type)" : "");
}

/* The @include line at t[i..] (i at '@'): the file it names must be a
 * readable regular file, and is checked in turn. *end: past its string. */
static erase_status_t include(const char *t, size_t len, size_t i, const char *name, int line, int depth,
                              size_t *end)
{
    size_t k = i + 8; /* "@include" */
    while (k < len && (t[k] == ' ' || t[k] == '\t'))
        k++;
    *end = k;
    if (k >= len || t[k] != '"')
        return ERASE_OK; /* libconfig's own error */
    char path[4096];
    size_t n = 0;
    for (k++; k < len && t[k] != '"' && t[k] != '\n'; k++) {
        if (t[k] == '\\' && k + 1 < len)
            k++;
        if (n + 1 < sizeof path)
            path[n++] = t[k];
    }
    path[n] = '\0';
    *end = k < len && t[k] == '"' ? k + 1 : k;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s:%d: @include \"%s\": %s", name, line, path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: @include \"%s\": is a directory", name, line, path);
    if (!S_ISREG(sb.st_mode))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: @include \"%s\": is %s, expected a regular file", name, line,
                           path, erase_mode_not_regular(sb.st_mode));
    if (depth + 1 >= MAX_DEPTH)
        return ERASE_OK; /* libconfig says the nesting is too deep */
    char *text;
    size_t tlen;
    erase_status_t st = read_whole(path, "included file", &text, &tlen);
    if (st == ERASE_OK) {
        st = check(text, tlen, path, depth + 1);
        free(text);
    }
    return st;
}

static erase_status_t check(const char *t, size_t len, const char *name, int depth)
{
    int line = 1, line_start = 1, groups = 0, arrays = 0; /* arrays: open [ */
    char key[64] = "value", path[256] = "", full[320];
    size_t ends[32]; /* path lengths outside each open group */
    size_t i = 0;
    while (i < len) {
        char c = t[i];
        if (c == '{' && groups < 32) { /* a group: its settings' keys are path.key */
            ends[groups++] = strlen(path);
            snprintf(path + strlen(path), sizeof path - strlen(path), "%s%s", path[0] ? "." : "", key);
        } else if (c == '}' && groups > 0) {
            path[ends[--groups]] = '\0';
        } else if (c == '[') {
            arrays++;
        } else if (c == ']' && arrays > 0) {
            arrays--;
        }
        if (c == '\0')
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: a NUL byte: the file is not text (libconfig would "
                               "ignore the rest)", name, line);
        if (c == '\n') {
            line++;
            line_start = 1;
            i++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r') {
            i++;
            continue;
        }
        if (c == '#' || (c == '/' && i + 1 < len && t[i + 1] == '/')) {
            while (i < len && t[i] != '\n' && t[i] != '\0')
                i++;
            continue;
        }
        if (c == '/' && i + 1 < len && t[i + 1] == '*') {
            for (i += 2; i < len && !(t[i] == '*' && i + 1 < len && t[i + 1] == '/') && t[i] != '\0'; i++)
                line += t[i] == '\n';
            i += i < len && t[i] == '*' ? 2 : 0;
            continue;
        }
        if (c == '"') {
            for (i++; i < len && t[i] != '"' && t[i] != '\0'; i++) {
                if (t[i] == '\\' && i + 1 < len && t[i + 1] != '\0')
                    i++;
                line += t[i] == '\n';
            }
            i += i < len && t[i] == '"';
            line_start = 0;
            continue;
        }
        if (c == '@' && line_start && len - i >= 8 && !memcmp(t + i, "@include", 8)) {
            ERASE_CHECK(include(t, len, i, name, line, depth, &i));
            line_start = 0;
            continue;
        }
        line_start = 0;
        if (isalpha((unsigned char)c) || c == '*') {
            size_t k = i;
            while (k < len && is_name_char(t[k]))
                k++;
            size_t a = k;
            while (a < len && (t[a] == ' ' || t[a] == '\t' || t[a] == '\r' || t[a] == '\n'))
                a++;
            if (a < len && (t[a] == '=' || t[a] == ':'))
                snprintf(key, sizeof key, "%.*s", (int)(k - i), t + i);
            i = k;
            continue;
        }
        if (isdigit((unsigned char)c) ||
            ((c == '-' || c == '+') && i + 1 < len && isdigit((unsigned char)t[i + 1]))) {
            snprintf(full, sizeof full, "%s%s%s", path, path[0] ? "." : "", key);
            ERASE_CHECK(number(t, len, i, name, line, full, arrays > 0, &i));
            continue;
        }
        if (c == '.' && i + 1 < len && isdigit((unsigned char)t[i + 1])) { /* a float like .5 */
            for (i++; i < len && (isdigit((unsigned char)t[i]) || t[i] == 'e' || t[i] == 'E' ||
                                  ((t[i] == '+' || t[i] == '-') && (t[i - 1] == 'e' || t[i - 1] == 'E')));
                 i++)
                ;
            continue;
        }
        i++;
    }
    return ERASE_OK;
}

erase_status_t erase_config_text_check(const char *text, size_t len, const char *name)
{
    if (!text || !name)
        return ERASE_ERROR(ERASE_ERR_INVALID, "config text check: NULL %s", text ? "name" : "text");
    return check(text, len, name, 0);
}

erase_status_t erase_config_text_check_embedded(const char *text, size_t len, const char *name)
{
    if (!text || !name)
        return ERASE_ERROR(ERASE_ERR_INVALID, "config text check: NULL %s", text ? "name" : "text");
    for (size_t i = 0, line = 1; i + 8 <= len; i++) {
        if (!memcmp(text + i, "@include", 8))
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%zu: @include: includes are not allowed in embedded text (it "
                               "would read a file of its own choosing)", name, line);
        line += text[i] == '\n';
    }
    return check(text, len, name, 0);
}

/* The whole file, NUL-terminated (len excludes the terminator). */
static erase_status_t read_whole(const char *path, const char *what, char **text, size_t *len)
{
    *text = NULL;
    const char *kind = erase_path_not_regular(path); /* fopen would wait on a FIFO */
    if (kind)
        return ERASE_ERROR(ERASE_ERR_IO, "cannot read %s %s: it is %s, expected a regular file", what, path, kind);
    FILE *f = fopen(path, "rb");
    if (!f)
        return ERASE_ERROR(ERASE_ERR_IO, "cannot read %s %s: %s", what, path, strerror(errno));
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    erase_status_t st = ERASE_OK;
    while (buf) {
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (ferror(f)) {
            st = ERASE_ERROR(ERASE_ERR_IO, "cannot read %s %s: %s", what, path, strerror(errno));
            break;
        }
        if (feof(f))
            break;
        if (n == cap - 1) {
            char *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!bigger)
                free(buf);
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "cannot read %s %s: out of memory", what, path);
    if (st != ERASE_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return ERASE_OK;
}

erase_status_t erase_config_file_read(const char *path, const char *what, char **text)
{
    if (!path || !what || !text)
        return ERASE_ERROR(ERASE_ERR_INVALID, "config file read: NULL argument");
    size_t len;
    ERASE_CHECK(read_whole(path, what, text, &len));
    erase_status_t st = check(*text, len, path, 0);
    if (st != ERASE_OK) {
        free(*text);
        *text = NULL;
    }
    return st;
}

/* The optimal string alignment distance of a and b ('-' equal to '_'),
 * or 99 when either is longer than 63 characters. */
static int edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63)
        return 99;
    int d[64][64];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            char x = a[i - 1] == '-' ? '_' : a[i - 1], y = b[j - 1] == '-' ? '_' : b[j - 1];
            int best = d[i - 1][j - 1] + (x != y);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1) { /* a swap of neighbours */
                char x2 = a[i - 2] == '-' ? '_' : a[i - 2], y2 = b[j - 2] == '-' ? '_' : b[j - 2];
                if (x == y2 && x2 == y && d[i - 2][j - 2] + 1 < best)
                    best = d[i - 2][j - 2] + 1;
            }
            d[i][j] = best;
        }
    return d[n][m];
}

void erase_config_suggest(const char *name, const char *const *candidates, int n, char *out, size_t size)
{
    if (size)
        out[0] = '\0';
    int best = 3, at = -1;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(name, candidates[i]);
        if (d < best) {
            best = d;
            at = i;
        }
    }
    if (at >= 0 && 2 * best < (int)strlen(name))
        snprintf(out, size, " (did you mean '%s'?)", candidates[at]);
}
