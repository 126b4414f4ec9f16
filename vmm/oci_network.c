/* A container's network namespace, joined to its VM through a tap. */
#include "vmm/oci_network.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* tc from iproute2 (Debian's), where Debian puts it. */
static const char *const tc_paths[] = {"/usr/sbin/tc", "/sbin/tc"};

static int spawn_tc(char **argv)
{
	pid_t pid = -1;
	int err = ENOENT;
	for (size_t i = 0; err == ENOENT && i < 2; i++)
		err = posix_spawn(&pid, tc_paths[i], NULL, NULL, argv, environ);
	int st = 0;
	if (!err)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	return err ? -err : WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -EIO;
}

static int tc(char *err, size_t errlen, const char *dev, const char *to)
{
	char *qdisc[] = {"tc", "qdisc", "add", "dev", (char *)dev, "ingress", NULL};
	char *filter[] = {"tc", "filter", "add", "dev", (char *)dev, "parent",
			  "ffff:", "matchall", "action", "mirred", "egress",
			  "redirect", "dev", (char *)to, NULL};
	char **cmds[] = {qdisc, filter};
	for (size_t c = 0; c < 2; c++) {
		int e = spawn_tc(cmds[c]);
		if (e) {
			snprintf(err, errlen, "network: tc %s on %s %s (iproute2's tc, and the sch_ingress, cls_matchall and act_mirred modules, are needed)",
				 c ? "filter" : "qdisc", dev, e == -ENOENT ? "is not installed" : "failed");
			return -EIO;
		}
	}
	return 0;
}

/* A join that failed half-way takes its tap and redirect back. */
static void undo(const char *ifname)
{
	char *del[] = {"tc", "qdisc", "del", "dev", (char *)ifname, "ingress", NULL};
	spawn_tc(del);
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), OCI_NETWORK_TAP);
	if (fd >= 0 && ioctl(fd, TUNSETIFF, &ifr) == 0)
		ioctl(fd, TUNSETPERSIST, 0);
	if (fd >= 0)
		close(fd);
}

/* A persistent tap, which fsvm's --net tap opens and then makes transient
 * (struct cli_net's tap_transient): it goes with fsvm. */
static int make_tap(int sock, int mtu, char *err, size_t errlen)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), OCI_NETWORK_TAP);
	int e = fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETPERSIST, 1) < 0
			? -errno : 0;
	if (fd >= 0)
		close(fd);
	struct ifreq up = {.ifr_mtu = mtu};
	snprintf(up.ifr_name, sizeof(up.ifr_name), OCI_NETWORK_TAP);
	if (!e && ioctl(sock, SIOCSIFMTU, &up) < 0)
		e = -errno;
	up.ifr_flags = IFF_UP;
	if (!e && ioctl(sock, SIOCSIFFLAGS, &up) < 0)
		e = -errno;
	if (e)
		snprintf(err, errlen, "network: cannot make the tap " OCI_NETWORK_TAP " in the container's namespace: %s",
			 strerror(-e));
	return e;
}

/* The namespace's default route through ifname, from /proc/net/route
 * (this process's namespace's). */
static void default_gateway(const char *ifname, char *out, size_t len)
{
	FILE *f = fopen("/proc/net/route", "re");
	char line[256], name[IFNAMSIZ + 1];
	unsigned int dest, gw;
	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%16s %x %x", name, &dest, &gw) == 3 && !dest &&
		    gw && !strcmp(name, ifname)) {
			struct in_addr a = {.s_addr = gw};
			inet_ntop(AF_INET, &a, out, (socklen_t)len);
			break;
		}
	if (f)
		fclose(f);
}

int oci_network_join(const char *netns_path, struct cli_net *net, char *err,
		     size_t errlen)
{
	static char ifname[IFNAMSIZ], address[INET_ADDRSTRLEN + 4],
		gateway[INET_ADDRSTRLEN];
	int fd = open(netns_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		snprintf(err, errlen, "network namespace %s: %s", netns_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	close(fd);
	struct ifaddrs *all, *a;
	if (getifaddrs(&all) < 0) {
		snprintf(err, errlen, "network namespace %s: %s", netns_path, strerror(errno));
		return -EINVAL;
	}
	for (a = all; a; a = a->ifa_next)
		if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
		    !(a->ifa_flags & IFF_LOOPBACK) && a->ifa_netmask)
			break;
	if (!a) {
		freeifaddrs(all);
		*net = (struct cli_net){.mode = CLI_NET_NONE};
		return 0; /* podman's --network none: only a loopback */
	}
	struct in_addr ip = ((struct sockaddr_in *)a->ifa_addr)->sin_addr;
	uint32_t mask = ntohl(((struct sockaddr_in *)a->ifa_netmask)->sin_addr.s_addr);
	snprintf(ifname, sizeof(ifname), "%s", a->ifa_name);
	freeifaddrs(all);
	char text[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &ip, text, sizeof(text));
	snprintf(address, sizeof(address), "%s/%d", text, __builtin_popcount(mask));
	default_gateway(ifname, gateway, sizeof(gateway));

	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq hw = {0}, mtu = {0};
	snprintf(hw.ifr_name, sizeof(hw.ifr_name), "%s", ifname);
	snprintf(mtu.ifr_name, sizeof(mtu.ifr_name), "%s", ifname);
	if (sock < 0 || ioctl(sock, SIOCGIFHWADDR, &hw) < 0 ||
	    ioctl(sock, SIOCGIFMTU, &mtu) < 0) {
		snprintf(err, errlen, "network: %s: %s", ifname, strerror(errno));
		if (sock >= 0)
			close(sock);
		return -EINVAL;
	}
	int e = make_tap(sock, mtu.ifr_mtu, err, errlen);
	close(sock);
	if (e)
		return -EINVAL;
	if (tc(err, errlen, ifname, OCI_NETWORK_TAP) ||
	    tc(err, errlen, OCI_NETWORK_TAP, ifname)) {
		undo(ifname);
		return -EINVAL;
	}
	*net = (struct cli_net){.mode = CLI_NET_TAP,
				.tap = OCI_NETWORK_TAP,
				.tap_transient = true,
				.ip = address,
				.gateway = gateway[0] ? gateway : NULL,
				.mac_given = true};
	memcpy(net->mac, hw.ifr_hwaddr.sa_data, sizeof(net->mac));
	return 0;
}
