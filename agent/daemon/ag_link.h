/* ag_link.h -- the agent's connection to the collector (docs/protocol.md).
 *
 * One CURVE DEALER socket: the agent's own key pair (--key), the
 * collector's public key pinned (--collector-key). When that file does
 * not exist and the collector is pinned by its fingerprint
 * (--collector-fingerprint), or trust on first use was asked for, the
 * key is fetched from the collector's key service (its port + 1,
 * docs/protocol.md section 1) before each connect until one matches: a
 * key whose fingerprint is not the pinned one is refused, naming both
 * fingerprints; a matching (or first) key is written to --collector-key
 * when that was given, and pins it from then on. On every (re)connect
 * it sends Hello first and sends data only after Ack{0}. Data comes from
 * the spool only: the link sends spooled messages in seq order, at most
 * AG_LINK_WINDOW unacked at a time, removes each from the spool when its
 * Ack (or a refusing Error with its seq) arrives, and resends every
 * unacked one, in order, after a reconnect. When no Ack comes for the
 * resend wait (AG_LINK_RESEND_MS, doubling after each resend to
 * AG_LINK_RESEND_MAX_MS; each wait times a random factor in [1, 1.5)) it
 * resends only the oldest unacked message. An Ack of a message sent once
 * sets the wait back to AG_LINK_RESEND_MS (the collector was slow, not
 * losing them); each Ack of a resent copy doubles how many of the oldest
 * go at the next resend, after only AG_LINK_RESEND_RESUME_MS (the
 * collector stores again what it had been silent about, so the rest is
 * likely lost too). A stalled collector so gets a few copies per stall,
 * not the whole window every 5 s (docs/protocol.md section 5), and a
 * window the collector dropped comes back in 1, 2, 4, 16, 64 ... copies
 * a second apart.
 *
 * A collector that has not approved the agent's key answers Hello with
 * Error 20 (pending): the link stays not ready, sends no data and says
 * Hello again every AG_LINK_RESEND_MS, so that the first Hello after an
 * operator's approval is acked and the spool follows. Error 20 with a
 * seq leaves the message in the spool. Error 21 (the key was rejected
 * or revoked) closes the connection; the next ones are refused at the
 * handshake until an operator approves the key again. Heartbeats every
 * heartbeat_ms; after
 * AG_LINK_LIVENESS intervals of silence the socket is closed and a new
 * one made after a capped exponential back-off with jitter (0.5 s
 * doubling to 16 s, times a factor in [0.5, 1.5)).
 *
 * Threads: a link belongs to one thread (the one calling ag_link_tick);
 * only the spool it reads is shared. ag_link_stats() and
 * ag_link_set_state() may be called from any thread.
 *
 * Ownership: ag_link_new() returns a link the caller owns (free with
 * ag_link_destroy()); it borrows the spool, which must outlive it. The
 * Hello bytes given to ag_link_set_hello() are copied. Envelopes given to
 * on_message are borrowed for the call. Nothing here prints or exits:
 * events go to the log callback.
 */
#ifndef AG_LINK_H
#define AG_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_spool.h"
#include "pw_key.h"
#include "pw_wire.h"

#define AG_LINK_OK    0
#define AG_LINK_ERR  -1

#define AG_LINK_WINDOW          64      /* unacked data messages in flight */
#define AG_LINK_RESEND_MS       5000    /* no Ack this long: resend */
#define AG_LINK_RESEND_MAX_MS   60000   /* the resend wait's cap */
#define AG_LINK_RESEND_RESUME_MS 1000   /* the wait after a copy's Ack */
#define AG_LINK_LIVENESS        5       /* silent intervals: peer gone */
#define AG_LINK_BACKOFF_MIN_MS  500
#define AG_LINK_BACKOFF_MAX_MS  16000
#define AG_LINK_DEFAULT_HEARTBEAT_MS 1000
#define AG_LINK_SNDHWM          128     /* window plus heartbeats */
#define AG_LINK_RCVHWM          1000
#define AG_LINK_KEY_FETCH_MS    2000    /* the key service's answer */
#define AG_LINK_MAX_COLLECTORS  16      /* addresses in --collector */

typedef struct ag_link ag_link_t;

typedef struct {
    /* tcp://HOST:PORT, or several separated by commas (collectors of
     * one database): the link starts with the first and, whenever it
     * reconnects (the collector was silent, refused the connection or
     * went away), goes on to the next, round the list. */
    const char *endpoint;
    const char *key_path;          /* agent's zcert (public file or its
                                      _secret file) */
    const char *collector_key_path;/* collector's public zcert; may not
                                      exist with the two below */
    const char *collector_fingerprint; /* pin (pw_key form); NULL: none */
    bool trust_first_use;          /* no pin: keep the first key seen */
    unsigned heartbeat_ms;         /* 0: AG_LINK_DEFAULT_HEARTBEAT_MS */
    void *ctx;
    /* A message other than Ack/Heartbeat from the collector (JobOffer,
     * JobCancel, Error without a seq, Reply). May be NULL. */
    void (*on_message)(void *ctx, const Parity__Envelope *env);
    /* One line for the log: event is a short machine word ("connect",
     * "hello_acked", "peer_gone", "refused", "bad_input" ...). */
    void (*log)(void *ctx, const char *event, const char *text);
} ag_link_opts_t;

typedef struct {
    bool ready;                /* Hello acked on the current connection */
    uint64_t acked;            /* data messages acked since start */
    uint64_t sent;             /* data messages sent (resends included) */
    uint64_t resent;
    uint64_t reconnects;
    uint64_t refused;          /* removed because of an Error with seq */
    size_t in_flight;
    /* The collector's view of our key and ours of its key: pending
     * (Error 20 since the last Ack{0}), denied (Error 21), key_mismatch
     * (the key it offers is not the pinned one), auth_refused (the
     * handshake was refused: rejected, revoked, or in no directory of a
     * collector with --enroll off). problem says the last of the first
     * three in one line. */
    bool pending;
    bool denied;
    bool key_mismatch;
    bool auth_refused;         /* ZAP refused our key at a handshake */
    char problem[400];
} ag_link_stats_t;

/* Load the keys and make the first socket (connecting at once). On
 * failure NULL with err naming the file and call. */
ag_link_t *ag_link_new(const ag_link_opts_t *opts, ag_spool_t *spool,
                       char *err, size_t errlen);

/* Close the socket and free *link; set it to NULL. Accepts NULL. */
void ag_link_destroy(ag_link_t **link);

/* The Hello body (already packed as a whole Envelope, seq 0) sent on
 * every connect. Copied. On a connection already made it is sent at the
 * next tick (before anything else), and the connection stays as it was:
 * the collector answers Ack{0} and replaces what it knows of the host
 * (docs/protocol.md, Hello). Call from the link's thread. */
int ag_link_set_hello(ag_link_t *link, const uint8_t *env, size_t len);

/* What the next heartbeat says: "idle"/"running" and the job id (copied;
 * NULL for none). */
void ag_link_set_state(ag_link_t *link, const char *state,
                       const char *job_id);

/* Do everything due: receive (waiting up to wait_ms for the socket or
 * for wake_fd, -1 for none, to become readable), handle acks, send
 * heartbeats, reconnect, send newly spooled messages. Returns
 * AG_LINK_OK; *woken (may be NULL) says wake_fd was readable (the caller
 * drains it). */
int ag_link_tick(ag_link_t *link, int wait_ms, int wake_fd, bool *woken);

/* Counters; safe from any thread. */
void ag_link_stats(ag_link_t *link, ag_link_stats_t *out);

/* The agent's public key, Z85 (40 characters), owned by the link. */
const char *ag_link_public_key(const ag_link_t *link);

/* The key service's endpoint for the collector at endpoint
 * (tcp://HOST:PORT): tcp://HOST:PORT+1. -1 when endpoint has no port. */
int ag_link_key_endpoint(const char *endpoint, char *out, size_t outlen);

#endif
