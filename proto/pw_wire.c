/* pw_wire.c -- Envelope framing; see pw_wire.h and docs/protocol.md. */
#include "pw_wire.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_err.h"

static const char *const s_err_names[PW_WIRE_ECOUNT] = {
    "ok", "empty", "too_big", "parse", "version", "no_body",
    "unknown_body", "limit", "seq", "no_hello", "field", "store", "nomem",
    "budget", "dependency",
};

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

size_t
pw_wire_utf8_valid(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        unsigned char lo = 0x80, hi = 0xbf;   /* the second byte's range */
        if (c < 0x80)
            n = 1;
        else if (c >= 0xc2 && c <= 0xdf)
            n = 2;
        else if (c >= 0xe0 && c <= 0xef) {
            n = 3;
            lo = c == 0xe0 ? 0xa0 : 0x80;     /* overlong */
            hi = c == 0xed ? 0x9f : 0xbf;     /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            lo = c == 0xf0 ? 0x90 : 0x80;     /* overlong */
            hi = c == 0xf4 ? 0x8f : 0xbf;     /* above U+10FFFF */
        } else
            return i;
        if (n > len - i)
            return i;
        if (n > 1 && (s[i + 1] < lo || s[i + 1] > hi))
            return i;
        for (size_t k = 2; k < n; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
        i += n;
    }
    return len;
}

/* A required id: present, and UTF-8 (every answer about the message
 * quotes it, and the database would refuse it). */
static int
s_check_id(const char *body, const char *field, const char *id, char *err,
           size_t errlen)
{
    if (!id || !id[0]) {
        pw_err(err, errlen, "%s: empty %s", body, field);
        return PW_WIRE_EFIELD;
    }
    if (pw_wire_utf8_valid(id, strlen(id)) != strlen(id)) {
        pw_err(err, errlen, "%s: %s is not UTF-8", body, field);
        return PW_WIRE_EFIELD;
    }
    return PW_WIRE_OK;
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
        pw_err(err, errlen, "envelope: no body");
        return PW_WIRE_ENOBODY;
    }
    if (pw_wire_is_data(body) && env->seq == 0) {
        pw_err(err, errlen, "envelope: %s with seq 0 (data messages need "
               "seq > 0)", pw_wire_body_name(body));
        return PW_WIRE_ESEQ;
    }
    switch (body) {
    case PARITY__ENVELOPE__BODY_SAMPLE_BATCH:
        if (env->sample_batch->n_samples > PW_WIRE_MAX_BATCH) {
            pw_err(err, errlen, "sample_batch: %zu samples (at most %u)",
                   env->sample_batch->n_samples, PW_WIRE_MAX_BATCH);
            return PW_WIRE_ELIMIT;
        }
        return s_check_id("sample_batch", "run_id",
                          env->sample_batch->run_id, err, errlen);
    case PARITY__ENVELOPE__BODY_CALIBRATION:
        if (env->calibration->n_wall_us > PW_WIRE_MAX_CALIBRATION) {
            pw_err(err, errlen, "calibration: %zu samples (at most %u)",
                   env->calibration->n_wall_us, PW_WIRE_MAX_CALIBRATION);
            return PW_WIRE_ELIMIT;
        }
        return s_check_id("calibration", "calibration_id",
                          env->calibration->calibration_id, err, errlen);
    case PARITY__ENVELOPE__BODY_HELLO:
        if (env->hello->n_suites > PW_WIRE_MAX_SUITES) {
            pw_err(err, errlen, "hello: %zu suites (at most %u)",
                   env->hello->n_suites, PW_WIRE_MAX_SUITES);
            return PW_WIRE_ELIMIT;
        }
        if (env->hello->n_tags > PW_WIRE_MAX_TAGS) {
            pw_err(err, errlen, "hello: %zu tags (at most %u)",
                   env->hello->n_tags, PW_WIRE_MAX_TAGS);
            return PW_WIRE_ELIMIT;
        }
        break;
    case PARITY__ENVELOPE__BODY_RUN_START:
        if (env->run_start->n_arms > PW_WIRE_MAX_ARMS) {
            pw_err(err, errlen, "run_start: %zu arms (at most %u)",
                   env->run_start->n_arms, PW_WIRE_MAX_ARMS);
            return PW_WIRE_ELIMIT;
        }
        if (env->run_start->n_tags > PW_WIRE_MAX_TAGS) {
            pw_err(err, errlen, "run_start: %zu tags (at most %u)",
                   env->run_start->n_tags, PW_WIRE_MAX_TAGS);
            return PW_WIRE_ELIMIT;
        }
        return s_check_id("run_start", "run_id", env->run_start->run_id,
                          err, errlen);
    case PARITY__ENVELOPE__BODY_RUN_END:
        return s_check_id("run_end", "run_id", env->run_end->run_id, err,
                          errlen);
    default:
        break;
    }
    return PW_WIRE_OK;
}

/* ---- Reading the wire format without unpacking ----------------------
 * The same limits as protobuf-c 1.4's parser, so that what scans here
 * is what it would scan: a tag is at most 5 bytes and its field number is
 * not 0, a varint at most 10 bytes, a length prefix at most 5 bytes and
 * within the frame; wire types 0, 1, 2 and 5 only (no groups). */

/* One field as the scanner sees it. */
typedef struct {
    uint32_t number;        /* field number */
    unsigned wire;          /* wire type: 0, 1, 2 or 5 */
    uint64_t varint;        /* wire type 0: its value */
    const uint8_t *data;    /* wire type 2: its bytes */
    size_t len;             /* wire type 2: how many */
} s_field_t;

static bool
s_varint(const uint8_t *d, size_t len, size_t *at, unsigned max_bytes,
         uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned n = 0; n < max_bytes && *at < len; n++) {
        uint8_t b = d[(*at)++];
        v |= (uint64_t)(b & 0x7f) << (7 * n);
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* The field at d[*at..len); *at moves past it. false: it does not scan. */
static bool
s_next_field(const uint8_t *d, size_t len, size_t *at, s_field_t *f)
{
    uint64_t tag, n;
    if (!s_varint(d, len, at, 5, &tag) || (tag >> 3) == 0
        || (tag >> 3) > UINT32_MAX)
        return false;
    f->number = (uint32_t)(tag >> 3);
    f->wire = (unsigned)(tag & 7);
    switch (f->wire) {
    case 0:
        return s_varint(d, len, at, 10, &f->varint);
    case 1:
    case 5:
        n = f->wire == 1 ? 8 : 4;
        if (n > len - *at)
            return false;
        *at += n;
        return true;
    case 2:
        if (!s_varint(d, len, at, 5, &n) || n > len - *at)
            return false;
        f->data = d + *at;
        f->len = (size_t)n;
        *at += (size_t)n;
        return true;
    default:
        return false;
    }
}

/* The repeated fields with a documented bound (docs/protocol.md section
 * 7), by the body that holds them; s_check says the same after unpack. */
typedef struct {
    Parity__Envelope__BodyCase body;
    uint32_t number;        /* field number inside the body */
    bool doubles;           /* repeated double: packed runs count len/8 */
    unsigned max;
    const char *what;       /* as s_check names it */
} s_bound_t;

static const s_bound_t s_bounds[] = {
    { PARITY__ENVELOPE__BODY_SAMPLE_BATCH, 3, false, PW_WIRE_MAX_BATCH,
      "samples" },
    { PARITY__ENVELOPE__BODY_CALIBRATION, 2, true, PW_WIRE_MAX_CALIBRATION,
      "samples" },
    { PARITY__ENVELOPE__BODY_HELLO, 5, false, PW_WIRE_MAX_SUITES,
      "suites" },
    { PARITY__ENVELOPE__BODY_HELLO, 6, false, PW_WIRE_MAX_TAGS, "tags" },
    { PARITY__ENVELOPE__BODY_RUN_START, 5, false, PW_WIRE_MAX_ARMS,
      "arms" },
    { PARITY__ENVELOPE__BODY_RUN_START, 6, false, PW_WIRE_MAX_TAGS,
      "tags" },
};
#define S_NBOUNDS (sizeof s_bounds / sizeof s_bounds[0])

/* Entries of field b->number in one encoded body. A part that does not
 * scan ends the count: unpacking will refuse the frame anyway. */
static size_t
s_count(const uint8_t *d, size_t len, const s_bound_t *b)
{
    size_t at = 0, n = 0;
    s_field_t f;
    while (at < len && s_next_field(d, len, &at, &f)) {
        if (f.number != b->number)
            continue;
        if (b->doubles && f.wire == 2)
            n += f.len / 8;
        else
            n++;
    }
    return n;
}

static bool
s_is_body_field(uint32_t number)
{
    return number >= PARITY__ENVELOPE__BODY_HELLO
        && number <= PARITY__ENVELOPE__BODY_REPLY
        && strcmp(pw_wire_body_name((Parity__Envelope__BodyCase)number),
                  "?") != 0;
}

/* Walk the Envelope's top level: the last body field, seq and version,
 * as protobuf-c keeps them. With counts (S_NBOUNDS entries), also count the
 * bounded fields of the body that wins: protobuf-c 1.4 frees a oneof
 * member when another body field follows, even a copy of the same field
 * (it does not merge them), so only the last body field's entries count. */
static int
s_walk_v(const uint8_t *buf, size_t len, int *body_out, uint64_t *seq_out,
         uint64_t *version_out, size_t *counts)
{
    size_t at = 0;
    int body = 0;
    uint64_t seq = 0, version = 0;
    s_field_t f;

    while (at < len) {
        if (!s_next_field(buf, len, &at, &f))
            return PW_WIRE_EPARSE;
        if (f.number == 1 || f.number == 2) {
            if (f.wire != 0)
                return PW_WIRE_EPARSE;
            if (f.number == 2)
                seq = f.varint;
            else
                version = f.varint;
            continue;
        }
        if (!s_is_body_field(f.number))
            continue;
        if (f.wire != 2)
            return PW_WIRE_EPARSE;
        if (counts)
            memset(counts, 0, S_NBOUNDS * sizeof *counts);
        body = (int)f.number;
        for (size_t k = 0; counts && k < S_NBOUNDS; k++)
            if ((int)s_bounds[k].body == body)
                counts[k] += s_count(f.data, f.len, &s_bounds[k]);
    }
    *body_out = body;
    *seq_out = seq;
    if (version_out)
        *version_out = version;
    return PW_WIRE_OK;
}

/* s_walk_v without the version. */
static int
s_walk(const uint8_t *buf, size_t len, int *body_out, uint64_t *seq_out,
       size_t *counts)
{
    return s_walk_v(buf, len, body_out, seq_out, NULL, counts);
}

int
pw_wire_peek(const uint8_t *buf, size_t len, int *body_case, uint64_t *seq)
{
    int body = 0;
    uint64_t s = 0;
    int rc = s_walk(buf, len, &body, &s, NULL);
    if (body_case)
        *body_case = rc == PW_WIRE_OK ? body : 0;
    if (seq)
        *seq = rc == PW_WIRE_OK ? s : 0;
    return rc;
}

int
pw_wire_peek_version(const uint8_t *buf, size_t len, uint32_t *version)
{
    int body;
    uint64_t seq, v = 0;
    int rc = s_walk_v(buf, len, &body, &seq, &v, NULL);
    *version = rc == PW_WIRE_OK ? (uint32_t)v : 0;
    return rc;
}

/* Deepest message nesting s_deep follows: parity.proto nests at most
 * three deep (Envelope, SampleBatch, Sample). */
#define S_NEST_MAX 8

/* What s_deep found first in a frame, in wire order. */
typedef struct {
    const char *nul;        /* a string field holding U+0000 */
    const char *broken;     /* a message field whose bytes do not scan */
} s_deep_t;

/* Walk buf (a message of descriptor d) and the messages nested in it, by
 * their descriptors, to the first string field that holds U+0000 or the
 * first nested message whose bytes do not scan (out names the field).
 * Both are frames protobuf-c takes but must not be taken as it reads
 * them: its strings end at their first NUL, so "a\0b" would be stored
 * as "a" and two names could merge (Error 10); and it reads an
 * over-long tag (82 00) as field number 0, which no message has, and
 * skips it as unknown (Error 3, as for the top level). Unknown fields
 * are not looked into: nothing reads them. false when something was
 * found. */
static bool
s_deep(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
       const char *field, int depth, s_deep_t *out)
{
    size_t at = 0;
    s_field_t f;
    if (depth > S_NEST_MAX)
        return true;
    while (at < len) {
        if (!s_next_field(buf, len, &at, &f)) {
            out->broken = field;
            return false;
        }
        if (f.wire != 2)
            continue;
        const ProtobufCFieldDescriptor *fd =
            protobuf_c_message_descriptor_get_field(d, f.number);
        if (!fd)
            continue;
        if (fd->type == PROTOBUF_C_TYPE_STRING && memchr(f.data, 0, f.len)) {
            out->nul = fd->name;
            return false;
        }
        if (fd->type == PROTOBUF_C_TYPE_MESSAGE
            && !s_deep(fd->descriptor, f.data, f.len, fd->name, depth + 1,
                       out))
            return false;
    }
    return true;
}

/* Refuse a frame whose winning body has more entries in a bounded field
 * than allowed, before unpacking allocates one of them. *seq_out gets the
 * frame's seq when its top level scans; *scanned whether it did. A frame
 * that does not scan passes: protobuf-c says parse, and pw_wire_unpack
 * refuses it if protobuf-c does not. */
static int
s_prescan(const uint8_t *buf, size_t len, uint64_t *seq_out, bool *scanned,
          char *err, size_t errlen)
{
    size_t counts[S_NBOUNDS] = { 0 };
    int body = 0;
    *scanned = s_walk(buf, len, &body, seq_out, counts) == PW_WIRE_OK;
    if (!*scanned)
        return PW_WIRE_OK;
    for (size_t k = 0; k < S_NBOUNDS; k++) {
        if ((int)s_bounds[k].body != body || counts[k] <= s_bounds[k].max)
            continue;
        pw_err(err, errlen, "%s: %zu %s (at most %u)",
               pw_wire_body_name(s_bounds[k].body), counts[k],
               s_bounds[k].what, s_bounds[k].max);
        return PW_WIRE_ELIMIT;
    }
    return PW_WIRE_OK;
}

/* ---- The decode budget -------------------------------------------------
 * protobuf-c takes every byte of an unpack from this allocator. Each block
 * carries a header with its size so that frees (protobuf-c frees its scan
 * tables, and a field given twice) give the budget back: the budget bounds
 * the bytes held at any moment. */

#define S_HDR alignof(max_align_t)

typedef struct {
    size_t held;            /* bytes held now, headers included */
    bool over;              /* an allocation was refused for the budget */
    bool nomem;             /* malloc itself failed */
} s_budget_t;

static void *
s_budget_alloc(void *data, size_t size)
{
    s_budget_t *b = data;
    if (!b || size > PW_WIRE_DECODE_BUDGET - S_HDR
        || b->held + S_HDR + size > PW_WIRE_DECODE_BUDGET) {
        if (b)
            b->over = true;
        return NULL;
    }
    unsigned char *p = malloc(S_HDR + size);
    if (!p) {
        b->nomem = true;
        return NULL;
    }
    memcpy(p, &size, sizeof size);
    b->held += S_HDR + size;
    return p + S_HDR;
}

/* data is NULL after the unpack (pw_wire_free): nothing left to count. */
static void
s_budget_free(void *data, void *ptr)
{
    s_budget_t *b = data;
    if (!ptr)
        return;
    unsigned char *p = (unsigned char *)ptr - S_HDR;
    if (b) {
        size_t size;
        memcpy(&size, p, sizeof size);
        b->held -= S_HDR + size;
    }
    free(p);
}

/* Frees what pw_wire_unpack made; it never allocates. */
static ProtobufCAllocator s_free_allocator = {
    .alloc = s_budget_alloc, .free = s_budget_free, .allocator_data = NULL,
};

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
        pw_err(err, errlen, "pack: %s needs %zu bytes (buffer %zu, frame "
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
        pw_err(err, errlen, "pack: %s needs %zu bytes (frame limit %u)",
               pw_wire_body_name(env->body_case), need, PW_WIRE_MAX_FRAME);
        return PW_WIRE_ETOOBIG;
    }
    uint8_t *buf = malloc(need ? need : 1);
    if (!buf) {
        pw_err(err, errlen, "pack: malloc(%zu) failed", need);
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

/* Why protobuf-c gave up: the budget, malloc, or the bytes themselves. */
static int
s_unpack_failed(const uint8_t *buf, size_t len, const s_budget_t *budget,
                uint64_t *seq_out, char *err, size_t errlen)
{
    int body = 0;
    uint64_t seq = 0;
    if (budget->over || budget->nomem) {
        /* The top level scanned (protobuf-c got to allocating): name it. */
        (void)pw_wire_peek(buf, len, &body, &seq);
        if (seq_out)
            *seq_out = seq;
    }
    if (budget->over) {
        pw_err(err, errlen, "unpack: decoding a %zu-byte %s frame needs more "
               "than %u bytes of memory (the decode budget)", len,
               pw_wire_body_name((Parity__Envelope__BodyCase)body),
               PW_WIRE_DECODE_BUDGET);
        return PW_WIRE_EBUDGET;
    }
    if (budget->nomem) {
        pw_err(err, errlen, "unpack: out of memory decoding a %zu-byte %s "
               "frame", len,
               pw_wire_body_name((Parity__Envelope__BodyCase)body));
        return PW_WIRE_ENOMEM;
    }
    pw_err(err, errlen, "unpack: %zu bytes are not a parity.Envelope "
           "(garbage or truncated)", len);
    return PW_WIRE_EPARSE;
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
        pw_err(err, errlen, "unpack: empty frame");
        return PW_WIRE_EEMPTY;
    }
    if (len > max) {
        pw_err(err, errlen, "unpack: frame of %zu bytes (limit %zu)", len,
               max);
        return PW_WIRE_ETOOBIG;
    }
    bool scanned = false;
    rc = s_prescan(buf, len, seq_out ? seq_out : &(uint64_t){ 0 }, &scanned,
                   err, errlen);
    if (rc != PW_WIRE_OK)
        return rc;
    s_budget_t budget = { 0 };
    ProtobufCAllocator alloc = {
        .alloc = s_budget_alloc, .free = s_budget_free,
        .allocator_data = &budget,
    };
    env = parity__envelope__unpack(&alloc, len, buf);
    if (!env) {
        if (seq_out)
            *seq_out = 0;
        return s_unpack_failed(buf, len, &budget, seq_out, err, errlen);
    }
    /* protobuf-c 1.4 decodes an over-long tag (82 00) as field number 0
     * and accepts the frame, where pw_wire_peek (the loop's routing) and
     * the bounds' prescan see a frame that does not scan: refuse it, so
     * that peek and unpack always agree (tests/fuzz). */
    if (!scanned) {
        pw_err(err, errlen, "unpack: %zu bytes are not a parity.Envelope "
               "(field number 0, or a field protobuf does not have)", len);
        rc = PW_WIRE_EPARSE;
        goto fail;
    }
    if (seq_out)
        *seq_out = env->seq;
    if (env->version != PW_WIRE_VERSION) {
        pw_err(err, errlen, "unpack: protocol version %u (this side speaks "
               "%u)", env->version, PW_WIRE_VERSION);
        rc = PW_WIRE_EVERSION;
        goto fail;
    }
    if (env->body_case == PARITY__ENVELOPE__BODY__NOT_SET
        && env->base.n_unknown_fields > 0) {
        pw_err(err, errlen, "unpack: unknown body (field %u)",
               env->base.unknown_fields[0].tag);
        rc = PW_WIRE_EUNKNOWN;
        goto fail;
    }
    s_deep_t deep = { NULL, NULL };
    (void)s_deep(&parity__envelope__descriptor, buf, len, "", 0, &deep);
    if (deep.broken) {
        pw_err(err, errlen, "unpack: %zu bytes are not a parity.Envelope "
               "(field number 0, or a field protobuf does not have, inside "
               "%s)", len, deep.broken);
        rc = PW_WIRE_EPARSE;
        goto fail;
    }
    if (deep.nul) {
        pw_err(err, errlen, "%s: text field %s holds U+0000 (NUL)",
               pw_wire_body_name(env->body_case), deep.nul);
        rc = PW_WIRE_EFIELD;
        goto fail;
    }
    rc = s_check(env, err, errlen);
    if (rc != PW_WIRE_OK)
        goto fail;
    *out = env;
    return PW_WIRE_OK;
fail:
    parity__envelope__free_unpacked(env, &s_free_allocator);
    return rc;
}

void
pw_wire_free(Parity__Envelope **env)
{
    if (!env || !*env)
        return;
    parity__envelope__free_unpacked(*env, &s_free_allocator);
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
