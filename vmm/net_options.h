/* The values of --net, --mac and --publish, parsed and checked. */
#ifndef FSVM_NET_OPTIONS_H
#define FSVM_NET_OPTIONS_H

#include <stddef.h>

#include "vmm/cli.h"

/* --net none | user[,host-loopback] | tap:NAME, then [,ip=ADDRESS/PREFIX]
 * [,gw=ADDRESS] [,dns=ADDRESS]; spec is modified in place and must live
 * as long as net. -EINVAL with the reason in err. */
int net_options_parse(struct cli_net *net, char *spec, char *err, size_t errlen);

/* --mac XX:XX:XX:XX:XX:XX, a unicast address. */
int net_options_mac(struct cli_net *net, const char *spec, char *err,
		    size_t errlen);

/* --publish HOST_PORT:GUEST_PORT[/udp], or PORT for both. */
int net_options_publish(struct cli_net *net, const char *spec, char *err,
			size_t errlen);

/* After every option: what only makes sense together (--publish with
 * --net user). */
int net_options_check(const struct cli_net *net, char *err, size_t errlen);

#endif
