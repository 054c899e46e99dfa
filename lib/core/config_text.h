/*
 * Checks of libconfig text (model files, run files) for what libconfig 1.5
 * reads wrongly without a word, made before libconfig sees the text:
 *
 *   - a NUL byte: libconfig stops there and takes the rest of the file as
 *     absent ("FILE:LINE: a NUL byte: the file is not text");
 *   - a plain integer beyond 32 bits, decimal or hex: libconfig wraps it
 *     (4294967303 reads as 7); 64-bit values need the L suffix
 *     ("FILE:LINE: KEY: 4294967303 does not fit 32 bits; write
 *     4294967303L for a 64-bit integer"), and an L integer must fit 64 bits;
 *   - @include of a directory (libconfig: "input in flex scanner failed")
 *     or of a file that cannot be read ("FILE:LINE: @include "X": is a
 *     directory"). Included files are checked the same way, each under its
 *     own name. The path is taken as written, as libconfig does without an
 *     include directory (relative to the current directory).
 *
 * Strings and comments (#, //, slash-star) are skipped.
 */
#ifndef ERASE_CORE_CONFIG_TEXT_H
#define ERASE_CORE_CONFIG_TEXT_H

#include <stddef.h>

#include "lib/core/status.h"

/*
 * Check `len` bytes of libconfig text read from `name` (a file name, or
 * "<string>"; messages start "name:line: "). Returns ERASE_OK or
 * ERASE_ERR_FORMAT (one of the cases above), ERASE_ERR_IO (an included file
 * that cannot be read, with why), ERASE_ERR_NOMEM.
 */
erase_status_t erase_config_text_check(const char *text, size_t len, const char *name);

/*
 * The same for text embedded in a file (a checkpoint's model text), which
 * reads no other file: "@include" anywhere in it (strings and comments
 * too: nothing is left to how libconfig scans it) is refused before any
 * file is touched, "D/ckpt-4.h5:3: @include: includes are not allowed in
 * embedded text (it would read a file of its own choosing)". Errors:
 * ERASE_ERR_FORMAT, ERASE_ERR_NOMEM.
 */
erase_status_t erase_config_text_check_embedded(const char *text, size_t len, const char *name);

/*
 * Read the libconfig file `path` whole into *text (malloc'ed, NUL-terminated;
 * the caller frees it) and check it with erase_config_text_check. `what`
 * names the file in read errors ("model file": "cannot read model file
 * PATH: why"; a FIFO, a device or a directory is refused before it is
 * opened: "cannot read model file PATH: it is a FIFO, expected a regular
 * file"). Errors: ERASE_ERR_IO, ERASE_ERR_FORMAT, ERASE_ERR_NOMEM; *text is
 * NULL then.
 */
erase_status_t erase_config_file_read(const char *path, const char *what, char **text);

/*
 * For a misspelt key or option `name`: the one of the n `candidates`
 * nearest to it by edit distance (insertions, deletions, substitutions and
 * swaps of two neighbours, each 1: the optimal string alignment distance),
 * written as " (did you mean 'NEAREST'?)" into out (size bytes), when that
 * distance is at most 2 and below half of name's length; else "". '-' and
 * '_' count as the same (run-file keys are options' names with '_').
 */
void erase_config_suggest(const char *name, const char *const *candidates, int n, char *out, size_t size);

#endif
