/* co_client.h -- a small protocol client for the collector's tests and the
 * ingest benchmark: a CURVE DEALER that speaks docs/protocol.md through
 * pw_wire, and helpers to start parity-collector and read its log.
 *
 * Header-only (static functions) so that each test program includes it
 * once. Sockets belong to the caller (zmq_close); envelopes returned are
 * the caller's (pw_wire_free).
 */
#ifndef CO_CLIENT_H
#define CO_CLIENT_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>
#include <zmq.h>

#include "pw_wire.h"

/* Heartbeat interval of the test client while it waits. */
#define CC_BEAT_MS 100

static inline int64_t
cc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t
cc_unix_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A DEALER connected to endpoint. With cert NULL: no CURVE at all. With
 * server_key NULL and cert set: CURVE against that public key (Z85). */
static inline void *
cc_dealer(void *ctx, const char *endpoint, zcert_t *cert,
          const char *server_key)
{
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0, hwm = 1000, immediate = 1, sndtimeo = 2000;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    /* With ZMQ_IMMEDIATE a send to a refused peer would block forever. */
    zmq_setsockopt(s, ZMQ_SNDTIMEO, &sndtimeo, sizeof sndtimeo);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_IMMEDIATE, &immediate, sizeof immediate);
    if (cert) {
        uint8_t sk[32];
        zmq_z85_decode(sk, server_key);
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, sk, 32);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, zcert_public_key(cert), 32);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, zcert_secret_key(cert), 32);
    }
    zmq_connect(s, endpoint);
    return s;
}

static inline int
cc_send(void *s, const Parity__Envelope *env)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char err[256];
    if (pw_wire_pack_alloc(env, &buf, &len, err, sizeof err) != PW_WIRE_OK)
        return -1;
    int rc = zmq_send(s, buf, len, 0);
    free(buf);
    return rc < 0 ? -1 : 0;
}

static inline int
cc_send_raw(void *s, const void *buf, size_t len)
{
    return zmq_send(s, buf, len, 0) < 0 ? -1 : 0;
}

/* The next message that is not a Heartbeat, within timeout_ms; NULL on
 * timeout. *raw_bad (may be NULL) counts frames that did not unpack. */
static inline Parity__Envelope *
cc_recv(void *s, int timeout_ms)
{
    int64_t until = cc_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = until - cc_now_ms();
        if (left < 0)
            left = 0;
        /* Like an agent, beat while waiting (every CC_BEAT_MS), so a test
         * that waits never looks like a silent peer. */
        static __thread int64_t last_beat_ms;
        uint8_t hb[128];
        size_t hlen;
        if (cc_now_ms() - last_beat_ms >= CC_BEAT_MS
            && pw_wire_pack_heartbeat(cc_unix_us(), 0, "idle", "", hb,
                                      sizeof hb, &hlen) == PW_WIRE_OK) {
            zmq_send(s, hb, hlen, ZMQ_DONTWAIT);
            last_beat_ms = cc_now_ms();
        }
        zmq_pollitem_t it = { s, 0, ZMQ_POLLIN, 0 };
        int ready = zmq_poll(&it, 1, (long)(left < CC_BEAT_MS ? left
                                                              : CC_BEAT_MS));
        if (ready < 0)
            return NULL;
        if (ready == 0) {
            if (left == 0)
                return NULL;
            continue;
        }
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            continue;
        }
        Parity__Envelope *env = NULL;
        int rc = pw_wire_unpack(zmq_msg_data(&m), zmq_msg_size(&m), 0, &env,
                                NULL, NULL, 0);
        zmq_msg_close(&m);
        if (rc == PW_WIRE_OK
            && env->body_case != PARITY__ENVELOPE__BODY_HEARTBEAT)
            return env;
        pw_wire_free(&env);
        if (left == 0)
            return NULL;
    }
}

/* One Heartbeat on s, not waiting (keeps a second socket alive while a
 * test waits on another one). */
static inline void
cc_beat(void *s)
{
    uint8_t hb[128];
    size_t hlen;
    if (pw_wire_pack_heartbeat(cc_unix_us(), 0, "idle", "", hb, sizeof hb,
                               &hlen) == PW_WIRE_OK)
        zmq_send(s, hb, hlen, ZMQ_DONTWAIT);
}

/* Wait for Ack{seq}; other messages are skipped. */
static inline bool
cc_wait_ack(void *s, uint64_t seq, int timeout_ms)
{
    int64_t until = cc_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = until - cc_now_ms();
        if (left <= 0)
            return false;
        Parity__Envelope *env = cc_recv(s, (int)left);
        if (!env)
            return false;
        bool hit = env->body_case == PARITY__ENVELOPE__BODY_ACK
                   && env->ack->seq == seq;
        pw_wire_free(&env);
        if (hit)
            return true;
    }
}

static inline int
cc_hello(void *s, const char *name)
{
    Parity__Envelope env;
    Parity__Hello h = PARITY__HELLO__INIT;
    h.agent_name = (char *)name;
    h.agent_version = "test";
    h.environment_json = "{\"os\":\"linux\"}";
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_HELLO, &h);
    return cc_send(s, &env);
}

/* Send a Request with args (JSON text, NULL for {}) and return its
 * Reply (caller frees), or NULL. */
static inline Parity__Envelope *
cc_request_args(void *s, uint64_t id, const char *command, const char *args,
                int timeout_ms)
{
    Parity__Envelope env;
    Parity__Request r = PARITY__REQUEST__INIT;
    r.request_id = id;
    r.command = (char *)command;
    r.args_json = (char *)(args ? args : "{}");
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REQUEST, &r);
    if (cc_send(s, &env) != 0)
        return NULL;
    int64_t until = cc_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = until - cc_now_ms();
        if (left <= 0)
            return NULL;
        Parity__Envelope *e = cc_recv(s, (int)left);
        if (!e)
            return NULL;
        if (e->body_case == PARITY__ENVELOPE__BODY_REPLY
            && e->reply->request_id == id)
            return e;
        pw_wire_free(&e);
    }
}

/* Send a Request and return its Reply (caller frees), or NULL. */
static inline Parity__Envelope *
cc_request(void *s, uint64_t id, const char *command, int timeout_ms)
{
    return cc_request_args(s, id, command, NULL, timeout_ms);
}

/* One integer of the collector's `stats` answer, or -1. */
static inline long
cc_stat(void *s, const char *name)
{
    static uint64_t id = 100;
    Parity__Envelope *e = cc_request(s, ++id, "stats", 3000);
    json_t *j = NULL;
    if (e && e->reply->status == 0)
        j = json_loads(e->reply->body_json, 0, NULL);
    pw_wire_free(&e);
    long v = j ? (long)json_integer_value(json_object_get(j, name)) : -1;
    json_decref(j);
    return v;
}

/* ---- the collector process ------------------------------------------- */

typedef struct {
    pid_t pid;
    char log_path[512];
    char endpoint[256];
    char public_key[41];
} cc_collector_t;

/* Start exe with argv (NULL-terminated, exe first), stderr to log_path,
 * and wait up to timeout_ms for its "event=listening" line. */
static inline int
cc_collector_start(cc_collector_t *c, char *const *argv, const char *log_path,
                   int timeout_ms)
{
    memset(c, 0, sizeof *c);
    snprintf(c->log_path, sizeof c->log_path, "%s", log_path);
    FILE *trunc = fopen(log_path, "w");
    if (trunc)
        fclose(trunc);
    c->pid = fork();
    if (c->pid < 0)
        return -1;
    if (c->pid == 0) {
        FILE *f = freopen(log_path, "a", stderr);
        (void)f;
        execv(argv[0], argv);
        _exit(127);
    }
    int64_t until = cc_now_ms() + timeout_ms;
    while (cc_now_ms() < until) {
        char line[4096];
        FILE *f = fopen(log_path, "r");
        while (f && fgets(line, sizeof line, f)) {
            const char *e = strstr(line, "event=listening endpoint=");
            const char *k = strstr(line, "public_key=");
            if (e && k) {
                sscanf(e + strlen("event=listening endpoint="), "%255s",
                       c->endpoint);
                memcpy(c->public_key, k + strlen("public_key="), 40);
                c->public_key[40] = '\0';
                fclose(f);
                return 0;
            }
        }
        if (f)
            fclose(f);
        int st;
        if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
            c->pid = 0;
            return -1;
        }
        usleep(50000);
    }
    return -1;
}

/* Send sig and wait up to timeout_ms; returns the exit status, or -1 for
 * a kill by signal or a timeout (then it is killed with SIGKILL). */
static inline int
cc_collector_stop(cc_collector_t *c, int sig, int timeout_ms)
{
    if (c->pid <= 0)
        return -1;
    kill(c->pid, sig);
    int64_t until = cc_now_ms() + timeout_ms;
    int st;
    while (cc_now_ms() < until) {
        if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
            c->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        usleep(20000);
    }
    kill(c->pid, SIGKILL);
    waitpid(c->pid, &st, 0);
    c->pid = 0;
    return -1;
}

/* ---- the collector's files ------------------------------------------- */

/* What every collector test starts from, under one new directory: an
 * empty allow-list directory, the paths of the data dir and the log (the
 * collector makes those), and the collector's CURVE key pair, saved. */
typedef struct {
    char dir[64];
    char allow[128];      /* made; cc_files_allow puts keys in it */
    char datadir[128];    /* --data-dir */
    char log[128];        /* collector.log */
    char key[128];        /* the secret file, what --key takes */
    char conninfo[192];   /* libpq, to the collector's own database */
    zcert_t *server;      /* the pair saved; cc_files_remove destroys it */
} cc_files_t;

/* Make the directory from tmpl ("/tmp/parity-NAME-XXXXXX") and what is
 * under it. 0, or -1 after perror. Its mode is 0711: as root the
 * collector runs its database server as postgres, which must reach
 * data/. */
static inline int
cc_files_make(cc_files_t *f, const char *tmpl)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", tmpl);
    if (!mkdtemp(f->dir)) {
        perror("mkdtemp");
        return -1;
    }
    chmod(f->dir, 0711);
    snprintf(f->allow, sizeof f->allow, "%s/allow", f->dir);
    snprintf(f->datadir, sizeof f->datadir, "%s/data", f->dir);
    snprintf(f->log, sizeof f->log, "%s/collector.log", f->dir);
    snprintf(f->conninfo, sizeof f->conninfo,
             "host=%s/pg dbname=parity user=parity", f->datadir);
    if (mkdir(f->allow, 0755) != 0) {
        perror("mkdir");
        return -1;
    }
    /* zcert_save writes KEY (public) and KEY_secret; --key takes the
     * second. */
    char pub[128];
    snprintf(pub, sizeof pub, "%s/collector", f->dir);
    snprintf(f->key, sizeof f->key, "%s/collector_secret", f->dir);
    f->server = zcert_new();
    if (!f->server || zcert_save(f->server, pub) != 0) {
        perror("zcert_save");
        return -1;
    }
    return 0;
}

/* Put cert's public key in the allow-list as name. 0 or -1. */
static inline int
cc_files_allow(const cc_files_t *f, const char *name, zcert_t *cert)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->allow, name);
    return zcert_save_public(cert, path);
}

/* n new key pairs in certs (the caller destroys them), each allowed as
 * prefix and its index ("s00", "s01", ...). 0, or -1 when one failed. */
static inline int
cc_files_allow_new(const cc_files_t *f, const char *prefix, int n,
                   zcert_t **certs)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%02d", prefix, i);
        certs[i] = zcert_new();
        if (!certs[i] || cc_files_allow(f, name, certs[i]) != 0)
            rc = -1;
    }
    return rc;
}

/* Destroy the key pair; with remove, delete the directory too (a failed
 * test keeps it to be read). 0, or -1 when the removal failed. */
static inline int
cc_files_remove(cc_files_t *f, bool remove)
{
    zcert_destroy(&f->server);
    if (!remove)
        return 0;
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* True when the log holds a line with every one of the given needles
 * (NULL-terminated). */
static inline bool
cc_log_has(const char *log_path, const char *a, const char *b)
{
    char line[8192];
    bool hit = false;
    FILE *f = fopen(log_path, "r");
    while (f && !hit && fgets(line, sizeof line, f))
        hit = strstr(line, a) && (!b || strstr(line, b));
    if (f)
        fclose(f);
    return hit;
}

/* How many log lines hold both needles (b may be NULL). */
static inline int
cc_log_count(const char *log_path, const char *a, const char *b)
{
    char line[8192];
    int n = 0;
    FILE *f = fopen(log_path, "r");
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, a) && (!b || strstr(line, b));
    if (f)
        fclose(f);
    return n;
}

#endif
