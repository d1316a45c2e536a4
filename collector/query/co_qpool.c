/* co_qpool.c -- see co_qpool.h. */
#include "co_qpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "co_jobs.h"
#include "co_log.h"
#include "co_out.h"
#include "co_pg.h"
#include "co_query.h"

typedef struct {
    co_qpool_t *pool;
    pthread_t thread;
    bool started;
    void *out;             /* this worker's PUSH to the loop */
    co_conn_t *conn;       /* its connection */
    co_jobs_t *jobs;       /* run and cancel, on conn */
    co_conn_t *read;       /* --query-db's, or NULL */
    co_query_t *query;
    bool renice;           /* cfg.private_db */
    int niced_pid;         /* the server process reniced last */
} s_worker_t;

struct co_qpool {
    co_queue_t *in;
    s_worker_t *workers;
    int n;
    atomic_int busy;
};

static void
s_log(void *ctx, const char *event, const char *text)
{
    (void)ctx;
    co_log(CO_LOG_WARN, event, "%s", text);
}

/* The server process of this worker's connection at CO_QPOOL_NICE, once
 * per connection (best effort: a failure only costs latency). */
static void
s_renice_backend(s_worker_t *w)
{
    char err[256];
    PGconn *c = co_conn_pg(w->conn, err, sizeof err);
    int pid = c ? PQbackendPID(c) : 0;
    if (co_pg_renice_once(pid, CO_QPOOL_NICE, &w->niced_pid) < 0)
        co_log(CO_LOG_DEBUG, "renice_failed", "pid=%d errno=%d", pid, errno);
}

static void
s_answer(s_worker_t *w, const co_queue_item_t *item)
{
    Parity__Envelope *env = NULL, out;
    Parity__Reply rep;
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t seq;
    char err[256];
    co_out_hdr_t h;

    memset(&h, 0, sizeof h);
    if (pw_wire_unpack(zmq_msg_data((zmq_msg_t *)&item->frame),
                       zmq_msg_size((zmq_msg_t *)&item->frame),
                       PW_WIRE_MAX_FRAME, &env, &seq, err, sizeof err)
        == PW_WIRE_OK && env->body_case == PARITY__ENVELOPE__BODY_REQUEST) {
        if (w->renice)
            s_renice_backend(w);
        co_query_handle(w->query, item->key, env->request, &rep);
        pw_wire_init(&out, 0);
        pw_wire_set_body(&out, PARITY__ENVELOPE__BODY_REPLY, &rep);
        if (pw_wire_pack_alloc(&out, &buf, &len, NULL, 0) == PW_WIRE_OK)
            h.flags |= CO_OUT_SEND;
        co_query_reply_clear(&rep);
    }
    pw_wire_free(&env);
    uint32_t send = h.flags & CO_OUT_SEND;
    co_out_hdr_done(&h, item);
    h.flags |= send;
    co_out_send(w->out, &h, item->rid, buf ? item->rid_len : 0, buf,
                buf ? len : 0);
    free(buf);
}

static void *
s_thread(void *arg)
{
    s_worker_t *w = arg;
    co_queue_item_t *item;
    /* On Linux a thread has its own nice value. */
    if (w->renice)
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), CO_QPOOL_NICE);
    for (;;) {
        item = co_queue_pop(w->pool->in, 1000000);
        /* Closed: the Request being answered was finished; waiting ones
         * are dropped by co_qpool_destroy. */
        if (co_queue_closed(w->pool->in)) {
            co_queue_item_free(&item);
            break;
        }
        if (!item)
            continue;
        atomic_fetch_add(&w->pool->busy, 1);
        s_answer(w, item);
        atomic_fetch_sub(&w->pool->busy, 1);
        co_queue_item_free(&item);
    }
    return NULL;
}

/* ---- life cycle ----------------------------------------------------------- */

static int
s_worker_init(s_worker_t *w, co_qpool_t *pool, const co_config_t *cfg,
              void *ctx, co_keys_t *keys, char *err, size_t errlen)
{
    /* No send callback: workers never offer jobs (the writer does). */
    /* Parallel workers are processes of their own, at the server's
     * priority: a query that spawns two would take both cores from the
     * writer at full priority (hosts, history did under fleet_load). */
    co_conn_opts_t co = { .conninfo = cfg->conninfo,
                          .settings = "SET max_parallel_workers_per_gather "
                                      "= 0",
                          .statement_timeout_ms = cfg->query_timeout_ms };
    w->pool = pool;
    w->renice = cfg->private_db;
    w->conn = co_conn_new(&co);
    co_jobs_opts_t o = { .conn = w->conn, .ctx = w, .log = s_log };
    w->jobs = w->conn ? co_jobs_new(&o) : NULL;
    w->query = w->jobs ? co_query_new(w->jobs, cfg->floor_window, keys)
                       : NULL;
    if (w->query)
        co_query_set_parity(w->query, cfg->parity);
    if (w->query && cfg->query_conninfo) {
        co_conn_opts_t ro = co;
        ro.conninfo = cfg->query_conninfo;
        if (!(w->read = co_conn_new(&ro)))
            co_query_destroy(&w->query);
        else
            co_query_set_reader(w->query, w->read);
    }
    if (!w->query) {
        snprintf(err, errlen, "co_qpool: out of memory");
        return -1;
    }
    if (cfg->admin_dir
        && co_query_load_admins(w->query, cfg->admin_dir, err, errlen) < 0)
        return -1;
    w->out = co_out_connect(ctx, err, errlen);
    if (!w->out)
        return -1;
    if (pthread_create(&w->thread, NULL, s_thread, w) != 0) {
        snprintf(err, errlen, "pthread_create(query worker): %s",
                 strerror(errno));
        return -1;
    }
    w->started = true;
    return 0;
}

co_qpool_t *
co_qpool_new(const co_config_t *cfg, void *ctx, int n,
             co_keys_t *keys, char *err, size_t errlen)
{
    co_qpool_t *pool = calloc(1, sizeof *pool);
    if (!pool) {
        snprintf(err, errlen, "co_qpool: out of memory");
        return NULL;
    }
    pool->in = co_queue_new(CO_QPOOL_QUEUE_ITEMS, CO_QPOOL_QUEUE_BYTES);
    pool->workers = calloc((size_t)n, sizeof *pool->workers);
    if (!pool->in || !pool->workers) {
        snprintf(err, errlen, "co_qpool: out of memory");
        co_qpool_destroy(&pool);
        return NULL;
    }
    for (; pool->n < n; pool->n++) {
        if (s_worker_init(&pool->workers[pool->n], pool, cfg, ctx, keys,
                          err, errlen) != 0) {
            pool->n++;     /* so destroy frees its parts */
            co_qpool_destroy(&pool);
            return NULL;
        }
    }
    return pool;
}

int
co_qpool_push(co_qpool_t *pool, co_queue_item_t **item)
{
    return co_queue_push(pool->in, item, false);
}

void
co_qpool_depth(co_qpool_t *pool, size_t *waiting, int *busy)
{
    co_queue_depth(pool->in, waiting, NULL);
    *busy = atomic_load(&pool->busy);
}

void
co_qpool_destroy(co_qpool_t **poolp)
{
    if (!poolp || !*poolp)
        return;
    co_qpool_t *pool = *poolp;
    if (pool->in)
        co_queue_close(pool->in);
    for (int i = 0; i < pool->n; i++) {
        s_worker_t *w = &pool->workers[i];
        if (w->started)
            pthread_join(w->thread, NULL);
        if (w->out)
            zmq_close(w->out);
        co_query_destroy(&w->query);
        co_jobs_destroy(&w->jobs);
        co_conn_destroy(&w->conn);
        co_conn_destroy(&w->read);
    }
    free(pool->workers);
    co_queue_destroy(&pool->in);
    free(pool);
    *poolp = NULL;
}
