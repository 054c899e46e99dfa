/*
 * The world: MPI start-up and shutdown, local ranks, the data-parallel and
 * pipeline groups, the fatal hook (MPI_Abort), start-up logs and the
 * watchdog's lifetime.
 *
 * Environment (read by erase_world_init):
 *   ERASE_VERBOSE            <0: silent; 0 (default): rank 0 prints one summary
 *                            line; >=1: every rank also prints its own line
 *                            (-100..100)
 *   ERASE_WATCHDOG_SECONDS   overrides erase_world_options_t.watchdog_seconds
 *                            (1e-9..ERASE_WATCHDOG_MAX_SECONDS)
 *   ERASE_CHECK_COLLECTIVES  1 turns the collective-sequence check on, 0 off
 */
#include "lib/comm/comm_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int comm_check_enabled;
int comm_verbose;
int comm_world_rank = -1;
char comm_host[64] = "?";

static struct {
    int initialized;  /* erase_world_init got past MPI start-up */
    int mpi_owned;    /* erase_world_init called MPI_Init_thread */
    int verbose;
    erase_comm_t *world, *dp, *pp, *emb;
} g;

static const comm_device_ops_t *device_ops; /* atomic: see comm_device_ops */

const comm_device_ops_t *comm_device_ops(void)
{
    return __atomic_load_n(&device_ops, __ATOMIC_ACQUIRE);
}

void comm_device_ops_set(const comm_device_ops_t *ops)
{
    __atomic_store_n(&device_ops, ops, __ATOMIC_RELEASE);
}

/* The fatal hook: bring every rank down (erase_fatal printed why). NCCL
 * communicators are aborted first, so that no GPU kernel of this rank keeps
 * waiting for a peer while MPI takes the processes down. */
static void world_abort(int exit_code)
{
    const comm_device_ops_t *ops = comm_device_ops();
    if (ops)
        ops->abort_all();
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Abort(MPI_COMM_WORLD, exit_code ? exit_code : 1);
}

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    }
    return "unknown thread level";
}

erase_status_t comm_env_number(const char *name, double lo, double hi, double *value, int *set)
{
    const char *text = getenv(name);
    *set = 0;
    if (!text || !*text)
        return ERASE_OK;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo && v <= hi)) /* NaN too */
        return ERASE_ERROR(ERASE_ERR_INVALID, "environment %s='%s': expected a number in [%g, %g]", name, text,
                           lo, hi);
    *value = v;
    *set = 1;
    return ERASE_OK;
}

/* "Open MPI v4.1.4" from MPI_Get_library_version's first line, up to a comma. */
static void mpi_library_name(char *text, size_t size)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = '\0';
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    snprintf(text, size, "%s (MPI %d.%d)", lib[0] ? lib : "unknown MPI", major, minor);
}

static erase_status_t make_groups(erase_world_t *w)
{
    MPI_Comm local;
    COMM_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank,
                                       MPI_INFO_NULL, &local),
                   "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
    MPI_Comm_rank(local, &w->local_rank);
    MPI_Comm_size(local, &w->local_size);
    MPI_Comm_free(&local);

    ERASE_CHECK(comm_create("world", MPI_COMM_WORLD, &g.world));
    MPI_Comm split;
    /* dp group: the ranks holding the same stage; pp group: one replica */
    COMM_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, w->pp_rank, w->dp_rank, &split),
                   "MPI_Comm_split (data-parallel group)");
    erase_status_t st = comm_create("dp", split, &g.dp);
    if (st == ERASE_OK)
        st = comm_create("emb", split, &g.emb); /* the dp group again: erase_emb_comm */
    MPI_Comm_free(&split);
    ERASE_CHECK(st);
    COMM_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, w->dp_rank, w->pp_rank, &split),
                   "MPI_Comm_split (pipeline group)");
    st = comm_create("pp", split, &g.pp);
    MPI_Comm_free(&split);
    ERASE_CHECK(st);
    if (g.dp->rank != w->dp_rank || g.dp->size != w->dp_size || g.pp->rank != w->pp_rank ||
        g.pp->size != w->pp_size)
        return ERASE_ERROR(ERASE_ERR_COMM, "group split gave dp %d/%d, pp %d/%d; expected "
                           "dp %d/%d, pp %d/%d", g.dp->rank, g.dp->size, g.pp->rank, g.pp->size,
                           w->dp_rank, w->dp_size, w->pp_rank, w->pp_size);
    return ERASE_OK;
}

erase_status_t erase_world_init(int *argc, char ***argv, const erase_world_options_t *options,
                                erase_world_t *world)
{
    if (!world)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_world_init: world is NULL");
    if (g.initialized)
        return ERASE_ERROR(ERASE_ERR_STATE, "erase_world_init: the world is already initialised");
    erase_world_options_t o = { 0 };
    if (options)
        o = *options;
    memset(world, 0, sizeof *world);

    int inited = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS)
            return comm_mpi_error(__FILE__, __LINE__, rc, "MPI_Init_thread");
        g.mpi_owned = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    g.initialized = 1; /* from here on, erase_world_finalize undoes what was done */
    MPI_Comm_rank(MPI_COMM_WORLD, &world->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world->size);
    if (gethostname(comm_host, sizeof comm_host) != 0)
        snprintf(comm_host, sizeof comm_host, "?");
    comm_host[sizeof comm_host - 1] = '\0';
    snprintf(world->host, sizeof world->host, "%s", comm_host);
    comm_world_rank = world->rank;
    erase_fatal_set_hook(world_abort, world->rank); /* every failure from now on ends the job */
    world->thread_level = provided;
    if (provided < MPI_THREAD_MULTIPLE)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED,
                           "the MPI library provides %s; erase needs MPI_THREAD_MULTIPLE (stream "
                           "workers and the scheduler call MPI from several threads)",
                           thread_level_name(provided));

    double v;
    int set;
    ERASE_CHECK(comm_env_number("ERASE_VERBOSE", -100, 100, &v, &set));
    g.verbose = set ? (int)v : 0;
    comm_verbose = g.verbose;
    double watchdog = o.watchdog_seconds;
    if (!(watchdog >= 0 && watchdog <= ERASE_WATCHDOG_MAX_SECONDS))
        return ERASE_ERROR(ERASE_ERR_INVALID, "watchdog_seconds %g: expected a number of seconds "
                           "in [0, %g] (0: 600)", watchdog, ERASE_WATCHDOG_MAX_SECONDS);
    if (watchdog == 0)
        watchdog = 600.0;
    ERASE_CHECK(comm_env_number("ERASE_WATCHDOG_SECONDS", 1e-9, ERASE_WATCHDOG_MAX_SECONDS, &v, &set));
    if (set)
        watchdog = v;
    ERASE_CHECK(comm_env_number("ERASE_CHECK_COLLECTIVES", -INFINITY, INFINITY, &v, &set));
    comm_check_enabled = set ? v != 0 : o.check_sequence != 0;

    int pp = o.pp_size ? o.pp_size : 1;
    if (pp < 1 || world->size % pp != 0)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "world size %d is not a multiple of pp_size %d (dp x pp must equal "
                           "the number of ranks)", world->size, pp);
    world->pp_size = pp;
    world->dp_size = world->size / pp;
    world->pp_rank = world->rank % pp;
    world->dp_rank = world->rank / pp;
    ERASE_CHECK(make_groups(world));

    int first_on_host = world->local_rank == 0, hosts = 0;
    COMM_MPI_CHECK(MPI_Allreduce(&first_on_host, &hosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                   "MPI_Allreduce (host count)");
    world->hosts = hosts;
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING + 32];
    mpi_library_name(mpi, sizeof mpi);
    if (g.verbose >= 1)
        fprintf(stderr, "[rank %d %s] erase: rank %d of %d, local rank %d of %d, dp rank %d of %d, "
                "pp rank %d of %d, pid %ld, %s\n", world->rank, comm_host, world->rank,
                world->size, world->local_rank, world->local_size, world->dp_rank, world->dp_size,
                world->pp_rank, world->pp_size, (long)getpid(), mpi);
    if (g.verbose >= 0 && world->rank == 0)
        fprintf(stderr, "[rank 0 %s] erase: world of %d rank%s on %d host%s (dp %d x pp %d), %s, "
                "%s, watchdog %g s, collective sequence check %s\n", comm_host, world->size,
                world->size == 1 ? "" : "s", hosts, hosts == 1 ? "" : "s", world->dp_size, world->pp_size, mpi,
                thread_level_name(provided), watchdog, comm_check_enabled ? "on" : "off");

    erase_comm_t *comms[4] = { g.world, g.dp, g.pp, g.emb };
    ERASE_CHECK(comm_watchdog_start(comms, 4, watchdog));
    return ERASE_OK;
}

void erase_world_log_device(const erase_device_t *dev)
{
    if (!g.initialized || g.verbose < 1 || !dev)
        return;
    char text[512];
    erase_device_describe(dev, text, sizeof text);
    fprintf(stderr, "[rank %d %s] device: %s\n", comm_world_rank, comm_host, text);
}

erase_comm_t *erase_world_comm(void)
{
    return g.world;
}

erase_comm_t *erase_dp_comm(void)
{
    return g.dp;
}

erase_comm_t *erase_pp_comm(void)
{
    return g.pp;
}

erase_comm_t *erase_emb_comm(void)
{
    return g.emb;
}

erase_status_t erase_world_agree(int failed, int *all, int *any)
{
    int mine[2] = { failed != 0, failed == 0 }, most[2];
    COMM_MPI_CHECK(MPI_Allreduce(mine, most, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "agreeing on a start-up failure");
    *any = most[0];
    *all = !most[1];
    return ERASE_OK;
}

int erase_world_cores_per_rank(const erase_world_t *world)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int local = world->local_size > 0 ? world->local_size : 1;
    return online > local ? (int)(online / local) : 1;
}

void erase_world_finalize(void)
{
    if (!g.initialized)
        return;
    comm_watchdog_stop();
    const comm_device_ops_t *ops = comm_device_ops();
    if (ops) /* NCCL before the MPI communicators its ids travelled on */
        ops->finalize();
    comm_device_ops_set(NULL);
    comm_destroy(g.pp);
    comm_destroy(g.emb);
    comm_destroy(g.dp);
    comm_destroy(g.world);
    erase_fatal_set_hook(NULL, comm_world_rank); /* MPI_Abort is not allowed after finalize */
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (g.mpi_owned && !finalized)
        MPI_Finalize();
    memset(&g, 0, sizeof g);
    comm_check_enabled = 0;
    comm_verbose = 0;
}
