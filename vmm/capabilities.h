/* What fsvm may still do as root (of its user namespace, or the host's
 * under --host-root) once set-up is done: the file server's work on the
 * files of the guest's ids, nothing more. */
#ifndef FSVM_CAPABILITIES_H
#define FSVM_CAPABILITIES_H

#include <stdbool.h>

/* Drops every capability but those the file server uses, from every set
 * (the bounding set too, where that is ours to change); CAP_MKNOD only if
 * a share lets the guest make device nodes. The process must have one
 * thread: later threads inherit its sets. Returns 0 or -errno. */
int capabilities_drop(bool mknod);

#endif
