/* A container's network: its network namespace (linux.namespaces) is
 * where its VM's tap lives, joined to the namespace's own interface by tc
 * redirects both ways (as Kata does), so podman's and CNI's networks and
 * port mappings reach the guest unchanged. The guest takes the
 * interface's MAC, address and default route. */
#ifndef FSVM_OCI_NETWORK_H
#define FSVM_OCI_NETWORK_H

#include <stddef.h>

#include "vmm/cli.h"

#define OCI_NETWORK_TAP "fsvm0"

/* Moves this process into the namespace at netns_path and, if it has an
 * interface with an IPv4 address, makes the tap and the redirects and
 * sets *net to use them (else --net none). 0, or -errno with one line in
 * err. The strings *net points to live in static storage. */
int oci_network_join(const char *netns_path, struct cli_net *net, char *err,
		     size_t errlen);

#endif
