/* The guest's job description (command, terminal mode) as an initramfs
 * archive appended to the initrd. */
#ifndef FSVM_RUN_SPEC_H
#define FSVM_RUN_SPEC_H

#include <stdbool.h>

#include "vmm/cpio.h"

int run_spec_build(char *const *argv, int argc, bool interactive,
		   struct cpio_buf *out);

#endif
