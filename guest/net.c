/* The guest's network: interfaces up, eth0's IPv4 settings (the job's, or
 * a lease from our DHCP client over a packet socket), the default route
 * and /etc/resolv.conf. */
#include "guest/net.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/magic.h>
#include <net/if.h>
#include <net/route.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "guest/dhcp.h"
#include "guest/protocol.h"

_Static_assert(DHCP_MAX_DNS <= NET_MAX_DNS, "a lease's DNS servers fit");

#define LINK_WAIT_MS 5000
/* Retransmissions at 200 ms, then 400, 800...: passt answers at once, so
 * a lost packet costs little, and a guest with no server waits 5 s. */
#define DHCP_FIRST_WAIT_MS 200
#define DHCP_GIVE_UP_MS 5000
#define VIRTIO_NET_DRIVER "/sys/bus/virtio/drivers/virtio_net"
#define RESOLV_CONF "/etc/resolv.conf"
#define RESOLV_CONF_NEW "/etc/.resolv.conf.fsvm"
#define RUN_DIR "/run/fsvm"
#define RUN_RESOLV_CONF RUN_DIR "/resolv.conf"

static void vsay(int err, const char *fmt, va_list ap)
{
	char what[256];
	vsnprintf(what, sizeof(what), fmt, ap);
	if (err)
		dprintf(STDERR_FILENO, "fsvm-init: network: %s: %s\n", what,
			strerror(err));
	else
		dprintf(STDERR_FILENO, "fsvm-init: network: %s\n", what);
}

/* One line on why the network is not set up, with errno's words. */
__attribute__((format(printf, 2, 3))) static int fail(int err,
						      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(err, fmt, ap);
	va_end(ap);
	return -err;
}

/* One line in our own words alone (errno's would say less). */
__attribute__((format(printf, 2, 3))) static int explain(int err,
							 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(0, fmt, ap);
	va_end(ap);
	return -err;
}

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

int net_parse_job(char **fields, int count, struct net_job *job)
{
	*job = (struct net_job){.wanted = true};
	if (count == 1 && !strcmp(fields[0], GUEST_NET_DHCP)) {
		job->dhcp = true;
		return 0;
	}
	if (count != 4 || strcmp(fields[0], GUEST_NET_STATIC))
		return explain(EINVAL, "the job file is neither \"" GUEST_NET_DHCP
				 "\" nor \"" GUEST_NET_STATIC "\" and 3 fields");
	struct net_settings *s = &job->settings;
	char address[INET_ADDRSTRLEN] = "";
	const char *slash = strchr(fields[1], '/');
	char *end = NULL;
	unsigned long prefix = 0;
	if (slash && (size_t)(slash - fields[1]) < sizeof(address)) {
		snprintf(address, sizeof(address), "%.*s",
			 (int)(slash - fields[1]), fields[1]);
		prefix = strtoul(slash + 1, &end, 10);
	}
	if (!end || end == slash + 1 || *end || prefix < 1 || prefix > 32 ||
	    inet_pton(AF_INET, address, &s->address) != 1)
		return explain(EINVAL, "static address %s: not IPv4 ADDRESS/PREFIX",
			       fields[1]);
	s->netmask.s_addr = htonl(~0u << (32 - prefix));
	if (*fields[2] && inet_pton(AF_INET, fields[2], &s->gateway) != 1)
		return explain(EINVAL, "static gateway %s: not an IPv4 address",
				 fields[2]);
	if (*fields[3]) {
		struct in6_addr any;
		if (strlen(fields[3]) >= sizeof(s->dns[0]) ||
		    (inet_pton(AF_INET, fields[3], &any) != 1 &&
		     inet_pton(AF_INET6, fields[3], &any) != 1))
			return explain(EINVAL, "static DNS server %s: not an IP address",
					 fields[3]);
		strcpy(s->dns[0], fields[3]);
		s->dns_count = 1;
	}
	return 0;
}

static void name_request(struct ifreq *ifr, const char *ifname)
{
	*ifr = (struct ifreq){0};
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
}

static int bring_up(int sock, const char *ifname)
{
	struct ifreq ifr;
	name_request(&ifr, ifname);
	if (ioctl(sock, SIOCGIFFLAGS, &ifr) < 0)
		return fail(errno, "%s", ifname);
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(sock, SIOCSIFFLAGS, &ifr) < 0)
		return fail(errno, "%s: cannot bring it up", ifname);
	return 0;
}

/* The carrier, as the driver sees it (SIOCGIFFLAGS's 16 bits lack it). */
static int wait_for_link(const char *ifname)
{
	char path[64], state;
	snprintf(path, sizeof(path), "/sys/class/net/%s/carrier", ifname);
	long long give_up = now_ms() + LINK_WAIT_MS;
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail(errno, "%s", path);
		ssize_t n = read(fd, &state, 1);
		close(fd);
		if (n == 1 && state == '1')
			return 0;
		if (now_ms() >= give_up)
			return fail(ENETDOWN, "%s: no link after %d s", ifname,
				    LINK_WAIT_MS / 1000);
		nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
	}
}

/* Waits until the time `until` for a reply of type want to xid (or a NAK
 * while requesting). Returns 1 with it in *reply, 0 if none came. */
static int dhcp_receive(int fd, uint32_t xid, const uint8_t *mac, int want,
			long long until, struct dhcp_lease *reply)
{
	uint8_t packet[2048];
	long long left;
	while ((left = until - now_ms()) > 0) {
		struct pollfd ready = {.fd = fd, .events = POLLIN};
		int n = poll(&ready, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		/* Every IPv4 packet on the link comes here: most are not ours. */
		ssize_t len = recv(fd, packet, sizeof(packet), MSG_DONTWAIT);
		if (len < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (len > 0 && !dhcp_parse(packet, (size_t)len, xid, mac, reply) &&
		    (reply->type == want ||
		     (want == DHCP_ACK && reply->type == DHCP_NAK)))
			return 1;
	}
	return 0;
}

static uint32_t transaction_id(const uint8_t *mac)
{
	uint32_t xid;
	/* Any bytes will do (no secret), and early in boot the pool may not
	 * be ready: GRND_INSECURE never waits; kernels before 5.6 lack it. */
	if (getrandom(&xid, sizeof(xid), GRND_INSECURE) == sizeof(xid))
		return xid;
	memcpy(&xid, mac + 2, sizeof(xid));
	return xid ^ (uint32_t)now_ms();
}

/* DISCOVER, OFFER, REQUEST, ACK, each request sent again until its reply
 * comes; a NAK starts over. */
static int dhcp_exchange(int fd, const struct sockaddr_ll *to,
			 const uint8_t *mac, struct dhcp_lease *lease)
{
	uint32_t xid = transaction_id(mac);
	struct dhcp_lease offer = {0};
	int want = DHCP_OFFER, wait_ms = DHCP_FIRST_WAIT_MS;
	long long give_up = now_ms() + DHCP_GIVE_UP_MS;
	while (now_ms() < give_up) {
		uint8_t packet[DHCP_PACKET_SIZE];
		size_t len = dhcp_build(packet,
				       want == DHCP_OFFER ? DHCP_DISCOVER : DHCP_REQUEST,
				       xid, mac, &offer);
		if (sendto(fd, packet, len, 0, (const struct sockaddr *)to,
			   sizeof(*to)) < 0)
			return -errno;
		long long until = now_ms() + wait_ms;
		int got = dhcp_receive(fd, xid, mac, want,
				       until < give_up ? until : give_up, lease);
		if (got < 0)
			return got;
		if (!got) {
			wait_ms *= 2;
			continue;
		}
		if (lease->type == DHCP_ACK)
			return 0;
		if (lease->type == DHCP_OFFER)
			offer = *lease;
		want = lease->type == DHCP_OFFER ? DHCP_ACK : DHCP_OFFER;
		wait_ms = DHCP_FIRST_WAIT_MS;
	}
	return -ETIMEDOUT;
}

/* A lease from the link's DHCP server. There is no renewal: passt's
 * leases never end. */
static int dhcp_settings(const char *ifname, const uint8_t *mac,
			 struct net_settings *s)
{
	/* Before it has an address the interface has no IPv4 to send from:
	 * we write the IPv4 and UDP headers, the kernel the Ethernet one. */
	int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP));
	if (fd < 0)
		return fail(errno, "%s: packet socket", ifname);
	struct sockaddr_ll link = {.sll_family = AF_PACKET,
				   .sll_protocol = htons(ETH_P_IP),
				   .sll_ifindex = (int)if_nametoindex(ifname),
				   .sll_halen = ETH_ALEN};
	memset(link.sll_addr, 0xff, ETH_ALEN);
	struct dhcp_lease lease;
	int err = bind(fd, (struct sockaddr *)&link, sizeof(link)) < 0
			  ? -errno
			  : dhcp_exchange(fd, &link, mac, &lease);
	close(fd);
	if (err == -ETIMEDOUT)
		return fail(ETIMEDOUT, "%s: no DHCP lease after %d s", ifname,
			    DHCP_GIVE_UP_MS / 1000);
	if (err)
		return fail(-err, "%s: DHCP", ifname);
	*s = (struct net_settings){.address = lease.address,
				   .netmask = lease.netmask,
				   .gateway = lease.router,
				   .mtu = lease.mtu,
				   .dns_count = lease.dns_count};
	for (int i = 0; i < lease.dns_count; i++)
		inet_ntop(AF_INET, &lease.dns[i], s->dns[i], sizeof(s->dns[i]));
	return 0;
}

static int set_address(int sock, const char *ifname, unsigned long request,
		       struct in_addr address)
{
	struct ifreq ifr;
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr = address};
	name_request(&ifr, ifname);
	memcpy(&ifr.ifr_addr, &in, sizeof(in));
	return ioctl(sock, request, &ifr);
}

static int add_route(int sock, const char *ifname, struct in_addr to,
		     struct in_addr mask, struct in_addr gateway)
{
	char dev[IFNAMSIZ];
	struct rtentry rt = {.rt_flags = RTF_UP, .rt_dev = dev};
	struct sockaddr_in in = {.sin_family = AF_INET};
	snprintf(dev, sizeof(dev), "%s", ifname);
	in.sin_addr = to;
	memcpy(&rt.rt_dst, &in, sizeof(in));
	in.sin_addr = mask;
	memcpy(&rt.rt_genmask, &in, sizeof(in));
	in.sin_addr = gateway;
	memcpy(&rt.rt_gateway, &in, sizeof(in));
	if (gateway.s_addr)
		rt.rt_flags |= RTF_GATEWAY;
	if (mask.s_addr == htonl(INADDR_BROADCAST))
		rt.rt_flags |= RTF_HOST;
	return ioctl(sock, SIOCADDRT, &rt);
}

static int add_default_route(int sock, const char *ifname,
			     struct in_addr gateway)
{
	const struct in_addr any = {htonl(INADDR_ANY)};
	const struct in_addr host = {htonl(INADDR_BROADCAST)};
	char text[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &gateway, text, sizeof(text));
	if (add_route(sock, ifname, any, any, gateway) == 0)
		return 0;
	/* A gateway outside the subnet (a /32 address, say) is on the link
	 * all the same: a route to it first. */
	if (errno != ENETUNREACH || add_route(sock, ifname, gateway, host, any) < 0 ||
	    add_route(sock, ifname, any, any, gateway) < 0)
		return fail(errno, "%s: default route via %s", ifname, text);
	return 0;
}

static int apply(int sock, const char *ifname, const struct net_settings *s)
{
	char text[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &s->address, text, sizeof(text));
	struct ifreq ifr;
	name_request(&ifr, ifname);
	ifr.ifr_mtu = (int)s->mtu;
	if (s->mtu && ioctl(sock, SIOCSIFMTU, &ifr) < 0)
		return fail(errno, "%s: MTU %u", ifname, s->mtu);
	if (set_address(sock, ifname, SIOCSIFADDR, s->address) < 0)
		return fail(errno, "%s: address %s", ifname, text);
	/* Without a mask from DHCP the kernel's classful one stays. */
	if (s->netmask.s_addr &&
	    set_address(sock, ifname, SIOCSIFNETMASK, s->netmask) < 0)
		return fail(errno, "%s: netmask of %s", ifname, text);
	return s->gateway.s_addr ? add_default_route(sock, ifname, s->gateway) : 0;
}

/* A kernel without the driver (a --kernel's), or a VM without the device. */
static int missing_interface(const char *ifname)
{
	if (access(VIRTIO_NET_DRIVER, F_OK) == 0)
		return explain(ENODEV, "no %s: the virtio-net driver found no device",
			       ifname);
	return explain(ENODEV, "no %s: the kernel has no virtio-net driver (virtio_net: CONFIG_VIRTIO_NET)",
		       ifname);
}

static int configure(int sock, const char *ifname, const struct net_job *job,
		     struct net_settings *applied)
{
	struct ifreq ifr;
	name_request(&ifr, ifname);
	if (ioctl(sock, SIOCGIFHWADDR, &ifr) < 0)
		return errno == ENODEV ? missing_interface(ifname)
				       : fail(errno, "%s", ifname);
	uint8_t mac[ETH_ALEN];
	memcpy(mac, ifr.ifr_hwaddr.sa_data, sizeof(mac));
	int err = bring_up(sock, ifname);
	if (!err)
		err = wait_for_link(ifname);
	*applied = job->settings;
	if (!err && job->dhcp)
		err = dhcp_settings(ifname, mac, applied);
	return err ? err : apply(sock, ifname, applied);
}

int net_configure_interface(const char *ifname, const struct net_job *job,
			    struct net_settings *applied)
{
	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return fail(errno, "socket");
	int err = configure(sock, ifname, job, applied);
	close(sock);
	return err;
}

static int write_servers(const char *path, const struct net_settings *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		      0644);
	if (fd < 0)
		return -errno;
	int err = dprintf(fd, "# fsvm --net: the DNS servers of the VM's network\n") < 0;
	for (int i = 0; i < s->dns_count; i++)
		err |= dprintf(fd, "nameserver %s\n", s->dns[i]) < 0;
	err = err ? -errno : 0;
	if (close(fd) < 0 && !err)
		err = -errno;
	return err;
}

int net_write_resolv_conf(const struct net_settings *s, bool root_is_host_share)
{
	if (!s->dns_count)
		return 0;
	int err;
	if (!root_is_host_share) {
		/* A rename replaces a link too, such as systemd-resolved's
		 * into a /run that is not this guest's. */
		if (mkdir("/etc", 0755) < 0 && errno != EEXIST)
			return fail(errno, "/etc");
		err = write_servers(RESOLV_CONF_NEW, s);
		if (!err && rename(RESOLV_CONF_NEW, RESOLV_CONF) < 0)
			err = -errno;
		return err ? fail(-err, RESOLV_CONF) : 0;
	}
	/* The host's file stays as it is: ours lives on the init's /run and
	 * is mounted over it. */
	if (mkdir(RUN_DIR, 0755) < 0 && errno != EEXIST)
		return fail(errno, RUN_DIR);
	err = write_servers(RUN_RESOLV_CONF, s);
	if (err)
		return fail(-err, RUN_RESOLV_CONF);
	if (mount(RUN_RESOLV_CONF, RESOLV_CONF, NULL, MS_BIND, NULL) == 0)
		return 0;
	if (errno != ENOENT)
		return fail(errno, "cannot mount %s over %s", RUN_RESOLV_CONF,
			    RESOLV_CONF);
	dprintf(STDERR_FILENO,
		"fsvm-init: network: warning: the shared root has no " RESOLV_CONF
		" (or it links to nothing): the guest goes without DNS servers\n");
	return 0;
}

int net_configure_links(const struct net_job *job, struct net_settings *applied)
{
	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return fail(errno, "socket");
	/* The guest's own loopback: 127.0.0.1 and ::1 come with it up. */
	int err = bring_up(sock, "lo");
	close(sock);
	return err ? err : net_configure_interface(NET_INTERFACE, job, applied);
}

int net_configure(const struct net_job *job)
{
	struct net_settings applied;
	int err = net_configure_links(job, &applied);
	struct statfs root;
	if (!err && statfs("/", &root) < 0)
		err = fail(errno, "/");
	/* virtio-fs: the root is a host folder (read-write or not). */
	return err ? err
		   : net_write_resolv_conf(&applied,
					   root.f_type == FUSE_SUPER_MAGIC);
}
