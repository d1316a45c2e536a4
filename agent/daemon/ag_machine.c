/* ag_machine.c -- see ag_machine.h. */
#include "ag_machine.h"

#include "pw_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct ag_machine {
    int fd;
    bool held;
    char path[4096];
};

ag_machine_t *
ag_machine_new(const char *path, char *err, size_t errlen)
{
    if (!path || !*path)
        path = getenv("PARITY_MACHINE_LOCK");
    if (!path || !*path)
        path = AG_MACHINE_LOCK_DEFAULT;
    if (strlen(path) >= sizeof ((ag_machine_t *)0)->path) {
        snprintf(err, errlen, "machine lock %.64s...: path too long", path);
        return NULL;
    }
    ag_machine_t *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "ag_machine_new: out of memory");
        return NULL;
    }
    snprintf(m->path, sizeof m->path, "%s", path);
    /* flock needs no write access: a file another user made (0644) is
     * opened read-only. */
    m->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (m->fd >= 0)
        (void)fchmod(m->fd, 0644);   /* fails on another's file: fine */
    else if (errno == EACCES || errno == EROFS)
        m->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (m->fd < 0) {
        snprintf(err, errlen, "machine lock %s: open: %s", path,
                 strerror(errno));
        free(m);
        return NULL;
    }
    return m;
}

void
ag_machine_destroy(ag_machine_t **mp)
{
    if (!mp || !*mp)
        return;
    ag_machine_release(*mp);
    close((*mp)->fd);
    free(*mp);
    *mp = NULL;
}

const char *
ag_machine_path(const ag_machine_t *m)
{
    return m->path;
}

int
ag_machine_take(ag_machine_t *m, bool wait, const _Atomic int *stop,
                long *waited_ms, char *err, size_t errlen)
{
    int64_t t0 = pw_clock_mono_ms();
    if (waited_ms)
        *waited_ms = 0;
    if (m->held) {
        snprintf(err, errlen, "machine lock %s: already held", m->path);
        return AG_MACHINE_ERR;
    }
    for (;;) {
        if (flock(m->fd, LOCK_EX | LOCK_NB) == 0) {
            m->held = true;
            if (waited_ms)
                *waited_ms = (long)(pw_clock_mono_ms() - t0);
            return AG_MACHINE_OK;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            snprintf(err, errlen, "machine lock %s: flock: %s", m->path,
                     strerror(errno));
            return AG_MACHINE_ERR;
        }
        if (!wait)
            return AG_MACHINE_BUSY;
        if (stop && *stop)
            return AG_MACHINE_STOPPED;
        struct timespec ts = { 0, AG_MACHINE_POLL_MS * 1000000L };
        nanosleep(&ts, NULL);
    }
}

void
ag_machine_release(ag_machine_t *m)
{
    if (m && m->held) {
        (void)flock(m->fd, LOCK_UN);
        m->held = false;
    }
}
