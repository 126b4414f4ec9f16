/* The main thread's epoll loop: stdin, signals, timers and device fds. */
#ifndef FSVM_EVENT_LOOP_H
#define FSVM_EVENT_LOOP_H

#include <stdint.h>

typedef void (*event_fn)(void *opaque, uint32_t events);

struct event_source;

struct event_loop {
	int epfd;
	struct event_source *sources;
};

int event_loop_init(struct event_loop *loop);
int event_loop_add(struct event_loop *loop, int fd, uint32_t events,
		   event_fn fn, void *opaque);
void event_loop_del(struct event_loop *loop, int fd);
/* Waits up to timeout_ms (-1: forever) and runs the ready handlers. */
int event_loop_run_once(struct event_loop *loop, int timeout_ms);
void event_loop_destroy(struct event_loop *loop);

#endif
