/* Unit tests for vmm/image: `podman image inspect`'s JSON (as podman 4.3
 * prints it) turned into the run's command, environment, folder and ids,
 * the way `docker run` reads an image, against an image tree made in a
 * temporary folder (etc/passwd, etc/group, a WorkingDir); and the configs
 * fsvm refuses, each with a line that names the problem. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/image.h"

static char dir[PATH_MAX];
static int root_fd = -1;
static struct image_config c;
static struct fsvm_config cfg;
static char *argv[2 * IMAGE_MAX_ARGS + 1];
static char err[1024];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX * 2];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void make_dir(const char *rel)
{
	char path[PATH_MAX * 2];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(mkdir(path, 0755), 0);
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
	snprintf(dir, sizeof(dir), "/tmp/fsvm-test-image-XXXXXX");
	assert_non_null(mkdtemp(dir));
	make_dir("etc");
	make_dir("app");
	put("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"
			  "broken line\n"
			  "app:x:1000:1001:App:/home/app:/bin/sh\n");
	put("etc/group", "root:x:0:\nstaff:x:50:\n");
	root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root_fd >= 0);
	memset(&c, 0, sizeof(c));
	err[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	image_config_free(&c);
	cli_free(&cfg);
	close(root_fd);
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* An inspect answer whose Config object is config (JSON text). */
static int parse(const char *config)
{
	char text[8192];
	snprintf(text, sizeof(text),
		 "[\n {\n  \"Id\": \"2fe106a4129d426bf954d95929d3552dfa6548a10e1b7ff6ceb0e54973a5527e\",\n"
		 "  \"RepoTags\": [\"localhost/t:1\"],\n"
		 "  \"Config\": %s,\n"
		 "  \"RootFS\": {\"Type\": \"layers\", \"Layers\": [\"sha256:7a2d\"]},\n"
		 "  \"Labels\": null, \"Annotations\": {}\n }\n]\n",
		 config);
	image_config_free(&c);
	return image_config_parse(text, strlen(text), &c, err, sizeof(err));
}

static void parse_ok(const char *config)
{
	if (parse(config))
		fail_msg("image_config_parse: %s", err);
}

static void fails_saying(int ret, const char *want)
{
	assert_int_equal(ret, -EINVAL);
	if (!strstr(err, want))
		fail_msg("error '%s' does not say '%s'", err, want);
	assert_null(strchr(err, '\n'));
}

/* fsvm run --image's flags as cli_parse makes them. Static: cfg keeps
 * pointers into them (the guest's command), as into main's argv. */
static void flags(const char *first, ...)
{
	static char *words[32];
	memset(words, 0, sizeof(words));
	words[0] = "fsvm", words[1] = "run", words[2] = "--image";
	words[3] = "localhost/t:1";
	int n = 4;
	va_list ap;
	va_start(ap, first);
	for (const char *w = first; w; w = va_arg(ap, const char *))
		words[n++] = (char *)w;
	va_end(ap);
	cli_free(&cfg);
	if (cli_parse(n, words, &cfg, err, sizeof(err)))
		fail_msg("cli_parse: %s", err);
}

static int apply(void)
{
	return image_config_apply(&c, root_fd, &cfg, argv, err, sizeof(err));
}

static void apply_ok(void)
{
	if (apply())
		fail_msg("image_config_apply: %s", err);
}

/* The command, its words joined by spaces. */
static const char *command(void)
{
	static char line[1024];
	size_t len = 0;
	line[0] = '\0';
	for (int i = 0; i < cfg.guest_argc; i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s",
					i ? " " : "", cfg.guest_argv[i]);
	assert_null(cfg.guest_argv[cfg.guest_argc]);
	return line;
}

static void test_parse_config(void **state)
{
	(void)state;
	parse_ok("{\"User\": \"app\", \"Env\": [\"PATH=/usr/bin\", \"A=b=c\"],"
		 " \"Entrypoint\": [\"/bin/tini\", \"--\"], \"Cmd\": [\"python3\", \"-V\"],"
		 " \"WorkingDir\": \"/app\", \"Labels\": {\"x\": \"y\"}}");
	assert_string_equal(c.id, "2fe106a4129d426bf954d95929d3552dfa6548a10e1b7ff6ceb0e54973a5527e");
	assert_string_equal(c.user, "app");
	assert_string_equal(c.workdir, "/app");
	assert_int_equal(c.nr_env, 2);
	assert_string_equal(c.env[1], "A=b=c");
	assert_int_equal(c.nr_entrypoint, 2);
	assert_string_equal(c.entrypoint[1], "--");
	assert_int_equal(c.nr_cmd, 2);
	assert_string_equal(c.cmd[0], "python3");
}

/* `podman import` without --change: no Config fields at all, or null. */
static void test_parse_empty_config(void **state)
{
	(void)state;
	parse_ok("{}");
	assert_string_equal(c.user, "");
	assert_string_equal(c.workdir, "");
	assert_int_equal(c.nr_env + c.nr_entrypoint + c.nr_cmd, 0);
	parse_ok("{\"Env\": null, \"Cmd\": null, \"Entrypoint\": null}");
	assert_int_equal(c.nr_env + c.nr_entrypoint + c.nr_cmd, 0);
}

static void test_parse_errors(void **state)
{
	(void)state;
	const char *inspect_missing = "[]";
	fails_saying(image_config_parse(inspect_missing, strlen(inspect_missing), &c, err,
					sizeof(err)),
		     "not a list of one image");
	image_config_free(&c);
	const char *not_json = "[{\"Id\": ";
	fails_saying(image_config_parse(not_json, strlen(not_json), &c, err, sizeof(err)),
		     "not a list of one image");
	image_config_free(&c);
	const char *no_id = "[{\"Config\": {}}]";
	fails_saying(image_config_parse(no_id, strlen(no_id), &c, err, sizeof(err)), "no image Id");
	fails_saying(parse("{\"Env\": [\"NOVALUE\"]}"), "Env[0] 'NOVALUE': not NAME=VALUE");
	fails_saying(parse("{\"Env\": [\"=x\"]}"), "not NAME=VALUE");
	fails_saying(parse("{\"Cmd\": \"sh\"}"), "Cmd: not a list");
	fails_saying(parse("{\"Entrypoint\": [\"sh\", 1]}"), "Entrypoint[1]: not a string");
	fails_saying(parse("{\"WorkingDir\": \"app\"}"), "WorkingDir 'app': not an absolute path");
	fails_saying(parse("{\"User\": 0}"), "User and WorkingDir are strings");
	fails_saying(parse("[]"), "Config: not an object");
}

/* The image's variables, then --env's, which the guest sets last. */
static void test_env_under_flags(void **state)
{
	(void)state;
	parse_ok("{\"Env\": [\"PATH=/image/bin\", \"FOO=image\"]}");
	flags("--env", "FOO=flag", "--env", "BAR=1", NULL);
	apply_ok();
	assert_int_equal(cfg.nr_env, 4);
	assert_string_equal(cfg.env[0], "PATH=/image/bin");
	assert_string_equal(cfg.env[1], "FOO=image");
	assert_string_equal(cfg.env[2], "FOO=flag");
	assert_string_equal(cfg.env[3], "BAR=1");
}

static void test_workdir(void **state)
{
	(void)state;
	parse_ok("{\"WorkingDir\": \"/app\"}");
	flags("--", "true", NULL);
	apply_ok();
	assert_string_equal(cfg.cwd, "/app");
	flags("--cwd", "/elsewhere", NULL); /* the guest checks the user's */
	apply_ok();
	assert_string_equal(cfg.cwd, "/elsewhere");
	parse_ok("{}");
	flags("--", "true", NULL);
	apply_ok();
	assert_string_equal(cfg.cwd, "/");
	parse_ok("{\"WorkingDir\": \"/nowhere\"}");
	flags("--", "true", NULL);
	fails_saying(apply(), "WorkingDir /nowhere: No such file or directory in the image");
}

/* docker's rules: Entrypoint, then CMD or else Cmd; --entrypoint drops
 * both of the image's. */
static void test_command(void **state)
{
	(void)state;
	parse_ok("{\"Entrypoint\": [\"/bin/tini\", \"--\"], \"Cmd\": [\"python3\", \"-V\"]}");
	flags(NULL);
	apply_ok();
	assert_string_equal(command(), "/bin/tini -- python3 -V");
	flags("--", "sh", "-c", "exit 3", NULL);
	apply_ok();
	assert_string_equal(command(), "/bin/tini -- sh -c exit 3");
	flags("--entrypoint", "/bin/env", NULL);
	apply_ok();
	assert_string_equal(command(), "/bin/env");
	flags("--entrypoint", "/bin/env", "--", "-i", NULL);
	apply_ok();
	assert_string_equal(command(), "/bin/env -i");
	flags("--entrypoint=", "--", "id", "-u", NULL);
	apply_ok();
	assert_string_equal(command(), "id -u");
	parse_ok("{\"Cmd\": [\"/bin/sh\"]}");
	flags("--", "echo", "hi", NULL);
	apply_ok();
	assert_string_equal(command(), "echo hi");
	/* Nothing to run: fsvm run's own default, a shell. */
	parse_ok("{}");
	flags(NULL);
	apply_ok();
	assert_int_equal(cfg.guest_argc, 0);
}

static void user_is(const char *user, unsigned int uid, unsigned int gid)
{
	char config[256];
	snprintf(config, sizeof(config), "{\"User\": \"%s\"}", user);
	parse_ok(config);
	flags(NULL);
	apply_ok();
	assert_true(cfg.run_as);
	if (cfg.run_as_uid != uid || cfg.run_as_gid != gid)
		fail_msg("User '%s': %u:%u, not %u:%u", user, cfg.run_as_uid,
			 cfg.run_as_gid, uid, gid);
}

static void test_user(void **state)
{
	(void)state;
	user_is("app", 1000, 1001);
	user_is("1000", 1000, 1001); /* the passwd entry's group */
	user_is("2000", 2000, 0);    /* none: group 0, as docker */
	user_is("app:staff", 1000, 50);
	user_is("app:7", 1000, 7);
	user_is("0:0", 0, 0);
	parse_ok("{\"User\": \"ghost\"}");
	flags(NULL);
	fails_saying(apply(), "User 'ghost': no such user in the image's /etc/passwd");
	parse_ok("{\"User\": \"app:ghosts\"}");
	flags(NULL);
	fails_saying(apply(), "User 'app:ghosts': no such group in the image's /etc/group");
	/* --user: the caller's ids, not the image's. */
	parse_ok("{\"User\": \"app\"}");
	flags("--user", NULL);
	apply_ok();
	assert_false(cfg.run_as);
	parse_ok("{}");
	flags(NULL);
	apply_ok();
	assert_false(cfg.run_as);
}

/* The image's own files are read, even when a link points out of it. */
static void test_user_files_inside_the_image(void **state)
{
	(void)state;
	char path[PATH_MAX * 2];
	snprintf(path, sizeof(path), "%s/etc/passwd", dir);
	assert_int_equal(unlink(path), 0);
	put("etc/passwd.real", "svc:x:321:654::/:/bin/false\n");
	assert_int_equal(symlink("/etc/passwd.real", path), 0); /* absolute: in the image */
	user_is("svc", 321, 654);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("../../../../../../etc/passwd", path), 0);
	parse_ok("{\"User\": \"root\"}"); /* the host's root is not the image's */
	flags(NULL);
	fails_saying(apply(), "no such user");
}

/* Guest ids are the same ids on the host, as a container's, unless the
 * flags map them. */
static void test_id_maps(void **state)
{
	(void)state;
	parse_ok("{}");
	flags(NULL);
	apply_ok();
	assert_int_equal(cfg.nr_uid_maps, 1);
	assert_int_equal(cfg.uid_map[0].guest, 0);
	assert_int_equal(cfg.uid_map[0].host, 0);
	assert_true(cfg.uid_map[0].count >= 1 && cfg.uid_map[0].count <= 65536);
	assert_int_equal(cfg.nr_gid_maps, 1);
	assert_int_equal(cfg.gid_map[0].host, 0);
	flags("--uid-map", "0:5000:10", "--gid-map", "0:5000:10", NULL);
	apply_ok();
	assert_int_equal(cfg.uid_map[0].host, 5000);
	flags("--user", NULL);
	apply_ok();
	assert_int_equal(cfg.nr_uid_maps, 0);
}

static void test_too_much(void **state)
{
	(void)state;
	char config[CLI_MAX_ENV * 12 + 64];
	size_t len = (size_t)snprintf(config, sizeof(config), "{\"Env\": [");
	for (int i = 0; i < CLI_MAX_ENV; i++)
		len += (size_t)snprintf(config + len, sizeof(config) - len, "%s\"V%d=1\"",
					i ? "," : "", i);
	snprintf(config + len, sizeof(config) - len, "]}");
	parse_ok(config);
	flags("--env", "ONE=more", NULL);
	fails_saying(apply(), "over 256 variables");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_parse_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_empty_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_under_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_user_files_inside_the_image, setup, teardown),
		cmocka_unit_test_setup_teardown(test_id_maps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_much, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
