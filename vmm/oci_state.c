/* The state folder of one container. */
#include "vmm/oci_state.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OCI_STATE_FILE "state.json"

bool oci_id_valid(const char *id)
{
	size_t len = strlen(id);
	if (!len || len > OCI_ID_MAX || !strcmp(id, ".") || !strcmp(id, ".."))
		return false;
	return strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			  "0123456789_+-.") == len;
}

unsigned long long oci_pid_start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* After the command's name, which may hold anything but ends at the
	 * last ')': field 3 (state) onwards; start time is field 22. */
	char *p = strrchr(buf, ')');
	unsigned long long start = 0;
	char state;
	if (!p || sscanf(p + 2, "%c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
				"%*s %*s %*s %*s %*s %*s %*s %*s %llu",
			 &state, &start) != 2)
		return 0;
	return state == 'Z' || state == 'X' ? 0 : start;
}

static void copy_string(struct json_object *obj, const char *key, char *out,
			size_t size)
{
	struct json_object *v;
	out[0] = '\0';
	if (json_object_object_get_ex(obj, key, &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(out, size, "%s", json_object_get_string(v));
}

int oci_state_read(const char *dir, struct oci_state *s)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/" OCI_STATE_FILE, dir);
	memset(s, 0, sizeof(*s));
	if (access(path, F_OK) < 0)
		return -errno;
	struct json_object *obj = json_object_from_file(path);
	if (!obj)
		return -EIO;
	struct json_object *v;
	copy_string(obj, "id", s->id, sizeof(s->id));
	copy_string(obj, "bundle", s->bundle, sizeof(s->bundle));
	copy_string(obj, "rootfs", s->rootfs, sizeof(s->rootfs));
	copy_string(obj, "created", s->created, sizeof(s->created));
	copy_string(obj, "cgroup", s->cgroup, sizeof(s->cgroup));
	if (json_object_object_get_ex(obj, "pid", &v))
		s->pid = (pid_t)json_object_get_int(v);
	if (json_object_object_get_ex(obj, "start_time", &v))
		s->start_time = (unsigned long long)json_object_get_uint64(v);
	s->annotations = strdup(json_object_object_get_ex(obj, "annotations", &v)
					? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)
					: "{}");
	json_object_put(obj);
	return s->annotations ? 0 : -ENOMEM;
}

int oci_state_write(const char *dir, const struct oci_state *s)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *ann = json_tokener_parse(s->annotations ? s->annotations : "{}");
	json_object_object_add(obj, "id", json_object_new_string(s->id));
	json_object_object_add(obj, "bundle", json_object_new_string(s->bundle));
	json_object_object_add(obj, "rootfs", json_object_new_string(s->rootfs));
	json_object_object_add(obj, "pid", json_object_new_int(s->pid));
	json_object_object_add(obj, "start_time", json_object_new_uint64(s->start_time));
	json_object_object_add(obj, "created", json_object_new_string(s->created));
	json_object_object_add(obj, "cgroup", json_object_new_string(s->cgroup));
	json_object_object_add(obj, "annotations", ann ? ann : json_object_new_object());
	char tmp[PATH_MAX + 32], path[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s/." OCI_STATE_FILE ".new", dir);
	snprintf(path, sizeof(path), "%s/" OCI_STATE_FILE, dir);
	int err = json_object_to_file_ext(tmp, obj, JSON_C_TO_STRING_PLAIN) ? -EIO : 0;
	json_object_put(obj);
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	return err;
}

void oci_state_free(struct oci_state *s)
{
	free(s->annotations);
	s->annotations = NULL;
}

enum oci_status oci_state_status(const char *dir, const struct oci_state *s)
{
	/* 0 is no live process's start time, though create may have read
	 * it for a process that ended at once. */
	unsigned long long start = s->pid ? oci_pid_start_time(s->pid) : 0;
	if (!start || start != s->start_time)
		return OCI_STOPPED;
	char fifo[PATH_MAX + 16];
	snprintf(fifo, sizeof(fifo), "%s/" OCI_FIFO, dir);
	return access(fifo, F_OK) == 0 ? OCI_CREATED : OCI_RUNNING;
}

const char *oci_status_name(enum oci_status status)
{
	switch (status) {
	case OCI_CREATED:
		return "created";
	case OCI_RUNNING:
		return "running";
	case OCI_STOPPED:
		break;
	}
	return "stopped";
}

char *oci_state_json(const struct oci_state *s, enum oci_status status)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *ann = json_tokener_parse(s->annotations ? s->annotations : "{}");
	json_object_object_add(obj, "ociVersion", json_object_new_string(OCI_VERSION));
	json_object_object_add(obj, "id", json_object_new_string(s->id));
	json_object_object_add(obj, "status", json_object_new_string(oci_status_name(status)));
	/* The spec: a pid while the process is there. */
	json_object_object_add(obj, "pid", json_object_new_int(status == OCI_STOPPED ? 0 : s->pid));
	json_object_object_add(obj, "bundle", json_object_new_string(s->bundle));
	json_object_object_add(obj, "rootfs", json_object_new_string(s->rootfs));
	json_object_object_add(obj, "created", json_object_new_string(s->created));
	json_object_object_add(obj, "annotations", ann ? ann : json_object_new_object());
	char *text = strdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY |
								JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(obj);
	return text;
}

int oci_state_remove(const char *dir)
{
	static const char *const files[] = {OCI_STATE_FILE, "." OCI_STATE_FILE ".new",
					    OCI_FIFO, "exec.sock"};
	char path[PATH_MAX + 32];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
	}
	return rmdir(dir) < 0 && errno != ENOENT ? -errno : 0;
}
