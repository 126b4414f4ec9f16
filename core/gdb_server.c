/* The gdb stub's thread and its target, the VM: one poll loop over the
 * listening socket (or the connection) and a wake-up eventfd, and the
 * world's stop: every vCPU parked outside KVM_RUN, where any thread may
 * read and write its registers (KVM serializes a vCPU's ioctls on its own
 * mutex, and a parked vCPU holds it for none). */
#include "core/gdb_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/arch.h"
#include "core/gdb_stub.h"
#include "core/kvm.h"
#include "core/log.h"

/* One vCPU as the world's stop sees it; under gdb_server.lock. */
struct gdb_vcpu {
	pthread_t thread;
	bool alive;    /* its thread runs its loop: kick it to stop it */
	bool parked;   /* waiting in gdb_vcpu_checkpoint() */
	bool held;     /* gdb resumed others only */
	bool stepping; /* gdb asked for one instruction */
};

struct gdb_server {
	struct vm *vm;
	int listen_fd, conn_fd;
	int wake_fd; /* a vCPU's stop, or the VM's end */
	uint32_t debug_caps; /* KVM_CAP_SET_GUEST_DEBUG2 */
	char where[128];     /* what -v and errors call the socket */
	struct gdb_stub stub; /* the server thread's alone */

	pthread_mutex_t lock;
	pthread_cond_t resumed; /* parked vCPUs wait for it */
	pthread_cond_t changed; /* the server waits for them to park */
	bool paused;            /* the world is to stop */
	bool event_pending;     /* a vCPU stopped it for gdb: event */
	struct gdb_stop event;
	struct gdb_debug armed; /* what the vCPUs run with */
	struct gdb_vcpu *vcpus;
};

static char open_error[192];

static int listen_tcp(struct gdb_server *gs, const char *port)
{
	struct sockaddr_in addr = {.sin_family = AF_INET,
				   .sin_port = htons((uint16_t)atoi(port)),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	snprintf(gs->where, sizeof(gs->where), "127.0.0.1:%s", port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	/* A port whose last session is in TIME_WAIT is free to bind. */
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fd, 1) < 0) {
		int err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
}

/* A socket left by an earlier run, which nobody listens on any more. */
static bool stale_socket(const struct sockaddr_un *addr)
{
	struct stat st;
	if (lstat(addr->sun_path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool stale = fd >= 0 &&
		     connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0 &&
		     errno == ECONNREFUSED;
	if (fd >= 0)
		close(fd);
	return stale;
}

/* Made with the user's rights, readable and writable by the user alone. */
static int listen_unix(struct gdb_server *gs, const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	snprintf(gs->where, sizeof(gs->where), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (stale_socket(&addr))
		unlink(path);
	mode_t old = umask(0177); /* still one thread: umask is the process's */
	int err = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
			  listen(fd, 1) < 0
		  ? -errno
		  : 0;
	umask(old);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int gdb_server_open(struct vm *vm, const char *spec, bool wait,
		    const char **why)
{
	if (!kvm_has(vm, KVM_CAP_SET_GUEST_DEBUG)) {
		*why = "this KVM cannot debug its guests (no KVM_SET_GUEST_DEBUG)";
		return -ENOTSUP;
	}
	struct gdb_server *gs = calloc(1, sizeof(*gs));
	struct gdb_vcpu *vcpus = calloc(vm->nr_vcpus, sizeof(*vcpus));
	if (!gs || !vcpus) {
		free(gs);
		free(vcpus);
		*why = "out of memory";
		return -ENOMEM;
	}
	*gs = (struct gdb_server){.vm = vm, .conn_fd = -1, .paused = wait,
				  .vcpus = vcpus};
	int caps = ioctl(vm->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SET_GUEST_DEBUG2);
	gs->debug_caps = caps > 0 ? (uint32_t)caps : 0;
	gs->listen_fd = strchr(spec, '/') ? listen_unix(gs, spec)
					  : listen_tcp(gs, spec);
	if (gs->listen_fd < 0) {
		int err = gs->listen_fd;
		snprintf(open_error, sizeof(open_error), "cannot listen on %s",
			 gs->where);
		*why = open_error;
		free(vcpus);
		free(gs);
		return err;
	}
	gs->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (gs->wake_fd < 0) {
		int err = -errno;
		close(gs->listen_fd);
		free(vcpus);
		free(gs);
		*why = "cannot make an eventfd";
		return err;
	}
	pthread_mutex_init(&gs->lock, NULL);
	pthread_cond_init(&gs->resumed, NULL);
	pthread_cond_init(&gs->changed, NULL);
	vm->gdb = gs;
	log_info("gdb: listening on %s%s", gs->where,
		 wait ? " (the guest waits for gdb)" : "");
	return 0;
}

static void wake_server(struct gdb_server *gs)
{
	uint64_t one = 1;
	if (write(gs->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_error("gdb: eventfd: %s", strerror(errno));
}

bool gdb_vcpu_checkpoint(struct vcpu *vcpu)
{
	struct vm *vm = vcpu->vm;
	struct gdb_server *gs = vm->gdb;
	struct gdb_vcpu *me = &gs->vcpus[vcpu->id];
	pthread_mutex_lock(&gs->lock);
	me->thread = pthread_self();
	me->alive = true;
	if ((gs->paused || me->held) && !atomic_load(&vm->stopping)) {
		me->parked = true;
		pthread_cond_broadcast(&gs->changed);
		while ((gs->paused || me->held) && !atomic_load(&vm->stopping))
			pthread_cond_wait(&gs->resumed, &gs->lock);
		me->parked = false;
	}
	/* The kick that parked it is spent; vcpu_kick_and_join()'s comes
	 * after vm->stopping, which is read after this. */
	vcpu->run->immediate_exit = 0;
	pthread_mutex_unlock(&gs->lock);
	return !atomic_load(&vm->stopping);
}

bool gdb_vcpu_debug_exit(struct vcpu *vcpu)
{
	struct gdb_server *gs = vcpu->vm->gdb;
	if (!gs)
		return true;
	struct gdb_stop stop = {.thread = vcpu->id};
	pthread_mutex_lock(&gs->lock);
	if (arch_gdb_debug_exit(vcpu, &gs->armed, gs->vcpus[vcpu->id].stepping,
				&stop)) {
		/* The first to stop is the one gdb hears of. Another that
		 * stopped at once runs into its breakpoint again later (a
		 * watchpoint's or a step's stop is lost). */
		if (!gs->event_pending) {
			gs->event = stop;
			gs->event_pending = true;
		}
		gs->paused = true;
		wake_server(gs);
	}
	pthread_mutex_unlock(&gs->lock);
	return true;
}

void gdb_vcpu_gone(struct vcpu *vcpu)
{
	struct gdb_server *gs = vcpu->vm->gdb;
	pthread_mutex_lock(&gs->lock);
	gs->vcpus[vcpu->id].alive = false;
	pthread_cond_broadcast(&gs->changed);
	pthread_mutex_unlock(&gs->lock);
}

void gdb_server_release(struct vm *vm)
{
	struct gdb_server *gs = vm->gdb;
	pthread_mutex_lock(&gs->lock);
	pthread_cond_broadcast(&gs->resumed);
	pthread_cond_broadcast(&gs->changed);
	pthread_mutex_unlock(&gs->lock);
	wake_server(gs);
}

static bool world_stopped(struct gdb_server *gs)
{
	for (unsigned int i = 0; i < gs->vm->nr_vcpus; i++)
		if (gs->vcpus[i].alive && !gs->vcpus[i].parked)
			return false;
	return true;
}

/* Kicks every running vCPU out of KVM_RUN (immediate_exit covers a kick
 * that lands before it) and waits until all are parked. A vCPU that has
 * not started yet parks at its first checkpoint. */
static void stop_world(struct gdb_server *gs)
{
	struct vm *vm = gs->vm;
	pthread_mutex_lock(&gs->lock);
	gs->paused = true;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (gs->vcpus[i].alive && !gs->vcpus[i].parked) {
			vm->vcpus[i].run->immediate_exit = 1;
			pthread_kill(gs->vcpus[i].thread, SIG_VCPU_KICK);
		}
	while (!world_stopped(gs) && !atomic_load(&vm->stopping))
		pthread_cond_wait(&gs->changed, &gs->lock);
	pthread_mutex_unlock(&gs->lock);
}

/* Lets the world go with dbg armed; actions NULL: all run, nothing armed. */
static void start_world(struct gdb_server *gs, const enum gdb_action *actions,
			const struct gdb_debug *dbg)
{
	struct vm *vm = gs->vm;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		bool step = actions && actions[i] == GDB_STEP;
		int err = arch_gdb_set_debug(&vm->vcpus[i], dbg, step,
					     gs->debug_caps);
		if (err)
			log_error("gdb: vCPU %u: KVM_SET_GUEST_DEBUG: %s", i,
				  strerror(-err));
	}
	pthread_mutex_lock(&gs->lock);
	gs->armed = dbg ? *dbg : (struct gdb_debug){0};
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		gs->vcpus[i].held = actions && actions[i] == GDB_HOLD;
		gs->vcpus[i].stepping = actions && actions[i] == GDB_STEP;
	}
	gs->event_pending = false;
	gs->paused = false;
	pthread_cond_broadcast(&gs->resumed);
	pthread_mutex_unlock(&gs->lock);
}

static int target_send(void *target, const char *buf, size_t len)
{
	struct gdb_server *gs = target;
	while (len) {
		ssize_t n = write(gs->conn_fd, buf, len);
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = {.fd = gs->conn_fd, .events = POLLOUT};
			poll(&p, 1, -1);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static unsigned int target_nr_threads(void *target)
{
	return ((struct gdb_server *)target)->vm->nr_vcpus;
}

static int target_read_regs(void *target, unsigned int thread, uint8_t *regs)
{
	struct gdb_server *gs = target;
	return arch_gdb_get_regs(&gs->vm->vcpus[thread], regs);
}

static int target_write_regs(void *target, unsigned int thread,
			     const uint8_t *regs)
{
	struct gdb_server *gs = target;
	return arch_gdb_set_regs(&gs->vm->vcpus[thread], regs);
}

/* Guest RAM at a virtual address, a page at a time: the pages of one
 * range need not be contiguous, nor all mapped; never MMIO. */
static int access_mem(struct gdb_server *gs, unsigned int thread,
		      uint64_t addr, void *buf, const void *src, size_t len)
{
	while (len) {
		uint64_t gpa;
		size_t chunk = GUEST_PAGE_SIZE - (addr & (GUEST_PAGE_SIZE - 1));
		if (chunk > len)
			chunk = len;
		int err = arch_gdb_translate(&gs->vm->vcpus[thread], addr, &gpa);
		if (err)
			return err;
		uint8_t *host = guest_ptr(&gs->vm->mem, gpa, chunk);
		if (!host)
			return -EFAULT;
		if (src) {
			memcpy(host, src, chunk);
			src = (const uint8_t *)src + chunk;
		} else {
			memcpy(buf, host, chunk);
			buf = (uint8_t *)buf + chunk;
		}
		addr += chunk;
		len -= chunk;
	}
	return 0;
}

static int target_read_mem(void *target, unsigned int thread, uint64_t addr,
			   void *buf, size_t len)
{
	return access_mem(target, thread, addr, buf, NULL, len);
}

static int target_write_mem(void *target, unsigned int thread, uint64_t addr,
			    const void *buf, size_t len)
{
	return access_mem(target, thread, addr, NULL, buf, len);
}

static void target_resume(void *target, const enum gdb_action *actions,
			  const struct gdb_debug *dbg)
{
	start_world(target, actions, dbg);
}

static void target_interrupt(void *target)
{
	stop_world(target);
}

static void target_detach(void *target)
{
	start_world(target, NULL, NULL);
}

static void target_kill(void *target)
{
	struct gdb_server *gs = target;
	vm_stop(gs->vm, EXIT_VMM_ERROR, EXIT_REASON_GDB, "gdb killed the guest");
}

static const struct gdb_target_ops target_ops = {
	.send = target_send,
	.nr_threads = target_nr_threads,
	.read_regs = target_read_regs,
	.write_regs = target_write_regs,
	.read_mem = target_read_mem,
	.write_mem = target_write_mem,
	.resume = target_resume,
	.interrupt = target_interrupt,
	.detach = target_detach,
	.kill = target_kill,
};

/* gdb expects a stopped target: the world stops as it connects. */
static void connect_gdb(struct gdb_server *gs)
{
	gs->conn_fd = accept4(gs->listen_fd, NULL, NULL,
			      SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (gs->conn_fd < 0)
		return;
	log_info("gdb: connected on %s", gs->where);
	stop_world(gs);
	struct gdb_stop why = {.kind = GDB_STOP_INTERRUPT, .signal = 5};
	gdb_stub_init(&gs->stub, &target_ops, gs, &why);
}

/* The session is over. After D or k the stub has done what they ask; a
 * gdb that went away leaves nothing of its own in the guest, which runs
 * on as if it had detached. */
static void end_session(struct gdb_server *gs)
{
	if (!gs->stub.ended) {
		if (gs->stub.running)
			stop_world(gs);
		gdb_stub_disconnect(&gs->stub);
		start_world(gs, NULL, NULL);
	}
	close(gs->conn_fd);
	gs->conn_fd = -1;
	log_info("gdb: disconnected");
}

static void from_gdb(struct gdb_server *gs)
{
	char buf[GDB_PACKET_MAX];
	ssize_t n = read(gs->conn_fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		end_session(gs);
		return;
	}
	gdb_stub_input(&gs->stub, buf, (size_t)n);
	if (gdb_stub_over(&gs->stub))
		end_session(gs);
}

/* A vCPU stopped for gdb: the others stop too, then gdb hears why. */
static void from_vcpus(struct gdb_server *gs)
{
	uint64_t n;
	if (read(gs->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_error("gdb: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&gs->lock);
	bool pending = gs->event_pending;
	struct gdb_stop stop = gs->event;
	pthread_mutex_unlock(&gs->lock);
	if (!pending || gs->conn_fd < 0 || !gs->stub.running)
		return;
	stop_world(gs);
	gdb_stub_stopped(&gs->stub, &stop);
	if (gdb_stub_over(&gs->stub))
		end_session(gs);
}

static void *gdb_thread(void *arg)
{
	struct gdb_server *gs = arg;
	struct vm *vm = gs->vm;
	while (!atomic_load(&vm->stopping)) {
		struct pollfd p[2] = {
			{.fd = gs->conn_fd >= 0 ? gs->conn_fd : gs->listen_fd,
			 .events = POLLIN},
			{.fd = gs->wake_fd, .events = POLLIN},
		};
		if (poll(p, 2, -1) < 0) {
			if (errno != EINTR)
				vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_GDB, "gdb: poll: %s",
					strerror(errno));
			continue;
		}
		if (atomic_load(&vm->stopping))
			break;
		if (p[1].revents)
			from_vcpus(gs);
		/* from_vcpus() may have ended the session p[0] was for. */
		if (p[0].revents && p[0].fd == gs->listen_fd)
			connect_gdb(gs);
		else if (p[0].revents && p[0].fd == gs->conn_fd)
			from_gdb(gs);
	}
	/* The status is the VM's, recorded before it began to stop. */
	if (gs->conn_fd >= 0) {
		gdb_stub_exited(&gs->stub, vm->exit_status);
		close(gs->conn_fd);
		gs->conn_fd = -1;
	}
	return NULL;
}

int gdb_server_start(struct vm *vm)
{
	pthread_t thread;
	int err = pthread_create(&thread, NULL, gdb_thread, vm->gdb);
	if (!err)
		pthread_detach(thread);
	return -err;
}
