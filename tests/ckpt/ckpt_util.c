#include "tests/ckpt/ckpt_util.h"

#include <stdio.h>
#include <string.h>

#include "io/checkpoint.h"
#include "io/h5_util.h"

/* The field of m that attribute a is, set to a's value; -1 if there is none. */
static int set_field(erase_ckpt_meta_t *m, const ckpt_attr_t *a)
{
    int optim = !strcmp(a->object, "/optim");
    if (optim && !strcmp(a->attr, "lr")) m->clock_lr = a->lr;
    else if (optim && !strcmp(a->attr, "step")) m->clock_step = a->v;
    else if (optim) return -1;
    else if (!strcmp(a->attr, "step")) m->step = a->v;
    else if (!strcmp(a->attr, "samples_seen")) m->samples_seen = a->v;
    else if (!strcmp(a->attr, "epoch")) m->epoch = a->v;
    else if (!strcmp(a->attr, "global_batch")) m->global_batch = a->v;
    else if (!strcmp(a->attr, "world_size")) m->world_size = (int)a->v;
    else if (!strcmp(a->attr, "dp_size")) m->dp_size = (int)a->v;
    else if (!strcmp(a->attr, "pp_size")) m->pp_size = (int)a->v;
    else if (!strcmp(a->attr, "model") && a->text) m->model = a->text;
    else if (!strcmp(a->attr, "options") && a->text) m->options = a->text;
    else if (!strcmp(a->attr, "data_vocab")) m->data_vocab = a->remove ? NULL : a->text;
    else return -1;
    return 0;
}

int ckpt_set_attrs(const char *path, const ckpt_attr_t *attrs, int n, int fix, char *why, size_t size)
{
    uint64_t sum = 0;
    if (fix) {
        erase_ckpt_t *ck;
        if (erase_ckpt_open(path, &ck) != ERASE_OK) {
            snprintf(why, size, "%s", erase_error_message());
            return -1;
        }
        erase_ckpt_meta_t m = *erase_ckpt_meta(ck);
        int rc = 0;
        for (int i = 0; rc == 0 && i < n; i++)
            if ((rc = set_field(&m, &attrs[i])) != 0)
                snprintf(why, size, "%s %s: no checksum fix-up for this attribute", attrs[i].object, attrs[i].attr);
        sum = erase_ckpt_meta_fnv1a64(&m);
        erase_ckpt_close(ck);
        if (rc)
            return -1;
    }
    erase_h5_enter();
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    int ok = f >= 0;
    for (int i = 0; ok && i < n; i++) {
        hid_t o = H5Oopen(f, attrs[i].object, H5P_DEFAULT);
        hid_t a = o >= 0 ? H5Aopen(o, attrs[i].attr, H5P_DEFAULT) : -1;
        int lr = !strcmp(attrs[i].attr, "lr");
        if (attrs[i].remove)
            ok = a >= 0 && H5Aclose(a) >= 0 && (a = -1, H5Adelete(o, attrs[i].attr) >= 0);
        else if (attrs[i].text) /* replaced: another length is another type */
            ok = a >= 0 && H5Aclose(a) >= 0 && (a = -1, erase_h5_attr_write_string(o, attrs[i].attr, attrs[i].text) == 0);
        else
            ok = a >= 0 && H5Awrite(a, lr ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64, lr ? (const void *)&attrs[i].lr
                                                                                  : (const void *)&attrs[i].v) >= 0;
        if (!ok)
            snprintf(why, size, "%s: cannot set %s %s", path, attrs[i].object, attrs[i].attr);
        if (a >= 0)
            H5Aclose(a);
        if (o >= 0)
            H5Oclose(o);
    }
    if (ok && fix) {
        hid_t a = H5Aopen(f, "meta_fnv1a64", H5P_DEFAULT);
        ok = a >= 0 && H5Awrite(a, H5T_NATIVE_UINT64, &sum) >= 0;
        if (!ok)
            snprintf(why, size, "%s: cannot set meta_fnv1a64", path);
        if (a >= 0)
            H5Aclose(a);
    }
    if (f >= 0)
        H5Fclose(f);
    else
        snprintf(why, size, "%s: cannot open as HDF5", path);
    erase_h5_leave();
    return ok ? 0 : -1;
}
