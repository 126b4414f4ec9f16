/* --net user: passt, Debian's user-mode network stack, as the calling
 * user on one end of a socket pair (its --fd, which also makes it quit
 * once fsvm's end closes, however fsvm ends); its own sandbox (its
 * defaults) holds it. --net tap:NAME: a tap device someone with the right
 * made (an orchestrator, or root), opened with a virtio-net header so
 * offloads pass through. */
#include "vmm/network.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/route.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "guest/protocol.h"

extern char **environ;

#define PASST_MISSING \
	"--net user needs passt (Debian's package passt), which is not on PATH"
#define NO_DEFAULT_ROUTE \
	"--net user: this host has no default route (passt gives the guest the addresses of the interface it goes through)"

/* Whether this network namespace routes the family anywhere (a default
 * route, up and not a reject route): passt hands the guest the addresses
 * of the interface that route goes through, and does without a family
 * that has none only after a warning. */
static bool default_route(bool v6)
{
	FILE *f = fopen(v6 ? "/proc/net/ipv6_route" : "/proc/net/route", "r");
	if (!f)
		return false;
	char line[512];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		char dev[IFNAMSIZ + 1] = "", dst[40], mask[40];
		unsigned int flags;
		if (v6)
			found = sscanf(line, "%32s %2s %*s %*s %*s %*s %*s %*s %x %16s", dst,
				       mask, &flags, dev) == 4 &&
				!strcmp(dst, "00000000000000000000000000000000") &&
				!strcmp(mask, "00");
		else
			found = sscanf(line, "%16s %8s %*s %x %*s %*s %*s %8s", dev, dst,
				       &flags, mask) == 4 &&
				!strcmp(dst, "00000000") && !strcmp(mask, "00000000");
		found = found && (flags & RTF_UP) && !(flags & RTF_REJECT) &&
			strcmp(dev, "lo");
	}
	fclose(f);
	return found;
}

/* The first nameservers of a resolv.conf, into addrs; how many, and
 * whether the first one is on the host's own loopback. */
static unsigned int nameservers(const char *path, char addrs[][64],
				unsigned int max, bool *first_loopback)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[256];
	unsigned int n = 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		if (sscanf(line, " nameserver %63s", addrs[n]) != 1)
			continue;
		bool loopback = !strncmp(addrs[n], "127.", 4) || !strcmp(addrs[n], "::1");
		if (n == 0)
			*first_loopback = loopback;
		if (!loopback)
			n++;
		else if (n == 0)
			break;
	}
	fclose(f);
	return n;
}

/* DNS for the guest: passt hands it the host's nameservers, but one on the
 * host's own loopback (systemd-resolved's 127.0.0.53) it cannot, and its
 * gateway mapping reaches only 127.0.0.1. systemd-resolved lists the
 * servers it asks in a file of its own: those, then, as passt's -D. */
static int dns_arguments(char **argv, const struct cli_net *cfg)
{
	static char addrs[3][64];
	bool loopback = false;
	if (nameservers("/etc/resolv.conf", addrs, 1, &loopback) || !loopback)
		return 0;
	bool ignored;
	unsigned int n = nameservers("/run/systemd/resolve/resolv.conf", addrs, 3, &ignored);
	if (!n && !cfg->host_loopback)
		log_warning("--net user: the host's DNS resolver is on its own loopback and names no other: the guest has no DNS (with host-loopback, one on 127.0.0.1 is reached)");
	int argc = 0;
	for (unsigned int i = 0; i < n; i++) {
		argv[argc++] = "--dns";
		argv[argc++] = addrs[i];
	}
	return argc;
}

/* passt's arguments: in the foreground, errors only (on stderr), on fd 3,
 * the MTU the guest gets, the host's loopback out of reach unless asked,
 * and the published ports. */
static int spawn_passt(struct network *net, const struct cli_net *cfg, int fd,
		       const char **why)
{
	static char mtu[8], tcp[CLI_MAX_PUBLISH * 12], udp[CLI_MAX_PUBLISH * 12];
	char *argv[24];
	int argc = 0;
	snprintf(mtu, sizeof(mtu), "%d", NETWORK_PASST_MTU);
	argv[argc++] = "passt";
	argv[argc++] = "--foreground";
	argv[argc++] = "--stderr";
	argv[argc++] = "--quiet";
	argv[argc++] = "--fd";
	argv[argc++] = "3";
	argv[argc++] = "--mtu";
	argv[argc++] = mtu;
	if (!cfg->host_loopback)
		argv[argc++] = "--no-map-gw";
	bool v4 = default_route(false), v6 = default_route(true);
	if (!v4 && !v6) {
		*why = NO_DEFAULT_ROUTE;
		return -ENETUNREACH;
	}
	argc += dns_arguments(argv + argc, cfg);
	if (!v6)
		argv[argc++] = "--ipv4-only";
	else if (!v4)
		argv[argc++] = "--ipv6-only";
	/* Started by root, passt would become nobody itself, with a
	 * warning; said outright, it does so quietly. */
	if (geteuid() == 0) {
		argv[argc++] = "--runas";
		argv[argc++] = "65534:65534";
	}
	size_t tl = 0, ul = 0;
	tcp[0] = udp[0] = '\0';
	for (unsigned int i = 0; i < cfg->nr_publish; i++) {
		const struct cli_publish *p = &cfg->publish[i];
		char *list = p->udp ? udp : tcp;
		size_t *len = p->udp ? &ul : &tl;
		*len += (size_t)snprintf(list + *len, sizeof(tcp) - *len, "%s%u:%u",
					 *len ? "," : "", p->host, p->guest);
	}
	if (tl) {
		argv[argc++] = "--tcp-ports";
		argv[argc++] = tcp;
	}
	if (ul) {
		argv[argc++] = "--udp-ports";
		argv[argc++] = udp;
	}
	argv[argc] = NULL;

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd, 3);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, 4);
	int err = posix_spawnp(&net->passt, "passt", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err == ENOENT)
		*why = PASST_MISSING;
	else if (err)
		*why = "cannot start passt";
	return -err;
}

static int start_user(struct network *net, const struct cli_net *cfg,
		      const char **why)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		*why = "cannot make passt's socket pair";
		return -errno;
	}
	int err = spawn_passt(net, cfg, sv[1], why);
	close(sv[1]);
	/* Big socket buffers: a 64 KiB frame each way is queued whole. */
	int size = 1 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (err || fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0) {
		if (!err) {
			err = -errno;
			*why = "cannot set up passt's socket";
		}
		close(sv[0]);
		return err;
	}
	net->device.fd = sv[0];
	net->device.framing = VIRTIO_NET_FRAMING_STREAM;
	net->device.mtu = NETWORK_PASST_MTU;
	return 0;
}

/* A tap that does not exist yet: its maker's command in the line. */
static int no_tap(const struct cli_net *cfg, const char **why)
{
	static char msg[160];
	snprintf(msg, sizeof(msg),
		 "--net tap:%s: no such network interface (make it first: ip tuntap add %s mode tap user $USER)",
		 cfg->tap, cfg->tap);
	*why = msg;
	return -ENODEV;
}

/* Whether an executable named name is in one of $PATH's folders. */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t len = strcspn(p, ":");
		char file[PATH_MAX];
		if (len && (size_t)snprintf(file, sizeof(file), "%.*s/%s", (int)len,
					    p, name) < sizeof(file) &&
		    access(file, X_OK) == 0)
			return true;
		p += len + (p[len] == ':');
	}
	return false;
}

int network_check(const struct cli_net *cfg, const char **why)
{
	switch (cfg->mode) {
	case CLI_NET_USER:
		if (!on_path("passt")) {
			*why = PASST_MISSING;
			return -ENOENT;
		}
		if (!default_route(false) && !default_route(true)) {
			*why = NO_DEFAULT_ROUTE;
			return -ENETUNREACH;
		}
		return 0;
	case CLI_NET_TAP:
		if (!if_nametoindex(cfg->tap))
			return no_tap(cfg, why);
		if (access("/dev/net/tun", R_OK | W_OK) < 0) {
			*why = "--net tap: cannot open /dev/net/tun";
			return -errno;
		}
		return 0;
	case CLI_NET_NONE:
		break;
	}
	return 0;
}

static int start_tap(struct network *net, const struct cli_net *cfg,
		     const char **why)
{
	static char msg[160];
	if (!if_nametoindex(cfg->tap))
		return no_tap(cfg, why);
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		*why = "--net tap: cannot open /dev/net/tun";
		return -errno;
	}
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", cfg->tap);
	int hdr = sizeof(struct virtio_net_hdr_mrg_rxbuf);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0) {
		int err = -errno;
		snprintf(msg, sizeof(msg),
			 err == -EPERM ? "--net tap:%s: not yours to open (its owner, or root, may)"
			 : err == -EINVAL ? "--net tap:%s: not a tap device (a tun?)"
			 : err == -EBUSY ? "--net tap:%s: in use by another program"
					: "--net tap:%s: cannot attach to it",
			 cfg->tap);
		*why = msg;
		close(fd);
		return err;
	}
	if (cfg->tap_transient && ioctl(fd, TUNSETPERSIST, 0) < 0) {
		*why = "--net tap: cannot make the container's tap go with fsvm";
		close(fd);
		return -errno;
	}
	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq mtu = {0};
	snprintf(mtu.ifr_name, sizeof(mtu.ifr_name), "%s", cfg->tap);
	net->device.mtu = sock >= 0 && ioctl(sock, SIOCGIFMTU, &mtu) == 0 &&
					  mtu.ifr_mtu >= 68 && mtu.ifr_mtu <= 65535
				  ? (uint16_t)mtu.ifr_mtu
				  : 1500;
	if (sock >= 0)
		close(sock);
	net->device.fd = fd;
	net->device.framing = VIRTIO_NET_FRAMING_TAP;
	return 0;
}

int network_start(struct network *net, const struct cli_net *cfg,
		  const char **why)
{
	*net = (struct network){0};
	if (cfg->mode == CLI_NET_NONE)
		return 0;
	if (cfg->mac_given) {
		memcpy(net->device.mac, cfg->mac, sizeof(net->device.mac));
	} else if (getrandom(net->device.mac, sizeof(net->device.mac), 0) !=
		   sizeof(net->device.mac)) {
		*why = "cannot make a MAC address";
		return -EIO;
	} else {
		/* Unicast, locally administered: no vendor's. */
		net->device.mac[0] = (uint8_t)((net->device.mac[0] & 0xfe) | 0x02);
	}
	int err = cfg->mode == CLI_NET_USER ? start_user(net, cfg, why)
					    : start_tap(net, cfg, why);
	if (err)
		return err;
	if (cfg->ip) {
		net->spec[net->nr_spec++] = GUEST_NET_STATIC;
		net->spec[net->nr_spec++] = cfg->ip;
		net->spec[net->nr_spec++] = cfg->gateway ? cfg->gateway : "";
		net->spec[net->nr_spec++] = cfg->dns ? cfg->dns : "";
	} else {
		net->spec[net->nr_spec++] = GUEST_NET_DHCP;
	}
	net->enabled = true;
	return 0;
}
