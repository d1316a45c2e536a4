/* fz_pq.c -- an in-memory stand-in for libpq, for the frame target.
 *
 * co_db.c and the store modules (co_hosts, co_cals, co_ingest,
 * co_verdicts) are linked against this file instead of libpq, so a fuzzed
 * frame runs through the collector's real storage code (validation,
 * JSON checks, parameters, the binary COPY buffers, the run and floor
 * caches) without a server. Only the functions they call exist.
 *
 * Every statement succeeds. Its answer is chosen from the SQL text, so
 * that co_db sees one consistent database: a run (id 1) of host 1 with
 * S_ARMS arms that has not ended, every batch new, every other
 * statement one row of "1"s. What a real server would refuse (bad
 * UTF-8, a constraint) is not modelled: the target reaches what co_db
 * does before and around the server, not the server.
 *
 * The COPY data co_db streams is parsed as PostgreSQL's binary COPY
 * format (header, tuples of length-prefixed fields, trailer) and the
 * process aborts when it is malformed: a wrong length or count in the
 * buffer co_db builds by hand would make the server refuse every batch.
 */
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_pq.h"

/* Arms of the one run the fake database holds (as many as a RunStart
 * may have is not needed: samples naming more are refused before). */
#define S_ARMS 8
/* Rows of an echoed answer, and columns of a default one. */
#define S_ROWS_MAX 128
#define S_COLS_MAX 8
#define S_CELL_MAX 24

struct pg_conn {
    bool in_copy;
    char *copy;          /* the COPY data streamed so far */
    size_t copy_len;
    int results_left;    /* PQgetResult answers after PQputCopyEnd */
};

/* rows x cols cells, each a string and a null flag, in one allocation:
 * a statement costs one malloc, as most of co_db's answers are tiny. */
typedef struct {
    bool null;
    char text[S_CELL_MAX];
} s_cell_t;

struct pg_result {
    ExecStatusType status;
    int rows, cols;
    bool commit;         /* the answer to COMMIT (PQcmdStatus) */
    /* "a b c": the columns' names, for PQfnumber (NULL: every name is
     * column 0 of a generic answer, whose cells are all alike). */
    const char *names;
    s_cell_t cell[];
};

static struct pg_conn s_conn;
static long long s_samples_stored;

void
fz_pq_reset(void)
{
    free(s_conn.copy);
    memset(&s_conn, 0, sizeof s_conn);
    s_samples_stored = 0;
}

static PGresult *
s_result(ExecStatusType status, int rows, int cols)
{
    PGresult *r = malloc(sizeof *r + (size_t)(rows * cols) * sizeof
                         (s_cell_t));
    if (!r)
        abort();
    r->status = status;
    r->rows = rows;
    r->cols = cols;
    r->commit = false;
    r->names = NULL;
    for (int i = 0; i < rows * cols; i++) {
        r->cell[i].null = false;
        memcpy(r->cell[i].text, "1", 2);
    }
    return r;
}

/* Cell (row, col) of r, which must exist. */
static s_cell_t *
s_cell(const PGresult *r, int row, int col)
{
    if (!r || row < 0 || row >= r->rows || col < 0 || col >= r->cols)
        abort();   /* libpq would return NULL: co_db must not ask */
    return (s_cell_t *)&r->cell[row * r->cols + col];
}

/* "{1,2,3}" (a parameter co_db builds for unnest) into out[]. */
static int
s_int_array(const char *text, long long *out, int max)
{
    int n = 0;
    if (!text || *text++ != '{')
        abort();   /* co_db always sends an array literal here */
    while (*text && *text != '}' && n < max) {
        char *end;
        out[n++] = strtoll(text, &end, 10);
        text = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Elements of an array's text ("{}" none, "{a,b}" two), any length. */
static long
s_elements(const char *text)
{
    if (!text || text[0] != '{')
        abort();
    if (strcmp(text, "{}") == 0)
        return 0;
    long n = 1;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    return n;
}

/* The statement after a WITH's common table expressions (whose own
 * RETURNING does not make the statement return rows); sql itself when
 * it has none. */
static const char *
s_main_statement(const char *sql)
{
    if (strncmp(sql, "WITH ", 5) != 0)
        return sql;
    const char *p = sql + 5;
    for (;;) {
        int depth = 0;
        p = strchr(p, '(');      /* name AS ( ... ) */
        if (!p)
            abort();
        do {
            depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
            if (!*p++)
                abort();
        } while (depth > 0);
        while (*p == ' ')
            p++;
        if (*p != ',')
            return p;
        p++;
    }
}

/* The answer to one statement (parameters may be NULL). */
static PGresult *
s_answer(const char *sql, int n, const char *const *params)
{
    PGresult *r;
    if (strncmp(sql, "COPY", 4) == 0) {
        s_conn.in_copy = true;
        s_conn.copy_len = 0;
        return s_result(PGRES_COPY_IN, 0, 0);
    }
    if (strstr(sql, "unnest(") && strstr(sql, "INSERT INTO batches")) {
        /* Every batch is new: echo (run, batch_seq) of each. */
        long long run[S_ROWS_MAX], seq[S_ROWS_MAX], cnt[S_ROWS_MAX];
        if (n < 3)
            abort();
        int rows = s_int_array(params[0], run, S_ROWS_MAX);
        if (s_int_array(params[1], seq, S_ROWS_MAX) != rows
            || s_int_array(params[2], cnt, S_ROWS_MAX) != rows)
            abort();   /* the three arrays must line up */
        /* The calibration samples' five arrays must line up too. */
        for (int a = 4; a < n; a++)
            if (s_elements(params[a]) != s_elements(params[3]))
                abort();
        r = s_result(PGRES_TUPLES_OK, rows, 2);
        r->names = "run batch_seq";
        for (int i = 0; i < rows; i++) {
            snprintf(s_cell(r, i, 0)->text, S_CELL_MAX, "%lld", run[i]);
            snprintf(s_cell(r, i, 1)->text, S_CELL_MAX, "%lld", seq[i]);
            s_samples_stored += cnt[i];
        }
        return r;
    }
    if (strstr(sql, "FROM runs WHERE run_uuid")) {
        /* The run: id 1, host 1, S_ARMS arms. */
        r = s_result(PGRES_TUPLES_OK, 1, 3);
        r->names = "id host_id arms";
        snprintf(s_cell(r, 0, 2)->text, S_CELL_MAX, "%d", S_ARMS);
        return r;
    }
    if (strstr(sql, "SELECT status, started_at_us")) {
        /* Not ended, every batch stored, the samples stored so far,
         * wall time the only metric tracked. */
        r = s_result(PGRES_TUPLES_OK, 1, 5);
        r->names = "status started_at_us batches samples metrics";
        s_cell(r, 0, 0)->null = true;
        s_cell(r, 0, 0)->text[0] = '\0';
        snprintf(s_cell(r, 0, 2)->text, S_CELL_MAX, "%u", UINT32_MAX);
        snprintf(s_cell(r, 0, 3)->text, S_CELL_MAX, "%lld", s_samples_stored);
        snprintf(s_cell(r, 0, 4)->text, S_CELL_MAX, "wall");
        return r;
    }
    if (strstr(sql, "FROM arms WHERE run")) {
        r = s_result(PGRES_TUPLES_OK, S_ARMS, 3);
        r->names = "idx name subject";
        for (int i = 0; i < S_ARMS; i++) {
            snprintf(s_cell(r, i, 0)->text, S_CELL_MAX, "%d", i);
            snprintf(s_cell(r, i, 1)->text, S_CELL_MAX, "arm%d", i);
            snprintf(s_cell(r, i, 2)->text, S_CELL_MAX, "%s", i == 0 ? "t" : "f");
        }
        return r;
    }
    const char *main = s_main_statement(sql);
    if (strncmp(main, "SELECT", 6) == 0 || strstr(main, "RETURNING"))
        return s_result(PGRES_TUPLES_OK, 1, S_COLS_MAX);
    return s_result(PGRES_COMMAND_OK, 0, 0);
}

/* Parse PostgreSQL's binary COPY stream; abort when it is malformed. */
static void
s_copy_check(const unsigned char *p, size_t len)
{
    static const char sig[] = "PGCOPY\n\377\r\n";
    size_t off = 19;
    int fields = -1;
    if (len < 19 + 2 || memcmp(p, sig, 11) != 0)
        abort();
    uint32_t ext = (uint32_t)p[15] << 24 | (uint32_t)p[16] << 16
                   | (uint32_t)p[17] << 8 | p[18];
    off += ext;
    for (;;) {
        if (off + 2 > len)
            abort();   /* no trailer */
        int16_t count = (int16_t)(p[off] << 8 | p[off + 1]);
        off += 2;
        if (count == -1)
            break;
        if (count <= 0 || (fields >= 0 && count != fields))
            abort();   /* every tuple of one COPY has the same fields */
        fields = count;
        for (int f = 0; f < count; f++) {
            if (off + 4 > len)
                abort();
            int32_t flen = (int32_t)((uint32_t)p[off] << 24
                                     | (uint32_t)p[off + 1] << 16
                                     | (uint32_t)p[off + 2] << 8
                                     | p[off + 3]);
            off += 4;
            if (flen < -1 || (flen > 0 && (size_t)flen > len - off))
                abort();
            if (flen > 0)
                off += (size_t)flen;
        }
    }
    if (off != len)
        abort();   /* bytes after the trailer */
}

/* ---- the libpq functions the store modules call --------------------------------- */

PGconn *
PQconnectdbParams(const char *const *keywords, const char *const *values,
                  int expand_dbname)
{
    (void)keywords;
    (void)values;
    (void)expand_dbname;
    return &s_conn;
}

PGconn *
PQconnectdb(const char *conninfo)
{
    (void)conninfo;
    return &s_conn;
}

void
PQfinish(PGconn *conn)
{
    (void)conn;
}

ConnStatusType
PQstatus(const PGconn *conn)
{
    return conn ? CONNECTION_OK : CONNECTION_BAD;
}

char *
PQerrorMessage(const PGconn *conn)
{
    (void)conn;
    return "fz_pq: no error";
}

PQnoticeProcessor
PQsetNoticeProcessor(PGconn *conn, PQnoticeProcessor proc, void *arg)
{
    (void)conn;
    (void)proc;
    (void)arg;
    return NULL;
}

PGresult *
PQexec(PGconn *conn, const char *query)
{
    if (conn->in_copy)
        abort();   /* a statement while a COPY is open */
    PGresult *r = s_answer(query, 0, NULL);
    r->commit = strcmp(query, "COMMIT") == 0;
    return r;
}

PGresult *
PQexecParams(PGconn *conn, const char *command, int nParams,
             const Oid *paramTypes, const char *const *paramValues,
             const int *paramLengths, const int *paramFormats,
             int resultFormat)
{
    (void)paramTypes;
    (void)paramLengths;
    (void)paramFormats;
    (void)resultFormat;
    if (conn->in_copy)
        abort();
    /* Text parameters are C strings: read each whole, as libpq does. */
    for (int i = 0; i < nParams; i++)
        if (paramValues[i])
            (void)strlen(paramValues[i]);
    return s_answer(command, nParams, paramValues);
}

/* Statements prepared by name (co_db prepares its hot ones): their
 * text, to answer PQexecPrepared as PQexecParams would. */
#define S_PREPARED_MAX 32
static struct {
    char name[32];
    char *sql;
} s_prepared[S_PREPARED_MAX];

PGresult *
PQprepare(PGconn *conn, const char *stmtName, const char *query,
          int nParams, const Oid *paramTypes)
{
    (void)nParams;
    (void)paramTypes;
    if (conn->in_copy || strlen(stmtName) >= sizeof s_prepared[0].name)
        abort();
    int k = 0;
    while (k < S_PREPARED_MAX && s_prepared[k].sql &&
           strcmp(s_prepared[k].name, stmtName) != 0)
        k++;
    if (k == S_PREPARED_MAX)
        abort();   /* co_db prepares a few, once per connection */
    free(s_prepared[k].sql);
    snprintf(s_prepared[k].name, sizeof s_prepared[k].name, "%s", stmtName);
    s_prepared[k].sql = strdup(query);
    if (!s_prepared[k].sql)
        abort();
    return s_result(PGRES_COMMAND_OK, 0, 0);
}

PGresult *
PQexecPrepared(PGconn *conn, const char *stmtName, int nParams,
               const char *const *paramValues, const int *paramLengths,
               const int *paramFormats, int resultFormat)
{
    for (int k = 0; k < S_PREPARED_MAX && s_prepared[k].sql; k++)
        if (strcmp(s_prepared[k].name, stmtName) == 0)
            return PQexecParams(conn, s_prepared[k].sql, nParams, NULL,
                                paramValues, paramLengths, paramFormats,
                                resultFormat);
    abort();       /* executed before it was prepared */
}

int
PQputCopyData(PGconn *conn, const char *buffer, int nbytes)
{
    if (!conn->in_copy || nbytes < 0)
        abort();
    char *grown = realloc(conn->copy, conn->copy_len + (size_t)nbytes + 1);
    if (!grown)
        abort();
    memcpy(grown + conn->copy_len, buffer, (size_t)nbytes);
    conn->copy = grown;
    conn->copy_len += (size_t)nbytes;
    return 1;
}

int
PQputCopyEnd(PGconn *conn, const char *errormsg)
{
    if (!conn->in_copy)
        abort();
    if (!errormsg)
        s_copy_check((const unsigned char *)conn->copy, conn->copy_len);
    conn->in_copy = false;
    conn->results_left = 1;
    return 1;
}

PGresult *
PQgetResult(PGconn *conn)
{
    if (conn->results_left == 0)
        return NULL;
    conn->results_left--;
    return s_result(PGRES_COMMAND_OK, 0, 0);
}

ExecStatusType
PQresultStatus(const PGresult *res)
{
    return res ? res->status : PGRES_FATAL_ERROR;
}

char *
PQresultErrorField(const PGresult *res, int fieldcode)
{
    (void)res;
    (void)fieldcode;
    return NULL;
}

int
PQntuples(const PGresult *res)
{
    return res ? res->rows : 0;
}

char *
PQgetvalue(const PGresult *res, int row, int col)
{
    return s_cell(res, row, col)->text;
}

int
PQgetisnull(const PGresult *res, int row, int col)
{
    return s_cell(res, row, col)->null;
}

int
PQfnumber(const PGresult *res, const char *name)
{
    if (!res || res->cols == 0)
        return -1;
    if (!res->names)
        return 0;
    size_t n = strlen(name);
    int col = 0;
    for (const char *p = res->names; *p; col++) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, name, n) == 0)
            return col < res->cols ? col : -1;
        p += len + (p[len] == ' ');
    }
    return -1;
}

char *
PQresultErrorMessage(const PGresult *res)
{
    (void)res;
    return "";
}

void
PQreset(PGconn *conn)
{
    (void)conn;
}

char *
PQescapeIdentifier(PGconn *conn, const char *str, size_t len)
{
    (void)conn;
    char *q = malloc(len + 3);
    if (!q)
        abort();
    q[0] = '"';
    memcpy(q + 1, str, len);
    q[len + 1] = '"';
    q[len + 2] = '\0';
    return q;
}

void
PQfreemem(void *ptr)
{
    free(ptr);
}

char *
PQcmdTuples(PGresult *res)
{
    (void)res;
    return "1";
}

char *
PQcmdStatus(PGresult *res)
{
    return res && res->commit ? "COMMIT" : "";
}

void
PQclear(PGresult *res)
{
    free(res);
}
