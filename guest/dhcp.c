/* DHCPv4 messages (RFC 2131, options of RFC 2132) inside IPv4 and UDP. */
#include "guest/dhcp.h"

#include <errno.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <string.h>

#define DHCP_SERVER_PORT 67
#define DHCP_CLIENT_PORT 68
#define BOOTREQUEST 1
#define BOOTREPLY 2
#define HTYPE_ETHERNET 1
#define FLAG_BROADCAST 0x8000 /* we cannot take unicast before we have an address */

#define OPT_PAD 0
#define OPT_NETMASK 1
#define OPT_ROUTER 3
#define OPT_DNS 6
#define OPT_MTU 26
#define OPT_REQUESTED_ADDRESS 50
#define OPT_MESSAGE_TYPE 53
#define OPT_SERVER_ID 54
#define OPT_PARAMETERS 55
#define OPT_END 255

static const uint8_t magic_cookie[4] = {99, 130, 83, 99};

/* The fixed part of a BOOTP message; options follow the cookie. */
struct bootp {
	uint8_t op, htype, hlen, hops;
	uint32_t xid;
	uint16_t secs, flags;
	struct in_addr ciaddr, yiaddr, siaddr, giaddr;
	uint8_t chaddr[16];
	uint8_t sname[64];
	uint8_t file[128];
	uint8_t cookie[4];
} __attribute__((packed));

#define BOOTP_MIN_SIZE 300

/* The one's complement sum of RFC 1071, on bytes as big-endian words. */
static uint32_t sum16(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t checksum(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static uint8_t *put_option(uint8_t *at, uint8_t code, const void *data,
			   uint8_t len)
{
	*at++ = code;
	*at++ = len;
	memcpy(at, data, len);
	return at + len;
}

size_t dhcp_build(uint8_t *packet, int type, uint32_t xid,
		  const uint8_t mac[DHCP_MAC_LEN], const struct dhcp_lease *offer)
{
	static const uint8_t parameters[] = {OPT_NETMASK, OPT_ROUTER, OPT_DNS,
					     OPT_MTU};
	const size_t udp_len = sizeof(struct udphdr) + BOOTP_MIN_SIZE;
	const size_t ip_len = sizeof(struct iphdr) + udp_len;
	memset(packet, 0, ip_len);

	struct bootp msg = {.op = BOOTREQUEST,
			    .htype = HTYPE_ETHERNET,
			    .hlen = DHCP_MAC_LEN,
			    .xid = xid,
			    .flags = htons(FLAG_BROADCAST)};
	memcpy(msg.chaddr, mac, DHCP_MAC_LEN);
	memcpy(msg.cookie, magic_cookie, sizeof(magic_cookie));
	uint8_t *bootp = packet + sizeof(struct iphdr) + sizeof(struct udphdr);
	memcpy(bootp, &msg, sizeof(msg));

	uint8_t message_type = (uint8_t)type;
	uint8_t *opt = bootp + sizeof(msg);
	opt = put_option(opt, OPT_MESSAGE_TYPE, &message_type, 1);
	if (type == DHCP_REQUEST) {
		opt = put_option(opt, OPT_REQUESTED_ADDRESS, &offer->address, 4);
		opt = put_option(opt, OPT_SERVER_ID, &offer->server, 4);
	}
	opt = put_option(opt, OPT_PARAMETERS, parameters, sizeof(parameters));
	*opt = OPT_END; /* the rest up to BOOTP's minimum stays padding */

	struct udphdr udp = {.source = htons(DHCP_CLIENT_PORT),
			     .dest = htons(DHCP_SERVER_PORT),
			     .len = htons((uint16_t)udp_len)};
	struct iphdr ip = {.version = 4,
			   .ihl = sizeof(struct iphdr) / 4,
			   .tot_len = htons((uint16_t)ip_len),
			   .ttl = 64,
			   .protocol = IPPROTO_UDP,
			   .saddr = htonl(INADDR_ANY),
			   .daddr = htonl(INADDR_BROADCAST)};
	ip.check = htons(checksum(sum16(&ip, sizeof(ip), 0)));
	memcpy(packet, &ip, sizeof(ip));

	/* The UDP checksum covers a pseudo-header of the IPv4 addresses,
	 * the protocol and the UDP length. */
	memcpy(packet + sizeof(ip), &udp, sizeof(udp));
	uint32_t pseudo = sum16(&ip.saddr, 8, IPPROTO_UDP + (uint32_t)udp_len);
	uint16_t sum = checksum(sum16(packet + sizeof(ip), udp_len, pseudo));
	udp.check = htons(sum ? sum : 0xffff); /* 0 would mean none */
	memcpy(packet + sizeof(ip), &udp, sizeof(udp));
	return ip_len;
}

/* An option of a fixed length, or a list of addresses of at least one. */
static int option_fits(uint8_t code, uint8_t len)
{
	switch (code) {
	case OPT_MESSAGE_TYPE:
		return len == 1;
	case OPT_MTU:
		return len == 2;
	case OPT_NETMASK:
	case OPT_SERVER_ID:
		return len == 4;
	case OPT_ROUTER:
	case OPT_DNS:
		return len >= 4 && len % 4 == 0;
	default:
		return 1; /* not one we read */
	}
}

static int parse_options(const uint8_t *opt, size_t len,
			 struct dhcp_lease *lease)
{
	size_t i = 0;
	while (i < len && opt[i] != OPT_END) {
		if (opt[i] == OPT_PAD) {
			i++;
			continue;
		}
		if (i + 2 > len || i + 2 + opt[i + 1] > len ||
		    !option_fits(opt[i], opt[i + 1]))
			return -EBADMSG;
		uint8_t code = opt[i], n = opt[i + 1];
		const uint8_t *data = opt + i + 2;
		switch (code) {
		case OPT_MESSAGE_TYPE:
			lease->type = data[0];
			break;
		case OPT_MTU:
			lease->mtu = (unsigned int)data[0] << 8 | data[1];
			break;
		case OPT_NETMASK:
			memcpy(&lease->netmask, data, 4);
			break;
		case OPT_SERVER_ID:
			memcpy(&lease->server, data, 4);
			break;
		case OPT_ROUTER:
			memcpy(&lease->router, data, 4);
			break;
		case OPT_DNS:
			lease->dns_count = n / 4 < DHCP_MAX_DNS ? n / 4 : DHCP_MAX_DNS;
			memcpy(lease->dns, data, 4 * (size_t)lease->dns_count);
			break;
		}
		i += 2 + (size_t)n;
	}
	return 0;
}

int dhcp_parse(const uint8_t *packet, size_t len, uint32_t xid,
	       const uint8_t mac[DHCP_MAC_LEN], struct dhcp_lease *lease)
{
	struct iphdr ip;
	struct udphdr udp;
	struct bootp msg;

	if (len < sizeof(ip))
		return -ENOMSG;
	memcpy(&ip, packet, sizeof(ip));
	size_t ip_header = (size_t)ip.ihl * 4;
	if (ip.version != 4 || ip.protocol != IPPROTO_UDP)
		return -ENOMSG;
	/* A fragment's UDP header is not where it seems; servers send
	 * replies whole. */
	if (ntohs(ip.frag_off) & (IP_MF | IP_OFFMASK))
		return -ENOMSG;
	/* The frame may be padded past the packet: its own length counts. */
	size_t total = ntohs(ip.tot_len);
	if (ip_header < sizeof(ip) || total > len ||
	    total < ip_header + sizeof(udp) ||
	    checksum(sum16(packet, ip_header, 0)) != 0)
		return -EBADMSG;
	memcpy(&udp, packet + ip_header, sizeof(udp));
	if (ntohs(udp.source) != DHCP_SERVER_PORT ||
	    ntohs(udp.dest) != DHCP_CLIENT_PORT)
		return -ENOMSG;
	size_t udp_len = ntohs(udp.len);
	if (udp_len < sizeof(udp) || udp_len > total - ip_header ||
	    udp_len - sizeof(udp) < sizeof(msg))
		return -EBADMSG;

	const uint8_t *bootp = packet + ip_header + sizeof(udp);
	size_t bootp_len = udp_len - sizeof(udp);
	memcpy(&msg, bootp, sizeof(msg));
	if (msg.op != BOOTREPLY || msg.xid != xid ||
	    msg.htype != HTYPE_ETHERNET || msg.hlen != DHCP_MAC_LEN ||
	    memcmp(msg.chaddr, mac, DHCP_MAC_LEN))
		return -ENOMSG;
	if (memcmp(msg.cookie, magic_cookie, sizeof(magic_cookie)))
		return -EBADMSG;

	*lease = (struct dhcp_lease){.address = msg.yiaddr};
	lease->server.s_addr = ip.saddr;
	if (parse_options(bootp + sizeof(msg), bootp_len - sizeof(msg), lease) < 0)
		return -EBADMSG;
	if (lease->type == DHCP_NAK)
		return 0;
	if (lease->type != DHCP_OFFER && lease->type != DHCP_ACK)
		return -EBADMSG;
	/* An address we could not use, or an MTU below IPv4's minimum. */
	if (lease->address.s_addr == htonl(INADDR_ANY) ||
	    lease->address.s_addr == htonl(INADDR_BROADCAST) ||
	    (lease->mtu && lease->mtu < 68))
		return -EBADMSG;
	return 0;
}
