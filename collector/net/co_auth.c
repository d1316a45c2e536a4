/* co_auth.c -- ZAP handler; see co_auth.h. */
#include "co_auth.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <czmq.h>
#include <zmq.h>

#include "co_dirstamp.h"
#include "co_enroll.h"
#include "pw_clock.h"
#include "pw_err.h"

#define CO_AUTH_ENDPOINT "inproc://zeromq.zap.01"
/* A ZAP request has 6 frames (7 with a CURVE key is still 7 at most for
 * the mechanisms we know); anything longer is malformed. */
#define CO_AUTH_MAX_FRAMES 8
#define CO_AUTH_FRAME_MAX 256

struct co_auth {
    void *rep;
    char *dir;
    co_dirstamp_t stamp;          /* when dir is read again */
    char *dir2;                   /* co_auth_add_dir; NULL when none */
    co_dirstamp_t stamp2;
    char (*keys)[41];
    size_t n_keys;
    uint64_t loads;               /* s_load calls: verdicts may change */
    co_keys_t *db_keys;           /* co_auth_set_keys; NULL: files only */
    bool enroll;
};

static bool
s_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int s_load_dir(co_auth_t *a, const char *dir, co_dirstamp_t *stamp,
                      char *err, size_t errlen);

/* Read every public certificate in the directory (and the second one). */
static int
s_load(co_auth_t *a, char *err, size_t errlen)
{
    a->n_keys = 0;
    a->loads++;
    if (s_load_dir(a, a->dir, &a->stamp, err, errlen) != 0)
        return -1;
    return a->dir2 ? s_load_dir(a, a->dir2, &a->stamp2, err, errlen) : 0;
}

static int
s_load_dir(co_auth_t *a, const char *dir, co_dirstamp_t *stamp, char *err,
           size_t errlen)
{
    struct stat st;
    DIR *d;
    struct dirent *e;

    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        pw_err(err, errlen, "allow-list %s: %s", dir,
               errno ? strerror(errno) : "not a directory");
        return -1;
    }
    if (!(d = opendir(dir))) {
        pw_err(err, errlen, "opendir %s: %s", dir, strerror(errno));
        return -1;
    }
    struct timespec newest = st.st_mtim;
    while ((e = readdir(d)) != NULL && a->n_keys < CO_AUTH_MAX_KEYS) {
        char path[4096];
        struct stat fst;
        if (e->d_name[0] == '.' || s_ends_with(e->d_name, "_secret"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &fst) != 0 || !S_ISREG(fst.st_mode))
            continue;
        co_dirstamp_later(&newest, &fst.st_mtim);
        zcert_t *cert = zcert_load(path);
        if (!cert)
            continue;
        snprintf(a->keys[a->n_keys++], 41, "%s", zcert_public_txt(cert));
        zcert_destroy(&cert);
    }
    closedir(d);
    co_dirstamp_note(stamp, &st.st_mtim, &newest, pw_clock_mono_ms(),
                     pw_clock_unix_us());
    return 0;
}

int
co_auth_add_dir(co_auth_t *a, const char *dir, char *err, size_t errlen)
{
    free(a->dir2);
    if (!(a->dir2 = strdup(dir))) {
        pw_err(err, errlen, "co_auth: out of memory");
        return -1;
    }
    return s_load(a, err, errlen);
}

co_auth_t *
co_auth_new(void *ctx, const char *allow_dir, char *err, size_t errlen)
{
    co_auth_t *a = calloc(1, sizeof *a);
    if (!a) {
        pw_err(err, errlen, "calloc co_auth: out of memory");
        return NULL;
    }
    a->dir = strdup(allow_dir);
    a->keys = calloc(CO_AUTH_MAX_KEYS, sizeof *a->keys);
    if (!a->dir || !a->keys) {
        pw_err(err, errlen, "co_auth: out of memory");
        goto fail;
    }
    if (s_load(a, err, errlen) != 0)
        goto fail;
    a->rep = zmq_socket(ctx, ZMQ_REP);
    if (!a->rep) {
        pw_err(err, errlen, "zmq_socket(ZMQ_REP): %s", zmq_strerror(errno));
        goto fail;
    }
    int linger = 0;
    zmq_setsockopt(a->rep, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(a->rep, CO_AUTH_ENDPOINT) != 0) {
        pw_err(err, errlen, "zmq_bind(%s): %s", CO_AUTH_ENDPOINT,
               zmq_strerror(errno));
        goto fail;
    }
    return a;
fail:
    co_auth_destroy(&a);
    return NULL;
}

void *
co_auth_socket(co_auth_t *auth)
{
    return auth->rep;
}

size_t
co_auth_key_count(const co_auth_t *auth)
{
    return auth->n_keys;
}

void
co_auth_set_keys(co_auth_t *auth, co_keys_t *keys, bool enroll)
{
    auth->db_keys = keys;
    auth->enroll = enroll;
    auth->loads++;
}

uint64_t
co_auth_generation(co_auth_t *auth)
{
    /* Both only grow, so their sum changes when either does. */
    return auth->loads + (auth->db_keys
                          ? co_keys_generation(auth->db_keys) : 0);
}

/* Read the directories again when co_dirstamp says so; missing: a key
 * asked about is in no file of the last read. */
static void
s_refresh(co_auth_t *a, bool missing)
{
    struct stat st;
    int64_t now = pw_clock_mono_ms();
    if ((stat(a->dir, &st) == 0
         && co_dirstamp_due(&a->stamp, &st.st_mtim, now, missing))
        || (a->dir2 && stat(a->dir2, &st) == 0
            && co_dirstamp_due(&a->stamp2, &st.st_mtim, now, missing)))
        s_load(a, NULL, 0);
}

void
co_auth_refresh(co_auth_t *a)
{
    s_refresh(a, false);
}

static bool
s_in_files(const co_auth_t *a, const char *key)
{
    for (size_t i = 0; i < a->n_keys; i++)
        if (memcmp(a->keys[i], key, 41) == 0)
            return true;
    return false;
}

co_auth_verdict_t
co_auth_verdict(co_auth_t *a, const char *key)
{
    co_key_state_t st = a->db_keys ? co_keys_get(a->db_keys, key)
                                   : CO_KEY_UNKNOWN;
    /* A decision to shut a key out wins over its file. */
    if (st == CO_KEY_REJECTED || st == CO_KEY_REVOKED)
        return CO_AUTH_DENIED;
    if (st == CO_KEY_APPROVED || s_in_files(a, key))
        return CO_AUTH_ALLOWED;
    return CO_AUTH_PENDING;
}

static void
s_reply(co_auth_t *a, const char *reqid, size_t reqid_len, const char *code,
        const char *text, const char *user)
{
    zmq_send(a->rep, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(a->rep, reqid, reqid_len, ZMQ_SNDMORE);
    zmq_send(a->rep, code, strlen(code), ZMQ_SNDMORE);
    zmq_send(a->rep, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(a->rep, user, strlen(user), ZMQ_SNDMORE);
    zmq_send(a->rep, "", 0, 0);
}

int
co_auth_handle(co_auth_t *a, char *key_out, char *why, size_t whylen)
{
    char frames[CO_AUTH_MAX_FRAMES][CO_AUTH_FRAME_MAX];
    size_t lens[CO_AUTH_MAX_FRAMES];
    size_t n = 0;
    int more = 1;
    size_t more_len = sizeof more;

    if (key_out)
        key_out[0] = '\0';
    while (more) {
        char buf[CO_AUTH_FRAME_MAX];
        int rc = zmq_recv(a->rep, buf, sizeof buf, n == 0 ? ZMQ_DONTWAIT : 0);
        if (rc < 0)
            return -1;
        if (n < CO_AUTH_MAX_FRAMES) {
            lens[n] = (size_t)rc < sizeof buf ? (size_t)rc : sizeof buf;
            memcpy(frames[n], buf, lens[n]);
        }
        n++;
        zmq_getsockopt(a->rep, ZMQ_RCVMORE, &more, &more_len);
    }
    /* version, request id, domain, address, routing id, mechanism, creds */
    if (n < 6 || n > CO_AUTH_MAX_FRAMES || lens[0] != 3
        || memcmp(frames[0], "1.0", 3) != 0) {
        /* A REP socket must answer before the next request. */
        s_reply(a, n > 1 ? frames[1] : "", n > 1 ? lens[1] : 0, "500",
                "malformed ZAP request", "");
        pw_err(why, whylen, "malformed ZAP request (%zu frames)", n);
        return -1;
    }
    char mech[16] = "";
    memcpy(mech, frames[5], lens[5] < 15 ? lens[5] : 15);
    if (strcmp(mech, "CURVE") != 0 || n != 7 || lens[6] != 32) {
        s_reply(a, frames[1], lens[1], "400", "CURVE required", "");
        pw_err(why, whylen, "mechanism %s refused (CURVE required)",
               mech[0] ? mech : "?");
        return 0;
    }
    char key[41];
    if (!zmq_z85_encode(key, (const uint8_t *)frames[6], 32)) {
        s_reply(a, frames[1], lens[1], "400", "bad key", "");
        pw_err(why, whylen, "client key not encodable");
        return 0;
    }
    if (key_out)
        memcpy(key_out, key, 41);
    /* Keys added or removed since the last request take effect now. */
    co_auth_refresh(a);
    co_auth_verdict_t v = co_auth_verdict(a, key);
    if (v == CO_AUTH_PENDING) {   /* its file may be what a read missed */
        s_refresh(a, true);
        v = co_auth_verdict(a, key);
    }
    co_key_state_t st = a->db_keys ? co_keys_get(a->db_keys, key)
                                   : CO_KEY_UNKNOWN;
    bool room = st == CO_KEY_PENDING || !a->db_keys
             || co_keys_pending(a->db_keys) < CO_ENROLL_MAX_PENDING;
    if (v == CO_AUTH_ALLOWED || (v == CO_AUTH_PENDING && a->enroll && room)) {
        s_reply(a, frames[1], lens[1], "200", "OK", key);
        return 1;
    }
    if (v == CO_AUTH_DENIED) {
        s_reply(a, frames[1], lens[1], "400", "key refused", "");
        pw_err(why, whylen, "client key %s was %s (parity hosts)", key,
               co_key_state_name(st));
    } else if (a->enroll) {
        s_reply(a, frames[1], lens[1], "400", "too many keys pending", "");
        pw_err(why, whylen, "client key %s refused: %d keys wait for "
               "approval already (parity hosts --pending)", key,
               CO_ENROLL_MAX_PENDING);
    } else {
        s_reply(a, frames[1], lens[1], "400", "key not in the allow-list",
                "");
        pw_err(why, whylen, "client key %s not in the allow-list %s", key,
               a->dir);
    }
    return 0;
}

void
co_auth_destroy(co_auth_t **auth)
{
    if (!auth || !*auth)
        return;
    co_auth_t *a = *auth;
    if (a->rep)
        zmq_close(a->rep);
    free(a->keys);
    free(a->dir);
    free(a->dir2);
    free(a);
    *auth = NULL;
}
