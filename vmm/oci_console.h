/* A container's terminal (process.terminal): a pty whose master goes to
 * the caller's console socket (podman's conmon, containerd's shim), as
 * runc sends it, and whose slave is the container process's stdio. */
#ifndef FSVM_OCI_CONSOLE_H
#define FSVM_OCI_CONSOLE_H

/* Makes the pty and sends its master over socket_path; the slave's fd in
 * *slave. 0, or -errno with *why. */
int oci_console_open(const char *socket_path, int *slave, const char **why);

/* In the container's process: the slave becomes its controlling terminal
 * and its stdin, stdout and stderr. */
int oci_console_take(int slave);

#endif
