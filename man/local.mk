# man/: the programs' manual pages (issue 37), made by help2man from each
# program's --help and --version (one source of truth: the option tables
# the programs print) through man/help-for-man, with man/PROGRAM.h2m (NAME,
# EXIT STATUS, EXAMPLES, FILES, SEE ALSO) and man/common.h2m (the library's
# ENVIRONMENT; SEE ALSO: docs/).
# A new program: add man/PROGRAM.1 here and write man/PROGRAM.h2m; the
# program must print "PROGRAM (erase) VERSION" for --version (cli_version).
ERASE_MAN_PAGES = man/erase-train.1 man/erase-convert.1 man/erase-inspect.1 man/erase-score.1 \
	man/erase-sample.1 man/erase-bench.1 man/erase-tokenizer.1 man/erase-export.1
nodist_man_MANS = $(ERASE_MAN_PAGES)
EXTRA_DIST += man/help-for-man man/common.h2m $(ERASE_MAN_PAGES:.1=.h2m)
CLEANFILES += $(ERASE_MAN_PAGES)
# help2man's date ("December 2026") as ISO 8601, which mandoc -Tlint takes
$(ERASE_MAN_PAGES): $(bin_PROGRAMS) man/help-for-man man/common.h2m $(ERASE_MAN_PAGES:.1=.h2m)
	$(AM_V_GEN)$(MKDIR_P) man && name=`basename $@ .1` && \
	$(HELP2MAN) --no-info --section=1 --source=erase --manual='erase manual' \
		--include=$(srcdir)/man/$$name.h2m --include=$(srcdir)/man/common.h2m \
		--output=$@.tmp "$(SHELL) $(srcdir)/man/help-for-man apps/$$name$(EXEEXT)" && \
	$(SED) -e '1,/^\.TH/s/^\(\.TH [^"]*"[^"]*"\) "[^"]*"/\1 "'`date -u +%Y-%m-%d`'"/' $@.tmp >$@ && rm -f $@.tmp
