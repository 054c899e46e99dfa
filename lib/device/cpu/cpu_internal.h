/* Internal types of the CPU backend (lib/device/cpu only). */
#ifndef ERASE_DEVICE_CPU_INTERNAL_H
#define ERASE_DEVICE_CPU_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "lib/device/backend.h"
#include "lib/device/cpu/cpu.h"

typedef struct cpu_device cpu_device_t;
typedef struct cpu_stream cpu_stream_t;
typedef struct cpu_event cpu_event_t;
typedef struct cpu_graph cpu_graph_t;
typedef struct cpu_team cpu_team_t;

typedef enum { CPU_OP_KERNEL, CPU_OP_RECORD, CPU_OP_WAIT } cpu_op_kind_t;

/* One queued operation of a stream. */
typedef struct cpu_node {
    struct cpu_node *next;
    cpu_op_kind_t kind;
    uint64_t seq;                /* position in its stream (1-based) */
    erase_cpu_kernel_fn fn;      /* KERNEL */
    cpu_event_t *event;          /* RECORD: event to timestamp */
    cpu_stream_t *wait_stream;   /* WAIT: wait until wait_stream has */
    uint64_t wait_seq;           /*       completed wait_seq operations */
    size_t args_size;
    _Alignas(16) unsigned char args[];
} cpu_node_t;

struct cpu_device {
    erase_device_t base;
    int cores;
    int blas_threads;        /* the BLAS's threads for a stream's GEMMs */
    int threads;             /* a stream's threads for its other kernels (cpu_team.c): the
                                requested BLAS threads, without the BLAS's caps */
    pthread_mutex_t lock;    /* guards the stream list */
    cpu_stream_t *streams;   /* linked through next_in_device */
    cpu_team_t *_Atomic team; /* kernel helpers (cpu_team.c); NULL until a region needs them */
    pthread_mutex_t team_lock; /* guards the team's start: not `lock`, which cpu_device_drain
                                  holds while it waits for the workers that start it */
};

struct cpu_stream {
    erase_stream_t base;
    cpu_device_t *dev;
    cpu_stream_t *next_in_device;
    pthread_t worker;
    pthread_mutex_t lock;
    pthread_cond_t work_cv;  /* worker: new operation or shutdown */
    pthread_cond_t done_cv;  /* waiters: an operation completed */
    pthread_cond_t nap_cv;   /* erase_cpu_stream_nap: became awaited, or erase_cpu_stream_wake */
    cpu_node_t *head, *tail;
    uint64_t enqueued;       /* operations enqueued (guarded by lock) */
    uint64_t completed;      /* operations completed (guarded by lock) */
    uint64_t wake_at;        /* lowest position a waiter waits for; UINT64_MAX: none */
    int awaited;             /* other streams' workers blocked waiting for this one */
    int woken;               /* erase_cpu_stream_wake since the last nap */
    erase_status_t error;    /* sticky: first failure of an operation */
    char error_text[1024];
    int shutdown;
    cpu_graph_t *capture;    /* graph being captured into, or NULL */
};

struct cpu_event {
    erase_event_t base;
    pthread_mutex_t lock;
    cpu_stream_t *stream;    /* last record outside capture; NULL if none */
    uint64_t seq;            /* ... at this position of that stream */
    uint64_t time_seq;       /* position whose completion time is time_ns */
    int64_t time_ns;
    uint64_t capture_id;     /* nonzero: last recorded inside that capture */
    int capture_slot;        /* ... as this slot of the graph */
};

/* Streams (cpu_stream.c). Enqueue or, while capturing, record. */
erase_status_t cpu_stream_push_kernel(cpu_stream_t *s, erase_cpu_kernel_fn fn, const void *args,
                                      size_t args_size);
erase_status_t cpu_stream_push_record(cpu_stream_t *s, cpu_event_t *e);
erase_status_t cpu_stream_push_wait(cpu_stream_t *s, cpu_event_t *e);
/* Block until stream `s` has completed `seq` operations. */
/* Block until s has completed seq operations; by_worker: the caller is
 * another stream's worker (counted in s->awaited while it blocks). */
void cpu_stream_wait_completed(cpu_stream_t *s, uint64_t seq, int by_worker);
/* Block until every stream of the device has run what is enqueued now. */
void cpu_device_drain(cpu_device_t *d);
/* The stream whose worker is the calling thread; NULL on other threads. */
cpu_stream_t *cpu_stream_of_worker(void);

/* Stop and free device d's kernel team (cpu_team.c), if it started; its
 * streams are idle. */
void cpu_team_stop(cpu_device_t *d);

/* Graph capture (cpu_graph.c); called with the stream's lock NOT held. */
erase_status_t cpu_graph_add_kernel(cpu_graph_t *g, cpu_stream_t *s, erase_cpu_kernel_fn fn,
                                    const void *args, size_t args_size);
erase_status_t cpu_graph_add_record(cpu_graph_t *g, cpu_stream_t *s, cpu_event_t *e);
erase_status_t cpu_graph_add_wait(cpu_graph_t *g, cpu_stream_t *s, cpu_event_t *e);

/* Backend table functions, by file. */
erase_status_t cpu_stream_create(erase_device_t *dev, erase_stream_t **out);
void cpu_stream_destroy(erase_stream_t *s);
erase_status_t cpu_stream_synchronize(erase_stream_t *s);
uint64_t cpu_stream_enqueued(const erase_stream_t *s);
erase_status_t cpu_stream_error(erase_stream_t *s);
int cpu_stream_idle(cpu_stream_t *s);
erase_status_t cpu_event_create(erase_device_t *dev, erase_event_t **out);
void cpu_event_destroy(erase_event_t *e);
erase_status_t cpu_event_record(erase_event_t *e, erase_stream_t *s);
erase_status_t cpu_stream_wait_event(erase_stream_t *s, erase_event_t *e);
erase_status_t cpu_event_synchronize(erase_event_t *e);
erase_status_t cpu_event_query(erase_event_t *e);
erase_status_t cpu_event_elapsed_ms(erase_event_t *start, erase_event_t *end, double *ms);
erase_status_t cpu_begin_capture(erase_stream_t *s);
erase_status_t cpu_end_capture(erase_stream_t *s, erase_graph_t **graph);
int cpu_is_capturing(const erase_stream_t *s);
erase_status_t cpu_graph_launch(erase_graph_t *g, erase_stream_t *s);
size_t cpu_graph_node_count(const erase_graph_t *g);
void cpu_graph_destroy(erase_graph_t *g);
erase_status_t cpu_stream_mark(erase_stream_t *s, const char *label, int begin);
erase_status_t cpu_memcpy_async(erase_stream_t *s, void *dst, const void *src, size_t bytes);
erase_status_t cpu_memset_async(erase_stream_t *s, void *dst, int value, size_t bytes);
erase_status_t cpu_memcpy2d_async(erase_stream_t *s, void *dst, size_t dpitch, const void *src, size_t spitch,
                                  size_t width, size_t rows);
erase_status_t cpu_sgemm_strided_batched(erase_stream_t *s, erase_trans_t ta, erase_trans_t tb,
                                         int m, int n, int k, float alpha, const float *a, int lda,
                                         int64_t stride_a, const float *b, int ldb, int64_t stride_b,
                                         float beta, float *c, int ldc, int64_t stride_c, int batch);

/* The BLAS library (cpu_blas.c), loaded once per process. */
typedef struct {
    const char *library;      /* what was loaded */
    char name[128];           /* "OpenBLAS 0.3.21" or "CBLAS" */
    char kernel[64];          /* OpenBLAS core name, or "-" */
    char kernel_note[256];    /* how the kernel was chosen */
    int has_thread_control;   /* openblas_set_num_threads available */
} erase_blas_info_t;

erase_status_t erase_blas_load(const erase_blas_info_t **info);
/* Threads each BLAS call uses (process-wide in OpenBLAS). */
void erase_blas_set_threads(int n);

/*
 * Transparent huge pages for large buffers (cpu_hugepages.c, which says
 * why). The kernel's THP mode, read once from
 * /sys/kernel/mm/transparent_hugepage/enabled.
 */
typedef enum { ERASE_THP_UNKNOWN, ERASE_THP_ALWAYS, ERASE_THP_MADVISE, ERASE_THP_NEVER } erase_thp_mode_t;
#define ERASE_HUGE_PAGE ((size_t)2 << 20) /* bytes: x86-64's and arm64's (4 KiB granule) THP size */
erase_thp_mode_t erase_cpu_thp_mode(void);
/* 1 when erase advises: the mode is madvise and ERASE_HUGEPAGES is not 0. */
int erase_cpu_thp_advise(void);
/* "huge pages: ..." for the device description. */
const char *erase_cpu_thp_describe(void);
/* madvise(MADV_HUGEPAGE) the whole 4 KiB pages of [ptr, ptr + bytes) when
 * erase advises and bytes >= 2 MiB; advice only, no error return. */
void erase_cpu_thp_advise_range(void *ptr, size_t bytes);
/* A private anonymous writable mapping of /proc/self/maps: [start, end). */
typedef struct {
    uintptr_t start, end;
} erase_cpu_map_t;
/* This process's private anonymous writable mappings (no name: not the
 * heap, stacks or files), the first `max` into maps[]; returns how many
 * there are (may exceed max), -1 when /proc/self/maps cannot be read. */
int erase_cpu_anon_maps(erase_cpu_map_t *maps, int max);
/* Advises MADV_HUGEPAGE every mapping of after[] of 2 MiB or more that lies
 * in no mapping of before[] (it appeared, or grew by a merge, between the
 * two reads); returns the bytes advised. */
size_t erase_cpu_thp_advise_new(const erase_cpu_map_t *before, int nbefore, const erase_cpu_map_t *after,
                                int nafter);

static inline cpu_stream_t *cpu_stream(erase_stream_t *s) { return (cpu_stream_t *)s; }
static inline cpu_event_t *cpu_event(erase_event_t *e) { return (cpu_event_t *)e; }
static inline cpu_graph_t *cpu_graph(erase_graph_t *g) { return (cpu_graph_t *)g; }
static inline cpu_device_t *cpu_device(erase_device_t *d) { return (cpu_device_t *)d; }


#endif
