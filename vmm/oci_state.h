/* A container's state under the runtime's root folder: ROOT/ID/ holds
 * state.json (what `fsvm oci state` reports) and, until `start`, the
 * exec.fifo the container's process waits on (as runc's does). */
#ifndef FSVM_OCI_STATE_H
#define FSVM_OCI_STATE_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#define OCI_ID_MAX 255
#define OCI_VERSION "1.2.0"
#define OCI_FIFO "exec.fifo"

enum oci_status { OCI_CREATED, OCI_RUNNING, OCI_STOPPED };

struct oci_state {
	char id[OCI_ID_MAX + 1];
	char bundle[PATH_MAX];
	char rootfs[PATH_MAX];
	pid_t pid;
	unsigned long long start_time; /* the pid's, so a reused pid is not it */
	char created[64];              /* RFC 3339 */
	char cgroup[PATH_MAX];         /* the cgroup fsvm made; "": none */
	char *annotations;             /* JSON text, malloc'd */
};

/* runc's rule: letters, digits, '_', '+', '-', '.', not "." or "..". */
bool oci_id_valid(const char *id);

/* The process's start time in clock ticks since boot; 0: no such process. */
unsigned long long oci_pid_start_time(pid_t pid);

/* Reads dir/state.json; -ENOENT when there is no such container. */
int oci_state_read(const char *dir, struct oci_state *s);
/* Writes dir/state.json whole (a new file renamed over the old). */
int oci_state_write(const char *dir, const struct oci_state *s);
void oci_state_free(struct oci_state *s);

enum oci_status oci_state_status(const char *dir, const struct oci_state *s);
const char *oci_status_name(enum oci_status status);

/* The runtime spec's state of the container, as JSON (malloc'd). */
char *oci_state_json(const struct oci_state *s, enum oci_status status);

/* Removes dir and what it holds; 0 or -errno. */
int oci_state_remove(const char *dir);

#endif
