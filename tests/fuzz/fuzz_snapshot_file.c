/* libFuzzer target for a snapshot's state file (core/snapshot_file.c).
 * The first byte picks the mode: even, the rest is a state file as it
 * might be on disk; odd, the rest is cut into sections that the writer
 * makes a file of, one byte of which is then changed (or none): a valid
 * file must read back as written, a changed one must be refused. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/snapshot_file.h"

#define PRODUCER "fsvm fuzz"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_raw(const uint8_t *data, size_t size)
{
	unsigned char *buf = malloc(size ? size : 1);
	memcpy(buf, data, size);
	struct snapshot s;
	char err[256];
	if (snapshot_parse(&s, buf, size, PRODUCER, err, sizeof(err))) {
		free(buf);
		return;
	}
	for (unsigned int i = 0; i < s.count; i++)
		if (snapshot_find(&s, s.sections[i].name) != &s.sections[i])
			abort();
	snapshot_fini(&s);
}

/* Sections of the input: a length byte, then that many bytes, named in turn. */
static void write_then_change(const uint8_t *data, size_t size)
{
	if (size < 2)
		return;
	size_t flip = (size_t)data[0] << 8 | data[1];
	data += 2;
	size -= 2;
	struct snapshot_writer w;
	snapshot_writer_init(&w, PRODUCER, size);
	unsigned int n = 0;
	while (size) {
		size_t len = data[0] < size - 1 ? data[0] : size - 1;
		char name[16];
		snprintf(name, sizeof(name), "s%u", n++);
		snapshot_add(&w, name, data + 1, len);
		data += 1 + len;
		size -= 1 + len;
	}
	if (w.out.err) {
		snapshot_writer_fini(&w);
		return;
	}
	/* What snapshot_write would write: through a file, as it is used. */
	char path[] = "/tmp/fuzz_snapshot_file.XXXXXX";
	if (!mkdtemp(path))
		abort();
	int dfd = open(path, O_RDONLY | O_DIRECTORY);
	if (snapshot_write(&w, dfd, "state"))
		abort();
	snapshot_writer_fini(&w);
	struct snapshot s;
	char err[256];
	if (flip < 0x8000) {
		int fd = openat(dfd, "state", O_RDWR);
		off_t len = lseek(fd, 0, SEEK_END);
		unsigned char b;
		if (pread(fd, &b, 1, (off_t)flip % len) != 1)
			abort();
		b ^= 0x20;
		if (pwrite(fd, &b, 1, (off_t)flip % len) != 1)
			abort();
		close(fd);
		if (!snapshot_load(&s, dfd, "state", PRODUCER, err, sizeof(err)))
			abort(); /* a changed byte went unseen */
	} else {
		if (snapshot_load(&s, dfd, "state", PRODUCER, err, sizeof(err)))
			abort();
		if (s.count != n)
			abort();
		snapshot_fini(&s);
	}
	unlinkat(dfd, "state", 0);
	close(dfd);
	rmdir(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		write_then_change(data + 1, size - 1);
	else
		parse_raw(data + 1, size - 1);
	return 0;
}
