#include "apps/cli_args.h"

#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static int unknown_option(const char *tool, const char *arg)
{
    int name = (int)strcspn(arg, "="); /* --x=V: the option is --x */
    fprintf(stderr, "%s: unknown option %.*s (%s --help lists them)\n", tool, name, arg, tool);
    return 2;
}

int cli_option_error(const char *tool, int c, char *const *argv, const struct option *opts)
{
    /* the argument getopt_long stopped at: optind has passed it (glibc),
     * but not when a short option inside a group failed (-qx) */
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    int is_long = !strncmp(arg, "--", 2), name = (int)strcspn(arg, "=");
    if (c == ':') {
        if (is_long)
            fprintf(stderr, "%s: option %s needs a value\n", tool, arg);
        else
            fprintf(stderr, "%s: option -%c needs a value\n", tool, optopt);
        return 2;
    }
    if (is_long && arg[name] == '=') /* --force=1: a known option that takes no value? */
        for (int i = 0; opts[i].name; i++)
            if ((int)strlen(opts[i].name) >= name - 2 && !strncmp(opts[i].name, arg + 2, (size_t)(name - 2)) &&
                opts[i].has_arg == no_argument) {
                fprintf(stderr, "%s: option %.*s takes no value, got %s\n", tool, name, arg, arg);
                return 2;
            }
    if (is_long)
        return unknown_option(tool, arg);
    char shortopt[3] = { '-', (char)optopt, '\0' };
    return unknown_option(tool, optopt ? shortopt : arg);
}

int cli_leftover_error(const char *tool, const char *arg, int last, const char *const *valued)
{
    for (int i = 0; valued && valued[i]; i++)
        if (last && !strcmp(arg, valued[i])) {
            fprintf(stderr, "%s: option %s needs a value\n", tool, arg);
            return 2;
        }
    if (arg[0] == '-' && arg[1])
        return unknown_option(tool, arg);
    return cli_unexpected(tool, arg);
}

int cli_unexpected(const char *tool, const char *arg)
{
    fprintf(stderr, "%s: unexpected argument '%s'\n", tool, arg);
    return 2;
}

int cli_missing(const char *tool, const char *what, int got, const char *synopsis)
{
    char count[32];
    if (got > 1)
        snprintf(count, sizeof count, "%d arguments", got);
    else
        snprintf(count, sizeof count, "%s", got ? "one argument" : "none");
    fprintf(stderr, "%s: expected %s, got %s: %s (--help lists the options)\n", tool, what, count, synopsis);
    return 2;
}

int cli_version(const char *tool)
{
    printf("%s (%s) %s\n", tool, PACKAGE_NAME, PACKAGE_VERSION);
    return 0;
}
