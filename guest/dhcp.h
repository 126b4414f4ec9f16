/* DHCPv4 messages of the guest init's client: the DISCOVER and REQUEST it
 * broadcasts, as whole IPv4 packets for a packet socket, and the replies
 * it takes, each byte of which is checked before it is believed. */
#ifndef FSVM_GUEST_DHCP_H
#define FSVM_GUEST_DHCP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define DHCP_DISCOVER 1
#define DHCP_OFFER 2
#define DHCP_REQUEST 3
#define DHCP_ACK 5
#define DHCP_NAK 6

#define DHCP_MAX_DNS 3
#define DHCP_MAC_LEN 6
/* What we send: IPv4 and UDP headers and BOOTP's 300-byte minimum. */
#define DHCP_PACKET_SIZE (20 + 8 + 300)

/* What a reply says. Addresses in network order, 0 where not given. */
struct dhcp_lease {
	int type;                /* DHCP_OFFER, DHCP_ACK or DHCP_NAK */
	struct in_addr address;  /* yiaddr */
	struct in_addr server;   /* option 54, else the packet's source */
	struct in_addr netmask;  /* option 1 */
	struct in_addr router;   /* option 3, the first */
	struct in_addr dns[DHCP_MAX_DNS]; /* option 6, the first few */
	int dns_count;
	unsigned int mtu;        /* option 26 */
};

/* Writes into packet (DHCP_PACKET_SIZE bytes) a DISCOVER, or with
 * DHCP_REQUEST a request for offer's address from its server, from
 * 0.0.0.0 to the broadcast address, for the client with this hardware
 * address. Returns the packet's length. */
size_t dhcp_build(uint8_t *packet, int type, uint32_t xid,
		  const uint8_t mac[DHCP_MAC_LEN], const struct dhcp_lease *offer);

/* Reads an IPv4 packet as a server's reply to transaction xid of this
 * client. Returns 0 with *lease filled, -ENOMSG for a packet meant for
 * someone else (another protocol, port, transaction or client), or
 * -EBADMSG for one that is malformed. */
int dhcp_parse(const uint8_t *packet, size_t len, uint32_t xid,
	       const uint8_t mac[DHCP_MAC_LEN], struct dhcp_lease *lease);

#endif
