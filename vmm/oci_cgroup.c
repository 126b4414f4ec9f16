/* The cgroup of a container's VM. */
#include "vmm/oci_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"

int oci_cgroup_join(const char *cgroups_path, bool systemd, pid_t pid,
		    char *made, size_t len, const char **why)
{
	made[0] = '\0';
	struct statfs fs;
	if (systemd) {
		*why = "--systemd-cgroup: fsvm does not ask systemd for a scope; the VM stays in the caller's cgroup";
		return -EOPNOTSUPP;
	}
	if (statfs(CGROUP_ROOT, &fs) < 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
		*why = CGROUP_ROOT " is not cgroup v2; the VM stays in the caller's cgroup";
		return -EOPNOTSUPP;
	}
	if (strstr(cgroups_path, "..")) {
		*why = "linux.cgroupsPath: '..' is not allowed";
		return -EINVAL;
	}
	char path[4096];
	snprintf(path, sizeof(path), CGROUP_ROOT "%s%s",
		 cgroups_path[0] == '/' ? "" : "/", cgroups_path);
	bool existed = access(path, F_OK) == 0;
	for (char *p = path + sizeof(CGROUP_ROOT); !existed && *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			break;
		*p = '/';
	}
	if (!existed && mkdir(path, 0755) < 0 && errno != EEXIST) {
		*why = "cannot make the cgroup";
		return -errno;
	}
	char procs[4096 + 16], text[16];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	int fd = open(procs, O_WRONLY | O_CLOEXEC);
	int n = snprintf(text, sizeof(text), "%d", (int)pid);
	int err = fd < 0 || write(fd, text, (size_t)n) != n ? -errno : 0;
	if (fd >= 0)
		close(fd);
	if (err) {
		*why = "cannot move the VM into its cgroup";
		if (!existed)
			rmdir(path);
		return err;
	}
	if (!existed)
		snprintf(made, len, "%s", path);
	return 0;
}

void oci_cgroup_remove(const char *made)
{
	if (made[0])
		rmdir(made);
}
