/* cl_keygen.c -- `parity keygen NAME [--dir DIR] [--force] [--json]`.
 *
 * Writes a CURVE key pair in CZMQ zcert format: DIR/NAME (public, mode
 * 0644: copy it into a collector's --allow directory, or give it to
 * agents as --collector-key) and DIR/NAME_secret (mode 0600, created so:
 * never readable by others, not even for a moment). Refuses to replace
 * either file unless --force. docs/commands/keygen.md.
 */
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "pw_key.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>

/* Longest NAME; the file names stay short and portable. */
#define S_NAME_MAX 64

static void
s_usage(FILE *f)
{
    fprintf(f,
"usage: parity keygen NAME [--dir DIR] [--force] [--json]\n"
"\n"
"Write a CURVE key pair for an agent, a client or the collector:\n"
"DIR/NAME (public, 0644) and DIR/NAME_secret (secret, 0600).\n"
"\n"
"  NAME       letters, digits, '.', '_' or '-', at most 64, not starting\n"
"             with '.' or '-'\n"
"  --dir DIR  where to write (default: the current directory; created)\n"
"  --force    replace existing files\n"
"  --json     print {\"name\", \"public_key\", \"fingerprint\",\n"
"             \"public_file\", \"secret_file\"} instead of text\n"
"\n"
"exit status: 0 written, 1 a file exists (no --force), 2 usage error,\n"
"3 system error (cannot write).\n");
}

static bool
s_valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > S_NAME_MAX || s[0] == '.' || s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

int
cl_keygen_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "dir", required_argument, NULL, 'd' },
        { "force", no_argument, NULL, 'f' },
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *dir = ".";
    bool force = false, as_json = false;
    char pub[4096], sec[4096 + 8];
    int c, rc = PW_EXIT_SYSTEM;
    zcert_t *cert = NULL;
    struct stat st;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'f': force = true; break;
        case 'j': as_json = true; break;
        case 'h':
            s_usage(stdout);
            return PW_EXIT_OK;
        default:
            cl_out_error("keygen", "unknown or incomplete option %s "
                         "(parity keygen --help)", argv[optind - 1]);
            return PW_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        cl_out_error("keygen", optind >= argc
                     ? "NAME is required (parity keygen --help)"
                     : "one NAME only (parity keygen --help)");
        return PW_EXIT_USAGE;
    }
    const char *name = argv[optind];
    if (!s_valid_name(name)) {
        cl_out_error("keygen", "NAME \"%s\": use letters, digits, '.', '_' "
                     "or '-' (at most %d, not starting with '.' or '-')",
                     name, S_NAME_MAX);
        return PW_EXIT_USAGE;
    }
    if (strlen(dir) > 3000) {
        cl_out_error("keygen", "--dir: path too long");
        return PW_EXIT_USAGE;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        cl_out_error("keygen", "mkdir %s: %s", dir, strerror(errno));
        return PW_EXIT_SYSTEM;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cl_out_error("keygen", "--dir %s: not a directory", dir);
        return PW_EXIT_USAGE;
    }
    snprintf(pub, sizeof pub, "%s/%s", dir, name);
    snprintf(sec, sizeof sec, "%s_secret", pub);
    if (!force) {
        const char *exists = access(pub, F_OK) == 0 ? pub
                           : access(sec, F_OK) == 0 ? sec : NULL;
        if (exists) {
            cl_out_error("keygen", "%s exists; not replacing it without "
                         "--force", exists);
            return PW_EXIT_DATA;
        }
    } else {
        /* A new file gets the umask below; an old one keeps its mode. */
        unlink(sec);
    }
    cert = zcert_new();
    if (!cert) {
        cl_out_error("keygen", "zcert_new: out of memory or no entropy");
        return PW_EXIT_SYSTEM;
    }
    zcert_set_meta(cert, "name", "%s", name);
    /* The secret file is born 0600: no window where others can read. */
    mode_t old = umask(077);
    int saved = zcert_save(cert, pub);
    umask(old);
    if (saved != 0) {
        cl_out_error("keygen", "zcert_save %s: %s", pub, strerror(errno));
        goto done;
    }
    if (chmod(sec, 0600) != 0 || chmod(pub, 0644) != 0) {
        cl_out_error("keygen", "chmod %s: %s", pub, strerror(errno));
        goto done;
    }
    char fp[PW_KEY_FP_SIZE];
    pw_key_fingerprint(zcert_public_txt(cert), fp);
    if (as_json) {
        json_t *o = json_pack("{ss ss ss ss ss}", "name", name,
                              "public_key", zcert_public_txt(cert),
                              "fingerprint", fp,
                              "public_file", pub, "secret_file", sec);
        int w = o ? pw_out_json(stdout, o) : -1;
        json_decref(o);
        if (w != 0)
            goto done;
    } else {
        printf("public key %s\nfingerprint %s\nwrote %s (public) and %s "
               "(secret, 0600)\n", zcert_public_txt(cert), fp, pub, sec);
    }
    rc = fflush(stdout) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
done:
    zcert_destroy(&cert);
    return rc;
}
