/* erase-train's tasks (apps/train/task.h): one line each. */
#include "apps/train/task.h"

#include <string.h>

static const train_task_t *const tasks[] = {
    &train_task_ctr,
    &train_task_classify,
    &train_task_lm,
};

const train_task_t *train_task_find(const char *name)
{
    for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++)
        if (!strcmp(tasks[i]->name, name))
            return tasks[i];
    return NULL;
}
