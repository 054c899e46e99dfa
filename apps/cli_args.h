/*
 * apps: the one-line usage errors of the tools' option parsers (erase-
 * convert, erase-inspect, erase-score, erase-sample, erase-bench): each
 * names the argument at fault and says which of the three it is, an
 * unknown option, an option missing its value (or given one it does not
 * take), or an argument the command does not take. Each prints one line,
 * "TOOL: ..." on stderr, and returns 2 (the usage status).
 */
#ifndef ERASE_APPS_CLI_ARGS_H
#define ERASE_APPS_CLI_ARGS_H

#include <getopt.h>

/*
 * After getopt_long returned `c` ('?' or ':'), in a loop whose optstring
 * starts with ':' (getopt prints nothing then; ':' is a missing value) over
 * `argv` and the long options `opts`: "TOOL: unknown option --x (TOOL
 * --help lists them)", "TOOL: option --x needs a value" or "TOOL: option
 * --x takes no value, got --x=V". Returns 2.
 */
int cli_option_error(const char *tool, int c, char *const *argv, const struct option *opts);

/*
 * An argument a hand-rolled parser did not take: `arg`, with no argument
 * after it when `last`; `valued` lists the options that take a value
 * (NULL-terminated). "TOOL: option --x needs a value" (a valued option,
 * last), "TOOL: unknown option --x (TOOL --help lists them)" (starts with
 * '-') or "TOOL: unexpected argument 'x'". Returns 2.
 */
int cli_leftover_error(const char *tool, const char *arg, int last, const char *const *valued);

/* "TOOL: unexpected argument 'ARG'". Returns 2. */
int cli_unexpected(const char *tool, const char *arg);

/* Too few arguments (`got` of them): "TOOL: expected WHAT, got none|one
 * argument|N arguments: SYNOPSIS (--help lists the options)". Returns 2. */
int cli_missing(const char *tool, const char *what, int got, const char *synopsis);

/* --version: "TOOL (erase) VERSION" on stdout (the line help2man reads for
 * the man pages, man/local.mk). Returns 0. */
int cli_version(const char *tool);

#endif
