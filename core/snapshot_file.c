/* The snapshot's state file (core/snapshot_file.h; the layout is in
 * docs/snapshot.md). Little-endian on disk whatever the host. */
#include "core/snapshot_file.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/log.h"

#define MAGIC "FSVMSNAP"
#define PRODUCER_LEN 32

struct file_header {
	char magic[8];
	uint32_t version;
	uint32_t sections;
	uint64_t memory_size;
	char producer[PRODUCER_LEN];
	uint32_t crc; /* of the bytes above */
	uint32_t zero;
};

struct section_header {
	char name[SNAPSHOT_NAME_MAX + 1];
	uint64_t len;
	uint32_t crc; /* of the name, the length and the data */
	uint32_t zero;
};

_Static_assert(sizeof(struct file_header) == 64, "the header's layout is the file's");
_Static_assert(sizeof(struct section_header) == 48, "a section header's layout is the file's");

static uint32_t crc(const void *p, size_t len)
{
	uLong c = crc32(0L, Z_NULL, 0);
	const unsigned char *b = p;
	/* zlib takes lengths as uInt. */
	while (len) {
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;
		c = crc32(c, b, n);
		b += n;
		len -= n;
	}
	return (uint32_t)c;
}

/* A section's: its name and length count, or a renamed one would pass. */
static uint32_t section_crc(const struct section_header *sh, const void *data, size_t len)
{
	uLong c = crc(sh, offsetof(struct section_header, crc));
	return (uint32_t)crc32_combine(c, crc(data, len), (z_off_t)len);
}

static size_t padded(size_t len)
{
	return (len + 7) & ~(size_t)7;
}

/* Padding and a name's tail are zeros, so every byte of the file is checked. */
static bool all_zero(const void *p, size_t len)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

static bool valid_name(const char *name, size_t max)
{
	size_t n = strnlen(name, max + 1);
	if (n == 0 || n > SNAPSHOT_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'))
			return false;
	}
	return true;
}

void snapshot_writer_init(struct snapshot_writer *w, const char *producer,
			  uint64_t memory_size)
{
	*w = (struct snapshot_writer){0};
	struct file_header *h = state_room(&w->out, sizeof(*h));
	if (!h)
		return;
	if (strlen(producer) >= PRODUCER_LEN) {
		w->out.err = -ENAMETOOLONG;
		return;
	}
	memcpy(h->magic, MAGIC, sizeof(h->magic));
	h->version = htole32(SNAPSHOT_FORMAT_VERSION);
	h->memory_size = htole64(memory_size);
	memcpy(h->producer, producer, strlen(producer));
}

/* Whether the sections written so far have this name. */
static bool written(const struct snapshot_writer *w, const char *name)
{
	size_t off = sizeof(struct file_header);
	for (unsigned int i = 0; i < w->sections; i++) {
		const struct section_header *sh = (const void *)(w->out.buf + off);
		if (!strncmp(sh->name, name, sizeof(sh->name)))
			return true;
		off += sizeof(*sh) + padded(le64toh(sh->len));
	}
	return false;
}

void snapshot_add(struct snapshot_writer *w, const char *name,
		  const void *data, size_t len)
{
	if (w->out.err)
		return;
	if (!valid_name(name, SNAPSHOT_NAME_MAX) || written(w, name)) {
		w->out.err = -EINVAL;
		return;
	}
	if (w->sections == SNAPSHOT_SECTIONS_MAX) {
		w->out.err = -E2BIG;
		return;
	}
	if (len > SNAPSHOT_STATE_MAX) {
		w->out.err = -EFBIG;
		return;
	}
	size_t off = w->out.len;
	if (!state_room(&w->out, sizeof(struct section_header) + padded(len)))
		return;
	struct section_header *sh = (void *)(w->out.buf + off);
	memcpy(sh->name, name, strlen(name));
	sh->len = htole64(len);
	sh->crc = htole32(section_crc(sh, data, len));
	if (len)
		memcpy(sh + 1, data, len);
	w->sections++;
}

int snapshot_write(struct snapshot_writer *w, int dirfd, const char *name)
{
	if (w->out.err)
		return w->out.err;
	struct file_header *h = (void *)w->out.buf;
	h->sections = htole32(w->sections);
	h->crc = htole32(crc(h, offsetof(struct file_header, crc)));

	char tmp[256];
	if (snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int err = 0;
	for (size_t done = 0; done < w->out.len && !err;) {
		ssize_t n = write(fd, w->out.buf + done, w->out.len - done);
		if (n < 0 && errno != EINTR)
			err = -errno;
		else if (n > 0)
			done += (size_t)n;
	}
	if (!err && fsync(fd) < 0)
		err = -errno;
	close(fd);
	if (!err && renameat(dirfd, tmp, dirfd, name) < 0)
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

void snapshot_writer_fini(struct snapshot_writer *w)
{
	state_out_fini(&w->out);
	*w = (struct snapshot_writer){0};
}

int snapshot_parse(struct snapshot *s, unsigned char *buf, size_t len,
		   const char *producer, char *err, size_t errlen)
{
	*s = (struct snapshot){0};
	struct file_header h;
	if (len < sizeof(h))
		return log_refusal(-EBADMSG, err, errlen, "state: %zu bytes, shorter than its header", len);
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, MAGIC, sizeof(h.magic)))
		return log_refusal(-EBADMSG, err, errlen, "state: not an fsvm snapshot (no %s at its start)", MAGIC);
	if (le32toh(h.crc) != crc(&h, offsetof(struct file_header, crc)) || h.zero)
		return log_refusal(-EBADMSG, err, errlen, "state: its header's checksum is wrong");
	if (le32toh(h.version) != SNAPSHOT_FORMAT_VERSION)
		return log_refusal(-EPROTO, err, errlen, "state: format %u, this fsvm reads format %u",
				  le32toh(h.version), SNAPSHOT_FORMAT_VERSION);
	if (h.producer[PRODUCER_LEN - 1] || strcmp(h.producer, producer))
		return log_refusal(-EPROTO, err, errlen, "state: made by '%.*s', this is '%s'",
				  PRODUCER_LEN - 1, h.producer, producer);
	uint32_t count = le32toh(h.sections);
	if (count > SNAPSHOT_SECTIONS_MAX)
		return log_refusal(-EBADMSG, err, errlen, "state: %u sections, more than %u", count,
				  SNAPSHOT_SECTIONS_MAX);

	struct snapshot_section *sections = calloc(count ? count : 1, sizeof(*sections));
	if (!sections)
		return log_refusal(-ENOMEM, err, errlen, "state: out of memory");
	size_t off = sizeof(h);
	for (uint32_t i = 0; i < count; i++) {
		struct section_header sh;
		if (len - off < sizeof(sh)) {
			log_reason(err, errlen, "state: section %u of %u: cut short at its header", i + 1, count);
			goto bad;
		}
		memcpy(&sh, buf + off, sizeof(sh));
		off += sizeof(sh);
		if (!valid_name(sh.name, sizeof(sh.name) - 1) ||
		    !all_zero(sh.name + strlen(sh.name), sizeof(sh.name) - strlen(sh.name))) {
			log_reason(err, errlen, "state: section %u of %u: a bad name", i + 1, count);
			goto bad;
		}
		uint64_t n = le64toh(sh.len);
		if (n > len - off || padded(n) > len - off || sh.zero) {
			log_reason(err, errlen, "state: section %s: %llu bytes, past the file's end",
				   sh.name, (unsigned long long)n);
			goto bad;
		}
		if (le32toh(sh.crc) != section_crc(&sh, buf + off, n) || !all_zero(buf + off + n, padded(n) - n)) {
			log_reason(err, errlen, "state: section %s: its checksum is wrong", sh.name);
			goto bad;
		}
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(sections[j].name, sh.name)) {
				log_reason(err, errlen, "state: section %s: twice", sh.name);
				goto bad;
			}
		memcpy(sections[i].name, sh.name, sizeof(sh.name));
		sections[i].data = buf + off;
		sections[i].len = n;
		off += padded(n);
	}
	if (off != len) {
		log_reason(err, errlen, "state: %zu bytes after its last section", len - off);
		goto bad;
	}
	*s = (struct snapshot){.buf = buf, .len = len, .count = count, .sections = sections,
			       .memory_size = le64toh(h.memory_size)};
	return 0;
bad:
	free(sections);
	return -EBADMSG;
}

int snapshot_load(struct snapshot *s, int dirfd, const char *name,
		  const char *producer, char *err, size_t errlen)
{
	*s = (struct snapshot){0};
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = -errno;
		return log_refusal(e, err, errlen, "%s: %s", name, strerror(-e));
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SNAPSHOT_STATE_MAX) {
		close(fd);
		return log_refusal(-EBADMSG, err, errlen, "%s: not a regular file of at most %u MiB", name,
				  SNAPSHOT_STATE_MAX >> 20);
	}
	size_t len = (size_t)st.st_size;
	unsigned char *buf = malloc(len ? len : 1);
	if (!buf) {
		close(fd);
		return log_refusal(-ENOMEM, err, errlen, "%s: out of memory", name);
	}
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? -errno : -EBADMSG;
			close(fd);
			free(buf);
			return log_refusal(e, err, errlen, "%s: %s", name,
					  n < 0 ? strerror(-e) : "shorter than it was");
		}
		got += (size_t)n;
	}
	close(fd);
	int ret = snapshot_parse(s, buf, len, producer, err, errlen);
	if (ret)
		free(buf);
	return ret;
}

const struct snapshot_section *snapshot_find(const struct snapshot *s,
					     const char *name)
{
	for (unsigned int i = 0; i < s->count; i++)
		if (!strcmp(s->sections[i].name, name))
			return &s->sections[i];
	return NULL;
}

void snapshot_fini(struct snapshot *s)
{
	free(s->sections);
	free(s->buf);
	*s = (struct snapshot){0};
}
