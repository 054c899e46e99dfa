/*
 * Parsing one line of Criteo click data (Display Advertising Challenge
 * layout) into a CTR row.
 *
 * A line holds 40 fields: the label (0 or 1), the 13 integer count
 * features I1..I13 and the 26 categorical features C1..C26, each a
 * hexadecimal 32-bit hash. An empty field is a missing value. Two layouts:
 *   - raw (TSV): fields separated by tabs, no header (Kaggle train.txt);
 *   - CSV: fields separated by commas, first line the header
 *     "label,I1,...,I13,C1,...,C26" (DeepCTR's criteo_sample.txt).
 * A trailing carriage return (CRLF files) is ignored; fields are not
 * trimmed and CSV quoting is not supported.
 *
 * Accepted values:
 *   label  "0" or "1" (also "0.0", "1.0");
 *   I<k>   an optional '-', decimal digits, optionally followed by '.' and
 *          zeros ("260.0", as CSV exporters write integer columns); the
 *          value must fit in int32 (-2147483648..2147483647). It is stored
 *          as float32: exact up to 2^24 = 16,777,216 (Criteo's largest
 *          count is 1,618,112), larger counts are rounded to 24 bits;
 *   C<k>   1 to 8 hex digits, either case. The id 0xFFFFFFFF is reserved
 *          for "missing" (ERASE_CTR_SPARSE_MISSING), so a real token
 *          "ffffffff" is stored as 0xFFFFFFFE; it then shares an embedding
 *          row with the token "fffffffe", one more hash collision among
 *          the many that hashing ids modulo the table size already makes.
 *
 * Messages of a bad line (the converter prefixes them with "FILE:LINE: "):
 *   "expected 40 tab-separated fields (label, I1-I13, C1-C26), got 39"
 *   "field label: expected 0 or 1, got '2'"
 *   "field I3: expected an integer, got '12x'"
 *   "field C5: expected a hexadecimal id of up to 8 digits, got 'zz12'"
 *   "field I5: value out of range -2147483648..2147483647, got '99999999999'"
 *   "field C2: value out of range (more than 32 bits), got '123456789'"
 * Multi-hot (TSV only): a categorical field may hold a list of ids
 * separated by ',' ("1a2b,3c4d,5e6f"), each as above; an empty field is
 * missing (one id 0xFFFFFFFF), an empty element ("a,,b", "a,", ",a") makes
 * the line bad:
 *   "field C5: expected hexadecimal ids separated by single commas (an id is empty), got 'a,,b'"
 *   "field C5: expected one hexadecimal id, not a list, got 'a,b'" (erase_criteo_parse_line,
 *                                                                  which takes one id per field)
 * A value longer than 40 bytes is shown as its first 40 bytes and "...",
 * and bytes outside printable ASCII as '?'.
 */
#ifndef ERASE_IO_CRITEO_PARSE_H
#define ERASE_IO_CRITEO_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "io/ctr_shard.h"

#define ERASE_CRITEO_FIELDS (1 + ERASE_CTR_SHARD_DENSE + ERASE_CTR_SHARD_FIELDS) /* 40 */

/* Layout of an input file. */
typedef enum {
    ERASE_CRITEO_AUTO = 0, /* CSV if the first line starts with "label" (any case), else TSV */
    ERASE_CRITEO_TSV,      /* raw: tab-separated, no header */
    ERASE_CRITEO_CSV       /* comma-separated with the header line */
} erase_criteo_format_t;

/* Why a line was rejected (ERASE_CRITEO_OK: it was not). */
typedef enum {
    ERASE_CRITEO_OK = 0,
    ERASE_CRITEO_BAD_FIELDS,  /* not 40 fields */
    ERASE_CRITEO_BAD_LABEL,   /* label not 0 or 1 */
    ERASE_CRITEO_BAD_INTEGER, /* a count feature that is not an integer */
    ERASE_CRITEO_BAD_HEX,     /* a categorical feature that is not hexadecimal */
    ERASE_CRITEO_BAD_RANGE,   /* a count outside int32 or an id wider than 32 bits */
    ERASE_CRITEO_BAD_LIST,    /* an empty element in a list of ids (or a list where one id is expected) */
    ERASE_CRITEO_BAD_KINDS    /* number of the values above */
} erase_criteo_bad_t;

/* One parsed row, in the shard layout (io/ctr_shard.h). */
typedef struct {
    uint8_t label;                      /* 0 or 1 */
    float dense[ERASE_CTR_SHARD_DENSE];       /* raw counts; NaN = missing */
    uint32_t sparse[ERASE_CTR_SHARD_FIELDS];  /* ids; ERASE_CTR_SPARSE_MISSING = missing */
    int remapped;                       /* tokens ffffffff that became fffffffe */
    /* erase_criteo_parse_line_ids only: */
    uint32_t lengths[ERASE_CTR_SHARD_FIELDS]; /* ids of each feature (>= 1: missing is one id) */
    size_t nids;                        /* ids written to the caller's array, feature by feature */
    int multi;                          /* 1 if some feature has more than one id */
} erase_criteo_row_t;

/* Short name of a reason, for summaries: "wrong field count", "bad label",
 * "bad integer", "bad hex id", "out of range"; "ok" for ERASE_CRITEO_OK. */
const char *erase_criteo_bad_name(erase_criteo_bad_t why);

/*
 * Parse one line (`len` bytes, without its '\n'; need not be NUL-terminated)
 * separated by `sep` ('\t' or ','). On success fills `row` and returns
 * ERASE_CRITEO_OK. On a bad line returns the reason and writes the message
 * (as listed above, without file and line) into `why` (`why_size` bytes,
 * NUL-terminated; may be NULL); `row` is then unspecified. The field count
 * is checked first, then the fields from left to right: the message names
 * the first bad field.
 */
erase_criteo_bad_t erase_criteo_parse_line(const char *line, size_t len, char sep,
                                           erase_criteo_row_t *row, char *why, size_t why_size);

/*
 * erase_criteo_parse_line for multi-hot lines: every id of the line,
 * feature by feature (C1's, then C2's, ...; the missing id for an empty
 * field), goes to ids[0 .. row->nids), the count of each feature to
 * row->lengths, the first id of each to row->sparse, and row->multi says
 * whether some feature had more than one. `ids_cap` ids fit in `ids`; a
 * line of `len` bytes has at most len / 2 + 26 ids (ERASE_CRITEO_IDS_MAX). A
 * line with more than ids_cap ids is bad (ERASE_CRITEO_BAD_LIST, "more
 * than N ids in the line").
 */
#define ERASE_CRITEO_IDS_MAX(len) ((len) / 2 + ERASE_CTR_SHARD_FIELDS)
erase_criteo_bad_t erase_criteo_parse_line_ids(const char *line, size_t len, char sep, erase_criteo_row_t *row,
                                               uint32_t *ids, size_t ids_cap, char *why, size_t why_size);

/*
 * Check a CSV header line (`len` bytes without '\n'; a trailing '\r' is
 * ignored): it must be "label,I1,...,I13,C1,...,C26", letters in any case
 * ("Label,I1,..." as some exports write it). Returns 0,
 * or -1 with `why` = "expected the header label,I1..I13,C1..C26, got 'x,y'"
 * (the value shown as in the messages above).
 */
int erase_criteo_check_header(const char *line, size_t len, char *why, size_t why_size);

#endif
