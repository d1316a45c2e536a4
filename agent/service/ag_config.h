/* ag_config.h -- the daemons' configuration files
 * (/etc/parity/agent.yaml, /etc/parity/collector.yaml; docs/agent.md
 * and docs/collector.md "Configuration file").
 *
 * A file is one YAML mapping whose keys are the daemon's long options
 * without "--" and whose values are what the option would be given:
 *
 *   bind: tcp://0.0.0.0:5555
 *   heartbeat-ms: 1000
 *
 * This module only reads the file and checks its shape and its keys
 * against the caller's list; the caller applies each entry with the same
 * code as the flag, prefixing that code's error with the entry's
 * "FILE:LINE: " (ag_config_where()), and skips the keys given as flags
 * (flags win over the file, the file over the defaults). It lives in
 * agent/ so that both daemons can use it (see ag_notify.h).
 *
 * Ownership: ag_config_load() returns a config the caller owns (free
 * with ag_config_destroy()); entries and their strings belong to it and
 * live until then. Nothing here prints or exits.
 */
#ifndef AG_CONFIG_H
#define AG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define AG_CONFIG_OK    0
#define AG_CONFIG_ERR  -1

/* Most keys one file may hold (every daemon has fewer options). */
#define AG_CONFIG_MAX_ENTRIES 64
/* Largest file read (a configuration is a few hundred bytes). */
#define AG_CONFIG_MAX_BYTES   (256u * 1024)

typedef struct {
    const char *key;      /* a name from the caller's list */
    const char *value;    /* the scalar as written, never NULL */
    unsigned line;        /* 1-based line of the key */
} ag_config_entry_t;

typedef struct ag_config ag_config_t;

/* The directory of the default files: SYSCONFDIR/parity of the build
 * (/etc/parity when installed with --prefix=/usr). */
const char *ag_config_dir(void);

/* Remove "--config FILE" or "--config=FILE" from argv[1..*argc-1]
 * (the last one wins), setting *path (into argv) or leaving it alone.
 * Fails, with err, on --config without its FILE. */
int ag_config_take_arg(int *argc, char **argv, const char **path,
                       char *err, size_t errlen);

/* Read path. keys: the allowed names, NULL-terminated. When the file
 * does not exist and must_exist is false, *out is an empty config.
 * Errors name the file (and line): the file cannot be read, YAML
 * syntax, not a mapping, an unknown or repeated key, a value that is
 * not one scalar or is empty. */
int ag_config_load(const char *path, const char *const *keys,
                   bool must_exist, ag_config_t **out, char *err,
                   size_t errlen);

size_t ag_config_count(const ag_config_t *c);

/* The i-th entry, in file order (i < ag_config_count()). */
const ag_config_entry_t *ag_config_entry(const ag_config_t *c, size_t i);

/* "FILE:LINE" of an entry, for the caller's error prefix. */
void ag_config_where(const ag_config_t *c, const ag_config_entry_t *e,
                     char *out, size_t outlen);

/* Free *c and set it to NULL. Accepts NULL. */
void ag_config_destroy(ag_config_t **c);

#endif
