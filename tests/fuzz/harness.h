/* What the fuzz targets need around the code they drive: guest RAM that
 * faults at its edges, accesses sized as a vCPU's, a scratch share, the
 * check that an input leaves nothing behind, and invariant failures that
 * say why. */
#ifndef FSVM_FUZZ_HARNESS_H
#define FSVM_FUZZ_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* size bytes (a multiple of the page size) of zeroed memory between two
 * inaccessible pages, so that a stray access just past either end faults
 * at once. Aborts when it cannot. */
uint8_t *guarded_alloc(size_t size);

struct io_bus;

/* One access through a bus as a vCPU exit makes it, size 1 to 8 bytes:
 * the handler sees data exactly size bytes long, so ASan catches one that
 * touches more. A read of an address nobody claims sees all ones. */
void bus_access(const struct io_bus *bus, uint64_t addr, bool is_write,
		void *value, unsigned int size);

/* A scratch folder for a share: on a private tmpfs of 64 MiB where one
 * can be made (as root, or in a user namespace), so that sparse writes at
 * large offsets and fallocate cannot fill the host's disk; elsewhere in
 * /tmp under a file size limit. Removed at exit. Call it before starting
 * any thread (unshare refuses a threaded process). */
const char *scratch_share(void);

/* Blocks the FUSE server's wake-up signal in this thread and the threads
 * it starts: only the server's waiting threads take it, as in fsvm. */
void block_wait_signal(void);
/* Removes everything in folder but the folder. */
void empty_folder(const char *folder);

/* Threads and file descriptors of the process. */
struct resources {
	unsigned int fds;
	unsigned int threads;
};

struct resources resources_now(void);
/* Aborts, saying what, when the process holds more than before: an input
 * must give back every fd and thread it took, or the next inputs run
 * against a different process (and a long run dies of it). */
void resources_check(const char *target, struct resources before);

/* Runs start(arg), which starts one thread (a device's at DRIVER_OK),
 * and returns that thread's id; aborts if none came. */
int started_thread(int (*start)(void *arg), void *arg);

/* Pins this thread, and the threads it starts, to the CPU it runs on: a
 * wake-up of a thread on the waker's own CPU is done before the write
 * that makes it returns (on another it may be queued for later), so a
 * device thread seen asleep has nothing left to do but what is in
 * flight. Aborts when it cannot. */
void pin_to_this_cpu(void);

/* An input read front to back, little-endian; past its end, zeroes. */
struct input {
	const uint8_t *p;
	size_t left;
};

uint8_t get8(struct input *in);
uint16_t get16(struct input *in);
uint32_t get32(struct input *in);
uint64_t get64(struct input *in);

/* The little-endian 16 bits at p (the caller checked both are there). */
uint16_t le16_at(const uint8_t *p);

/* True while thread tid sleeps in epoll_wait: a device thread waiting for
 * work, once what it waits for comes only from the caller. */
bool thread_waits_in_epoll(int tid);

/* An invariant of the code under fuzz: when cond is false, says which
 * and why, then aborts (libFuzzer keeps the input as a crash). */
#define fuzz_assert(cond, ...) \
	((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__))
void fuzz_fail(const char *file, int line, const char *cond, const char *fmt,
	       ...) __attribute__((noreturn, format(printf, 4, 5)));

#endif
