/* `fsvm kconfig [.config]`: checks a kernel configuration for what fsvm's
 * guests need and prints the missing options as a fragment to merge (as
 * `make kvm_guest.config` does for KVM guests). */
#ifndef FSVM_KCONFIG_H
#define FSVM_KCONFIG_H

#include <stdio.h>

/* What else the kernel is checked for, besides what every run needs. */
#define KCONFIG_NET (1u << 0)  /* --net */
#define KCONFIG_DISK (1u << 1) /* --disk */

/* Reads the .config at path (and for what features need); prints the
 * fragment of missing options to
 * out (nothing when none is missing) and a one-line verdict to err.
 * Returns the number of missing options, or a negative errno when the
 * file cannot be read (said on err). */
int kconfig_check(const char *path, unsigned int features, FILE *out,
		  FILE *err);

#endif
