/* cl_conn.h -- the client's connection to parity-collector.
 *
 * Settings, each looked up in this order, first found wins:
 *
 *   collector       --collector ADDR   $PARITY_COLLECTOR      collector:
 *   collector key   --collector-key F  $PARITY_COLLECTOR_KEY  collector_key:
 *   own key         --key F            $PARITY_KEY            key:
 *
 * the last column being keys of the config file
 * $XDG_CONFIG_HOME/parity/client.yaml (default ~/.config/parity/), whose
 * relative paths are relative to the file's directory. ADDR is
 * tcp://HOST:PORT (or HOST:PORT). The collector key is its public zcert
 * file; the own key is a zcert from `parity keygen` (the public file with
 * its _secret beside it, or the _secret file). A missing or wrong setting
 * is an error that names the setting, where its value came from, and
 * every place looked at. --timeout SECONDS (or $PARITY_TIMEOUT, or
 * client.yaml's timeout:, default 10) bounds each request; connections
 * refused for a second (nothing listens there) end it sooner.
 *
 * The socket is a CURVE DEALER (docs/protocol.md, section 1); a request is
 * an Envelope{Request{request_id, command, args_json}} and its answer the
 * Reply with the same request_id (section 10). Replies to older requests
 * and heartbeats are skipped.
 *
 * Nothing here prints except cl_conn_ask(), the verbs' one-call helper,
 * which prints "parity VERB: ..." errors through cl_out_error.
 */
#ifndef CL_CONN_H
#define CL_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* Status codes. */
#define CL_CONN_OK        0
#define CL_CONN_CONFIG   -1   /* a setting is missing or wrong */
#define CL_CONN_NOANSWER -2   /* no reply within the timeout */
#define CL_CONN_REPLY    -3   /* the collector answered with an error */
#define CL_CONN_SYSTEM   -4   /* out of memory, a socket call failed */

#define CL_CONN_DEFAULT_TIMEOUT_S 10.0

/* Each option o of a verb's own (getopt_long from the first argument
 * again; ':' for a missing value and opterr off: the verbs say what is
 * wrong in their own words). The caller includes <getopt.h>. */
#define CL_CONN_EACH_OPTION(o, argc, argv, opts)                            \
    for (optind = 1, opterr = 0;                                            \
         ((o) = getopt_long((argc), (argv), ":", (opts), NULL)) != -1;)
#define CL_CONN_MAX_TIMEOUT_S     3600.0
/* Largest Reply accepted (the protocol's frame bound). */
#define CL_CONN_MAX_REPLY (4u << 20)

typedef struct {
    const char *collector;       /* flag values, NULL when not given */
    const char *collector_key;
    const char *key;
    const char *timeout;         /* seconds, as text */
} cl_conn_opts_t;

typedef struct cl_conn cl_conn_t;

/* Remove --collector, --collector-key, --key and --timeout (and their
 * values, also as --opt=value) from argv[1..*argc-1], filling o with
 * pointers into argv. Other arguments keep their order. -1 with err when
 * one lacks its value. */
int cl_conn_take_args(int *argc, char **argv, cl_conn_opts_t *o, char *err,
                      size_t errlen);

/* cl_conn_take_args for verb: -1 after printing "parity VERB: ..." when
 * an option lacks its value (the verb exits PW_EXIT_USAGE), else 0. */
int cl_conn_verb_args(const char *verb, int *argc, char **argv,
                      cl_conn_opts_t *o);

/* How a verb that only connects begins: with --help or -h, print help
 * and the line "Connection options as in `parity hosts --help`." and
 * return PW_EXIT_OK; when a connection option lacks its value,
 * PW_EXIT_USAGE (said, as cl_conn_verb_args); else -1: go on. */
int cl_conn_verb_begin(const char *verb, const char *help, int *argc,
                       char **argv, cl_conn_opts_t *o);

/* Resolve the settings, load the keys and connect (ZeroMQ connects in the
 * background: an unreachable collector shows at the first request).
 * Caller owns the result; NULL with err (CL_CONN_CONFIG or _SYSTEM in
 * *code when code is not NULL). */
cl_conn_t *cl_conn_open(const cl_conn_opts_t *o, int *code, char *err,
                        size_t errlen);

void cl_conn_destroy(cl_conn_t **c);

/* The collector address in use (owned by c). */
const char *cl_conn_address(const cl_conn_t *c);

/* Send command with args (borrowed; NULL for {}) and wait for its Reply.
 * CL_CONN_OK: *body is a new reference the caller owns. CL_CONN_REPLY:
 * *status is the Reply status and err its error text. CL_CONN_NOANSWER:
 * err says what was seen (refused key, failed handshake, no connection).
 */
int cl_conn_request(cl_conn_t *c, const char *command, const json_t *args,
                    json_t **body, int *status, char *err, size_t errlen);

/* cl_conn_request in two halves, so that a caller can work while the
 * collector answers: send (CL_CONN_OK with *id), then wait for that id's
 * Reply as cl_conn_request does. A Reply to another id that arrives
 * meanwhile is dropped: keep one request outstanding per connection. */
int cl_conn_send(cl_conn_t *c, const char *command, const json_t *args,
                 uint64_t *id, char *err, size_t errlen);
int cl_conn_wait(cl_conn_t *c, uint64_t id, json_t **body, int *status,
                 char *err, size_t errlen);

/* For a verb: open with o, ask once, close. Prints any error as
 * "parity VERB: ..." and returns the verb's exit code (PW_EXIT_OK with
 * *body set, PW_EXIT_USAGE for a setting, PW_EXIT_DATA for an error
 * reply, PW_EXIT_SYSTEM for no answer). */
int cl_conn_ask(const char *verb, const cl_conn_opts_t *o,
                const char *command, const json_t *args, json_t **body);

/* The exit code for a cl_conn status (as cl_conn_ask uses). */
int cl_conn_exit_code(int status);

#endif
