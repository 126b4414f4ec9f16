/* Loads the guest: the kernel (--kernel, or the default guest's) and the
 * initrd (--initrd, or the default's) with the job appended for the guest
 * init. */
#ifndef FSVM_GUEST_LOAD_H
#define FSVM_GUEST_LOAD_H

#include "arch/x86/board.h"
#include "vmm/cli.h"
#include "vmm/run_spec.h"

/* On error logs why and returns -1. */
int guest_load(struct board *b, const struct fsvm_config *cfg,
	       const struct run_spec *job);

/* Before KVM (vmm/check.h), each on error after one line, returning a
 * negative errno: the chosen guest's folder exists, when it gives the
 * kernel or the initrd; the kernel can be read and is one fsvm boots;
 * the initrd can be read and is of a format the kernel unpacks. */
int guest_check_folder(const struct fsvm_config *cfg);
int guest_check_kernel(const struct fsvm_config *cfg);
int guest_check_initrd(const struct fsvm_config *cfg);

/* The packaged guests' folder (SERIES/kernel/vmlinux or vmlinuz,
 * SERIES/kernel/version, SERIES/initramfs.cpio): $FSVM_GUEST_DIR, else
 * the first of build/guest, ../lib/fsvm and ../share/fsvm beside the fsvm
 * binary that exists (else the first). Returns buf. */
const char *guest_dir(char *buf, size_t len);

#endif
