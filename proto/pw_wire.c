/* pw_wire.c -- Envelope framing; see pw_wire.h and docs/protocol.md. */
#include "pw_wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_err_names[PW_WIRE_ECOUNT] = {
    "ok", "empty", "too_big", "parse", "version", "no_body",
    "unknown_body", "limit", "seq", "no_hello", "field", "store", "nomem",
};

static void s_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

const char *
pw_wire_err_name(int code)
{
    if (code > 0 || -code >= PW_WIRE_ECOUNT)
        return "?";
    return s_err_names[-code];
}

const char *
pw_wire_body_name(Parity__Envelope__BodyCase body)
{
    switch (body) {
    case PARITY__ENVELOPE__BODY__NOT_SET:      return "none";
    case PARITY__ENVELOPE__BODY_HELLO:         return "hello";
    case PARITY__ENVELOPE__BODY_HEARTBEAT:     return "heartbeat";
    case PARITY__ENVELOPE__BODY_CALIBRATION:   return "calibration";
    case PARITY__ENVELOPE__BODY_RUN_START:     return "run_start";
    case PARITY__ENVELOPE__BODY_SAMPLE_BATCH:  return "sample_batch";
    case PARITY__ENVELOPE__BODY_RUN_END:       return "run_end";
    case PARITY__ENVELOPE__BODY_ACK:           return "ack";
    case PARITY__ENVELOPE__BODY_ERROR:         return "error";
    case PARITY__ENVELOPE__BODY_JOB_OFFER:     return "job_offer";
    case PARITY__ENVELOPE__BODY_JOB_CANCEL:    return "job_cancel";
    case PARITY__ENVELOPE__BODY_JOB_STATUS:    return "job_status";
    case PARITY__ENVELOPE__BODY_REQUEST:       return "request";
    case PARITY__ENVELOPE__BODY_REPLY:         return "reply";
    default:                                   return "?";
    }
}

bool
pw_wire_is_data(Parity__Envelope__BodyCase body)
{
    return body == PARITY__ENVELOPE__BODY_CALIBRATION
        || body == PARITY__ENVELOPE__BODY_RUN_START
        || body == PARITY__ENVELOPE__BODY_SAMPLE_BATCH
        || body == PARITY__ENVELOPE__BODY_RUN_END
        || body == PARITY__ENVELOPE__BODY_JOB_STATUS;
}

void
pw_wire_init(Parity__Envelope *env, uint64_t seq)
{
    parity__envelope__init(env);
    env->version = PW_WIRE_VERSION;
    env->seq = seq;
}

int
pw_wire_set_body(Parity__Envelope *env, Parity__Envelope__BodyCase kind,
                 void *body)
{
    switch (kind) {
    case PARITY__ENVELOPE__BODY_HELLO:        env->hello = body; break;
    case PARITY__ENVELOPE__BODY_HEARTBEAT:    env->heartbeat = body; break;
    case PARITY__ENVELOPE__BODY_CALIBRATION:  env->calibration = body; break;
    case PARITY__ENVELOPE__BODY_RUN_START:    env->run_start = body; break;
    case PARITY__ENVELOPE__BODY_SAMPLE_BATCH: env->sample_batch = body; break;
    case PARITY__ENVELOPE__BODY_RUN_END:      env->run_end = body; break;
    case PARITY__ENVELOPE__BODY_ACK:          env->ack = body; break;
    case PARITY__ENVELOPE__BODY_ERROR:        env->error = body; break;
    case PARITY__ENVELOPE__BODY_JOB_OFFER:    env->job_offer = body; break;
    case PARITY__ENVELOPE__BODY_JOB_CANCEL:   env->job_cancel = body; break;
    case PARITY__ENVELOPE__BODY_JOB_STATUS:   env->job_status = body; break;
    case PARITY__ENVELOPE__BODY_REQUEST:      env->request = body; break;
    case PARITY__ENVELOPE__BODY_REPLY:        env->reply = body; break;
    default:
        return PW_WIRE_EUNKNOWN;
    }
    if (!body)
        return PW_WIRE_ENOBODY;
    env->body_case = kind;
    return PW_WIRE_OK;
}

/* Bounds and required fields, shared by pack and unpack so that a sender
 * cannot produce what a receiver would refuse. */
static int
s_check(const Parity__Envelope *env, char *err, size_t errlen)
{
    Parity__Envelope__BodyCase body = env->body_case;

    if (body == PARITY__ENVELOPE__BODY__NOT_SET) {
        s_err(err, errlen, "envelope: no body");
        return PW_WIRE_ENOBODY;
    }
    if (pw_wire_is_data(body) && env->seq == 0) {
        s_err(err, errlen, "envelope: %s with seq 0 (data messages need "
              "seq > 0)", pw_wire_body_name(body));
        return PW_WIRE_ESEQ;
    }
    switch (body) {
    case PARITY__ENVELOPE__BODY_SAMPLE_BATCH:
        if (env->sample_batch->n_samples > PW_WIRE_MAX_BATCH) {
            s_err(err, errlen, "sample_batch: %zu samples (at most %u)",
                  env->sample_batch->n_samples, PW_WIRE_MAX_BATCH);
            return PW_WIRE_ELIMIT;
        }
        if (!env->sample_batch->run_id || !env->sample_batch->run_id[0]) {
            s_err(err, errlen, "sample_batch: empty run_id");
            return PW_WIRE_EFIELD;
        }
        break;
    case PARITY__ENVELOPE__BODY_CALIBRATION:
        if (env->calibration->n_wall_us > PW_WIRE_MAX_CALIBRATION) {
            s_err(err, errlen, "calibration: %zu samples (at most %u)",
                  env->calibration->n_wall_us, PW_WIRE_MAX_CALIBRATION);
            return PW_WIRE_ELIMIT;
        }
        if (!env->calibration->calibration_id
            || !env->calibration->calibration_id[0]) {
            s_err(err, errlen, "calibration: empty calibration_id");
            return PW_WIRE_EFIELD;
        }
        break;
    case PARITY__ENVELOPE__BODY_HELLO:
        if (env->hello->n_suites > PW_WIRE_MAX_SUITES) {
            s_err(err, errlen, "hello: %zu suites (at most %u)",
                  env->hello->n_suites, PW_WIRE_MAX_SUITES);
            return PW_WIRE_ELIMIT;
        }
        if (env->hello->n_tags > PW_WIRE_MAX_TAGS) {
            s_err(err, errlen, "hello: %zu tags (at most %u)",
                  env->hello->n_tags, PW_WIRE_MAX_TAGS);
            return PW_WIRE_ELIMIT;
        }
        break;
    case PARITY__ENVELOPE__BODY_RUN_START:
        if (env->run_start->n_arms > PW_WIRE_MAX_ARMS) {
            s_err(err, errlen, "run_start: %zu arms (at most %u)",
                  env->run_start->n_arms, PW_WIRE_MAX_ARMS);
            return PW_WIRE_ELIMIT;
        }
        if (env->run_start->n_tags > PW_WIRE_MAX_TAGS) {
            s_err(err, errlen, "run_start: %zu tags (at most %u)",
                  env->run_start->n_tags, PW_WIRE_MAX_TAGS);
            return PW_WIRE_ELIMIT;
        }
        if (!env->run_start->run_id || !env->run_start->run_id[0]) {
            s_err(err, errlen, "run_start: empty run_id");
            return PW_WIRE_EFIELD;
        }
        break;
    case PARITY__ENVELOPE__BODY_RUN_END:
        if (!env->run_end->run_id || !env->run_end->run_id[0]) {
            s_err(err, errlen, "run_end: empty run_id");
            return PW_WIRE_EFIELD;
        }
        break;
    default:
        break;
    }
    return PW_WIRE_OK;
}

size_t
pw_wire_packed_size(const Parity__Envelope *env)
{
    return parity__envelope__get_packed_size(env);
}

int
pw_wire_pack(const Parity__Envelope *env, uint8_t *buf, size_t cap,
             size_t *len, char *err, size_t errlen)
{
    int rc = s_check(env, err, errlen);
    if (rc != PW_WIRE_OK)
        return rc;
    size_t need = parity__envelope__get_packed_size(env);
    if (need > cap || need > PW_WIRE_MAX_FRAME) {
        s_err(err, errlen, "pack: %s needs %zu bytes (buffer %zu, frame "
              "limit %u)", pw_wire_body_name(env->body_case), need, cap,
              PW_WIRE_MAX_FRAME);
        return PW_WIRE_ETOOBIG;
    }
    *len = parity__envelope__pack(env, buf);
    return PW_WIRE_OK;
}

int
pw_wire_pack_alloc(const Parity__Envelope *env, uint8_t **out, size_t *len,
                   char *err, size_t errlen)
{
    *out = NULL;
    size_t need = parity__envelope__get_packed_size(env);
    if (need > PW_WIRE_MAX_FRAME) {
        s_err(err, errlen, "pack: %s needs %zu bytes (frame limit %u)",
              pw_wire_body_name(env->body_case), need, PW_WIRE_MAX_FRAME);
        return PW_WIRE_ETOOBIG;
    }
    uint8_t *buf = malloc(need ? need : 1);
    if (!buf) {
        s_err(err, errlen, "pack: malloc(%zu) failed", need);
        return PW_WIRE_ENOMEM;
    }
    int rc = pw_wire_pack(env, buf, need, len, err, errlen);
    if (rc != PW_WIRE_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    return PW_WIRE_OK;
}

int
pw_wire_unpack(const uint8_t *buf, size_t len, size_t max,
               Parity__Envelope **out, uint64_t *seq_out,
               char *err, size_t errlen)
{
    Parity__Envelope *env = NULL;
    int rc;

    *out = NULL;
    if (seq_out)
        *seq_out = 0;
    if (max == 0 || max > PW_WIRE_MAX_FRAME)
        max = PW_WIRE_MAX_FRAME;
    if (len == 0) {
        s_err(err, errlen, "unpack: empty frame");
        return PW_WIRE_EEMPTY;
    }
    if (len > max) {
        s_err(err, errlen, "unpack: frame of %zu bytes (limit %zu)", len,
              max);
        return PW_WIRE_ETOOBIG;
    }
    env = parity__envelope__unpack(NULL, len, buf);
    if (!env) {
        s_err(err, errlen, "unpack: %zu bytes are not a parity.Envelope "
              "(garbage or truncated)", len);
        return PW_WIRE_EPARSE;
    }
    if (seq_out)
        *seq_out = env->seq;
    if (env->version != PW_WIRE_VERSION) {
        s_err(err, errlen, "unpack: protocol version %u (this side speaks "
              "%u)", env->version, PW_WIRE_VERSION);
        rc = PW_WIRE_EVERSION;
        goto fail;
    }
    if (env->body_case == PARITY__ENVELOPE__BODY__NOT_SET
        && env->base.n_unknown_fields > 0) {
        s_err(err, errlen, "unpack: unknown body (field %u)",
              env->base.unknown_fields[0].tag);
        rc = PW_WIRE_EUNKNOWN;
        goto fail;
    }
    rc = s_check(env, err, errlen);
    if (rc != PW_WIRE_OK)
        goto fail;
    *out = env;
    return PW_WIRE_OK;
fail:
    parity__envelope__free_unpacked(env, NULL);
    return rc;
}

void
pw_wire_free(Parity__Envelope **env)
{
    if (!env || !*env)
        return;
    parity__envelope__free_unpacked(*env, NULL);
    *env = NULL;
}

int
pw_wire_pack_ack(uint64_t acked_seq, uint8_t *buf, size_t cap, size_t *len)
{
    Parity__Envelope env;
    Parity__Ack ack = PARITY__ACK__INIT;
    ack.seq = acked_seq;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_ACK, &ack);
    return pw_wire_pack(&env, buf, cap, len, NULL, 0);
}

int
pw_wire_pack_error(int code, const char *message, uint64_t about_seq,
                   uint8_t *buf, size_t cap, size_t *len)
{
    Parity__Envelope env;
    Parity__Error e = PARITY__ERROR__INIT;
    e.code = (uint32_t)(code < 0 ? -code : code);
    e.message = (char *)(message ? message : "");
    e.seq = about_seq;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_ERROR, &e);
    return pw_wire_pack(&env, buf, cap, len, NULL, 0);
}

int
pw_wire_pack_heartbeat(int64_t sent_at_us, uint32_t spool_messages,
                       const char *state, const char *job_id,
                       uint8_t *buf, size_t cap, size_t *len)
{
    Parity__Envelope env;
    Parity__Heartbeat hb = PARITY__HEARTBEAT__INIT;
    hb.sent_at_us = sent_at_us;
    hb.spool_messages = spool_messages;
    hb.state = (char *)(state ? state : "");
    hb.job_id = (char *)(job_id ? job_id : "");
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_HEARTBEAT, &hb);
    return pw_wire_pack(&env, buf, cap, len, NULL, 0);
}
