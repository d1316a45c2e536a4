/* pw_monitor.c -- see pw_monitor.h. */
#include "pw_monitor.h"

#include <stdint.h>
#include <string.h>

#include <zmq.h>

int
pw_monitor_next(void *mon)
{
    zmq_msg_t ev, addr;
    zmq_msg_init(&ev);
    if (zmq_msg_recv(&ev, mon, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&ev);
        return -1;
    }
    /* The address frame always follows the event frame at once. */
    zmq_msg_init(&addr);
    zmq_msg_recv(&addr, mon, 0);
    uint16_t event = 0;
    if (zmq_msg_size(&ev) >= 2)
        memcpy(&event, zmq_msg_data(&ev), 2);
    zmq_msg_close(&ev);
    zmq_msg_close(&addr);
    return event;
}
