/* Guarded guest RAM, exact bus accesses, the scratch share, resource
 * counts and invariant failures for the fuzz targets. */
#include "tests/fuzz/harness.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <sanitizer/asan_interface.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/io_bus.h"
#include "fs/fuse_wait.h"

uint8_t *guarded_alloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, size + 2 * page, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED ||
	    mprotect(p + page, size, PROT_READ | PROT_WRITE) < 0) {
		perror("fuzz: guarded_alloc");
		abort();
	}
	return p + page;
}

void bus_access(const struct io_bus *bus, uint64_t addr, bool is_write,
		void *value, unsigned int size)
{
	/* One ASan granule, its tail past size poisoned. */
	static _Alignas(8) uint8_t data[8];
	if (size == 0 || size > sizeof(data))
		abort();
	if (is_write)
		memcpy(data, value, size);
	ASAN_POISON_MEMORY_REGION(data + size, sizeof(data) - size);
	bool claimed = io_bus_dispatch(bus, addr, is_write, data, size);
	ASAN_UNPOISON_MEMORY_REGION(data, sizeof(data));
	if (!is_write)
		memcpy(value, data, size);
	if (!is_write && !claimed)
		memset(value, 0xff, size);
}

static char share[64];

static int remove_entry(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	(void)st; (void)type;
	return ftw->level ? remove(path) : 0;
}

void empty_folder(const char *folder)
{
	nftw(folder, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Leaves no scratch folder behind; a tmpfs goes with our namespace. */
static void remove_share(void)
{
	umount2(share, MNT_DETACH);
	empty_folder(share);
	rmdir(share);
}

void block_wait_signal(void)
{
	sigset_t wake;
	sigemptyset(&wake);
	sigaddset(&wake, FUSE_WAIT_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &wake, NULL);
}

static int write_proc(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Unprivileged, a user namespace lets us mount; we are its root, mapped to
 * ourselves, so what we make on the tmpfs has an owner (unmapped, creating
 * files fails with EOVERFLOW). */
static int user_namespace(void)
{
	char uid[32], gid[32];

	snprintf(uid, sizeof(uid), "0 %u 1", (unsigned int)geteuid());
	snprintf(gid, sizeof(gid), "0 %u 1", (unsigned int)getegid());
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -1;
	return write_proc("/proc/self/uid_map", uid) ||
	       write_proc("/proc/self/setgroups", "deny") ||
	       write_proc("/proc/self/gid_map", gid) ? -1 : 0;
}

const char *scratch_share(void)
{
	snprintf(share, sizeof(share), "/tmp/fsvm-fuzz-XXXXXX");
	if (!mkdtemp(share))
		abort();
	atexit(remove_share);
	if ((unshare(CLONE_NEWNS) == 0 || user_namespace() == 0) &&
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	    mount("fsvm-fuzz", share, "tmpfs", 0, "size=64m,nr_inodes=4096") == 0)
		return share;
	fprintf(stderr, "fuzz: no private tmpfs (%s), limiting file sizes\n",
		strerror(errno));
	struct rlimit lim = { 64 << 20, 64 << 20 };

	setrlimit(RLIMIT_FSIZE, &lim);
	signal(SIGXFSZ, SIG_IGN);
	return share;
}

static unsigned int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	unsigned int n = 0;
	if (!d) {
		perror(dir);
		abort();
	}
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

struct resources resources_now(void)
{
	return (struct resources){.fds = count_entries("/proc/self/fd"),
				  .threads = count_entries("/proc/self/task")};
}

void resources_check(const char *target, struct resources before)
{
	/* A joined thread leaves /proc a moment after pthread_join returns
	 * (the kernel wakes the joiner as the thread exits): a while to go. */
	const struct timespec moment = {.tv_nsec = 1000 * 1000};
	struct resources now = resources_now();
	for (int tries = 0; tries < 1000 && now.threads > before.threads;
	     tries++) {
		nanosleep(&moment, NULL);
		now = resources_now();
	}
	if (now.fds > before.fds || now.threads > before.threads) {
		fprintf(stderr, "%s: the input left %d fds and %d threads behind\n",
			target, (int)(now.fds - before.fds),
			(int)(now.threads - before.threads));
		abort();
	}
}

/* The threads of this process. */
static unsigned int tasks(int *tids, unsigned int max)
{
	DIR *d = opendir("/proc/self/task");
	unsigned int nr = 0;
	struct dirent *e;
	if (!d)
		abort();
	while ((e = readdir(d)) && nr < max)
		if (e->d_name[0] != '.')
			tids[nr++] = atoi(e->d_name);
	closedir(d);
	return nr;
}

int started_thread(int (*start)(void *arg), void *arg)
{
	int before[64], after[64];
	unsigned int nr_before = tasks(before, 64);
	if (start(arg))
		abort();
	unsigned int nr_after = tasks(after, 64);
	for (unsigned int i = 0; i < nr_after; i++) {
		bool old = false;
		for (unsigned int j = 0; j < nr_before; j++)
			old = old || after[i] == before[j];
		if (!old)
			return after[i];
	}
	abort();
}

/* The kernel says a sleeping thread's system call; a running one's is
 * "running". */
bool thread_waits_in_epoll(int tid)
{
	char path[64], line[64] = "";
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	FILE *f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f))
		abort();
	fclose(f);
	int nr = atoi(line);
	return line[0] != 'r' && (nr == 232 || nr == 281 || nr == 441);
}

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt,
	       ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: invariant broken (%s): ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void pin_to_this_cpu(void)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		abort();
}

uint8_t get8(struct input *in)
{
	if (!in->left)
		return 0;
	in->left--;
	return *in->p++;
}

uint16_t get16(struct input *in)
{
	return (uint16_t)(get8(in) | get8(in) << 8);
}

uint32_t get32(struct input *in)
{
	return get16(in) | (uint32_t)get16(in) << 16;
}

uint64_t get64(struct input *in)
{
	return get32(in) | (uint64_t)get32(in) << 32;
}

uint16_t le16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
