/* The command's process: who it runs as (GUEST_SPEC_USER) and what a
 * container's job gives it beyond that (GUEST_SPEC_PROCESS): umask,
 * resource limits, supplementary groups, capabilities, no_new_privs. */
#ifndef FSVM_GUEST_PROCESS_H
#define FSVM_GUEST_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#define PROCESS_MAX_FIELDS 64
#define PROCESS_MAX_GROUPS 1024
#define PROCESS_MAX_RLIMITS RLIM_NLIMITS

/* GUEST_SPEC_USER: the ids to take; home "" is the root's passwd entry's
 * (or "/"), name "" sets no USER. */
struct run_as {
	bool set;
	uid_t uid;
	gid_t gid;
	const char *home, *name;
};

struct process_rlimit {
	int resource; /* RLIMIT_* */
	struct rlimit limit;
};

/* Zeroed: what `fsvm run` gives its command (root's capabilities, no
 * supplementary groups, the init's umask and limits). */
struct process_spec {
	bool has_umask;
	mode_t umask;
	unsigned int nr_groups;
	gid_t groups[PROCESS_MAX_GROUPS];
	unsigned int nr_rlimits;
	struct process_rlimit rlimits[PROCESS_MAX_RLIMITS];
	bool has_caps;
	uint64_t bounding, effective, permitted, inheritable, ambient;
	bool no_new_privs;
	bool exact_env; /* env=exact */
};

/* Reads GUEST_SPEC_PROCESS's "KEY=VALUE" fields into *p (zeroed when the
 * job has none). Returns 0, or -1 after one line naming the bad field. */
int process_parse(char **fields, int count, struct process_spec *p);

/* process_parse on the job's file. */
int process_read(struct process_spec *p);

/* The home folder of uid in the passwd file at path (its first entry for
 * uid, read up to a bound) into home; 0, or -1 when there is none (no
 * file, no entry, an empty or too long home). */
int passwd_home(const char *path, uid_t uid, char *home, size_t size);

/* In the command's process before exec, in runc's order: umask, limits,
 * the bounding set, the ids (keeping the capabilities through setuid),
 * the other capability sets, ambient ones, no_new_privs. A failure is
 * one line and _exit(125). */
void process_become(const struct process_spec *p, const struct run_as *as);

#endif
