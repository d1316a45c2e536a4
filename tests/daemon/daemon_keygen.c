/* daemon_keygen.c -- write a CZMQ certificate pair (PATH, PATH_secret).
 *
 * Used by test_system.py only while `parity keygen` is not built, so the
 * daemon tests do not depend on the order in which the verbs land. */
#include <czmq.h>

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: daemon-keygen PATH\n");
        return 2;
    }
    zcert_t *cert = zcert_new();
    if (!cert || zcert_save(cert, argv[1]) != 0) {
        fprintf(stderr, "daemon-keygen: zcert_save %s failed\n", argv[1]);
        zcert_destroy(&cert);
        return 1;
    }
    zcert_destroy(&cert);
    return 0;
}
