/* A container's own mounts (GUEST_SPEC_FSMOUNTS), applied in its new root
 * after the root switch, then its masked and read-only paths
 * (GUEST_SPEC_MASKED, GUEST_SPEC_READONLY). */
#ifndef FSVM_GUEST_CONTAINER_MOUNTS_H
#define FSVM_GUEST_CONTAINER_MOUNTS_H

#include <stdbool.h>
#include <sys/stat.h>

#define CONTAINER_MAX_MOUNTS 128
#define CONTAINER_MAX_PATHS 128 /* masked ones, and read-only ones */
#define MOUNT_MAX_PROPAGATION 4

/* mount(8)'s options split as mount(2) takes them. */
struct mount_options {
	unsigned long flags; /* MS_* of the mount itself */
	/* MS_SHARED, MS_PRIVATE, MS_SLAVE or MS_UNBINDABLE (with MS_REC),
	 * each a call of its own after the mount, in order. */
	unsigned long propagation[MOUNT_MAX_PROPAGATION];
	unsigned int nr_propagation;
	const char *data; /* the other options, comma-joined; "" for none */
};

/* Parses options, writing the file-system data over them in place
 * (out->data points into options). NULL, or why they are refused. */
const char *mount_options_parse(char *options, struct mount_options *out);

struct container_mount {
	const char *type, *source, *destination;
	struct mount_options options;
	bool bind;
	/* A bind of a file the job carries: its name under GUEST_SPEC_FILES,
	 * and that file as a detached mount taken before the root switch
	 * (-1 until then); else NULL and -1. */
	const char *job_file;
	int job_file_tree;
};

struct container_mounts {
	unsigned int nr_mounts;
	struct container_mount mounts[CONTAINER_MAX_MOUNTS];
	int nr_masked, nr_readonly;
	char *masked[CONTAINER_MAX_PATHS + 1], *readonly[CONTAINER_MAX_PATHS + 1];
	/* The init's /dev/null, a detached mount for each masked path that
	 * turns out to be a file (the container's /dev may have none). */
	int null_trees[CONTAINER_MAX_PATHS];
	/* GUEST_STDOUT_TTY's node, for the container's /dev/console. */
	bool has_console;
	struct stat console;
};

/* Parses GUEST_SPEC_FSMOUNTS's fields (four a mount, rewritten in place)
 * into c. 0, or -1 after one line. */
int container_mounts_parse(char **fields, int count, struct container_mounts *c);

/* Before the root switch: reads the job's mounts, masked and read-only
 * paths into c and takes what the new root cannot reach (the job's
 * files, the init's /dev/null and console). 0, or -1 after one line. */
int container_mounts_prepare(struct container_mounts *c);

/* After it: mounts c's list in order, each destination resolved in the
 * new root (made when missing), fills a tmpfs /dev with the nodes runc
 * makes, then masks and write-protects c's paths (missing ones skipped).
 * 0, or -1 after one line. */
int container_mounts_apply(struct container_mounts *c);

#endif
