/* A restored VM's job (guest/protocol.h, GUEST_SPEC_SNAPSHOT): a newc cpio
 * archive like the initramfs's job, read from the exit device and
 * unpacked under a folder. fsvm's, but checked as any input. */
#ifndef FSVM_GUEST_JOB_ARCHIVE_H
#define FSVM_GUEST_JOB_ARCHIVE_H

#include <stddef.h>

/* Unpacks the archive's folders and regular files (no other kind, no
 * absolute name, no "..") under dir, which exists, up to its trailer.
 * Returns 0, or -1 after one line on stderr. */
int job_archive_unpack(const char *buf, size_t len, const char *dir);

/* Reads the job from the exit device (its ports are the caller's) into a
 * buffer of GUEST_JOB_MAX bytes and unpacks it under dir, made if need
 * be. 0, or -1 after one line. */
int job_archive_receive(const char *dir);

#endif
