/* `fsvm oci exec`: a second process in a running container. Its state
 * folder holds exec.sock, which the container's fsvm listens on (its
 * virtio-vsock device connects each caller to the guest init's exec
 * service); this side sends the process and relays its stdio and status
 * (guest/protocol.h, GUEST_SPEC_EXEC). */
#ifndef FSVM_OCI_EXEC_H
#define FSVM_OCI_EXEC_H

#include <stddef.h>

#include "vmm/oci_spec.h"

#define OCI_EXEC_SOCKET "exec.sock"

/* The listening socket in state folder dir (bound by a relative name:
 * a folder's path may be longer than a socket's). fd, or -errno. */
int oci_exec_listen(const char *dir);

/* Connects to the container in dir and sends p's process (a terminal's
 * size rows, cols when p->terminal). The connection's fd, or -1 with why. */
int oci_exec_start(const char *dir, const struct oci_bundle *p,
		   unsigned short rows, unsigned short cols, char *why, size_t len);

/* Relays stdin to the process, its output to stdout (and stderr), and
 * signals this process gets to it, until it ends: its exit status, or 125
 * with a line when the container went away first. */
int oci_exec_relay(int conn);

#endif
