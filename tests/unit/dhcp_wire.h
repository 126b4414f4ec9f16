/* DHCP on the wire as a server writes it, for the tests of the guest's
 * client: written again here so the code under test is not its own judge. */
#ifndef FSVM_TEST_DHCP_WIRE_H
#define FSVM_TEST_DHCP_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define IP_HEADER 20
#define UDP_HEADER 8
#define BOOTP_FIXED 236 /* up to the magic cookie */
#define OPTIONS_AT (IP_HEADER + UDP_HEADER + BOOTP_FIXED + 4)

static const uint8_t dhcp_cookie[4] = {99, 130, 83, 99};

/* RFC 1071's sum, folded, not complemented. */
static inline uint16_t ones_sum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i < len; i++)
		sum += i % 2 ? p[i] : (uint32_t)p[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static inline void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline size_t get16(const uint8_t *p)
{
	return (size_t)p[0] << 8 | p[1];
}

static inline void fix_ip_checksum(uint8_t *pkt)
{
	put16(pkt + 10, 0);
	put16(pkt + 10, (uint16_t)~ones_sum(pkt, (size_t)(pkt[0] & 0xf) * 4, 0));
}

/* A reply from 10.0.2.2 to transaction xid of client chaddr, offering
 * yiaddr, with these options after the cookie; returns its length. */
static inline size_t dhcp_wire_reply(uint8_t *pkt, uint32_t xid,
				     const uint8_t chaddr[6],
				     const uint8_t yiaddr[4],
				     const uint8_t *options, size_t options_len)
{
	size_t bootp_len = BOOTP_FIXED + 4 + options_len;
	size_t total = IP_HEADER + UDP_HEADER + bootp_len;
	memset(pkt, 0, total);
	pkt[0] = 0x45;
	put16(pkt + 2, total);
	pkt[8] = 64;
	pkt[9] = 17; /* UDP */
	memcpy(pkt + 12, (uint8_t[]){10, 0, 2, 2}, 4);
	memset(pkt + 16, 0xff, 4);
	fix_ip_checksum(pkt);
	uint8_t *udp = pkt + IP_HEADER;
	put16(udp, 67);
	put16(udp + 2, 68);
	put16(udp + 4, UDP_HEADER + bootp_len);
	uint8_t *bootp = udp + UDP_HEADER;
	bootp[0] = 2; /* BOOTREPLY */
	bootp[1] = 1;
	bootp[2] = 6;
	memcpy(bootp + 4, &xid, 4);
	memcpy(bootp + 16, yiaddr, 4);
	memcpy(bootp + 28, chaddr, 6);
	memcpy(bootp + BOOTP_FIXED, dhcp_cookie, 4);
	memcpy(bootp + BOOTP_FIXED + 4, options, options_len);
	return total;
}

/* Option code of a message (whole IPv4 packet), or NULL. */
static inline const uint8_t *dhcp_wire_option(const uint8_t *pkt, size_t len,
					      uint8_t code)
{
	for (size_t i = OPTIONS_AT; i + 1 < len && pkt[i] != 255;
	     i += pkt[i] ? 2 + (size_t)pkt[i + 1] : 1)
		if (pkt[i] == code)
			return pkt + i;
	return NULL;
}

#endif
