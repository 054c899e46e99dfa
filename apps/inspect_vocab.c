#include "apps/inspect_vocab.h"

#include "io/vocab.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int inspect_vocab_file(const char *cmd, const char *path)
{
    erase_vocab_t v;
    if (erase_vocab_read(path, &v) != ERASE_OK) {
        fprintf(stderr, "erase-inspect %s: error: %s\n", cmd, erase_error_reason());
        return 1;
    }
    erase_vocab_print(&v, path, stdout);
    erase_vocab_free(&v);
    return 0;
}

int inspect_vocab_main(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fprintf(argc == 2 ? stdout : stderr, "usage: erase-inspect vocab VOCAB.h5\n"
                                             "  A vocabulary of erase-convert vocab: digest, threshold, counted "
                                             "files, and per\n"
                                             "  feature the ids counted, distinct ids, frequent ids, table rows "
                                             "and coverage.\n");
        return argc == 2 ? 0 : 2;
    }
    return inspect_vocab_file("vocab", argv[1]);
}

int inspect_vocab_dataset(const erase_ctr_list_t *list, const erase_ctr_stats_t *all)
{
    erase_vocab_tag_t tag;
    if (erase_vocab_tag_dataset((const char *const *)list->paths, list->count, &tag) != ERASE_OK) {
        fprintf(stderr, "erase-inspect data: error: %s\n", erase_error_reason());
        return 1;
    }
    if (!tag.present)
        return 0;
    printf("\nvocabulary %s (threshold %" PRId64 "): table rows = frequent ids + 1; coverage = ids not in the "
           "rare row\n",
           tag.digest, tag.threshold);
    printf("%-8s %12s %9s\n", "feature", "table rows", "coverage");
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++) {
        char name[8];
        snprintf(name, sizeof name, "C%d", f + 1);
        int64_t ids = all->sparse_ids[f];
        double rare = ids ? (double)all->sparse_missing[f] / (double)ids : 0.0;
        printf("%-8s %12" PRId64 " %8.2f%%\n", name, tag.table_rows[f], 100.0 * (1.0 - rare));
    }
    return 0;
}
