/* Guest-side network set-up (--net): lo and eth0 up, eth0's IPv4 address,
 * default route and DNS servers from DHCP or the job, before the command
 * starts. IPv6 is the kernel's own, from router advertisements. */
#ifndef FSVM_GUEST_NET_H
#define FSVM_GUEST_NET_H

#include <arpa/inet.h>
#include <stdbool.h>

#define NET_INTERFACE "eth0"
#define NET_MAX_DNS 3

/* What eth0 is given. Addresses in network order, 0 where none. */
struct net_settings {
	struct in_addr address, netmask, gateway;
	unsigned int mtu; /* 0: the device's own */
	int dns_count;
	char dns[NET_MAX_DNS][INET6_ADDRSTRLEN]; /* IPv4 or IPv6 */
};

struct net_job {
	bool wanted; /* the VM has a network device */
	bool dhcp;   /* else the settings are the job's */
	struct net_settings settings;
};

/* Reads the fields of GUEST_SPEC_NET into *job. Returns 0, or -EINVAL
 * after printing what is wrong. */
int net_parse_job(char **fields, int count, struct net_job *job);

/* Once the root is mounted: brings up lo and eth0, configures eth0 and
 * writes the DNS servers into the root's /etc/resolv.conf. Returns 0, or
 * a negative errno after printing one line saying why. */
int net_configure(const struct net_job *job);

/* net_configure without the DNS servers: lo and eth0 up, eth0 given the
 * job's settings or DHCP's, which *applied receives. A container's own
 * mounts say what its /etc/resolv.conf is, as under runc, which writes
 * none; and this runs before its root switch, while the init's /sys is
 * there to watch eth0's driver and carrier. */
int net_configure_links(const struct net_job *job, struct net_settings *applied);

/* The steps of net_configure on any interface (tests run them in a
 * namespace of pasta's). Brings ifname up, waits for its link, and gives
 * it the job's settings or DHCP's, which *applied receives. */
int net_configure_interface(const char *ifname, const struct net_job *job,
			    struct net_settings *applied);

/* Writes the DNS servers into /etc/resolv.conf without touching a host's
 * file: on a root of the guest's own (the initramfs, or an overlay's
 * tmpfs) it replaces the file, a link to one too; on a host share it puts
 * the file in /run and mounts it over the share's. No servers: nothing. */
int net_write_resolv_conf(const struct net_settings *settings,
			  bool root_is_host_share);

#endif
