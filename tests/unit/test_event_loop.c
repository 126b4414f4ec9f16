/* Unit tests for vmm/event_loop: epoll dispatch to per-fd handlers. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/event_loop.h"

/* A pipe watched by the loop, and what its handler saw. */
struct watched {
	int rfd, wfd;
	int calls;
	uint32_t events;
	char last;
};

static void on_readable(void *opaque, uint32_t events)
{
	struct watched *w = opaque;
	w->calls++;
	w->events = events;
	if (read(w->rfd, &w->last, 1) != 1)
		w->last = 0;
}

static void open_pipe(struct watched *w)
{
	int fds[2];
	assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
	*w = (struct watched){.rfd = fds[0], .wfd = fds[1]};
}

static void close_pipe(struct watched *w)
{
	close(w->rfd);
	close(w->wfd);
}

static void poke(struct watched *w, char c)
{
	assert_int_equal(write(w->wfd, &c, 1), 1);
}

static void test_idle_loop_times_out(void **state)
{
	(void)state;
	struct event_loop loop;
	struct watched w;
	assert_int_equal(event_loop_init(&loop), 0);
	open_pipe(&w);
	assert_int_equal(event_loop_add(&loop, w.rfd, EPOLLIN, on_readable, &w),
			 0);
	assert_int_equal(event_loop_run_once(&loop, 0), 0);
	assert_int_equal(w.calls, 0);
	event_loop_destroy(&loop);
	close_pipe(&w);
}

static void test_ready_fd_runs_its_handler(void **state)
{
	(void)state;
	struct event_loop loop;
	struct watched a, b;
	assert_int_equal(event_loop_init(&loop), 0);
	open_pipe(&a);
	open_pipe(&b);
	assert_int_equal(event_loop_add(&loop, a.rfd, EPOLLIN, on_readable, &a),
			 0);
	assert_int_equal(event_loop_add(&loop, b.rfd, EPOLLIN, on_readable, &b),
			 0);
	poke(&b, 'x');
	assert_int_equal(event_loop_run_once(&loop, 1000), 1);
	assert_int_equal(a.calls, 0);
	assert_int_equal(b.calls, 1);
	assert_true(b.events & EPOLLIN);
	assert_int_equal(b.last, 'x');
	poke(&a, 'y');
	poke(&b, 'z');
	assert_int_equal(event_loop_run_once(&loop, 1000), 2);
	assert_int_equal(a.last, 'y');
	assert_int_equal(b.last, 'z');
	event_loop_destroy(&loop);
	close_pipe(&a);
	close_pipe(&b);
}

static void test_deleted_fd_not_dispatched(void **state)
{
	(void)state;
	struct event_loop loop;
	struct watched a, b;
	assert_int_equal(event_loop_init(&loop), 0);
	open_pipe(&a);
	open_pipe(&b);
	assert_int_equal(event_loop_add(&loop, a.rfd, EPOLLIN, on_readable, &a),
			 0);
	assert_int_equal(event_loop_add(&loop, b.rfd, EPOLLIN, on_readable, &b),
			 0);
	event_loop_del(&loop, a.rfd);
	event_loop_del(&loop, 12345); /* unknown fd: no effect */
	poke(&a, 'x');
	assert_int_equal(event_loop_run_once(&loop, 0), 0);
	assert_int_equal(a.calls, 0);
	poke(&b, 'y');
	assert_int_equal(event_loop_run_once(&loop, 1000), 1);
	assert_int_equal(b.calls, 1);
	event_loop_destroy(&loop);
	close_pipe(&a);
	close_pipe(&b);
}

static void test_add_errors(void **state)
{
	(void)state;
	struct event_loop loop;
	struct watched w;
	assert_int_equal(event_loop_init(&loop), 0);
	open_pipe(&w);
	assert_int_equal(event_loop_add(&loop, -1, EPOLLIN, on_readable, &w),
			 -EBADF);
	assert_int_equal(event_loop_add(&loop, w.rfd, EPOLLIN, on_readable, &w),
			 0);
	assert_int_equal(event_loop_add(&loop, w.rfd, EPOLLIN, on_readable, &w),
			 -EEXIST);
	/* The failed adds left no source behind (LeakSanitizer checks). */
	event_loop_destroy(&loop);
	assert_int_equal(loop.epfd, -1);
	assert_null(loop.sources);
	close_pipe(&w);
}

int main(void)
{
	const struct CMUnitTest event_loop[] = {
		cmocka_unit_test(test_idle_loop_times_out),
		cmocka_unit_test(test_ready_fd_runs_its_handler),
		cmocka_unit_test(test_deleted_fd_not_dispatched),
		cmocka_unit_test(test_add_errors),
	};
	return cmocka_run_group_tests(event_loop, NULL, NULL);
}
