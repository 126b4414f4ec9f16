/* --net, --mac and --publish: each value checked here, so a typo is one
 * line at the start, not a guest without a network. */
#include "vmm/net_options.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An IPv4 address with a prefix length, as the guest's static address. */
static bool ipv4_with_prefix(const char *s)
{
	const char *slash = strchr(s, '/');
	char addr[INET_ADDRSTRLEN];
	struct in_addr a;
	if (!slash || (size_t)(slash - s) >= sizeof(addr))
		return false;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	char *end;
	if (!isdigit((unsigned char)slash[1]))
		return false;
	long prefix = strtol(slash + 1, &end, 10);
	return !*end && prefix >= 1 && prefix <= 32 && inet_pton(AF_INET, addr, &a) == 1;
}

static bool ip_address(const char *s, bool v6_too)
{
	struct in6_addr a;
	return inet_pton(AF_INET, s, &a) == 1 ||
	       (v6_too && inet_pton(AF_INET6, s, &a) == 1);
}

static int net_option(struct cli_net *net, char *o, char *err, size_t errlen)
{
	char *value = strchr(o, '=');
	if (value)
		*value++ = '\0';
	if (!strcmp(o, "host-loopback") && !value) {
		if (net->mode != CLI_NET_USER)
			return cli_error(err, errlen, "--net: %s is for --net user only", o);
		net->host_loopback = true;
	} else if (!strcmp(o, "ip") && value) {
		if (!ipv4_with_prefix(value))
			return cli_error(err, errlen,
				    "--net: ip='%s' is not an IPv4 ADDRESS/PREFIX (e.g. 10.0.0.2/24)",
				    value);
		net->ip = value;
	} else if (!strcmp(o, "gw") && value) {
		if (!ip_address(value, false))
			return cli_error(err, errlen, "--net: gw='%s' is not an IPv4 address", value);
		net->gateway = value;
	} else if (!strcmp(o, "dns") && value) {
		if (!ip_address(value, true))
			return cli_error(err, errlen, "--net: dns='%s' is not an IP address", value);
		net->dns = value;
	} else {
		return cli_error(err, errlen,
			    "--net: unknown option '%s' (host-loopback, ip=, gw=, dns=)", o);
	}
	return 0;
}

int net_options_parse(struct cli_net *net, char *spec, char *err, size_t errlen)
{
	struct cli_net fresh = {.mac_given = net->mac_given,
				.nr_publish = net->nr_publish};
	memcpy(fresh.mac, net->mac, sizeof(fresh.mac));
	memcpy(fresh.publish, net->publish, sizeof(fresh.publish));
	char *opts = strchr(spec, ',');
	if (opts)
		*opts++ = '\0';
	if (!strcmp(spec, "none")) {
		fresh.mode = CLI_NET_NONE;
	} else if (!strcmp(spec, "user")) {
		fresh.mode = CLI_NET_USER;
	} else if (!strncmp(spec, "tap:", 4)) {
		const char *name = spec + 4;
		if (!*name || strlen(name) >= IFNAMSIZ || strchr(name, '/'))
			return cli_error(err, errlen,
				    "--net: '%s' is not tap:NAME with an interface name of 1 to 15 characters",
				    spec);
		fresh.mode = CLI_NET_TAP;
		fresh.tap = name;
	} else {
		return cli_error(err, errlen, "--net: '%s' is not none, user or tap:NAME", spec);
	}
	if (opts && fresh.mode == CLI_NET_NONE)
		return cli_error(err, errlen, "--net none takes no options ('%s')", opts);
	for (char *o = opts, *next; o; o = next) {
		next = strchr(o, ',');
		if (next)
			*next++ = '\0';
		int e = net_option(&fresh, o, err, errlen);
		if (e)
			return e;
	}
	if ((fresh.gateway || fresh.dns) && !fresh.ip)
		return cli_error(err, errlen, "--net: %s= needs ip= (a static address)",
			    fresh.gateway ? "gw" : "dns");
	*net = fresh;
	return 0;
}

int net_options_mac(struct cli_net *net, const char *spec, char *err,
		    size_t errlen)
{
	unsigned int b[6];
	char end;
	if (strlen(spec) != 17 ||
	    sscanf(spec, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &end) != 6)
		return cli_error(err, errlen, "--mac: '%s' is not XX:XX:XX:XX:XX:XX", spec);
	if (b[0] & 1)
		return cli_error(err, errlen,
			    "--mac: %s is a multicast address (the first byte is odd)", spec);
	if (!(b[0] | b[1] | b[2] | b[3] | b[4] | b[5]))
		return cli_error(err, errlen, "--mac: %s is all zeros", spec);
	for (int i = 0; i < 6; i++)
		net->mac[i] = (uint8_t)b[i];
	net->mac_given = true;
	return 0;
}

static bool port(const char *s, char **end, uint16_t *out)
{
	if (!isdigit((unsigned char)*s))
		return false;
	unsigned long v = strtoul(s, end, 10);
	if (v == 0 || v > 65535)
		return false;
	*out = (uint16_t)v;
	return true;
}

int net_options_publish(struct cli_net *net, const char *spec, char *err,
			size_t errlen)
{
	if (net->nr_publish == CLI_MAX_PUBLISH)
		return cli_error(err, errlen, "--publish %s: at most 16 ports", spec);
	struct cli_publish p = {0};
	char *end;
	const char *bad = "--publish: '%s' is not HOST_PORT:GUEST_PORT[/udp] with ports 1 to 65535";
	if (!port(spec, &end, &p.host))
		return cli_error(err, errlen, bad, spec);
	p.guest = p.host;
	if (*end == ':' && !port(end + 1, &end, &p.guest))
		return cli_error(err, errlen, bad, spec);
	if (!strcmp(end, "/udp"))
		p.udp = true;
	else if (*end && strcmp(end, "/tcp"))
		return cli_error(err, errlen, bad, spec);
	for (unsigned int i = 0; i < net->nr_publish; i++)
		if (net->publish[i].host == p.host && net->publish[i].udp == p.udp)
			return cli_error(err, errlen, "--publish %s: that host port is published twice",
				    spec);
	net->publish[net->nr_publish++] = p;
	return 0;
}

int net_options_check(const struct cli_net *net, char *err, size_t errlen)
{
	if (net->nr_publish && net->mode != CLI_NET_USER)
		return cli_error(err, errlen, "%s",
			    "--publish needs --net user (passt forwards the ports)");
	if (net->mac_given && net->mode == CLI_NET_NONE)
		return cli_error(err, errlen, "%s", "--mac needs --net user or --net tap:NAME");
	return 0;
}
