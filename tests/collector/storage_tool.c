/* storage_tool.c -- drives co_db's storage calls for test_storage.py,
 * against the collector's private cluster under DATA_DIR (co_pg: made
 * and started when missing, left running on exit).
 *
 *   storage-tool init DATA_DIR UPTO        schema of migrations 1..UPTO only
 *                                          (a database of an older release)
 *   storage-tool migrate DATA_DIR          co_db_migrate; prints "applied N"
 *   storage-tool ensure DATA_DIR NOW_US MONTHS
 *   storage-tool retention DATA_DIR KEEP_US NOW_US   prints "dropped N"
 *   storage-tool runend DATA_DIR KEY RUN_UUID BATCHES ENDED_US WINDOW
 *   storage-tool ingest DATA_DIR KEY RUN_UUID NOW_US  RunStart, batches
 *                   through both batch paths, a Calibration, RunEnd
 *   storage-tool stop DATA_DIR
 *
 * KEY is a host's public_key (its id is looked up). Exit 0 on success;
 * 1 with the error on stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "co_cals.h"
#include "co_db.h"
#include "co_ingest.h"
#include "co_migrations.h"
#include "co_pg.h"
#include "co_retain.h"
#include "co_verdicts.h"

static int
s_die(const char *what, const char *err)
{
    fprintf(stderr, "storage-tool: %s: %s\n", what, err);
    return 1;
}

/* Apply migrations 1..upto as co_db_migrate would, then stop. */
static int
s_init(const char *conninfo, int upto)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK)
        return s_die("connect", PQerrorMessage(c));
    PQclear(PQexec(c, "CREATE TABLE IF NOT EXISTS schema_version (version "
                   "integer PRIMARY KEY, name text NOT NULL, applied_at "
                   "timestamptz NOT NULL DEFAULT now())"));
    for (size_t i = 0; i < co_migrations_count; i++) {
        const co_migration_t *m = &co_migrations[i];
        if (m->version > upto)
            break;
        PGresult *r = PQexec(c, m->sql);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
                 PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
        if (!ok) {
            s_die(m->name, PQerrorMessage(c));
            PQfinish(c);
            return 1;
        }
        char v[16];
        snprintf(v, sizeof v, "%d", m->version);
        const char *p[] = { v, m->name };
        PQclear(PQexecParams(c, "INSERT INTO schema_version (version, name) "
                             "VALUES ($1, $2)", 2, NULL, p, NULL, NULL, 0));
    }
    PQfinish(c);
    return 0;
}

static int64_t
s_host_id(const char *conninfo, const char *key)
{
    PGconn *c = PQconnectdb(conninfo);
    const char *p[] = { key };
    PGresult *r = PQexecParams(c, "SELECT id FROM hosts WHERE public_key = "
                               "$1", 1, NULL, p, NULL, NULL, 0);
    int64_t id = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10)
                                   : 0;
    PQclear(r);
    PQfinish(c);
    return id;
}

static int
s_run_end(co_db_t *db, int64_t host, const char *uuid, unsigned batches,
          int64_t ended, int window)
{
    char err[512];
    Parity__RunEnd re = PARITY__RUN_END__INIT;
    re.run_id = (char *)uuid;
    re.status = PARITY__RUN_STATUS__COMPLETE;
    re.batches = batches;
    re.ended_at_us = ended;
    unsigned verdicts = 0;
    int rc = co_verdicts_run_end(db, host, &re, window, 0.04, &verdicts, err,
                           sizeof err);
    if (rc != CO_DB_OK)
        return s_die("run_end", err);
    printf("verdicts %u\n", verdicts);
    return 0;
}

/* A batch of sample rows: (kind, arm, wall_us, start_unix_us). */
static void
s_batch(Parity__SampleBatch *b, Parity__Sample *x, Parity__Sample **px,
        const char *uuid, unsigned seq, size_t n, int64_t t0)
{
    parity__sample_batch__init(b);
    b->run_id = (char *)uuid;
    b->batch_seq = seq;
    b->n_samples = n;
    b->samples = px;
    for (size_t i = 0; i < n; i++) {
        parity__sample__init(&x[i]);
        px[i] = &x[i];
        /* Per 6: one calibration, a wall 0 one, two measured per arm. */
        size_t k = i % 6;
        x[i].kind = k < 2 ? PARITY__SAMPLE_KIND__CALIBRATION :
                    PARITY__SAMPLE_KIND__MEASURED;
        x[i].arm = k < 2 ? 0 : (unsigned)(k % 2);
        /* A calibration sample's third: its wall_us goes to
         * host_calibration as text in co_ingest_batches, and must come back
         * the same double. */
        x[i].wall_us = k == 1 ? 0.0 : 1000.0 + (double)(seq * 100 + i)
                       + (k == 0 ? 1.0 / 3.0 : 0.0);
        x[i].round = (unsigned)(i / 6);
        x[i].start_unix_us = t0 + (int64_t)(seq * 1000 + i);
    }
}

static int
s_ingest(co_db_t *db, int64_t host, const char *uuid, int64_t now)
{
    char err[512];
    Parity__Arm a0 = PARITY__ARM__INIT, a1 = PARITY__ARM__INIT;
    Parity__Arm *arms[] = { &a0, &a1 };
    a0.name = "new";
    a0.subject = 1;
    a1.name = "old";
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    rs.run_id = (char *)uuid;
    rs.suite = "ingest";
    rs.benchmark = "paths";
    rs.runs = 4;
    rs.started_at_us = now;
    rs.n_arms = 2;
    rs.arms = arms;
    if (co_ingest_run_start(db, host, &rs, err, sizeof err) != CO_DB_OK)
        return s_die("run_start", err);
    Parity__SampleBatch b[3];
    Parity__Sample x[3][12], *px[3][12];
    for (unsigned k = 0; k < 3; k++)
        s_batch(&b[k], x[k], px[k], uuid, k, 12, now);
    size_t stored = 0;
    if (co_ingest_batch(db, host, &b[0], &stored, err, sizeof err) != CO_DB_OK)
        return s_die("batch", err);
    /* b[2] twice in the group and b[0] stored before: duplicates, whose
     * calibration samples must not be stored again. */
    co_ingest_item_t items[4] = { { .host_id = host, .batch = &b[1] },
                                    { .host_id = host, .batch = &b[2] },
                                    { .host_id = host, .batch = &b[2] },
                                    { .host_id = host, .batch = &b[0] } };
    if (co_ingest_batches(db, items, 4, err, sizeof err) != CO_DB_OK ||
        items[0].rc != CO_DB_OK || items[1].rc != CO_DB_OK)
        return s_die("batches", items[0].err[0] ? items[0].err : err);
    if (items[2].rc != CO_DB_DUP || items[3].rc != CO_DB_DUP ||
        items[0].stored != 12 || items[2].stored != 0)
        return s_die("batches", "duplicates not answered as duplicates");
    double cal[150];
    for (int i = 0; i < 150; i++)
        cal[i] = 400.0 + (double)((i * 37) % 101);
    Parity__Calibration c = PARITY__CALIBRATION__INIT;
    c.calibration_id = (char *)uuid;   /* any unique text */
    c.taken_at_us = now + 5000;
    c.n_wall_us = 150;
    c.wall_us = cal;
    if (co_cals_store(db, host, &c, err, sizeof err) != CO_DB_OK)
        return s_die("calibration", err);
    return s_run_end(db, host, uuid, 3, now + 10000, CO_DB_FLOOR_WINDOW);
}

static int
s_command(int argc, char **argv, co_db_t *db, const char *conninfo)
{
    char err[512];
    const char *cmd = argv[1];
    if (strcmp(cmd, "migrate") == 0) {
        int applied = 0;
        if (co_db_migrate(db, &applied, err, sizeof err) != CO_DB_OK)
            return s_die("migrate", err);
        printf("applied %d\n", applied);
        return 0;
    }
    if (strcmp(cmd, "ensure") == 0 && argc == 5) {
        if (co_retain_partitions(db, strtoll(argv[3], NULL, 10),
                                    atoi(argv[4]), err, sizeof err) !=
            CO_DB_OK)
            return s_die("ensure", err);
        return 0;
    }
    if (strcmp(cmd, "retention") == 0 && argc == 5) {
        int dropped = -1;
        int rc = co_retain_samples(db, strtoll(argv[3], NULL, 10),
                                 strtoll(argv[4], NULL, 10), &dropped, err,
                                 sizeof err);
        printf("dropped %d\n", dropped);
        return rc == CO_DB_OK ? 0 : s_die("retention", err);
    }
    int64_t host = argc > 3 ? s_host_id(conninfo, argv[3]) : 0;
    if (strcmp(cmd, "runend") == 0 && argc == 8)
        return s_run_end(db, host, argv[4], (unsigned)atoi(argv[5]),
                         strtoll(argv[6], NULL, 10), atoi(argv[7]));
    if (strcmp(cmd, "ingest") == 0 && argc == 6)
        return s_ingest(db, host, argv[4], strtoll(argv[5], NULL, 10));
    return s_die(cmd, "unknown command or wrong arguments");
}

int
main(int argc, char **argv)
{
    char err[512];
    if (argc < 3)
        return s_die("usage", "storage-tool COMMAND DATA_DIR ...");
    co_pg_t *pg = co_pg_new(argv[2], err, sizeof err);
    if (!pg)
        return s_die("co_pg_new", err);
    int rc;
    if (strcmp(argv[1], "stop") == 0) {
        rc = co_pg_stop(pg, err, sizeof err) == 0 ? 0 : s_die("stop", err);
    } else if (strcmp(argv[1], "init") == 0 && argc == 4) {
        rc = s_init(co_pg_conninfo(pg), atoi(argv[3]));
    } else {
        co_db_t *db = co_db_new(co_pg_conninfo(pg));
        if (co_db_connect(db, err, sizeof err) != CO_DB_OK)
            rc = s_die("connect", err);
        else
            rc = s_command(argc, argv, db, co_pg_conninfo(pg));
        co_db_destroy(&db);
    }
    co_pg_destroy(&pg);
    return rc;
}
