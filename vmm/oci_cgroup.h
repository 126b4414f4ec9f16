/* A container's cgroup (linux.cgroupsPath): its VM's process goes there,
 * so the caller's accounting and limits cover the whole VM. */
#ifndef FSVM_OCI_CGROUP_H
#define FSVM_OCI_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Moves pid into the cgroup v2 folder cgroups_path names (made if need
 * be), and writes the folder to made ("" when it was there before). A
 * systemd path ("slice:prefix:name", --systemd-cgroup) needs systemd's
 * bus, which fsvm does not speak: -EOPNOTSUPP. -errno with *why. */
int oci_cgroup_join(const char *cgroups_path, bool systemd, pid_t pid,
		    char *made, size_t len, const char **why);

/* Removes a cgroup oci_cgroup_join made, once its processes are gone. */
void oci_cgroup_remove(const char *made);

#endif
