/* pw_conffile.c -- see pw_conffile.h. */
#include "pw_conffile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#ifndef PARITY_CONF_DIR
#define PARITY_CONF_DIR "/etc/parity"
#endif

struct pw_conffile {
    char *path;
    pw_conffile_entry_t entries[PW_CONFFILE_MAX_ENTRIES];
    size_t count;
};

const char *
pw_conffile_dir(void)
{
    return PARITY_CONF_DIR;
}

int
pw_conffile_take_arg(int *argc, char **argv, const char **path, char *err,
                   size_t errlen)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        if (strncmp(argv[i], "--config=", 9) == 0) {
            *path = argv[i] + 9;
        } else if (strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= *argc) {
                snprintf(err, errlen, "--config needs a FILE");
                return PW_CONFFILE_ERR;
            }
            *path = argv[++i];
        } else {
            argv[out++] = argv[i];
            continue;
        }
        if (!**path) {
            snprintf(err, errlen, "--config needs a FILE");
            return PW_CONFFILE_ERR;
        }
    }
    argv[out] = NULL;
    *argc = out;
    return PW_CONFFILE_OK;
}

/* The whole file, NUL-terminated, in *text (caller frees); *missing says
 * it does not exist (then err is set too). */
static int
s_read(const char *path, char **text, size_t *len, bool *missing, char *err,
       size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    *missing = false;
    if (!f) {
        *missing = errno == ENOENT;
        snprintf(err, errlen, "config file %s: %s", path, strerror(errno));
        return PW_CONFFILE_ERR;
    }
    buf = malloc(PW_CONFFILE_MAX_BYTES + 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        fclose(f);
        return PW_CONFFILE_ERR;
    }
    n = fread(buf, 1, PW_CONFFILE_MAX_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > PW_CONFFILE_MAX_BYTES) {
        snprintf(err, errlen, bad ? "%s: read error" : "%s: larger than "
                 "%u bytes", path, PW_CONFFILE_MAX_BYTES);
        free(buf);
        return PW_CONFFILE_ERR;
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return PW_CONFFILE_OK;
}

static bool
s_known(const char *const *keys, const char *key)
{
    for (size_t i = 0; keys[i]; i++)
        if (strcmp(keys[i], key) == 0)
            return true;
    return false;
}

/* A plain empty scalar, "~" or "null": YAML's null, which no option
 * takes (a quoted "" or "null" is a value like any other). */
static bool
s_is_null(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE
        && (!*v || strcmp(v, "~") == 0 || strcmp(v, "null") == 0
            || strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0);
}

/* One key: value pair into c; err names the file and the line. */
static int
s_add(pw_conffile_t *c, yaml_document_t *doc, const yaml_node_pair_t *pair,
      const char *const *keys, char *err, size_t errlen)
{
    yaml_node_t *k = yaml_document_get_node(doc, pair->key);
    yaml_node_t *v = yaml_document_get_node(doc, pair->value);
    unsigned line = k ? (unsigned)k->start_mark.line + 1 : 0;
    if (!k || k->type != YAML_SCALAR_NODE) {
        snprintf(err, errlen, "%s:%u: a key must be an option name",
                 c->path, line);
        return PW_CONFFILE_ERR;
    }
    const char *key = (const char *)k->data.scalar.value;
    if (!s_known(keys, key)) {
        snprintf(err, errlen, "%s:%u: unknown key \"%.100s\"", c->path,
                 line, key);
        return PW_CONFFILE_ERR;
    }
    for (size_t i = 0; i < c->count; i++) {
        if (strcmp(c->entries[i].key, key) == 0) {
            snprintf(err, errlen, "%s:%u: %s given twice (first at line "
                     "%u)", c->path, line, key, c->entries[i].line);
            return PW_CONFFILE_ERR;
        }
    }
    if (!v || v->type != YAML_SCALAR_NODE) {
        snprintf(err, errlen, "%s:%u: %s: want one value, not a list or a "
                 "mapping", c->path, line, key);
        return PW_CONFFILE_ERR;
    }
    if (s_is_null(v)) {
        snprintf(err, errlen, "%s:%u: %s: no value (comment the line out "
                 "to keep the default)", c->path, line, key);
        return PW_CONFFILE_ERR;
    }
    if (c->count == PW_CONFFILE_MAX_ENTRIES) {
        snprintf(err, errlen, "%s:%u: more than %d keys", c->path, line,
                 PW_CONFFILE_MAX_ENTRIES);
        return PW_CONFFILE_ERR;
    }
    pw_conffile_entry_t *e = &c->entries[c->count];
    e->key = strdup(key);
    e->value = strdup((const char *)v->data.scalar.value);
    e->line = line;
    c->count++;   /* counted first, so that destroy frees a half entry */
    if (!e->key || !e->value) {
        snprintf(err, errlen, "%s: out of memory", c->path);
        return PW_CONFFILE_ERR;
    }
    return PW_CONFFILE_OK;
}

/* Parse text into c. */
static int
s_parse(pw_conffile_t *c, const char *text, size_t len,
        const char *const *keys, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    int rc = PW_CONFFILE_ERR;
    bool have_doc = false;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, errlen, "%s: yaml_parser_initialize failed", c->path);
        return PW_CONFFILE_ERR;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "%s:%zu: %s%s%s", c->path,
                 parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "YAML error",
                 parser.context ? " " : "",
                 parser.context ? parser.context : "");
        goto out;
    }
    have_doc = true;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {             /* empty, or only comments: no keys */
        rc = PW_CONFFILE_OK;
        goto out;
    }
    if (root->type != YAML_MAPPING_NODE) {
        snprintf(err, errlen, "%s:%zu: want a mapping of option: value",
                 c->path, root->start_mark.line + 1);
        goto out;
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++)
        if (s_add(c, &doc, p, keys, err, errlen) != PW_CONFFILE_OK)
            goto out;
    rc = PW_CONFFILE_OK;
out:
    if (have_doc)
        yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

int
pw_conffile_load(const char *path, const char *const *keys, bool must_exist,
               pw_conffile_t **out, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    bool missing = false;
    int rc = PW_CONFFILE_ERR;
    *out = NULL;
    pw_conffile_t *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    if (s_read(path, &text, &len, &missing, err, errlen) != PW_CONFFILE_OK) {
        if (missing && !must_exist)
            rc = PW_CONFFILE_OK;   /* no default file: the defaults */
        goto out;
    }
    rc = s_parse(c, text, len, keys, err, errlen);
out:
    free(text);
    if (rc == PW_CONFFILE_OK)
        *out = c;
    else
        pw_conffile_destroy(&c);
    return rc;
}

size_t
pw_conffile_count(const pw_conffile_t *c)
{
    return c ? c->count : 0;
}

const pw_conffile_entry_t *
pw_conffile_entry(const pw_conffile_t *c, size_t i)
{
    return c && i < c->count ? &c->entries[i] : NULL;
}

void
pw_conffile_where(const pw_conffile_t *c, const pw_conffile_entry_t *e, char *out,
                size_t outlen)
{
    snprintf(out, outlen, "%s:%u", c->path, e->line);
}

void
pw_conffile_destroy(pw_conffile_t **cp)
{
    if (!cp || !*cp)
        return;
    pw_conffile_t *c = *cp;
    for (size_t i = 0; i < c->count; i++) {
        free((char *)c->entries[i].key);
        free((char *)c->entries[i].value);
    }
    free(c->path);
    free(c);
    *cp = NULL;
}
