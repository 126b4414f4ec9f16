/* Encodes the guest command and terminal mode for guest/init.c. */
#include "vmm/run_spec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "guest/protocol.h"

int run_spec_build(char *const *argv, int argc, bool interactive,
		   struct cpio_buf *out)
{
	size_t len = 0;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *packed = malloc(len ? len : 1);
	if (!packed)
		return -ENOMEM;
	char *p = packed;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;
		memcpy(p, argv[i], n);
		p += n;
	}

	int err = cpio_add(out, GUEST_SPEC_DIR, S_IFDIR | 0755, NULL, 0);
	if (!err && argc)
		err = cpio_add(out, GUEST_SPEC_ARGV, S_IFREG | 0644, packed, len);
	if (!err && interactive)
		err = cpio_add(out, GUEST_SPEC_TTY, S_IFREG | 0644, "1", 1);
	if (!err)
		err = cpio_finish(out);
	free(packed);
	return err;
}
