/* The split pattern without a regex engine (io/pretokenize.h). */
#include "io/pretokenize.h"

#include <stdio.h>
#include <string.h>

int erase_unicode_class(uint32_t cp)
{
    static const uint32_t spaces[] = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029,
                                      0x202F, 0x205F, 0x3000};
    if (cp < 128) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z')
            return ERASE_UCLASS_LETTER;
        if (cp >= '0' && cp <= '9')
            return ERASE_UCLASS_NUMBER;
        return (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) ? ERASE_UCLASS_SPACE : ERASE_UCLASS_OTHER;
    }
    if (cp >= 0x2000 && cp <= 0x200A)
        return ERASE_UCLASS_SPACE;
    for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
        if (spaces[i] == cp)
            return ERASE_UCLASS_SPACE;
    int lo = 0, hi = erase_unicode_range_count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < erase_unicode_ranges[mid].lo)
            hi = mid - 1;
        else if (cp > erase_unicode_ranges[mid].hi)
            lo = mid + 1;
        else
            return erase_unicode_ranges[mid].uclass;
    }
    return ERASE_UCLASS_OTHER;
}

int erase_split_pattern_digits(const char *pattern)
{
    for (int k = 1; k <= 3; k++) {
        char expected[160];
        snprintf(expected, sizeof expected,
                 "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,%d}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|"
                 "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
                 k);
        if (strcmp(pattern, expected) == 0)
            return k;
    }
    return -1;
}

/* One character at text[pos]: its code point (0x110000 + byte for a byte
 * that is not valid UTF-8), its length and class. */
typedef struct {
    uint32_t cp;
    int len, uclass;
} uchar_t;

static uchar_t char_at(const uint8_t *t, size_t n, size_t pos)
{
    uchar_t c = {0x110000u + t[pos], 1, ERASE_UCLASS_OTHER};
    uint8_t b = t[pos];
    uint32_t cp;
    int len;
    if (b < 0x80) {
        c.cp = b;
        c.uclass = erase_unicode_class(b);
        return c;
    } else if (b >= 0xC2 && b <= 0xDF) {
        cp = b & 0x1F, len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        cp = b & 0x0F, len = 3;
    } else if (b >= 0xF0 && b <= 0xF4) {
        cp = b & 0x07, len = 4;
    } else {
        return c;
    }
    if (pos + (size_t)len > n)
        return c;
    for (int i = 1; i < len; i++) {
        if ((t[pos + i] & 0xC0) != 0x80)
            return c;
        cp = cp << 6 | (t[pos + i] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return c;
    c.cp = cp;
    c.len = len;
    c.uclass = erase_unicode_class(cp);
    return c;
}

static size_t run_of(const uint8_t *t, size_t n, size_t pos, int uclass)
{
    while (pos < n) {
        uchar_t c = char_at(t, n, pos);
        if (c.uclass != uclass)
            break;
        pos += (size_t)c.len;
    }
    return pos;
}

static int is_newline(uint32_t cp)
{
    return cp == '\r' || cp == '\n';
}

/* '(?i:[sdmt]|ll|ve|re) at pos (t[pos] == '\''): the end, or 0. */
static size_t contraction(const uint8_t *t, size_t n, size_t pos)
{
    if (pos + 1 >= n)
        return 0;
    uchar_t c1 = char_at(t, n, pos + 1);
    uint32_t a = c1.cp < 128 ? (c1.cp | 0x20) : c1.cp;
    if (a == 's' || a == 'd' || a == 'm' || a == 't' || c1.cp == 0x17F)
        return pos + 1 + (size_t)c1.len;
    if (pos + 2 >= n || (a != 'l' && a != 'v' && a != 'r'))
        return 0;
    uint32_t b = t[pos + 2] | 0x20;
    if ((a == 'l' && b == 'l') || ((a == 'v' || a == 'r') && b == 'e'))
        return pos + 3;
    return 0;
}

size_t erase_pretokenize_next(const uint8_t *t, size_t n, size_t pos, int digits)
{
    uchar_t c0 = char_at(t, n, pos);
    size_t next = pos + (size_t)c0.len;
    if (c0.cp == '\'') {
        size_t end = contraction(t, n, pos);
        if (end)
            return end;
    }
    /* [^\r\n\p{L}\p{N}]?+\p{L}+ */
    if (c0.uclass == ERASE_UCLASS_LETTER)
        return run_of(t, n, next, ERASE_UCLASS_LETTER);
    if (c0.uclass != ERASE_UCLASS_NUMBER && !is_newline(c0.cp) && next < n &&
        char_at(t, n, next).uclass == ERASE_UCLASS_LETTER)
        return run_of(t, n, next, ERASE_UCLASS_LETTER);
    /* \p{N}{1,K} */
    if (c0.uclass == ERASE_UCLASS_NUMBER) {
        size_t end = next;
        for (int k = 1; k < digits && end < n; k++) {
            uchar_t c = char_at(t, n, end);
            if (c.uclass != ERASE_UCLASS_NUMBER)
                break;
            end += (size_t)c.len;
        }
        return end;
    }
    /*  ?[^\s\p{L}\p{N}]++[\r\n]* */
    size_t others = c0.uclass == ERASE_UCLASS_OTHER ? pos
                    : (c0.cp == ' ' && next < n && char_at(t, n, next).uclass == ERASE_UCLASS_OTHER) ? next
                                                                                                    : SIZE_MAX;
    if (others != SIZE_MAX) {
        size_t end = run_of(t, n, others, ERASE_UCLASS_OTHER);
        while (end < n && (t[end] == '\r' || t[end] == '\n'))
            end++;
        return end;
    }
    /* c0 is white space: \s*[\r\n] | \s+(?!\S) | \s+ */
    size_t end = pos, last_newline_end = 0, last_start = pos;
    while (end < n) {
        uchar_t c = char_at(t, n, end);
        if (c.uclass != ERASE_UCLASS_SPACE)
            break;
        last_start = end;
        end += (size_t)c.len;
        if (is_newline(c.cp))
            last_newline_end = end;
    }
    if (last_newline_end)
        return last_newline_end;
    if (end == n || last_start == pos)
        return end;
    return last_start;
}

size_t erase_pretokenize_safe_cut(const uint8_t *t, size_t n, size_t from)
{
    for (size_t i = from ? from : 1; i < n; i++)
        if (t[i - 1] == '\n' && ((t[i] | 0x20) >= 'a' && (t[i] | 0x20) <= 'z'))
            return i;
    return n;
}
