/* pw_monitor.h -- reading a ZeroMQ socket monitor (zmq_socket_monitor):
 * the agent's link, the collector's server and the client's connection
 * each watch their socket's TCP and CURVE handshake events through one.
 *
 * A monitor message is two frames: the 16-bit event and value, then the
 * peer's address. This reads both and gives the event.
 */
#ifndef PW_MONITOR_H
#define PW_MONITOR_H

/* The next event waiting on mon (a PAIR socket connected to the
 * monitor's endpoint; borrowed) as ZMQ_EVENT_*, without blocking; -1
 * when none is waiting. */
int pw_monitor_next(void *mon);

#endif
