/* The boot timeline (core/timeline.h). */
#include "core/timeline.h"

/* How -v prints each mark, and its key in --json (docs/json.md). */
static const struct {
	const char *name, *key;
} marks[TL_NR_MARKS] = {
	[TL_SETUP_DONE] = {"VMM set-up done", "setup-done"},
	[TL_FIRST_RUN] = {"first KVM_RUN", "first-kvm-run"},
	[TL_KERNEL_ENTRY] = {"kernel entry (its clock's zero)", "kernel-entry"},
	[TL_FIRST_CONSOLE] = {"kernel's first console output", "first-console"},
	[TL_INIT_START] = {"init start", "init-start"},
	[TL_MODULES_LOADED] = {"modules loaded", "modules-loaded"},
	[TL_ROOT_MOUNTED] = {"root mounted", "root-mounted"},
	[TL_COMMAND_START] = {"command start", "command-start"},
	[TL_COMMAND_EXIT] = {"command exit", "command-exit"},
	[TL_VMM_EXIT] = {"VMM exit", "vmm-exit"},
};

void timeline_init(struct timeline *tl, const struct timespec *start)
{
	tl->start = *start;
	for (int i = 0; i < TL_NR_MARKS; i++)
		atomic_init(&tl->us[i], -1);
}

int64_t timeline_now_us(const struct timeline *tl)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - tl->start.tv_sec) * 1000000 +
	       (now.tv_nsec - tl->start.tv_nsec) / 1000;
}

void timeline_mark_at(struct timeline *tl, enum timeline_mark mark,
		      int64_t us)
{
	if ((unsigned int)mark >= TL_NR_MARKS || us < 0 ||
	    us > timeline_now_us(tl))
		return;
	int64_t unset = -1;
	atomic_compare_exchange_strong(&tl->us[mark], &unset, us);
}

void timeline_mark(struct timeline *tl, enum timeline_mark mark)
{
	/* Cheap once recorded: the console marks on every byte. */
	if ((unsigned int)mark < TL_NR_MARKS && atomic_load(&tl->us[mark]) < 0)
		timeline_mark_at(tl, mark, timeline_now_us(tl));
}

const char *timeline_name(enum timeline_mark mark)
{
	return (unsigned int)mark < TL_NR_MARKS ? marks[mark].name : "?";
}

const char *timeline_key(enum timeline_mark mark)
{
	return (unsigned int)mark < TL_NR_MARKS ? marks[mark].key : "?";
}

void timeline_print(const struct timeline *tl, FILE *out)
{
	fprintf(out, "fsvm: boot timeline (ms from launch, +ms from the step before):\n");
	int64_t prev = 0;
	for (int i = 0; i < TL_NR_MARKS; i++) {
		int64_t us = atomic_load(&tl->us[i]);
		if (us < 0)
			continue;
		fprintf(out, "fsvm:   %9.1f  %+9.1f  %s\n", (double)us / 1e3,
			(double)(us - prev) / 1e3, marks[i].name);
		prev = us;
	}
}
