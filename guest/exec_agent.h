/* GUEST_SPEC_EXEC: the init's service for `fsvm oci exec`, a second
 * process in a running container, over vsock (guest/protocol.h). */
#ifndef FSVM_GUEST_EXEC_AGENT_H
#define FSVM_GUEST_EXEC_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "guest/process.h"

#define EXEC_MAX_ARGS 1024
#define EXEC_MAX_ENV 1024

/* One exec's request, as its frames said it. */
struct exec_request {
	char *argv[EXEC_MAX_ARGS + 1];
	int argc;
	char *env[EXEC_MAX_ENV + 1];
	int nr_env;
	char *cwd;
	struct run_as as;
	char *process[PROCESS_MAX_FIELDS];
	int nr_process;
	int tty; /* a terminal asked for */
	unsigned short rows, cols;
};

/* Adds one frame before START to *r (its payload kept, malloc'd): 0, or
 * -1 with why (a frame of a kind or size no request has). */
int exec_request_add(struct exec_request *r, uint8_t type, char *payload,
		     uint32_t len, const char **why);

/* Listens on GUEST_EXEC_PORT: the fd, or -1 after one line. */
int exec_agent_listen(void);

/* Takes a connection on listener and serves it in a process of its own
 * (a child of the init, which reaps it as it reaps orphans). */
void exec_agent_accept(int listener, const sigset_t *child_mask);

#endif
