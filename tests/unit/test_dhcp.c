/* Unit tests for guest/dhcp: the init's DHCP requests on the wire, and
 * replies taken apart as untrusted bytes (wrong transaction, no cookie,
 * options cut short or too long). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guest/dhcp.h"
#include "tests/unit/dhcp_wire.h"

#define XID 0x12345678u

static const uint8_t mac[DHCP_MAC_LEN] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

/* A reply to XID of mac, offering 10.0.2.15, with these options. */
static size_t reply(uint8_t *pkt, const uint8_t *options, size_t options_len)
{
	return dhcp_wire_reply(pkt, XID, mac, (uint8_t[]){10, 0, 2, 15},
			       options, options_len);
}

/* Parses a copy exactly len bytes long, so ASan sees any read past it. */
static int parse(const uint8_t *pkt, size_t len, struct dhcp_lease *lease)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, pkt, len);
	int rc = dhcp_parse(copy, len, XID, mac, lease);
	free(copy);
	return rc;
}

static const uint8_t offer_options[] = {
	53, 1, 2,                          /* OFFER */
	54, 4, 10, 0, 2, 2,                /* server */
	1, 4, 255, 255, 255, 0,            /* netmask */
	3, 8, 10, 0, 2, 2, 10, 0, 2, 3,    /* routers: the first counts */
	6, 4, 10, 0, 2, 3,                 /* DNS */
	26, 2, 0xff, 0xf0,                 /* MTU 65520 */
	12, 3, 'v', 'm', '1',              /* host name: not ours to read */
	255};

static uint32_t addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	uint32_t v;
	memcpy(&v, (uint8_t[]){a, b, c, d}, 4);
	return v;
}

static void test_offer(void **state)
{
	(void)state;
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	size_t len = reply(pkt, offer_options, sizeof(offer_options));
	assert_int_equal(parse(pkt, len, &lease), 0);
	assert_int_equal(lease.type, DHCP_OFFER);
	assert_int_equal(lease.address.s_addr, addr(10, 0, 2, 15));
	assert_int_equal(lease.server.s_addr, addr(10, 0, 2, 2));
	assert_int_equal(lease.netmask.s_addr, addr(255, 255, 255, 0));
	assert_int_equal(lease.router.s_addr, addr(10, 0, 2, 2));
	assert_int_equal(lease.dns_count, 1);
	assert_int_equal(lease.dns[0].s_addr, addr(10, 0, 2, 3));
	assert_int_equal(lease.mtu, 65520);
}

static void test_ack_padded_frame_and_pad_options(void **state)
{
	(void)state;
	/* Pads before and between options; the frame runs past the packet
	 * (Ethernet's minimum), which only the IPv4 length bounds. */
	static const uint8_t options[] = {0, 0, 53, 1, 5, 0, 255, 1, 2, 3};
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	size_t len = reply(pkt, options, sizeof(options));
	memset(pkt + len, 0xee, 40);
	assert_int_equal(parse(pkt, len + 40, &lease), 0);
	assert_int_equal(lease.type, DHCP_ACK);
	assert_int_equal(lease.mtu, 0);
	assert_int_equal(lease.dns_count, 0);
	assert_int_equal(lease.netmask.s_addr, 0);
	/* No option 54: the server is the packet's source. */
	assert_int_equal(lease.server.s_addr, addr(10, 0, 2, 2));
}

static void test_nak(void **state)
{
	(void)state;
	static const uint8_t options[] = {53, 1, 6, 255};
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	size_t len = reply(pkt, options, sizeof(options));
	memset(pkt + IP_HEADER + UDP_HEADER + 16, 0, 4); /* a NAK offers nothing */
	assert_int_equal(parse(pkt, len, &lease), 0);
	assert_int_equal(lease.type, DHCP_NAK);
}

static void test_dns_servers_capped(void **state)
{
	(void)state;
	uint8_t options[3 + 2 + 4 * 20 + 1] = {53, 1, 5, 6, 4 * 20};
	for (int i = 0; i < 20; i++)
		memcpy(options + 5 + 4 * i, (uint8_t[]){10, 0, 0, (uint8_t)i}, 4);
	options[sizeof(options) - 1] = 255;
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	size_t len = reply(pkt, options, sizeof(options));
	assert_int_equal(parse(pkt, len, &lease), 0);
	assert_int_equal(lease.dns_count, DHCP_MAX_DNS);
	assert_int_equal(lease.dns[2].s_addr, addr(10, 0, 0, 2));
}

/* Someone else's packet: not an error, not ours either. */
static void test_not_ours(void **state)
{
	(void)state;
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	size_t len = reply(pkt, offer_options, sizeof(offer_options));
	uint8_t *bootp = pkt + IP_HEADER + UDP_HEADER;

	bootp[4] ^= 1; /* another transaction */
	assert_int_equal(parse(pkt, len, &lease), -ENOMSG);
	bootp[4] ^= 1;
	bootp[28 + 5] ^= 1; /* another client */
	assert_int_equal(parse(pkt, len, &lease), -ENOMSG);
	bootp[28 + 5] ^= 1;
	bootp[0] = 1; /* a request, another client's */
	assert_int_equal(parse(pkt, len, &lease), -ENOMSG);
	bootp[0] = 2;
	put16(pkt + IP_HEADER + 2, 69); /* another port */
	assert_int_equal(parse(pkt, len, &lease), -ENOMSG);
	put16(pkt + IP_HEADER + 2, 68);
	pkt[9] = 6; /* TCP */
	fix_ip_checksum(pkt);
	assert_int_equal(parse(pkt, len, &lease), -ENOMSG);
	pkt[9] = 17;
	pkt[6] = 0x20; /* the first fragment of more */
	fix_ip_checksum(pkt);
	assert_int_equal(parse(pkt, len, &lease), -ENOMSG);
	pkt[6] = 0;
	fix_ip_checksum(pkt);
	assert_int_equal(parse(pkt, len, &lease), 0);
}

static void test_no_cookie(void **state)
{
	(void)state;
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	size_t len = reply(pkt, offer_options, sizeof(offer_options));
	pkt[OPTIONS_AT - 1] = 0; /* plain BOOTP */
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
}

static void test_bad_headers(void **state)
{
	(void)state;
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	size_t len = reply(pkt, offer_options, sizeof(offer_options));

	pkt[11] ^= 1; /* IPv4 checksum */
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
	pkt[11] ^= 1;
	pkt[0] = 0x44; /* a header shorter than its fixed part */
	fix_ip_checksum(pkt);
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
	pkt[0] = 0x45;
	put16(pkt + 2, len + 1); /* longer than what came */
	fix_ip_checksum(pkt);
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
	put16(pkt + 2, 0xffff);
	fix_ip_checksum(pkt);
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
	put16(pkt + 2, len);
	fix_ip_checksum(pkt);
	put16(pkt + IP_HEADER + 4, len - IP_HEADER + 1); /* UDP past IPv4 */
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
	put16(pkt + IP_HEADER + 4, 7); /* shorter than its own header */
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
	/* Too short for BOOTP's fixed part and the cookie. */
	put16(pkt + IP_HEADER + 4, UDP_HEADER + BOOTP_FIXED + 3);
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
}

/* Options whose lengths do not fit their kind or the packet. */
static void test_bad_options(void **state)
{
	(void)state;
	static const struct {
		uint8_t bytes[16];
		size_t len;
	} cases[] = {
		{{53, 1, 2, 6, 200, 10, 0, 2, 3}, 9},  /* runs past the end */
		{{53, 1, 2, 6}, 4},                    /* a code, no length */
		{{53, 1, 2, 1, 5, 255, 255, 255, 0, 0, 255}, 11}, /* mask of 5 */
		{{53, 2, 2, 2, 255}, 5},               /* type of 2 bytes */
		{{53, 1, 2, 54, 3, 10, 0, 2, 255}, 9}, /* server of 3 */
		{{53, 1, 2, 3, 6, 10, 0, 2, 2, 10, 0, 255}, 12}, /* 1.5 routers */
		{{53, 1, 2, 6, 0, 255}, 6},            /* no DNS at all */
		{{53, 1, 2, 26, 1, 5, 255}, 7},        /* MTU of 1 byte */
		{{53, 1, 2, 26, 2, 0, 67, 255}, 8},    /* MTU below IPv4's 68 */
		{{54, 4, 10, 0, 2, 2, 255}, 7},        /* no message type */
		{{53, 1, 3, 255}, 4},                  /* a REQUEST, not a reply */
		{{53, 1, 0, 255}, 4},                  /* type 0 */
	};
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = reply(pkt, cases[i].bytes, cases[i].len);
		if (parse(pkt, len, &lease) != -EBADMSG)
			fail_msg("case %zu was taken", i);
	}
}

static void test_unusable_address(void **state)
{
	(void)state;
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	size_t len = reply(pkt, offer_options, sizeof(offer_options));
	uint8_t *yiaddr = pkt + IP_HEADER + UDP_HEADER + 16;
	memset(yiaddr, 0, 4);
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
	memset(yiaddr, 0xff, 4);
	assert_int_equal(parse(pkt, len, &lease), -EBADMSG);
}

/* Every prefix of a good reply is refused or is a whole reply, and none
 * is read past its end. */
static void test_every_truncation(void **state)
{
	(void)state;
	uint8_t pkt[1024];
	struct dhcp_lease lease;
	size_t len = reply(pkt, offer_options, sizeof(offer_options));
	for (size_t cut = 0; cut < len; cut++)
		assert_true(parse(pkt, cut, &lease) < 0);
	/* The same with each length field saying the packet is shorter. */
	for (size_t cut = OPTIONS_AT; cut < len; cut++) {
		uint8_t copy[1024];
		memcpy(copy, pkt, len);
		put16(copy + 2, cut);
		fix_ip_checksum(copy);
		put16(copy + IP_HEADER + 4, cut - IP_HEADER);
		int rc = parse(copy, cut, &lease);
		assert_true(rc == -EBADMSG || (rc == 0 && lease.type == DHCP_OFFER));
	}
}

/* Bytes of a fixed pseudo-random sequence in the options: never a crash,
 * never a read past the packet. */
static void test_random_options(void **state)
{
	(void)state;
	uint8_t options[64], pkt[1024];
	struct dhcp_lease lease;
	unsigned int seed = 1;
	for (int round = 0; round < 20000; round++) {
		for (size_t i = 0; i < sizeof(options); i++)
			options[i] = (uint8_t)(rand_r(&seed) >> 7);
		options[0] = 53; /* often a type, to reach the other checks */
		options[1] = 1;
		options[2] = (uint8_t)(round % 7);
		size_t len = reply(pkt, options, 3 + (size_t)round % 61);
		int rc = parse(pkt, len, &lease);
		assert_true(rc == 0 || rc == -EBADMSG);
		if (rc == 0)
			assert_true(lease.dns_count >= 0 &&
				    lease.dns_count <= DHCP_MAX_DNS);
	}
}

static void check_headers(const uint8_t *pkt, size_t len)
{
	assert_int_equal(len, DHCP_PACKET_SIZE);
	assert_int_equal(pkt[0], 0x45);
	assert_int_equal(get16(pkt + 2), len);
	assert_int_equal(pkt[9], 17);
	assert_int_equal(ones_sum(pkt, IP_HEADER, 0), 0xffff);
	assert_memory_equal(pkt + 12, ((uint8_t[]){0, 0, 0, 0}), 4);
	assert_memory_equal(pkt + 16, ((uint8_t[]){255, 255, 255, 255}), 4);
	const uint8_t *udp = pkt + IP_HEADER;
	assert_int_equal(get16(udp), 68);
	assert_int_equal(get16(udp + 2), 67);
	size_t udp_len = get16(udp + 4);
	assert_int_equal(udp_len, len - IP_HEADER);
	/* Pseudo-header (addresses, protocol, length), then the datagram. */
	uint32_t pseudo = ones_sum(pkt + 12, 8, 17 + (uint32_t)udp_len);
	assert_int_equal(ones_sum(udp, udp_len, pseudo), 0xffff);
	const uint8_t *bootp = udp + UDP_HEADER;
	assert_int_equal(bootp[0], 1); /* BOOTREQUEST */
	assert_int_equal(bootp[1], 1);
	assert_int_equal(bootp[2], 6);
	uint32_t xid;
	memcpy(&xid, bootp + 4, 4);
	assert_int_equal(xid, XID);
	assert_int_equal(get16(bootp + 10), 0x8000); /* broadcast replies */
	assert_memory_equal(bootp + 28, mac, sizeof(mac));
	assert_memory_equal(bootp + BOOTP_FIXED, dhcp_cookie, 4);
}

static void test_discover(void **state)
{
	(void)state;
	uint8_t pkt[DHCP_PACKET_SIZE];
	size_t len = dhcp_build(pkt, DHCP_DISCOVER, XID, mac, NULL);
	check_headers(pkt, len);
	const uint8_t *type = dhcp_wire_option(pkt, len, 53);
	assert_non_null(type);
	assert_int_equal(type[2], DHCP_DISCOVER);
	assert_null(dhcp_wire_option(pkt, len, 50));
	const uint8_t *asked = dhcp_wire_option(pkt, len, 55);
	assert_non_null(asked);
	assert_memory_equal(asked + 2, ((uint8_t[]){1, 3, 6, 26}), 4);
}

static void test_request(void **state)
{
	(void)state;
	struct dhcp_lease offer = {.type = DHCP_OFFER};
	offer.address.s_addr = addr(10, 0, 2, 15);
	offer.server.s_addr = addr(10, 0, 2, 2);
	uint8_t pkt[DHCP_PACKET_SIZE];
	size_t len = dhcp_build(pkt, DHCP_REQUEST, XID, mac, &offer);
	check_headers(pkt, len);
	assert_int_equal(dhcp_wire_option(pkt, len, 53)[2], DHCP_REQUEST);
	const uint8_t *wanted = dhcp_wire_option(pkt, len, 50);
	const uint8_t *server = dhcp_wire_option(pkt, len, 54);
	assert_non_null(wanted);
	assert_non_null(server);
	assert_memory_equal(wanted + 1, ((uint8_t[]){4, 10, 0, 2, 15}), 5);
	assert_memory_equal(server + 1, ((uint8_t[]){4, 10, 0, 2, 2}), 5);
}

int main(void)
{
	const struct CMUnitTest dhcp[] = {
		cmocka_unit_test(test_offer),
		cmocka_unit_test(test_ack_padded_frame_and_pad_options),
		cmocka_unit_test(test_nak),
		cmocka_unit_test(test_dns_servers_capped),
		cmocka_unit_test(test_not_ours),
		cmocka_unit_test(test_no_cookie),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_unusable_address),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_random_options),
		cmocka_unit_test(test_discover),
		cmocka_unit_test(test_request),
	};
	return cmocka_run_group_tests(dhcp, NULL, NULL);
}
