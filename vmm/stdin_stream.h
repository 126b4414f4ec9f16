/* fsvm's stdin, when it is a pipe or a file, as the guest command's: a
 * thread copies it into one end of a socket pair, whose other end is the
 * stream the guest opens over virtio-vsock (devices/virtio_vsock.h) to
 * GUEST_STDIN_PORT, and the guest init hands the command as a pipe. The
 * socket buffers bound what is in flight, however long the stream. */
#ifndef FSVM_STDIN_STREAM_H
#define FSVM_STDIN_STREAM_H

#include <pthread.h>
#include <stdbool.h>

struct stdin_stream {
	int pump_fd;   /* the thread's end */
	int device_fd; /* the device's end, -1 once it is the device's */
	pthread_t thread;
};

/* Whether fsvm's stdin streams to the command: neither a terminal (an
 * interactive run's is the guest's terminal; a terminal with stdout
 * elsewhere gives the command no stdin, as it did) nor closed nor
 * /dev/null, and --stdin none not given. */
bool stdin_stream_wanted(bool stdin_none);

/* Makes the socket pair and starts the copying; s->device_fd is then for
 * the device. The thread copies until stdin ends (its end shut down for
 * writing, which the guest reads as the end of its stdin) or the guest's
 * end goes; it lives as long as fsvm, which never waits for it. */
int stdin_stream_start(struct stdin_stream *s);

#endif
