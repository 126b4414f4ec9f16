/* The boot timeline: when each step of a run happened, in milliseconds
 * from launch. Marks come from fsvm's threads and from the guest (through
 * the exit device): the first of each counts, and the guest's are only
 * ever displayed. */
#ifndef FSVM_TIMELINE_H
#define FSVM_TIMELINE_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum timeline_mark {
	TL_SETUP_DONE,     /* fsvm: the machine is built */
	TL_FIRST_RUN,      /* fsvm: the boot vCPU's first KVM_RUN */
	TL_KERNEL_ENTRY,   /* the guest kernel's clock read 0 (see below) */
	TL_FIRST_CONSOLE,  /* the kernel console's first byte */
	TL_INIT_START,     /* guest init: running */
	TL_MODULES_LOADED, /* guest init: modules loaded */
	TL_ROOT_MOUNTED,   /* guest init: the root share mounted */
	TL_COMMAND_START,  /* guest init: starting the command */
	TL_COMMAND_EXIT,   /* guest init: the command ended */
	TL_VMM_EXIT,       /* fsvm: the vCPUs stopped */
	TL_NR_MARKS
};

struct timeline {
	struct timespec start;
	/* Microseconds from start; -1 until the mark is reached. */
	_Atomic int64_t us[TL_NR_MARKS];
};

void timeline_init(struct timeline *tl, const struct timespec *start);

/* Records the mark now, unless it was recorded before. */
void timeline_mark(struct timeline *tl, enum timeline_mark mark);

/* Records the mark at us microseconds from start: for a time reckoned
 * backwards (kernel entry). Ignored unless 0 <= us <= now. */
void timeline_mark_at(struct timeline *tl, enum timeline_mark mark,
		      int64_t us);

/* Microseconds from start to now. */
int64_t timeline_now_us(const struct timeline *tl);

/* A mark's name, as printed ("first KVM_RUN"). */
const char *timeline_name(enum timeline_mark mark);

/* A mark's key in fsvm --json ("first-kvm-run"). */
const char *timeline_key(enum timeline_mark mark);

/* The marks reached, one line each with the time from launch and from the
 * mark before. */
void timeline_print(const struct timeline *tl, FILE *out);

#endif
