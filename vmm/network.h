/* The guest's network (--net): the backend behind the virtio-net device,
 * set up while fsvm still holds the calling user's rights (passt started
 * as that user on a socket pair, or an existing tap device opened), and
 * what the guest init is told to configure. */
#ifndef FSVM_NETWORK_H
#define FSVM_NETWORK_H

#include <stdbool.h>
#include <sys/types.h>

#include "devices/virtio_net.h"
#include "vmm/cli.h"

/* passt's largest MTU, which its documentation gives QEMU guests: the
 * guest sends and takes 64 KiB frames, a tenth of the frames of 1500. */
#define NETWORK_PASST_MTU 65520

struct network {
	bool enabled;
	struct virtio_net_options device; /* for the machine */
	pid_t passt; /* 0: none */
	/* GUEST_SPEC_NET's fields (guest/protocol.h). */
	const char *spec[4];
	unsigned int nr_spec;
};

/* Whether network_start would find what cfg needs (vmm/check.h): passt
 * and a default route, or the tap and /dev/net/tun. 0, or a negative
 * errno with why set. */
int network_check(const struct cli_net *cfg, const char **why);

/* Starts what cfg asks for; 0 (net->enabled false for --net none) or a
 * negative errno with why set, once said. */
int network_start(struct network *net, const struct cli_net *cfg,
		  const char **why);

#endif
