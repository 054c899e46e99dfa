#include "io/tok_data_tokenizer.h"

#include "io/ctr_index.h"
#include "io/tok_shard.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *erase_tok_tokenizer_name(const char *identity, char *out, size_t size)
{
    if (identity && identity[0])
        snprintf(out, size, "tokenizer %s", identity);
    else
        snprintf(out, size, "tokenizer none (byte-level or imported tokens)");
    return out;
}

void erase_tok_tokenizer_identity_of(const char *file, char hex[17])
{
    hex[0] = '\0';
    if (!file)
        return;
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64, as erase_tokenizer_identity */
    for (const unsigned char *p = (const unsigned char *)file; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    snprintf(hex, 17, "%016" PRIx64, h);
}

void erase_tok_data_tokenizer_free(erase_tok_data_tokenizer_t *t)
{
    if (!t)
        return;
    free(t->path);
    free(t->file);
    memset(t, 0, sizeof *t);
}

erase_status_t erase_tok_data_tokenizer(const char *const *inputs, int n, erase_tok_data_tokenizer_t *out)
{
    memset(out, 0, sizeof *out);
    erase_ctr_list_t list;
    ERASE_CHECK(erase_ctr_list_resolve(inputs, n, &list));
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < list.count && st == ERASE_OK; i++) {
        erase_tok_shard_t *s;
        if ((st = erase_tok_shard_open(list.paths[i], &s)) != ERASE_OK)
            break;
        const char *id = erase_tok_shard_tokenizer(s);
        if (i == 0) {
            memcpy(out->identity, id, strlen(id) + 1);
            if (!(out->path = strdup(list.paths[0])))
                st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", list.paths[0]);
            if (st == ERASE_OK)
                st = erase_tok_shard_tokenizer_file(s, &out->file);
        } else if (strcmp(id, out->identity) != 0) {
            char a[80], b[80];
            st = ERASE_ERROR(ERASE_ERR_FORMAT,
                             "%s: %s, the first shard %s has %s: every shard must have the same (convert all the "
                             "text with one tokenizer)",
                             list.paths[i], erase_tok_tokenizer_name(id, a, sizeof a), out->path,
                             erase_tok_tokenizer_name(out->identity, b, sizeof b));
        }
        erase_tok_shard_close(s);
    }
    erase_ctr_list_free(&list);
    if (st != ERASE_OK)
        erase_tok_data_tokenizer_free(out);
    return st;
}
