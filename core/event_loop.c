/* epoll dispatch with one handler per file descriptor. */
#include "core/event_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

struct event_source {
	int fd; /* -1 once deleted: freed after the batch that may name it */
	event_fn fn;
	void *opaque;
	struct event_source *next;
};

int event_loop_init(struct event_loop *loop)
{
	loop->sources = NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	return loop->epfd < 0 ? -errno : 0;
}

int event_loop_add(struct event_loop *loop, int fd, uint32_t events,
		   event_fn fn, void *opaque)
{
	struct event_source *src = malloc(sizeof(*src));
	if (!src)
		return -ENOMEM;
	*src = (struct event_source){.fd = fd, .fn = fn, .opaque = opaque};
	struct epoll_event ev = {.events = events, .data.ptr = src};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;
		free(src);
		return err;
	}
	src->next = loop->sources;
	loop->sources = src;
	return 0;
}

void event_loop_del(struct event_loop *loop, int fd)
{
	for (struct event_source *src = loop->sources; src; src = src->next) {
		if (src->fd == fd) {
			epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
			src->fd = -1;
			return;
		}
	}
}

static void event_loop_reap(struct event_loop *loop)
{
	struct event_source **p = &loop->sources;
	while (*p) {
		struct event_source *src = *p;
		if (src->fd < 0) {
			*p = src->next;
			free(src);
		} else {
			p = &src->next;
		}
	}
}

int event_loop_run_once(struct event_loop *loop, int timeout_ms)
{
	struct epoll_event events[16];
	int n = epoll_wait(loop->epfd, events, 16, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		struct event_source *src = events[i].data.ptr;
		if (src->fd >= 0)
			src->fn(src->opaque, events[i].events);
	}
	event_loop_reap(loop);
	return n;
}

void event_loop_destroy(struct event_loop *loop)
{
	for (struct event_source *src = loop->sources; src; src = src->next)
		event_loop_del(loop, src->fd);
	event_loop_reap(loop);
	if (loop->epfd >= 0)
		close(loop->epfd);
	loop->epfd = -1;
}
