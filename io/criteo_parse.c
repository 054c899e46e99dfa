#include "io/criteo_parse.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define SHOW_MAX 40 /* bytes of a bad value shown in a message */

static const char *const bad_names[ERASE_CRITEO_BAD_KINDS] = {
    "ok", "wrong field count", "bad label", "bad integer", "bad hex id", "out of range", "bad id list",
};

const char *erase_criteo_bad_name(erase_criteo_bad_t why)
{
    return (unsigned)why < ERASE_CRITEO_BAD_KINDS ? bad_names[why] : "unknown";
}

/* Hex digit value + 1 of a byte; 0 for a byte that is not a hex digit. */
static const unsigned char hex_plus1[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* 8 hex digits at p (8 readable bytes) into *id: 1, or 0 when a byte is not
 * a hex digit. The eight lookups are independent (no loop, no branch per
 * byte): a non-digit's entry minus 1 wraps to UINT_MAX, so the OR of all
 * eight is below 16 exactly when every byte is a digit. */
static int hex8(const char *p, uint32_t *id)
{
    const unsigned char *u = (const unsigned char *)p;
    unsigned d0 = hex_plus1[u[0]] - 1u, d1 = hex_plus1[u[1]] - 1u, d2 = hex_plus1[u[2]] - 1u,
             d3 = hex_plus1[u[3]] - 1u, d4 = hex_plus1[u[4]] - 1u, d5 = hex_plus1[u[5]] - 1u,
             d6 = hex_plus1[u[6]] - 1u, d7 = hex_plus1[u[7]] - 1u;
    if ((d0 | d1 | d2 | d3 | d4 | d5 | d6 | d7) > 15u)
        return 0;
    *id = d0 << 28 | d1 << 24 | d2 << 20 | d3 << 16 | d4 << 12 | d5 << 8 | d6 << 4 | d7;
    return 1;
}

/* A value for a message: at most SHOW_MAX bytes, '?' for unprintable bytes. */
static void show_value(char *out, size_t size, const char *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && i < SHOW_MAX && k + 1 < size; i++, k++)
        out[k] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
    if (n > SHOW_MAX)
        for (int i = 0; i < 3 && k + 1 < size; i++)
            out[k++] = '.';
    out[k] = '\0';
}

static void field_name(char *out, size_t size, int f)
{
    if (f == 0)
        snprintf(out, size, "label");
    else if (f <= ERASE_CTR_SHARD_DENSE)
        snprintf(out, size, "I%d", f);
    else
        snprintf(out, size, "C%d", f - ERASE_CTR_SHARD_DENSE);
}

/* Message "field X: <what>, got '<value>'". */
static erase_criteo_bad_t bad_field(erase_criteo_bad_t kind, char *why, size_t size, int f, const char *what,
                                    const char *v, size_t n)
{
    if (why && size) {
        char name[16], shown[SHOW_MAX + 8];
        field_name(name, sizeof name, f);
        show_value(shown, sizeof shown, v, n);
        snprintf(why, size, "field %s: %s, got '%s'", name, what, shown);
    }
    return kind;
}

/* Decimal integer with an optional '-' and an optional ".0..." tail.
 * Returns 0 (value in *out), 1 (not an integer), 2 (outside int32). */
static int parse_int(const char *p, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (p[0] == '-') {
        neg = 1;
        i = 1;
    }
    size_t digits_start = i;
    int64_t v = 0;
    int big = 0;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
        if (v < 100000000000LL)
            v = v * 10 + (p[i] - '0');
        else
            big = 1;
    }
    if (i == digits_start)
        return 1;
    if (i < n) {
        if (p[i] != '.' || i + 1 == n)
            return 1;
        for (i++; i < n; i++)
            if (p[i] != '0')
                return 1;
    }
    if (neg)
        v = -v;
    if (big || v > 2147483647LL || v < -2147483648LL)
        return 2;
    *out = v;
    return 0;
}

/* 1..8 hex digits. Returns 0 (value in *out), 1 (a byte that is not a hex
 * digit), 2 (more than 8 digits). */
static int parse_hex(const char *p, size_t n, uint32_t *out)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = hex_plus1[(unsigned char)p[i]];
        if (d == 0)
            return 1;
        v = (v << 4) | (d - 1);
    }
    if (n > 8)
        return 2;
    *out = v;
    return 0;
}

/* One id of field f (n >= 1 bytes at s) into *id; a bad id makes the line bad. */
static erase_criteo_bad_t parse_id(const char *s, size_t n, int f, uint32_t *id, int *remapped, char *why,
                                   size_t why_size)
{
    int rc = parse_hex(s, n, id);
    if (rc == 1)
        return bad_field(ERASE_CRITEO_BAD_HEX, why, why_size, f, "expected a hexadecimal id of up to 8 digits", s, n);
    if (rc == 2)
        return bad_field(ERASE_CRITEO_BAD_RANGE, why, why_size, f, "value out of range (more than 32 bits)", s, n);
    if (*id == ERASE_CTR_SPARSE_MISSING) {
        *id = ERASE_CTR_SPARSE_FFFFFFFF;
        (*remapped)++;
    }
    return ERASE_CRITEO_OK;
}

/* The ids of categorical field f (n bytes at s, a list when ids != NULL)
 * into row->sparse[k] (the first), ids[row->nids ..] and row->lengths[k]. */
static erase_criteo_bad_t parse_ids(const char *s, size_t n, int f, int k, erase_criteo_row_t *row, uint32_t *ids,
                                    size_t ids_cap, char *why, size_t why_size)
{
    if (n == 0) {
        row->sparse[k] = ERASE_CTR_SPARSE_MISSING;
        row->lengths[k] = 1;
        if (ids) {
            if (row->nids == ids_cap)
                goto too_many;
            ids[row->nids++] = ERASE_CTR_SPARSE_MISSING;
        }
        return ERASE_CRITEO_OK;
    }
    const char *end = s + n, *p = s;
    uint32_t count = 0;
    for (;;) {
        const char *q = memchr(p, ',', (size_t)(end - p));
        if (q && !ids)
            return bad_field(ERASE_CRITEO_BAD_LIST, why, why_size, f, "expected one hexadecimal id, not a list", s, n);
        const char *e = q ? q : end;
        if (e == p)
            return bad_field(ERASE_CRITEO_BAD_LIST, why, why_size, f,
                             "expected hexadecimal ids separated by single commas (an id is empty)", s, n);
        uint32_t id = 0;
        erase_criteo_bad_t bad = parse_id(p, (size_t)(e - p), f, &id, &row->remapped, why, why_size);
        if (bad != ERASE_CRITEO_OK)
            return bad;
        if (count++ == 0)
            row->sparse[k] = id;
        if (ids) {
            if (row->nids == ids_cap)
                goto too_many;
            ids[row->nids++] = id;
        }
        if (!q)
            break;
        p = q + 1;
    }
    row->lengths[k] = count;
    row->multi |= count > 1;
    return ERASE_CRITEO_OK;
too_many:
    if (why && why_size)
        snprintf(why, why_size, "more than %zu ids in the line", ids_cap);
    return ERASE_CRITEO_BAD_LIST;
}

/*
 * The common line in one pass: label "0" or "1", counts of an optional '-'
 * and at most 10 digits, ids of 1 to 8 hex digits, exactly 40 fields.
 * Returns 1 with `row` filled (one id a feature: lengths 1, nids 0, multi
 * 0), or 0 for anything else (".0" tails, values out of range, bad fields,
 * lists of ids, another field count), which the careful path below parses
 * or names; both give the same row for a line this accepts.
 * (It reads each byte once; the careful path finds the 40 separators with
 * memchr first, then parses each field: 2x fewer passes over the line.)
 */
static int parse_common(const char *p, const char *end, char sep, erase_criteo_row_t *row)
{
    if (end - p < 2 || (p[0] != '0' && p[0] != '1') || p[1] != sep)
        return 0;
    row->label = (uint8_t)(p[0] - '0');
    p += 2;
    for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++) {
        if (p < end && *p == sep) {
            row->dense[j] = NAN;
            p++;
            continue;
        }
        int neg = p < end && *p == '-';
        p += neg;
        const char *digits = p;
        int64_t v = 0;
        while (p < end && (unsigned)(*p - '0') < 10 && p - digits < 10)
            v = v * 10 + (*p++ - '0');
        if (p == digits || p >= end || *p != sep) /* also an 11th digit, a '.', the line's end */
            return 0;
        v = neg ? -v : v;
        if (v > 2147483647LL || v < -2147483648LL)
            return 0;
        row->dense[j] = (float)v;
        p++;
    }
    row->remapped = 0;
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        const char *field_end = k + 1 < ERASE_CTR_SHARD_FIELDS ? end : NULL; /* the last field ends the line */
        if (p == end || *p == sep) {
            if (field_end ? p == end : p != end) /* a missing separator; more fields than 40 */
                return 0;
            row->sparse[k] = ERASE_CTR_SPARSE_MISSING;
            row->lengths[k] = 1;
            p += field_end != NULL;
            continue;
        }
        const char *digits = p;
        uint32_t id = 0;
        unsigned d;
        if (end - p >= 8 && hex8(p, &id)) /* Criteo's ids: 8 digits (a printed 32-bit hash) */
            p += 8;
        else
            while (p < end && (d = hex_plus1[(unsigned char)*p]) != 0 && p - digits < 8) {
                id = (id << 4) | (d - 1);
                p++;
            }
        if (field_end ? (p == end || *p != sep) : p != end)
            return 0;
        if (id == ERASE_CTR_SPARSE_MISSING) {
            id = ERASE_CTR_SPARSE_FFFFFFFF;
            row->remapped++;
        }
        row->sparse[k] = id;
        row->lengths[k] = 1;
        p += field_end != NULL;
    }
    row->nids = 0;
    row->multi = 0;
    return 1;
}

erase_criteo_bad_t erase_criteo_parse_line_ids(const char *line, size_t len, char sep, erase_criteo_row_t *row,
                                               uint32_t *ids, size_t ids_cap, char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (len && line[len - 1] == '\r')
        len--;
    if ((!ids || ids_cap >= ERASE_CTR_SHARD_FIELDS) && parse_common(line, line + len, sep, row)) {
        if (ids) /* the one id of each feature */
            for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
                ids[row->nids++] = row->sparse[k];
        return ERASE_CRITEO_OK;
    }
    const char *start[ERASE_CRITEO_FIELDS + 1];
    const char *p = line, *end = line + len;
    int fields = 0;
    for (;;) {
        const char *q = memchr(p, sep, (size_t)(end - p));
        if (fields < ERASE_CRITEO_FIELDS)
            start[fields] = p;
        fields++;
        if (!q)
            break;
        p = q + 1;
    }
    if (fields != ERASE_CRITEO_FIELDS) {
        if (why && why_size)
            snprintf(why, why_size, "expected %d %s fields (label, I1-I13, C1-C26), got %d", ERASE_CRITEO_FIELDS,
                     sep == '\t' ? "tab-separated" : "comma-separated", fields);
        return ERASE_CRITEO_BAD_FIELDS;
    }
    start[ERASE_CRITEO_FIELDS] = end + 1;

    /* label */
    size_t n = (size_t)(start[1] - start[0] - 1);
    int64_t v = -1;
    if (n == 0 || parse_int(start[0], n, &v) != 0 || (v != 0 && v != 1))
        return bad_field(ERASE_CRITEO_BAD_LABEL, why, why_size, 0, "expected 0 or 1", start[0], n);
    row->label = (uint8_t)v;

    for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++) {
        int f = 1 + j;
        const char *s = start[f];
        n = (size_t)(start[f + 1] - s - 1);
        if (n == 0) {
            row->dense[j] = NAN;
            continue;
        }
        int rc = parse_int(s, n, &v);
        if (rc == 1)
            return bad_field(ERASE_CRITEO_BAD_INTEGER, why, why_size, f, "expected an integer", s, n);
        if (rc == 2)
            return bad_field(ERASE_CRITEO_BAD_RANGE, why, why_size, f,
                             "value out of range -2147483648..2147483647", s, n);
        row->dense[j] = (float)v;
    }
    row->remapped = 0;
    row->nids = 0;
    row->multi = 0;
    /* a list only in tab-separated lines: in CSV a ',' ends the field */
    uint32_t *list = sep == ',' ? NULL : ids;
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        int f = 1 + ERASE_CTR_SHARD_DENSE + k;
        erase_criteo_bad_t bad = parse_ids(start[f], (size_t)(start[f + 1] - start[f] - 1), f, k, row, list,
                                           ids_cap, why, why_size);
        if (bad != ERASE_CRITEO_OK)
            return bad;
    }
    if (ids && !list) /* CSV: the one id of each feature */
        for (int k = 0; k < ERASE_CTR_SHARD_FIELDS && row->nids < ids_cap; k++)
            ids[row->nids++] = row->sparse[k];
    return ERASE_CRITEO_OK;
}

erase_criteo_bad_t erase_criteo_parse_line(const char *line, size_t len, char sep, erase_criteo_row_t *row,
                                           char *why, size_t why_size)
{
    return erase_criteo_parse_line_ids(line, len, sep, row, NULL, 0, why, why_size);
}

int erase_criteo_check_header(const char *line, size_t len, char *why, size_t why_size)
{
    char want[256];
    size_t k = (size_t)snprintf(want, sizeof want, "label");
    for (int j = 1; j <= ERASE_CTR_SHARD_DENSE; j++)
        k += (size_t)snprintf(want + k, sizeof want - k, ",I%d", j);
    for (int j = 1; j <= ERASE_CTR_SHARD_FIELDS; j++)
        k += (size_t)snprintf(want + k, sizeof want - k, ",C%d", j);
    if (len && line[len - 1] == '\r')
        len--;
    if (len == k && strncasecmp(line, want, k) == 0) /* "Label,I1,...,C26" too */
        return 0;
    if (why && why_size) {
        char shown[SHOW_MAX + 8];
        show_value(shown, sizeof shown, line, len);
        snprintf(why, why_size, "expected the header label,I1..I13,C1..C26, got '%s'", shown);
    }
    return -1;
}
