/* ag_machine.h -- the machine lock: one measuring agent at a time on a
 * machine. Every agent daemon of one machine holds it while it runs a
 * job and while it calibrates, so two agents there never calibrate at
 * once, nor during each other's runs (docs/agent.md "The machine lock").
 * The collector already gives a machine's agents their jobs one at a
 * time (the boot id grouping); the lock adds calibration, which the
 * collector does not schedule, and covers a job that starts while a
 * sibling calibrates.
 *
 * It is an exclusive flock(2) on one file that all the machine's agents
 * name (--machine-lock, default AG_MACHINE_LOCK_DEFAULT, or the
 * environment's PARITY_MACHINE_LOCK). The file is made 0644 whatever the
 * umask, and opened read-only when it is another user's, so agents of
 * different users share it. The kernel drops the lock when its holder
 * exits, however it exits.
 *
 * Library code: nothing here prints or exits.
 */
#ifndef AG_MACHINE_H
#define AG_MACHINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define AG_MACHINE_OK        0
#define AG_MACHINE_ERR      -1
#define AG_MACHINE_BUSY     -2   /* another agent holds it (try only) */
#define AG_MACHINE_STOPPED  -3   /* *stop was set while waiting */

/* /run/lock is a tmpfs every user may write on Debian (mode 1777), and
 * it is emptied at boot: one file per boot, as the boot id groups. */
#define AG_MACHINE_LOCK_DEFAULT  "/run/lock/parity-machine.lock"
/* While another agent holds it, look again this often: a wait must end
 * at a signal, and a blocked flock(2) would not. */
#define AG_MACHINE_POLL_MS       100

typedef struct ag_machine ag_machine_t;

/* The lock file PATH (NULL: PARITY_MACHINE_LOCK, else the default),
 * opened or made. NULL with err naming the call and path. Caller owns
 * the result (ag_machine_destroy). */
ag_machine_t *ag_machine_new(const char *path, char *err, size_t errlen);

/* Releases the lock if held and closes the file; sets *mp to NULL. */
void ag_machine_destroy(ag_machine_t **mp);

/* The path in use (owned by m). */
const char *ag_machine_path(const ag_machine_t *m);

/* Take the lock. wait false: once, AG_MACHINE_BUSY when another agent
 * holds it. wait true: until it is ours, or until *stop (may be NULL)
 * is non-zero (AG_MACHINE_STOPPED). waited_ms (may be NULL): how long
 * it took. Taking it twice is an error (AG_MACHINE_ERR, err). */
int ag_machine_take(ag_machine_t *m, bool wait, const _Atomic int *stop,
                    long *waited_ms, char *err, size_t errlen);

/* Release it (nothing when not held). */
void ag_machine_release(ag_machine_t *m);

#endif
