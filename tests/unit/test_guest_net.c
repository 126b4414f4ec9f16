/* Unit tests for guest/net: the init's network set-up on a veth pair in
 * namespaces of the test's own, against a small DHCP server on the far
 * end (a DISCOVER lost, a NAK, a gateway outside the subnet, no server),
 * and where resolv.conf goes on each kind of root. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "guest/net.h"
#include "tests/unit/child.h"
#include "tests/unit/dhcp_wire.h"

#define CLIENT "client0" /* not eth0: the init's name is a parameter */
#define SERVER "server0"

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

/* Root of a user namespace with a network and mounts of its own, /sys
 * showing that network. */
static void enter_namespaces(void)
{
	char map[64];
	unsigned int uid = getuid(), gid = getgid();
	CHILD_CHECK(unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) == 0);
	write_text("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", uid);
	write_text("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1", gid);
	write_text("/proc/self/gid_map", map);
	CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	CHILD_CHECK(mount("sysfs", "/sys", "sysfs", 0, NULL) == 0);
}

static void make_link(bool server_up)
{
	CHILD_CHECK(system("ip link add " CLIENT " type veth peer name " SERVER) == 0);
	if (server_up)
		CHILD_CHECK(system("ip link set " SERVER " up") == 0);
}

/* What the server does, and what it saw. */
struct server {
	bool drop_first_discover;
	bool nak_first_request;
	uint8_t netmask[4], router[4];
	int discovers, requests;
	bool request_named_the_offer; /* options 50 and 54 */
};

static const uint8_t offered[4] = {10, 0, 2, 15};

static void serve_one(int fd, const struct server *s, const uint8_t *request,
		      int type)
{
	uint8_t options[64], *o = options, pkt[1024];
	*o++ = 53, *o++ = 1, *o++ = (uint8_t)type;
	*o++ = 54, *o++ = 4;
	memcpy(o, (uint8_t[]){10, 0, 2, 2}, 4), o += 4;
	if (type != 6) {
		*o++ = 1, *o++ = 4;
		memcpy(o, s->netmask, 4), o += 4;
		*o++ = 3, *o++ = 4;
		memcpy(o, s->router, 4), o += 4;
		*o++ = 6, *o++ = 8;
		memcpy(o, (uint8_t[]){10, 0, 2, 3, 10, 0, 2, 4}, 8), o += 8;
		*o++ = 26, *o++ = 2, *o++ = 9000 >> 8, *o++ = 9000 & 0xff;
	}
	*o++ = 255;
	const uint8_t *bootp = request + IP_HEADER + UDP_HEADER;
	uint32_t xid;
	memcpy(&xid, bootp + 4, 4);
	size_t len = dhcp_wire_reply(pkt, xid, bootp + 28, offered, options,
				     (size_t)(o - options));
	struct sockaddr_ll to = {.sll_family = AF_PACKET,
				 .sll_protocol = htons(ETH_P_IP),
				 .sll_ifindex = (int)if_nametoindex(SERVER),
				 .sll_halen = ETH_ALEN};
	memcpy(to.sll_addr, bootp + 28, ETH_ALEN);
	CHILD_CHECK(sendto(fd, pkt, len, 0, (struct sockaddr *)&to, sizeof(to)) ==
		    (ssize_t)len);
}

/* Answers on SERVER until it has sent an ACK, then writes what it saw
 * to out. */
static void run_server(struct server *s, int out)
{
	int fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
	CHILD_CHECK(fd >= 0);
	struct sockaddr_ll at = {.sll_family = AF_PACKET,
				 .sll_protocol = htons(ETH_P_IP),
				 .sll_ifindex = (int)if_nametoindex(SERVER)};
	CHILD_CHECK(bind(fd, (struct sockaddr *)&at, sizeof(at)) == 0);
	for (bool acked = false; !acked;) {
		struct pollfd ready = {.fd = fd, .events = POLLIN};
		CHILD_CHECK(poll(&ready, 1, 10000) == 1);
		uint8_t pkt[2048];
		ssize_t len = recv(fd, pkt, sizeof(pkt), 0);
		CHILD_CHECK(len > 0);
		if ((size_t)len <= OPTIONS_AT || pkt[9] != 17 ||
		    get16(pkt + IP_HEADER + 2) != 67)
			continue; /* the client's IPv6, say */
		const uint8_t *type = dhcp_wire_option(pkt, (size_t)len, 53);
		CHILD_CHECK(type);
		if (type[2] == 1 && !s->discovers++ && s->drop_first_discover)
			continue;
		if (type[2] == 1) {
			serve_one(fd, s, pkt, 2);
			continue;
		}
		CHILD_CHECK(type[2] == 3);
		const uint8_t *wanted = dhcp_wire_option(pkt, (size_t)len, 50);
		const uint8_t *server = dhcp_wire_option(pkt, (size_t)len, 54);
		s->request_named_the_offer =
			wanted && server && !memcmp(wanted + 2, offered, 4) &&
			!memcmp(server + 2, (uint8_t[]){10, 0, 2, 2}, 4);
		acked = !(s->nak_first_request && !s->requests);
		s->requests++;
		serve_one(fd, s, pkt, acked ? 5 : 6);
	}
	CHILD_CHECK(write(out, s, sizeof(*s)) == sizeof(*s));
}

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static in_addr_t interface_address(int request)
{
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), CLIENT);
	int sock = socket(AF_INET, SOCK_DGRAM, 0);
	CHILD_CHECK(ioctl(sock, request, &ifr) == 0);
	close(sock);
	struct sockaddr_in in;
	memcpy(&in, &ifr.ifr_addr, sizeof(in));
	return in.sin_addr.s_addr;
}

static int interface_mtu(void)
{
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), CLIENT);
	int sock = socket(AF_INET, SOCK_DGRAM, 0);
	CHILD_CHECK(ioctl(sock, SIOCGIFMTU, &ifr) == 0);
	close(sock);
	return ifr.ifr_mtu;
}

/* /proc/net/route has a route to dest (hex, as it prints addresses)
 * through gateway. */
static bool has_route(const char *dest, const char *gateway)
{
	char want[64], line[256];
	snprintf(want, sizeof(want), CLIENT "\t%s\t%s\t", dest, gateway);
	FILE *f = fopen("/proc/net/route", "r");
	CHILD_CHECK(f);
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, want, strlen(want));
	fclose(f);
	return found;
}

/* The client against the server s describes; what the server saw comes
 * back in *s. Returns net_configure_interface's result. */
static int lease_from(struct server *s, struct net_settings *applied,
		      long long *took_ms)
{
	int seen[2];
	CHILD_CHECK(pipe(seen) == 0);
	pid_t server = fork();
	CHILD_CHECK(server >= 0);
	if (server == 0) {
		run_server(s, seen[1]);
		_exit(0);
	}
	const struct net_job job = {.wanted = true, .dhcp = true};
	long long start = now_ms();
	int rc = net_configure_interface(CLIENT, &job, applied);
	*took_ms = now_ms() - start;
	int st;
	CHILD_CHECK(waitpid(server, &st, 0) == server && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0);
	CHILD_CHECK(read(seen[0], s, sizeof(*s)) == sizeof(*s));
	return rc;
}

static void check_lease(const struct net_settings *applied)
{
	CHILD_CHECK(interface_address(SIOCGIFADDR) == inet_addr("10.0.2.15"));
	CHILD_CHECK(applied->address.s_addr == inet_addr("10.0.2.15"));
	CHILD_CHECK(interface_mtu() == 9000);
	CHILD_CHECK(applied->dns_count == 2);
	CHILD_CHECK(!strcmp(applied->dns[0], "10.0.2.3"));
	CHILD_CHECK(!strcmp(applied->dns[1], "10.0.2.4"));
}

static void lease(void *arg)
{
	(void)arg;
	enter_namespaces();
	make_link(true);
	struct server s = {.netmask = {255, 255, 255, 0}, .router = {10, 0, 2, 2}};
	struct net_settings applied;
	long long took;
	CHILD_CHECK(lease_from(&s, &applied, &took) == 0);
	CHILD_CHECK(s.discovers == 1 && s.requests == 1);
	CHILD_CHECK(s.request_named_the_offer);
	check_lease(&applied);
	CHILD_CHECK(interface_address(SIOCGIFNETMASK) == inet_addr("255.255.255.0"));
	CHILD_CHECK(has_route("00000000", "0202000A"));
}

static void test_lease(void **state)
{
	(void)state;
	assert_int_equal(in_child(lease, NULL), 0);
}

/* A DISCOVER lost: sent again after the first wait, 200 ms. */
static void lost_discover(void *arg)
{
	(void)arg;
	enter_namespaces();
	make_link(true);
	struct server s = {.drop_first_discover = true,
			   .netmask = {255, 255, 255, 0},
			   .router = {10, 0, 2, 2}};
	struct net_settings applied;
	long long took;
	CHILD_CHECK(lease_from(&s, &applied, &took) == 0);
	CHILD_CHECK(s.discovers == 2 && s.requests == 1);
	CHILD_CHECK(took >= 190 && took < 2000);
	check_lease(&applied);
}

static void test_lost_discover(void **state)
{
	(void)state;
	assert_int_equal(in_child(lost_discover, NULL), 0);
}

/* A NAK to the REQUEST: the client starts over with a DISCOVER. */
static void nak(void *arg)
{
	(void)arg;
	enter_namespaces();
	make_link(true);
	struct server s = {.nak_first_request = true,
			   .netmask = {255, 255, 255, 0},
			   .router = {10, 0, 2, 2}};
	struct net_settings applied;
	long long took;
	CHILD_CHECK(lease_from(&s, &applied, &took) == 0);
	CHILD_CHECK(s.discovers == 2 && s.requests == 2);
	check_lease(&applied);
}

static void test_nak(void **state)
{
	(void)state;
	assert_int_equal(in_child(nak, NULL), 0);
}

/* A /32 lease whose router is outside it: reached through a host route. */
static void gateway_outside(void *arg)
{
	(void)arg;
	enter_namespaces();
	make_link(true);
	struct server s = {.netmask = {255, 255, 255, 255}, .router = {10, 0, 9, 1}};
	struct net_settings applied;
	long long took;
	CHILD_CHECK(lease_from(&s, &applied, &took) == 0);
	CHILD_CHECK(interface_address(SIOCGIFNETMASK) == inet_addr("255.255.255.255"));
	CHILD_CHECK(has_route("0109000A", "00000000"));
	CHILD_CHECK(has_route("00000000", "0109000A"));
}

static void test_gateway_outside(void **state)
{
	(void)state;
	assert_int_equal(in_child(gateway_outside, NULL), 0);
}

static void no_server(void *arg)
{
	(void)arg;
	enter_namespaces();
	make_link(true);
	const struct net_job job = {.wanted = true, .dhcp = true};
	struct net_settings applied;
	long long start = now_ms();
	CHILD_CHECK(net_configure_interface(CLIENT, &job, &applied) == -ETIMEDOUT);
	CHILD_CHECK(now_ms() - start >= 4900 && now_ms() - start < 6000);
}

static void test_no_server(void **state)
{
	(void)state;
	assert_int_equal(in_child(no_server, NULL), 0);
}

/* The job's settings, a DNS server of IPv6 among them. */
static void static_settings(void *arg)
{
	(void)arg;
	enter_namespaces();
	make_link(true);
	char *fields[] = {"static", "192.0.2.9/28", "192.0.2.1", "fd00::53"};
	struct net_job job;
	CHILD_CHECK(net_parse_job(fields, 4, &job) == 0 && !job.dhcp);
	struct net_settings applied;
	CHILD_CHECK(net_configure_interface(CLIENT, &job, &applied) == 0);
	CHILD_CHECK(interface_address(SIOCGIFADDR) == inet_addr("192.0.2.9"));
	CHILD_CHECK(interface_address(SIOCGIFNETMASK) == inet_addr("255.255.255.240"));
	CHILD_CHECK(has_route("00000000", "010200C0"));
	CHILD_CHECK(applied.dns_count == 1 && !strcmp(applied.dns[0], "fd00::53"));
}

static void test_static(void **state)
{
	(void)state;
	assert_int_equal(in_child(static_settings, NULL), 0);
}

static void no_interface(void *arg)
{
	(void)arg;
	enter_namespaces();
	const struct net_job job = {.wanted = true, .dhcp = true};
	struct net_settings applied;
	CHILD_CHECK(net_configure_interface(CLIENT, &job, &applied) == -ENODEV);
}

static void test_no_interface(void **state)
{
	(void)state;
	assert_int_equal(in_child(no_interface, NULL), 0);
}

static void test_malformed_jobs(void **state)
{
	(void)state;
	static const char *const jobs[][4] = {
		{"static", "192.0.2.9", "", ""},      {"static", "192.0.2.9/0", "", ""},
		{"static", "192.0.2.9/33", "", ""},   {"static", "192.0.2.9/", "", ""},
		{"static", "/24", "", ""},            {"static", "fd00::9/64", "", ""},
		{"static", "192.0.2.9/24", "x", ""},  {"static", "192.0.2.9/24", "", "x"},
		{"static", "192.0.2.9/24x", "", ""},  {"dhcp6", "", "", ""},
	};
	struct net_job job;
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		if (net_parse_job((char **)jobs[i], 4, &job) != -EINVAL)
			fail_msg("job %zu was taken", i);
	char *dhcp_and_more[] = {"dhcp", ""};
	assert_int_equal(net_parse_job(dhcp_and_more, 2, &job), -EINVAL);
	assert_int_equal(net_parse_job(dhcp_and_more, 0, &job), -EINVAL);
	assert_int_equal(net_parse_job(dhcp_and_more, 1, &job), 0);
	assert_true(job.wanted && job.dhcp);
}

/* ---- resolv.conf: a host's file is never written ---- */

static char top[64];

static int make_top(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/fsvm-guest-net.XXXXXX");
	assert_non_null(mkdtemp(top));
	return 0;
}

static int remove_top(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd);
}

static void put(const char *rel, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", top, rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void make_dirs(const char *rels)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "cd '%s' && mkdir -p %s", top, rels);
	assert_int_equal(system(cmd), 0);
}

static char *slurp(const char *path)
{
	static char buf[512];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static const char servers[] = "nameserver 10.0.2.3\nnameserver fd00::53\n";

/* In the guest's root at top/ROOT: its resolv.conf after ours is
 * written, as the guest sees it. */
static void write_in_root(const char *root, bool host_share)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", top, root);
	CHILD_CHECK(chroot(path) == 0 && chdir("/") == 0);
	struct net_settings s = {.dns_count = 2};
	strcpy(s.dns[0], "10.0.2.3");
	strcpy(s.dns[1], "fd00::53");
	CHILD_CHECK(net_write_resolv_conf(&s, host_share) == 0);
}

static bool guest_has_ours(void)
{
	char *text = slurp("/etc/resolv.conf");
	struct stat st;
	return text && strstr(text, servers) && lstat("/etc/resolv.conf", &st) == 0;
}

/* An overlay root over a lower folder whose resolv.conf is a link into a
 * /run that is not the guest's (systemd-resolved's). */
static void overlay_root(void *arg)
{
	(void)arg;
	enter_namespaces();
	char opts[512], target[128], upper[128];
	snprintf(upper, sizeof(upper), "%s/rw", top);
	CHILD_CHECK(mount("tmpfs", upper, "tmpfs", 0, NULL) == 0);
	snprintf(opts, sizeof(opts), "%s/rw/u", top);
	CHILD_CHECK(mkdir(opts, 0755) == 0);
	snprintf(opts, sizeof(opts), "%s/rw/w", top);
	CHILD_CHECK(mkdir(opts, 0755) == 0);
	snprintf(opts, sizeof(opts), "lowerdir=%s/lower,upperdir=%s/rw/u,workdir=%s/rw/w",
		 top, top, top);
	snprintf(target, sizeof(target), "%s/root", top);
	CHILD_CHECK(mount("overlay", target, "overlay", 0, opts) == 0);
	write_in_root("root", false);
	struct stat st;
	CHILD_CHECK(guest_has_ours() && lstat("/etc/resolv.conf", &st) == 0 &&
		    S_ISREG(st.st_mode));
	CHILD_CHECK(access("/etc/.resolv.conf.fsvm", F_OK) < 0);
}

static void test_resolv_conf_overlay(void **state)
{
	(void)state;
	make_dirs("lower/etc rw root");
	char link[128], target[128];
	snprintf(link, sizeof(link), "%s/lower/etc/resolv.conf", top);
	assert_int_equal(symlink("../run/systemd/resolve/stub-resolv.conf", link), 0);
	assert_int_equal(in_child(overlay_root, NULL), 0);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "../run/systemd/resolve/stub-resolv.conf");
}

/* A host share as root, as --rw-root mounts it, with the init's /run. */
static void host_share_root(void *arg)
{
	(void)arg;
	enter_namespaces();
	char run[128];
	snprintf(run, sizeof(run), "%s/host/run", top);
	CHILD_CHECK(mount("tmpfs", run, "tmpfs", 0, NULL) == 0);
	write_in_root("host", true);
	CHILD_CHECK(guest_has_ours());
}

static void test_resolv_conf_host_share(void **state)
{
	(void)state;
	make_dirs("host/etc host/run");
	put("host/etc/resolv.conf", "nameserver 192.0.2.53\n");
	assert_int_equal(in_child(host_share_root, NULL), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/host/etc/resolv.conf", top);
	assert_string_equal(slurp(path), "nameserver 192.0.2.53\n");
}

/* A link on the share to a file elsewhere on it: ours covers that file,
 * which stays as it is. */
static void test_resolv_conf_host_share_link(void **state)
{
	(void)state;
	make_dirs("host/etc host/run host/var");
	put("host/var/resolv.real", "nameserver 192.0.2.54\n");
	char link[128];
	snprintf(link, sizeof(link), "%s/host/etc/resolv.conf", top);
	assert_int_equal(symlink("../var/resolv.real", link), 0);
	assert_int_equal(in_child(host_share_root, NULL), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/host/var/resolv.real", top);
	assert_string_equal(slurp(path), "nameserver 192.0.2.54\n");
}

/* No resolv.conf on the share, or a link to nothing: a warning, no file
 * made on the host. */
static void host_share_without(void *arg)
{
	(void)arg;
	enter_namespaces();
	char run[128];
	snprintf(run, sizeof(run), "%s/host/run", top);
	CHILD_CHECK(mount("tmpfs", run, "tmpfs", 0, NULL) == 0);
	write_in_root("host", true);
	CHILD_CHECK(!slurp("/etc/resolv.conf"));
}

static void test_resolv_conf_host_share_without(void **state)
{
	(void)state;
	make_dirs("host/etc host/run");
	assert_int_equal(in_child(host_share_without, NULL), 0);
	char link[128];
	snprintf(link, sizeof(link), "%s/host/etc/resolv.conf", top);
	assert_int_equal(symlink("../run/systemd/resolve/stub-resolv.conf", link), 0);
	assert_int_equal(in_child(host_share_without, NULL), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/host/run/systemd", top);
	assert_int_equal(access(path, F_OK), -1);
}

/* The initramfs as root (no shares): no /etc yet. */
static void initramfs_root(void *arg)
{
	(void)arg;
	enter_namespaces();
	char root[128];
	snprintf(root, sizeof(root), "%s/ram", top);
	CHILD_CHECK(mount("tmpfs", root, "tmpfs", 0, NULL) == 0);
	write_in_root("ram", false);
	CHILD_CHECK(guest_has_ours());
}

static void test_resolv_conf_initramfs(void **state)
{
	(void)state;
	make_dirs("ram");
	assert_int_equal(in_child(initramfs_root, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest net[] = {
		cmocka_unit_test(test_lease),
		cmocka_unit_test(test_lost_discover),
		cmocka_unit_test(test_nak),
		cmocka_unit_test(test_gateway_outside),
		cmocka_unit_test(test_no_server),
		cmocka_unit_test(test_static),
		cmocka_unit_test(test_no_interface),
		cmocka_unit_test(test_malformed_jobs),
		cmocka_unit_test_setup_teardown(test_resolv_conf_overlay, make_top, remove_top),
		cmocka_unit_test_setup_teardown(test_resolv_conf_host_share, make_top, remove_top),
		cmocka_unit_test_setup_teardown(test_resolv_conf_host_share_link, make_top,
						remove_top),
		cmocka_unit_test_setup_teardown(test_resolv_conf_host_share_without, make_top,
						remove_top),
		cmocka_unit_test_setup_teardown(test_resolv_conf_initramfs, make_top, remove_top),
	};
	return cmocka_run_group_tests(net, NULL, NULL);
}
