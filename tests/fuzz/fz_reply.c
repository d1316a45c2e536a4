/* fz_reply.c -- libFuzzer target: the client's reply parsing.
 *
 * What `parity` does with a frame the collector sends it: pw_wire_unpack
 * with the client's bound (CL_CONN_MAX_REPLY + 4096), then the choices
 * cl_conn_request makes (Error, another request's Reply, a status, the
 * body through json_loads with JSON_DECODE_ANY), then the body printed
 * as `parity verdicts` and `parity history` print theirs, in every
 * format. cl_conn_request itself waits on a socket, so its choices are
 * repeated here (s_answer); keep the two in step.
 *
 * An input that starts with '{' or '[' is a reply body, not a frame:
 * the target packs it into Envelope{Reply{request_id 1, body_json}}
 * first, so that mutations of the JSON reach the printers instead of
 * breaking the protobuf around them. Anything else is a raw frame.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cl_conn.h"
#include "cl_history.h"
#include "cl_verdicts.h"
#include "pw_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The request id the client is waiting for. */
#define S_REQUEST_ID 1

static FILE *s_null;

/* cl_conn_request's handling of one received frame: the body (caller
 * owns it) when it is the awaited Reply with status 0 and JSON, else
 * NULL. */
static json_t *
s_answer(const uint8_t *frame, size_t len)
{
    Parity__Envelope *in = NULL;
    char werr[256];
    json_t *body = NULL;

    if (pw_wire_unpack(frame, len, CL_CONN_MAX_REPLY + 4096, &in, NULL,
                       werr, sizeof werr) != PW_WIRE_OK)
        return NULL;
    if (in->body_case == PARITY__ENVELOPE__BODY_ERROR) {
        fprintf(s_null, "refused: %s\n",
                in->error->message ? in->error->message : "");
    } else if (in->body_case == PARITY__ENVELOPE__BODY_REPLY
               && in->reply->request_id == S_REQUEST_ID) {
        Parity__Reply *r = in->reply;
        if (r->status != 0) {
            fprintf(s_null, "%s\n", r->error && *r->error ? r->error : "");
        } else {
            json_error_t je;
            body = json_loads(r->body_json ? r->body_json : "",
                              JSON_DECODE_ANY, &je);
        }
    }
    pw_wire_free(&in);
    return body;
}

/* A body given as JSON text: the frame the collector would send. */
static uint8_t *
s_wrap(const uint8_t *data, size_t size, size_t *len)
{
    Parity__Envelope env;
    Parity__Reply rep = PARITY__REPLY__INIT;
    uint8_t *buf = NULL;
    char *json = malloc(size + 1);
    if (!json)
        return NULL;
    memcpy(json, data, size);
    json[size] = '\0';
    rep.request_id = S_REQUEST_ID;
    rep.body_json = json;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REPLY, &rep);
    if (pw_wire_pack_alloc(&env, &buf, len, NULL, 0) != PW_WIRE_OK)
        buf = NULL;
    free(json);
    return buf;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *wrapped = NULL;
    json_t *body;

    if (!s_null && !(s_null = fopen("/dev/null", "w")))
        abort();
    if (size > 0 && (data[0] == '{' || data[0] == '[')) {
        if (!(wrapped = s_wrap(data, size, &size)))
            return 0;
        data = wrapped;
    }
    body = s_answer(data, size);
    free(wrapped);
    if (!body)
        return 0;
    (void)cl_verdicts_print(s_null, body, CL_VERDICTS_TABLE);
    (void)cl_verdicts_print(s_null, body, CL_VERDICTS_JSON);
    (void)cl_verdicts_print(s_null, body, CL_VERDICTS_CSV);
    (void)cl_verdicts_print(s_null, body, CL_VERDICTS_MARKDOWN);
    (void)cl_history_print(s_null, body, CL_HISTORY_TABLE);
    (void)cl_history_print(s_null, body, CL_HISTORY_CSV);
    (void)cl_history_print(s_null, body, CL_HISTORY_JSON);
    json_decref(body);
    return 0;
}
