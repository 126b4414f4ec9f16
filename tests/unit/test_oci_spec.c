/* Unit tests for vmm/oci_spec: OCI bundles made in a temporary folder (a
 * root file system with an executable bin/sh and a plain bin/data, a
 * config.json each case writes) turned into fsvm's options and the
 * guest's container job, and the bundles fsvm refuses, each with a line
 * that names the problem. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/capability.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "guest/protocol.h"
#include "vmm/oci_spec.h"

/* The bundle folder (config.json, rootfs/) and what is bound from it. */
static char dir[PATH_MAX];
static struct oci_bundle b;
static char err[1024];

static const char *path_in(const char *rel)
{
	static char p[4][PATH_MAX * 2];
	static unsigned int next;
	char *out = p[next++ % 4]; /* a few at once in one expression */
	snprintf(out, sizeof(p[0]), "%s/%s", dir, rel);
	return out;
}

static void put(const char *rel, const void *data, size_t len, mode_t mode)
{
	int fd = open(path_in(rel), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0); /* whatever the umask */
	close(fd);
}

static int rm_entry(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/fsvm-test-oci-XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(mkdir(path_in("rootfs"), 0755), 0);
	assert_int_equal(mkdir(path_in("rootfs/bin"), 0755), 0);
	put("rootfs/bin/sh", "#!\n", 3, 0755);
	put("rootfs/bin/data", "x", 1, 0644);
	assert_int_equal(mkdir(path_in("shared"), 0755), 0);
	put("hosts", "127.0.0.1 box\n", 14, 0644);
	memset(&b, 0, sizeof(b));
	err[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	oci_bundle_free(&b); /* harmless after a case's own */
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The smallest bundle fsvm runs: the cases change it. */
static struct json_object *base_config(void)
{
	struct json_object *c = json_tokener_parse(
		"{\"ociVersion\": \"1.0.2\","
		" \"root\": {\"path\": \"rootfs\"},"
		" \"process\": {\"args\": [\"sh\", \"-c\", \"echo hi\"],"
		"               \"env\": [\"PATH=/bin\", \"A=1\"], \"cwd\": \"/tmp\"},"
		" \"x-unknown\": {\"ignored\": true}}");
	assert_non_null(c);
	return c;
}

/* Sets c's member at a dotted path (made as objects on the way) to the
 * JSON text value. */
static void set(struct json_object *c, const char *path, const char *value)
{
	char key[256];
	const char *dot;
	while ((dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		struct json_object *next;
		if (!json_object_object_get_ex(c, key, &next)) {
			next = json_object_new_object();
			json_object_object_add(c, key, next);
		}
		c = next;
		path = dot + 1;
	}
	struct json_object *v = json_tokener_parse(value);
	assert_non_null(v);
	json_object_object_add(c, path, v);
}

static void write_text(const char *text)
{
	put("config.json", text, strlen(text), 0644);
}

/* Writes c as config.json and drops it. */
static void write_config(struct json_object *c)
{
	write_text(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN));
	json_object_put(c);
}

static void load_ok(void)
{
	int ret = oci_bundle_load(dir, &b, err, sizeof(err));
	if (ret)
		fail_msg("oci_bundle_load: %d: %s", ret, err);
}

/* A bundle fsvm refuses: -EINVAL and a line holding want. */
static void load_fails(const char *want)
{
	assert_int_equal(oci_bundle_load(dir, &b, err, sizeof(err)), -EINVAL);
	if (!strstr(err, want))
		fail_msg("error '%s' does not say '%s'", err, want);
	oci_bundle_free(&b);
}

static void config_fails(struct json_object *c, const char *want)
{
	write_config(c);
	load_fails(want);
}

static void expect_fsmount(unsigned int i, const char *type, const char *source,
			   const char *dest, const char *options)
{
	assert_true(i < b.job.nr_fsmounts);
	assert_string_equal(b.job.fsmounts[4 * i], type);
	assert_string_equal(b.job.fsmounts[4 * i + 1], source);
	assert_string_equal(b.job.fsmounts[4 * i + 2], dest);
	assert_string_equal(b.job.fsmounts[4 * i + 3], options);
}

static bool has_process_field(const char *field)
{
	for (unsigned int i = 0; i < b.job.nr_process; i++)
		if (!strcmp(b.job.process[i], field))
			return true;
	return false;
}

/* The ids the caller's namespace has below 0's count, as many as a
 * container without a user namespace keeps (at most 65536). */
static uint32_t own_ids(const char *map_file)
{
	FILE *f = fopen(map_file, "re");
	unsigned long inside, outside, count, found = 1;
	assert_non_null(f);
	while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		if (inside == 0)
			found = count;
	fclose(f);
	return found < 65536 ? (uint32_t)found : 65536;
}

static void test_process_args_env_cwd(void **state)
{
	(void)state;
	write_config(base_config());
	load_ok();
	assert_int_equal(b.cfg.guest_argc, 3);
	assert_string_equal(b.cfg.guest_argv[0], "sh");
	assert_string_equal(b.cfg.guest_argv[1], "-c");
	assert_string_equal(b.cfg.guest_argv[2], "echo hi");
	assert_null(b.cfg.guest_argv[3]);
	assert_int_equal(b.cfg.nr_env, 2);
	assert_string_equal(b.cfg.env[0], "PATH=/bin");
	assert_string_equal(b.cfg.env[1], "A=1");
	assert_string_equal(b.cfg.cwd, "/tmp");
	assert_false(b.terminal);
	assert_null(b.netns);
	assert_null(b.cgroups_path);
	/* The job is the config's, and its signals go to the command. */
	assert_ptr_equal(b.cfg.container, &b.job);
	assert_true(b.job.forward_signals);
	assert_null(b.job.hostname);
	assert_int_equal(b.job.uid, 0);
	assert_int_equal(b.job.gid, 0);
	assert_int_equal(b.job.nr_fsmounts, 0);
	assert_int_equal(b.job.nr_files, 0);
	/* Only the config's environment: none of the init's under it. */
	assert_int_equal(b.job.nr_process, 1);
	assert_string_equal(b.job.process[0], "env=exact");
	oci_bundle_free(&b);
}

/* No cwd: "/", as runc's default. */
static void test_cwd_default(void **state)
{
	(void)state;
	struct json_object *c = base_config(), *p;
	assert_true(json_object_object_get_ex(c, "process", &p));
	json_object_object_del(p, "cwd");
	write_config(c);
	load_ok();
	assert_string_equal(b.cfg.cwd, "/");
	oci_bundle_free(&b);
}

static void test_root_read_write(void **state)
{
	(void)state;
	char want[PATH_MAX];
	assert_non_null(realpath(path_in("rootfs"), want));
	write_config(base_config());
	load_ok();
	assert_string_equal(b.cfg.root, want);
	assert_string_equal(b.rootfs, want);
	assert_true(b.cfg.rw_root);
	assert_false(b.job.root_readonly);
	assert_non_null(realpath(dir, want));
	assert_string_equal(b.bundle, want);
	oci_bundle_free(&b);
}

/* root.readonly: the share read-only, no overlay over it; an absolute
 * root.path is taken as it is. */
static void test_root_readonly_absolute(void **state)
{
	(void)state;
	char want[PATH_MAX], value[PATH_MAX + 64];
	assert_non_null(realpath(path_in("rootfs"), want));
	struct json_object *c = base_config();
	snprintf(value, sizeof(value), "{\"path\": \"%s\", \"readonly\": true}", want);
	set(c, "root", value);
	write_config(c);
	load_ok();
	assert_string_equal(b.cfg.root, want);
	assert_false(b.cfg.rw_root);
	assert_true(b.job.root_readonly);
	oci_bundle_free(&b);
}

static void test_hostname(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "hostname", "\"box\"");
	write_config(c);
	load_ok();
	assert_string_equal(b.job.hostname, "box");
	oci_bundle_free(&b);
}

/* user, capabilities, rlimits and noNewPrivileges as the process's
 * KEY=VALUE fields, in that order, env=exact last. */
static void test_process_fields(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "process.user", "{\"uid\": 1000, \"gid\": 100, \"umask\": 18,"
			       " \"additionalGids\": [5, 27]}");
	set(c, "process.capabilities",
	    "{\"bounding\": [\"CAP_CHOWN\", \"CAP_KILL\"], \"effective\": [\"CAP_KILL\"],"
	    " \"permitted\": [\"CAP_CHOWN\", \"CAP_KILL\", \"CAP_NO_SUCH_ONE\"],"
	    " \"inheritable\": []}");
	set(c, "process.rlimits",
	    "[{\"type\": \"RLIMIT_NOFILE\", \"hard\": 4096, \"soft\": 1024},"
	    " {\"type\": \"RLIMIT_CORE\", \"hard\": 18446744073709551615, \"soft\": 0}]");
	set(c, "process.noNewPrivileges", "true");
	write_config(c);
	load_ok();
	assert_int_equal(b.job.uid, 1000);
	assert_int_equal(b.job.gid, 100);
	char caps[128], nofile[64], core[64];
	unsigned long long both = (1ULL << CAP_CHOWN) | (1ULL << CAP_KILL);
	/* A name this libcap-ng does not know is left out, not refused. */
	snprintf(caps, sizeof(caps), "caps=%llx,%llx,%llx,0,0", both,
		 1ULL << CAP_KILL, both);
	snprintf(nofile, sizeof(nofile), "rlimit=%d,1024,4096", RLIMIT_NOFILE);
	snprintf(core, sizeof(core), "rlimit=%d,0,unlimited", RLIMIT_CORE);
	const char *const want[] = {"umask=22", "groups=5,27", caps, nofile,
				    core, "no_new_privs=1", "env=exact"};
	assert_int_equal(b.job.nr_process, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(b.job.process[i], want[i]);
	oci_bundle_free(&b);
}

/* noNewPrivileges false is no field at all. */
static void test_no_new_privileges_false(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "process.noNewPrivileges", "false");
	write_config(c);
	load_ok();
	assert_false(has_process_field("no_new_privs=1"));
	oci_bundle_free(&b);
}

/* The kernel's own file systems are the guest's, with their options in
 * order; a folder's bind is a share, a file's a copy, and host state
 * (/sys, /dev/shm) is the guest's own of the same kind. */
static void test_mounts(void **state)
{
	(void)state;
	char shared[PATH_MAX], hosts[PATH_MAX], value[5 * PATH_MAX];
	assert_non_null(realpath(path_in("shared"), shared));
	assert_non_null(realpath(path_in("hosts"), hosts));
	struct json_object *c = base_config();
	snprintf(value, sizeof(value),
		 "[{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"},"
		 " {\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": \"tmpfs\","
		 "  \"options\": [\"nosuid\", \"strictatime\", \"mode=755\", \"size=65536k\"]},"
		 " {\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"%s\","
		 "  \"options\": [\"rbind\", \"ro\", \"rprivate\"]},"
		 " {\"destination\": \"/etc/hosts\", \"type\": \"bind\", \"source\": \"%s\","
		 "  \"options\": [\"bind\", \"rw\", \"nosuid\"]},"
		 " {\"destination\": \"/dev/shm\", \"type\": \"bind\", \"source\": \"%s\","
		 "  \"options\": [\"rbind\", \"nosuid\"]},"
		 " {\"destination\": \"/sys\", \"type\": \"bind\", \"source\": \"/sys\","
		 "  \"options\": [\"rbind\", \"ro\", \"nosuid\"]},"
		 " {\"destination\": \"/dev/null\", \"type\": \"bind\", \"source\": \"/dev/null\","
		 "  \"options\": [\"bind\"]},"
		 " {\"destination\": \"/sys/fs/cgroup\", \"type\": \"cgroup\", \"source\": \"cgroup\","
		 "  \"options\": [\"ro\"]},"
		 " {\"destination\": \"/more\", \"source\": \"%s\", \"options\": [\"bind\"]}]",
		 shared, hosts, shared, shared);
	set(c, "mounts", value);
	write_config(c);
	load_ok();
	assert_int_equal(b.job.nr_fsmounts, 9);
	expect_fsmount(0, "proc", "proc", "/proc", "");
	expect_fsmount(1, "tmpfs", "tmpfs", "/dev",
		       "nosuid,strictatime,mode=755,size=65536k");
	/* Only what the mount keeps, not how the host made its bind. */
	expect_fsmount(2, GUEST_FSMOUNT_SHARE, "share0", "/data", "ro");
	expect_fsmount(3, GUEST_FSMOUNT_BIND, GUEST_SPEC_FILES "0", "/etc/hosts",
		       "rw,nosuid");
	assert_string_equal(b.job.fsmounts[4 * 3 + 1], "fsvm/files/0");
	/* A container's /dev/shm is its own memory, whatever the source. */
	expect_fsmount(4, "tmpfs", "tmpfs", "/dev/shm",
		       "nosuid,nodev,noexec,mode=1777");
	expect_fsmount(5, "sysfs", "sysfs", "/sys", "ro,nosuid");
	expect_fsmount(6, GUEST_FSMOUNT_BIND, "/dev/null", "/dev/null", "");
	expect_fsmount(7, "cgroup2", "cgroup", "/sys/fs/cgroup", "ro");
	/* The bind option without a type is a bind too. */
	expect_fsmount(8, GUEST_FSMOUNT_SHARE, "share1", "/more", "");
	assert_int_equal(b.cfg.nr_shares, 2);
	assert_string_equal(b.cfg.shares[0].host, shared);
	assert_string_equal(b.cfg.shares[0].guest, "/data");
	assert_true(b.cfg.shares[0].readonly);
	assert_string_equal(b.cfg.shares[1].host, shared);
	assert_false(b.cfg.shares[1].readonly);
	assert_int_equal(b.job.nr_files, 1);
	assert_string_equal(b.job.files[0], hosts);
	oci_bundle_free(&b);
}

/* The spec: a bind's source is absolute or relative to the bundle, not
 * to the runtime's working folder. */
static void test_bind_source_relative_to_bundle(void **state)
{
	(void)state;
	char shared[PATH_MAX];
	assert_non_null(realpath(path_in("shared"), shared));
	struct json_object *c = base_config();
	set(c, "mounts", "[{\"destination\": \"/data\", \"type\": \"bind\","
			 " \"source\": \"shared\", \"options\": [\"rbind\"]}]");
	write_config(c);
	int here = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(here >= 0);
	assert_int_equal(chdir("/"), 0); /* not the bundle */
	int ret = oci_bundle_load(dir, &b, err, sizeof(err));
	assert_int_equal(fchdir(here), 0);
	close(here);
	if (ret)
		fail_msg("oci_bundle_load: %d: %s", ret, err);
	assert_int_equal(b.cfg.nr_shares, 1);
	assert_string_equal(b.cfg.shares[0].host, shared);
	expect_fsmount(0, GUEST_FSMOUNT_SHARE, "share0", "/data", "");
	oci_bundle_free(&b);
}

static void test_masked_and_readonly_paths(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "linux.maskedPaths", "[\"/proc/kcore\", \"/proc/keys\"]");
	set(c, "linux.readonlyPaths", "[\"/proc/sys\"]");
	write_config(c);
	load_ok();
	assert_int_equal(b.job.nr_masked, 2);
	assert_string_equal(b.job.masked[0], "/proc/kcore");
	assert_string_equal(b.job.masked[1], "/proc/keys");
	assert_int_equal(b.job.nr_readonly, 1);
	assert_string_equal(b.job.readonly[0], "/proc/sys");
	oci_bundle_free(&b);
}

/* No user namespace: the container's ids are the caller's, one map. */
static void test_namespaces_without_user(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "linux.namespaces", "[{\"type\": \"pid\"}, {\"type\": \"mount\"},"
				   " {\"type\": \"network\"}]");
	write_config(c);
	load_ok();
	assert_int_equal(b.cfg.nr_uid_maps, 1);
	assert_int_equal(b.cfg.uid_map[0].guest, 0);
	assert_int_equal(b.cfg.uid_map[0].host, 0);
	assert_int_equal(b.cfg.uid_map[0].count, own_ids("/proc/self/uid_map"));
	assert_int_equal(b.cfg.nr_gid_maps, 1);
	assert_int_equal(b.cfg.gid_map[0].guest, 0);
	assert_int_equal(b.cfg.gid_map[0].host, 0);
	assert_int_equal(b.cfg.gid_map[0].count, own_ids("/proc/self/gid_map"));
	assert_null(b.netns); /* a new one, none to join */
	oci_bundle_free(&b);
}

static void test_namespaces_user_maps(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "linux.namespaces", "[{\"type\": \"user\"}, {\"type\": \"pid\"}]");
	set(c, "linux.uidMappings",
	    "[{\"containerID\": 0, \"hostID\": 100000, \"size\": 65536}]");
	set(c, "linux.gidMappings",
	    "[{\"containerID\": 0, \"hostID\": 200000, \"size\": 1000},"
	    " {\"containerID\": 1000, \"hostID\": 5, \"size\": 1}]");
	write_config(c);
	load_ok();
	assert_int_equal(b.cfg.nr_uid_maps, 1);
	assert_int_equal(b.cfg.uid_map[0].guest, 0);
	assert_int_equal(b.cfg.uid_map[0].host, 100000);
	assert_int_equal(b.cfg.uid_map[0].count, 65536);
	assert_int_equal(b.cfg.nr_gid_maps, 2);
	assert_int_equal(b.cfg.gid_map[0].host, 200000);
	assert_int_equal(b.cfg.gid_map[0].count, 1000);
	assert_int_equal(b.cfg.gid_map[1].guest, 1000);
	assert_int_equal(b.cfg.gid_map[1].host, 5);
	assert_int_equal(b.cfg.gid_map[1].count, 1);
	oci_bundle_free(&b);
}

static void test_namespaces_network_path(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "linux.namespaces",
	    "[{\"type\": \"network\", \"path\": \"/var/run/netns/cni-1\"}]");
	write_config(c);
	load_ok();
	assert_non_null(b.netns);
	assert_string_equal(b.netns, "/var/run/netns/cni-1");
	oci_bundle_free(&b);
}

/* Each container is a VM of its own: it joins no other's namespace. */
static void test_namespaces_join_refused(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "linux.namespaces",
	    "[{\"type\": \"pid\", \"path\": \"/proc/1/ns/pid\"}]");
	config_fails(c, "joining the pid namespace at /proc/1/ns/pid");
	c = base_config();
	set(c, "linux.namespaces", "[{\"path\": \"/proc/1/ns/ipc\"}]");
	config_fails(c, "linux.namespaces[0]: no type");
}

/* linux.resources: the VM's size. */
static void test_resources(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "linux.resources", "{\"memory\": {\"limit\": 268435457},"
				  " \"cpu\": {\"quota\": 250000, \"period\": 100000}}");
	write_config(c);
	load_ok();
	assert_int_equal(b.cfg.mem, 256ULL << 20); /* whole pages */
	assert_int_equal(b.cfg.cpus, 3);           /* 2.5 CPUs' worth, up */
	oci_bundle_free(&b);

	c = base_config();
	set(c, "linux.resources", "{\"memory\": {\"limit\": 1048576}}");
	config_fails(c, "below a VM's 64 MiB");
}

/* io.fsvm.OPTION: fsvm run's options, after what linux.resources said;
 * other annotations are the caller's. */
static void test_annotations(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "linux.resources", "{\"cpu\": {\"quota\": 250000, \"period\": 100000}}");
	set(c, "annotations", "{\"io.fsvm.cpus\": \"2\", \"io.fsvm.mem\": \"512M\","
			      " \"org.example/owner\": \"me\"}");
	write_config(c);
	load_ok();
	assert_int_equal(b.cfg.cpus, 2);
	assert_int_equal(b.cfg.mem, 512ULL << 20);
	char *ann = oci_bundle_annotations(&b);
	assert_non_null(ann);
	struct json_object *parsed = json_tokener_parse(ann), *v;
	assert_non_null(parsed);
	assert_true(json_object_object_get_ex(parsed, "org.example/owner", &v));
	assert_string_equal(json_object_get_string(v), "me");
	json_object_put(parsed);
	free(ann);
	oci_bundle_free(&b);

	c = base_config();
	set(c, "annotations", "{\"io.fsvm.bogus\": \"1\"}");
	config_fails(c, "annotation io.fsvm.bogus: not one fsvm takes");
	c = base_config();
	set(c, "annotations", "{\"io.fsvm.cpus\": 2}");
	config_fails(c, "not a string");
	c = base_config();
	set(c, "annotations", "{\"io.fsvm.cpus\": \"0\"}");
	config_fails(c, "annotations: --cpus: '0'");
	c = base_config();
	set(c, "annotations", "{\"io.fsvm.microvm\": \"yes\"}");
	config_fails(c, "'true' or 'false'");
}

/* Annotations are flags to cli_parse: what follows from them follows. */
static void test_annotation_microvm(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "annotations", "{\"io.fsvm.microvm\": \"true\"}");
	write_config(c);
	load_ok();
	assert_true(b.cfg.microvm);
	assert_string_equal(b.cfg.guest_kernel, CLI_MICROVM_GUEST);
	assert_int_equal(b.cfg.transport, CLI_TRANSPORT_MMIO);
	oci_bundle_free(&b);
}

static void test_annotations_none(void **state)
{
	(void)state;
	write_config(base_config());
	load_ok();
	char *ann = oci_bundle_annotations(&b);
	assert_string_equal(ann, "{}");
	free(ann);
	oci_bundle_free(&b);
}

/* The program is looked for in the root file system, never the host's:
 * an absolute link in it resolves inside it. */
static void test_program_lookup(void **state)
{
	(void)state;
	assert_int_equal(symlink("/bin/sh", path_in("rootfs/bin/link")), 0);
	struct json_object *c = base_config();
	set(c, "process.args", "[\"/bin/link\"]");
	write_config(c);
	load_ok();
	oci_bundle_free(&b);

	/* The host has /usr/bin/env; the root file system does not. */
	assert_int_equal(symlink("/usr/bin/env", path_in("rootfs/bin/host")), 0);
	c = base_config();
	set(c, "process.args", "[\"host\"]");
	config_fails(c, "process.args[0] 'host': not found in the root file system");
	/* Without PATH in env, the default PATH (which has /bin). */
	c = base_config();
	set(c, "process.env", "[\"A=1\"]");
	write_config(c);
	load_ok();
	oci_bundle_free(&b);
	/* env's PATH is the one looked on. */
	c = base_config();
	set(c, "process.env", "[\"PATH=/usr/bin\"]");
	config_fails(c, "'sh': not found in the root file system (on its PATH)");
}

static void test_error_no_config(void **state)
{
	(void)state;
	load_fails("config.json: No such file or directory");
	assert_int_equal(oci_bundle_load(path_in("nothere"), &b, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "bundle "));
	oci_bundle_free(&b);
}

static void test_error_bad_json(void **state)
{
	(void)state;
	write_text("{\"ociVersion\": \"1.0.2\",");
	load_fails("config.json: not a JSON object");
	write_text("{\"ociVersion\": \"1.0.2\"} x");
	load_fails("not a JSON object");
	write_text("{\"ociVersion\": \"1.0.2\"}{}");
	load_fails("not a JSON object");
	write_text("[\"1.0.2\"]");
	load_fails("not a JSON object");
	write_text("");
	load_fails("not a JSON object");
	/* A NUL is no white space: text after a config fsvm would run. */
	struct json_object *c = base_config();
	char text[4096];
	int n = snprintf(text, sizeof(text), "%s",
			 json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN));
	json_object_put(c);
	put("config.json", text, (size_t)n + 1, 0644);
	load_fails("not a JSON object (text after it)");
	/* White space after it is fine. */
	text[n] = '\n';
	put("config.json", text, (size_t)n + 1, 0644);
	load_ok();
	oci_bundle_free(&b);
}

static void test_error_version(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "ociVersion", "\"2.0.0\"");
	config_fails(c, "ociVersion '2.0.0' is not one fsvm knows");
	c = base_config();
	set(c, "ociVersion", "\"1.3.0\"");
	config_fails(c, "ociVersion '1.3.0'");
	c = base_config();
	json_object_object_del(c, "ociVersion");
	config_fails(c, "ociVersion '' is not one fsvm knows");
	c = base_config();
	set(c, "ociVersion", "1");
	config_fails(c, "ociVersion: expected string");
	/* A release's suffix is fine. */
	c = base_config();
	set(c, "ociVersion", "\"1.2.0-rc.1\"");
	write_config(c);
	load_ok();
	oci_bundle_free(&b);
}

static void test_error_root(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "root", "{\"path\": \"nothere\"}");
	config_fails(c, "root.path");
	assert_non_null(strstr(err, "nothere: No such file or directory"));
	c = base_config();
	set(c, "root", "{\"path\": \"hosts\"}");
	config_fails(c, "not a directory");
	c = base_config();
	json_object_object_del(c, "root");
	config_fails(c, "config.json: no root");
	c = base_config();
	set(c, "root", "{}");
	config_fails(c, "config.json: no root.path");
	c = base_config();
	set(c, "root", "{\"path\": \"rootfs\", \"readonly\": \"yes\"}");
	config_fails(c, "root.readonly: expected boolean");
}

static void test_error_process(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "process.args", "[]");
	config_fails(c, "process.args: empty");
	c = base_config();
	json_object_object_del(c, "process");
	config_fails(c, "config.json: no process");
	c = base_config();
	set(c, "process.args", "[\"nothere\"]");
	config_fails(c, "process.args[0] 'nothere': not found");
	c = base_config();
	set(c, "process.args", "[\"/bin/nothere\"]");
	config_fails(c, "'/bin/nothere': not found in the root file system");
	assert_null(strstr(err, "PATH"));
	c = base_config();
	set(c, "process.args", "[\"/bin/data\"]");
	config_fails(c, "process.args[0] '/bin/data': not executable");
	c = base_config();
	set(c, "process.args", "[\"data\"]");
	config_fails(c, "'data': not executable");
	c = base_config();
	set(c, "process.args", "[\"sh\", 1]");
	config_fails(c, "process.args[1]: not a string");
	c = base_config();
	set(c, "process.cwd", "\"tmp\"");
	config_fails(c, "process.cwd 'tmp': not an absolute path");
	c = base_config();
	set(c, "process.env", "[\"PATH=/bin\", \"NOVALUE\"]");
	config_fails(c, "process.env[1]: not NAME=VALUE");
	c = base_config();
	set(c, "process.rlimits", "[{\"type\": \"RLIMIT_BOGUS\", \"hard\": 1, \"soft\": 1}]");
	config_fails(c, "unknown type 'RLIMIT_BOGUS'");
	c = base_config();
	set(c, "process.rlimits", "[{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1}]");
	config_fails(c, "process.rlimits[0]: needs type, hard and soft");
	c = base_config();
	set(c, "process.user", "{\"uid\": -1}");
	config_fails(c, "process.user: ids are 0 to");
	c = base_config();
	set(c, "process.terminal", "1");
	config_fails(c, "process.terminal: expected boolean");
}

static void test_error_mounts(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "mounts", "[{\"destination\": \"/mnt\", \"type\": \"nfs\","
			 " \"source\": \"server:/export\"}]");
	config_fails(c, "mount /mnt: type 'nfs' cannot be mounted in a VM");
	c = base_config();
	set(c, "mounts", "[{\"destination\": \"mnt\", \"type\": \"tmpfs\"}]");
	config_fails(c, "mount mnt: the destination is not an absolute path");
	c = base_config();
	set(c, "mounts", "[{\"type\": \"tmpfs\"}]");
	config_fails(c, "mounts[0]: no destination");
	c = base_config();
	set(c, "mounts", "[{\"destination\": \"/x\", \"type\": \"bind\","
			 " \"source\": \"/nothere-fsvm\"}]");
	config_fails(c, "mount /nothere-fsvm: No such file or directory");
}

/* /dev's standard nodes are the guest's own; no other host device
 * reaches a VM. */
static void test_device_binds(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "mounts", "[{\"destination\": \"/dev/zero\", \"type\": \"bind\","
			 " \"source\": \"/dev/zero\", \"options\": [\"rbind\", \"rw\"]},"
			 " {\"destination\": \"/dev/urandom\", \"type\": \"bind\","
			 " \"source\": \"/dev/urandom\"}]");
	write_config(c);
	load_ok();
	assert_int_equal(b.job.nr_fsmounts, 2);
	expect_fsmount(0, GUEST_FSMOUNT_BIND, "/dev/zero", "/dev/zero", "rw");
	expect_fsmount(1, GUEST_FSMOUNT_BIND, "/dev/urandom", "/dev/urandom", "");
	assert_int_equal(b.cfg.nr_shares, 0);
	oci_bundle_free(&b);

	/* Whichever other device this host has. */
	static const char *const others[] = {"/dev/ptmx", "/dev/kmsg", "/dev/mem",
					     "/dev/loop0"};
	const char *other = NULL;
	struct stat st;
	for (size_t i = 0; !other && i < sizeof(others) / sizeof(others[0]); i++)
		if (stat(others[i], &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
			other = others[i];
	/* Linux always has /dev/ptmx; a host without any of them cannot
	 * check the refusal, which is a failure, never a skip. */
	if (!other)
		fail_msg("no host device among /dev/ptmx, /dev/kmsg, /dev/mem, /dev/loop0 to check the refusal with");
	char value[256];
	snprintf(value, sizeof(value), "[{\"destination\": \"/dev/x\", \"type\": \"bind\","
				       " \"source\": \"%s\"}]", other);
	c = base_config();
	set(c, "mounts", value);
	config_fails(c, "a host device cannot be passed into a VM");
}

/* crun's own options and the host's relabelling and id mapping mean
 * nothing to the guest's kernel: dropped, the rest kept in order. */
static void test_host_only_options_dropped(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "mounts", "[{\"destination\": \"/cache\", \"type\": \"tmpfs\","
			 " \"source\": \"tmpfs\", \"options\": [\"rw\", \"tmpcopyup\","
			 " \"Z\", \"size=1m\", \"idmap\", \"U\", \"nodev\"]}]");
	write_config(c);
	load_ok();
	expect_fsmount(0, "tmpfs", "tmpfs", "/cache", "rw,size=1m,nodev");
	oci_bundle_free(&b);
}

/* A file bind is a copy in the job: not one over 1 MiB. */
static void test_error_big_file_bind(void **state)
{
	(void)state;
	size_t len = OCI_MAX_FILE_BIND + 1;
	char *big = calloc(1, len), value[PATH_MAX + 128];
	assert_non_null(big);
	put("big", big, len, 0644);
	free(big);
	struct json_object *c = base_config();
	snprintf(value, sizeof(value), "[{\"destination\": \"/etc/big\", \"type\": \"bind\","
				       " \"source\": \"%s\"}]", path_in("big"));
	set(c, "mounts", value);
	config_fails(c, "over 1 MiB");

	/* Exactly 1 MiB is fine. */
	assert_int_equal(truncate(path_in("big"), OCI_MAX_FILE_BIND), 0);
	c = base_config();
	set(c, "mounts", value);
	write_config(c);
	load_ok();
	assert_int_equal(b.job.nr_files, 1);
	oci_bundle_free(&b);
}

/* fsvm runs no hooks: a list with one is refused, empty ones are not. */
static void test_error_hooks(void **state)
{
	(void)state;
	struct json_object *c = base_config();
	set(c, "hooks", "{\"prestart\": [{\"path\": \"/bin/true\"}]}");
	config_fails(c, "hooks.prestart: fsvm runs no hooks");
	c = base_config();
	set(c, "hooks", "{\"prestart\": [], \"poststop\": []}");
	write_config(c);
	load_ok();
	oci_bundle_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_process_args_env_cwd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cwd_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_read_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_readonly_absolute, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostname, setup, teardown),
		cmocka_unit_test_setup_teardown(test_process_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_new_privileges_false, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mounts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_source_relative_to_bundle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_masked_and_readonly_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespaces_without_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespaces_user_maps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespaces_network_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespaces_join_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resources, setup, teardown),
		cmocka_unit_test_setup_teardown(test_annotations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_annotation_microvm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_annotations_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_program_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_no_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_bad_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_mounts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_binds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_only_options_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_big_file_bind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_hooks, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
