/* A snapshot's state file: named sections of bytes (a vCPU's registers, a
 * device's, a share's FUSE state), each with its length and CRC-32, after a
 * header that says which fsvm and which format wrote it. Guest RAM is not
 * in it: it is a file of its own, mapped as it is (docs/snapshot.md).
 * Whoever owns a section parses it; this file only guarantees that what it
 * hands out is what was written, whole. */
#ifndef FSVM_SNAPSHOT_FILE_H
#define FSVM_SNAPSHOT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/state_blob.h"

#define SNAPSHOT_FORMAT_VERSION 1
/* A section's name: letters, digits and ".-_", NUL-padded. */
#define SNAPSHOT_NAME_MAX 31
/* The state file is small (no RAM): anything larger is not ours. */
#define SNAPSHOT_STATE_MAX (64u << 20)
#define SNAPSHOT_SECTIONS_MAX 1024

struct snapshot_writer {
	struct state_out out; /* its err: the first failure, after which
			       * every call does nothing */
	unsigned int sections;
};

/* producer names the program (e.g. "fsvm 0.9"): a reader refuses any other. */
void snapshot_writer_init(struct snapshot_writer *w, const char *producer,
			  uint64_t memory_size);
/* Appends a section; name must be new and valid. */
void snapshot_add(struct snapshot_writer *w, const char *name,
		  const void *data, size_t len);
/* Writes the file at dirfd/name whole or not at all (a temporary file,
 * fsync, rename). Returns 0 or the first -errno of the writer's calls. */
int snapshot_write(struct snapshot_writer *w, int dirfd, const char *name);
void snapshot_writer_fini(struct snapshot_writer *w);

struct snapshot_section {
	char name[SNAPSHOT_NAME_MAX + 1];
	const unsigned char *data;
	size_t len;
};

struct snapshot {
	unsigned char *buf; /* the file's bytes */
	size_t len;
	uint64_t memory_size; /* bytes of RAM the snapshot's memory file holds */
	unsigned int count;
	struct snapshot_section *sections;
};

/* Checks buf (len bytes, taken over on success) as a state file written
 * by producer: header, every section's length, name and CRC. Returns 0,
 * or -EBADMSG (-EPROTO: another format or producer) with one line in err
 * naming the part that is wrong. */
int snapshot_parse(struct snapshot *s, unsigned char *buf, size_t len,
		   const char *producer, char *err, size_t errlen);
/* Reads dirfd/name and parses it; -errno of the read with a line too. */
int snapshot_load(struct snapshot *s, int dirfd, const char *name,
		  const char *producer, char *err, size_t errlen);
/* The section of this name, or NULL. */
const struct snapshot_section *snapshot_find(const struct snapshot *s,
					     const char *name);
void snapshot_fini(struct snapshot *s);

#endif
