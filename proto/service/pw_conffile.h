/* pw_conffile.h -- the daemons' configuration files
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
 * "FILE:LINE: " (pw_conffile_where()), and skips the keys given as flags
 * (flags win over the file, the file over the defaults). Both daemons
 * use it (proto/service/).
 *
 * Ownership: pw_conffile_load() returns a config the caller owns (free
 * with pw_conffile_destroy()); entries and their strings belong to it and
 * live until then. Nothing here prints or exits.
 */
#ifndef PW_CONFFILE_H
#define PW_CONFFILE_H

#include <stdbool.h>
#include <stddef.h>

#define PW_CONFFILE_OK    0
#define PW_CONFFILE_ERR  -1

/* Most keys one file may hold (every daemon has fewer options). */
#define PW_CONFFILE_MAX_ENTRIES 64
/* Largest file read (a configuration is a few hundred bytes). */
#define PW_CONFFILE_MAX_BYTES   (256u * 1024)

typedef struct {
    const char *key;      /* a name from the caller's list */
    const char *value;    /* the scalar as written, never NULL */
    unsigned line;        /* 1-based line of the key */
} pw_conffile_entry_t;

typedef struct pw_conffile pw_conffile_t;

/* The directory of the default files: SYSCONFDIR/parity of the build
 * (/etc/parity when installed with --prefix=/usr). */
const char *pw_conffile_dir(void);

/* Remove "--config FILE" or "--config=FILE" from argv[1..*argc-1]
 * (the last one wins), setting *path (into argv) or leaving it alone.
 * Fails, with err, on --config without its FILE. */
int pw_conffile_take_arg(int *argc, char **argv, const char **path,
                       char *err, size_t errlen);

/* Read path. keys: the allowed names, NULL-terminated. When the file
 * does not exist and must_exist is false, *out is an empty config.
 * Errors name the file (and line): the file cannot be read, YAML
 * syntax, not a mapping, an unknown or repeated key, a value that is
 * not one scalar or is empty. */
int pw_conffile_load(const char *path, const char *const *keys,
                   bool must_exist, pw_conffile_t **out, char *err,
                   size_t errlen);

size_t pw_conffile_count(const pw_conffile_t *c);

/* The i-th entry, in file order (i < pw_conffile_count()). */
const pw_conffile_entry_t *pw_conffile_entry(const pw_conffile_t *c, size_t i);

/* "FILE:LINE" of an entry, for the caller's error prefix. */
void pw_conffile_where(const pw_conffile_t *c, const pw_conffile_entry_t *e,
                     char *out, size_t outlen);

/* Free *c and set it to NULL. Accepts NULL. */
void pw_conffile_destroy(pw_conffile_t **c);

#endif
