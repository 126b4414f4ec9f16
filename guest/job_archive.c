/* Unpacking a restored VM's job: the newc format the kernel's initramfs
 * takes (vmm/cpio.c writes it), folders and regular files only. */
#include "guest/job_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest/protocol.h"

#define NEWC_MAGIC "070701"
#define NEWC_HEADER_LEN 110
#define NEWC_FIELDS 13
#define FIELD_MODE 1
#define FIELD_FILESIZE 6
#define FIELD_NAMESIZE 11
#define TRAILER "TRAILER!!!"

static int refuse(const char *why, const char *name)
{
	dprintf(STDERR_FILENO, "fsvm-init: restored job: %s%s%s\n", why,
		name ? ": " : "", name ? name : "");
	return -1;
}

static bool hex_field(const char *p, unsigned long *v)
{
	*v = 0;
	for (int i = 0; i < 8; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
					       : -1;
		if (d < 0)
			return false;
		*v = *v << 4 | (unsigned long)d;
	}
	return true;
}

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* A relative name of non-empty parts, none of them "." or "..". */
static bool name_is_plain(const char *name)
{
	if (!*name || name[0] == '/')
		return false;
	for (const char *p = name; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/' && !*++p)
			return false; /* a trailing slash */
	}
	return true;
}

/* Makes the folders above path (dir/name), as an archive without their
 * own entries needs. */
static int make_parents(char *path, size_t dir_len)
{
	for (char *p = path + dir_len + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		int err = mkdir(path, 0755) < 0 && errno != EEXIST;
		*p = '/';
		if (err)
			return -1;
	}
	return 0;
}

static int write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      0644);
	if (fd < 0)
		return -1;
	while (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return close(fd);
}

int job_archive_unpack(const char *buf, size_t len, const char *dir)
{
	size_t dir_len = strlen(dir), at = 0;
	for (;;) {
		if (len - at < NEWC_HEADER_LEN || memcmp(buf + at, NEWC_MAGIC, 6))
			return refuse("no entry header where one should be", NULL);
		unsigned long f[NEWC_FIELDS];
		for (int i = 0; i < NEWC_FIELDS; i++)
			if (!hex_field(buf + at + 6 + 8 * i, &f[i]))
				return refuse("a header field is not hexadecimal", NULL);
		size_t name_at = at + NEWC_HEADER_LEN, namesize = f[FIELD_NAMESIZE];
		if (namesize == 0 || namesize > PATH_MAX || namesize > len - name_at ||
		    buf[name_at + namesize - 1])
			return refuse("a name runs past the archive", NULL);
		const char *name = buf + name_at;
		size_t data_at = pad4(name_at + namesize), size = f[FIELD_FILESIZE];
		if (data_at > len || size > len - data_at)
			return refuse("a file runs past the archive", name);
		if (!strcmp(name, TRAILER))
			return 0;
		if (!name_is_plain(name))
			return refuse("a name that is not plain", name);
		char path[PATH_MAX];
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
		    sizeof(path))
			return refuse("a name too long", name);
		if (make_parents(path, dir_len) < 0)
			return refuse("cannot make the folders of", name);
		mode_t type = (mode_t)f[FIELD_MODE] & S_IFMT;
		if (type == S_IFDIR && size == 0) {
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				return refuse("cannot make the folder", name);
		} else if (type == S_IFREG) {
			if (write_file(path, buf + data_at, size) < 0)
				return refuse("cannot write", name);
		} else {
			return refuse("neither a folder nor a file", name);
		}
		at = pad4(data_at + size);
		if (at > len)
			return refuse("the archive ends without its trailer", NULL);
	}
}

int job_archive_receive(const char *dir)
{
	static char buf[GUEST_JOB_MAX];
	uint32_t len = inl(EXIT_DEV_PORT + EXIT_DEV_REG_JOB_LEN);
	if (len == 0 || len > sizeof(buf))
		return refuse(len ? "longer than it may be" : "fsvm sent none", NULL);
	/* One exit a page, not one a byte. */
	insb(EXIT_DEV_PORT + EXIT_DEV_REG_JOB, buf, len);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return refuse("cannot make its folder", dir);
	return job_archive_unpack(buf, len, dir);
}
