/* Unit tests for vmm/cli: subcommands, run options, guest command, sizes and error messages. */
#include <errno.h>
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

#include "vmm/cli.h"

#define MAX_ARGS 40
#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

/* One cli_parse call. argv holds writable copies (--share splits its
 * value in place) that cfg points into, so they live as long as it. */
struct parsed {
	char *argv[MAX_ARGS + 1];
	int argc;
	struct fsvm_config cfg;
	char err[256];
	int ret;
};

static struct parsed *parse_args(const char *const *args)
{
	struct parsed *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	while (args[p->argc]) {
		assert_true(p->argc < MAX_ARGS);
		p->argv[p->argc] = strdup(args[p->argc]);
		p->argc++;
	}
	p->ret = cli_parse(p->argc, p->argv, &p->cfg, p->err, sizeof(p->err));
	return p;
}

static void done(struct parsed *p)
{
	cli_free(&p->cfg);
	for (int i = 0; i < p->argc; i++)
		free(p->argv[i]);
	free(p);
}

/* parse("run", "--cpus", "2") parses fsvm run --cpus 2. */
#define parse(...) parse_args((const char *const[]){"fsvm", __VA_ARGS__, NULL})

static void expect_ok(struct parsed *p)
{
	if (p->ret)
		fail_msg("cli_parse failed: %s", p->err);
}

static void expect_error(struct parsed *p, const char *msg)
{
	assert_int_equal(p->ret, -EINVAL);
	assert_string_equal(p->err, msg);
	done(p);
}

/* The --config file's errors are told apart from the flags' (bad_config). */
static void expect_config_failure(struct parsed *p, const char *msg)
{
	assert_int_equal(p->ret, -EBADMSG);
	assert_string_equal(p->err, msg);
	done(p);
}

/* fsvm run OPTION VALUE fails with the message fmt % VALUE. */
static void expect_bad_value(const char *option, const char *value,
			     const char *fmt)
{
	char msg[256];
	snprintf(msg, sizeof(msg), fmt, value);
	expect_error(parse("run", option, value), msg);
}

static void test_no_arguments(void **state)
{
	(void)state;
	expect_error(parse_args((const char *const[]){"fsvm", NULL}),
		     "no command given (try fsvm --help)");
	expect_error(parse_args((const char *const[]){NULL}),
		     "no command given (try fsvm --help)");
}

static void expect_command(struct parsed *p, enum cli_command command)
{
	expect_ok(p);
	assert_int_equal(p->cfg.command, command);
	done(p);
}

static void test_help(void **state)
{
	(void)state;
	expect_command(parse("--help"), CLI_HELP);
	expect_command(parse("-h"), CLI_HELP);
	expect_command(parse("help"), CLI_HELP);
	expect_command(parse("run", "--help"), CLI_HELP);
	expect_command(parse("run", "-h"), CLI_HELP);
	expect_command(parse("run", "--cpus", "2", "-h", "ls"), CLI_HELP);
	/* --help wins over what is wrong beside it, not over the command's. */
	expect_command(parse("run", "--cpus", "x", "--help"), CLI_HELP);
	expect_command(parse("run", "--bogus", "--mic", "--help"), CLI_HELP);
	struct parsed *p = parse("run", "ls", "--help");
	expect_ok(p);
	assert_int_equal(p->cfg.command, CLI_RUN);
	assert_int_equal(p->cfg.guest_argc, 2);
	done(p);
	assert_non_null(strstr(cli_usage, "Usage: fsvm run"));
	assert_non_null(strstr(cli_usage, "--no-seccomp"));
}

static void test_version(void **state)
{
	(void)state;
	expect_command(parse("--version"), CLI_VERSION);
	expect_command(parse("version"), CLI_VERSION);
}

/* fsvm kconfig's one argument; run's --modules. */
/* --net, --mac and --publish: each value checked, each mistake one line. */
static void test_net_options(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--", "true");
	expect_ok(p);
	assert_int_equal(p->cfg.net.mode, CLI_NET_NONE);
	done(p);
	p = parse("run", "--net", "user,host-loopback", "--publish", "8080:80",
		  "--publish", "5353/udp", "--mac", "02:00:00:00:00:01", "--", "true");
	expect_ok(p);
	assert_int_equal(p->cfg.net.mode, CLI_NET_USER);
	assert_true(p->cfg.net.host_loopback);
	assert_int_equal(p->cfg.net.nr_publish, 2);
	assert_int_equal(p->cfg.net.publish[0].host, 8080);
	assert_int_equal(p->cfg.net.publish[0].guest, 80);
	assert_false(p->cfg.net.publish[0].udp);
	assert_int_equal(p->cfg.net.publish[1].guest, 5353);
	assert_true(p->cfg.net.publish[1].udp);
	assert_true(p->cfg.net.mac_given);
	assert_int_equal(p->cfg.net.mac[5], 1);
	done(p);
	p = parse("run", "--net", "tap:tap0,ip=10.0.0.2/24,gw=10.0.0.1,dns=fd00::1", "--", "true");
	expect_ok(p);
	assert_int_equal(p->cfg.net.mode, CLI_NET_TAP);
	assert_string_equal(p->cfg.net.tap, "tap0");
	assert_string_equal(p->cfg.net.ip, "10.0.0.2/24");
	assert_string_equal(p->cfg.net.gateway, "10.0.0.1");
	assert_string_equal(p->cfg.net.dns, "fd00::1");
	done(p);
	/* The last --net wins whole: none forgets the options before it. */
	p = parse("run", "--net", "user,host-loopback", "--net", "none", "--", "true");
	expect_ok(p);
	assert_int_equal(p->cfg.net.mode, CLI_NET_NONE);
	assert_false(p->cfg.net.host_loopback);
	done(p);
	expect_error(parse("run", "--net", "slirp", "--", "true"),
		     "--net: 'slirp' is not none, user or tap:NAME");
	expect_error(parse("run", "--net", "tap:", "--", "true"),
		     "--net: 'tap:' is not tap:NAME with an interface name of 1 to 15 characters");
	expect_error(parse("run", "--net", "tap:x,host-loopback", "--", "true"),
		     "--net: host-loopback is for --net user only");
	expect_error(parse("run", "--net", "user,ip=10.0.0.2", "--", "true"),
		     "--net: ip='10.0.0.2' is not an IPv4 ADDRESS/PREFIX (e.g. 10.0.0.2/24)");
	expect_error(parse("run", "--net", "user,gw=10.0.0.1", "--", "true"),
		     "--net: gw= needs ip= (a static address)");
	expect_error(parse("run", "--net", "none,ip=10.0.0.2/24", "--", "true"),
		     "--net none takes no options ('ip=10.0.0.2/24')");
	expect_error(parse("run", "--net", "user,fast", "--", "true"),
		     "--net: unknown option 'fast' (host-loopback, ip=, gw=, dns=)");
	expect_error(parse("run", "--publish", "80", "--", "true"),
		     "--publish needs --net user (passt forwards the ports)");
	expect_error(parse("run", "--net", "user", "--publish", "0:80", "--", "true"),
		     "--publish: '0:80' is not HOST_PORT:GUEST_PORT[/udp] with ports 1 to 65535");
	expect_error(parse("run", "--net", "user", "--publish", "80:80/sctp", "--", "true"),
		     "--publish: '80:80/sctp' is not HOST_PORT:GUEST_PORT[/udp] with ports 1 to 65535");
	expect_error(parse("run", "--net", "user", "--publish", "80", "--publish", "80:81", "--", "true"),
		     "--publish 80:81: that host port is published twice");
	expect_error(parse("run", "--net", "user", "--mac", "01:00:00:00:00:01", "--", "true"),
		     "--mac: 01:00:00:00:00:01 is a multicast address (the first byte is odd)");
	expect_error(parse("run", "--net", "user", "--mac", "02:00:00:00:00", "--", "true"),
		     "--mac: '02:00:00:00:00' is not XX:XX:XX:XX:XX:XX");
	expect_error(parse("run", "--mac", "02:00:00:00:00:01", "--", "true"),
		     "--mac needs --net user or --net tap:NAME");
}

static void test_kconfig_and_modules(void **state)
{
	(void)state;
	struct parsed *p;
	p = parse("kconfig");
	expect_ok(p);
	assert_int_equal(p->cfg.command, CLI_KCONFIG);
	assert_string_equal(p->cfg.kconfig, ".config");
	done(p);
	p = parse("kconfig", "/src/linux/.config");
	expect_ok(p);
	assert_string_equal(p->cfg.kconfig, "/src/linux/.config");
	done(p);
	expect_error(parse("kconfig", "a", "b"),
		     "kconfig: one .config at most (usage: fsvm kconfig [--net] [--disk] [.config])");
	p = parse("run", "--kernel", "vmlinux", "--modules", "/tmp/mods", "--", "true");
	expect_ok(p);
	assert_string_equal(p->cfg.modules, "/tmp/mods");
	done(p);
}

static void test_run_defaults(void **state)
{
	(void)state;
	struct parsed *p = parse("run");
	expect_ok(p);
	const struct fsvm_config *c = &p->cfg;
	assert_int_equal(c->command, CLI_RUN);
	assert_int_equal(c->cpus, cli_default_cpus());
	assert_int_equal(c->mem, cli_default_mem());
	assert_null(c->kernel);
	assert_null(c->initrd);
	assert_null(c->cmdline);
	assert_string_equal(c->root, "/");
	assert_false(c->rw_root);
	assert_string_equal(c->cache, "auto");
	assert_int_equal(c->transport, CLI_TRANSPORT_PCI);
	assert_int_equal(c->nr_shares, 0);
	assert_true(c->timeout == 0);
	assert_false(c->verbose);
	assert_false(c->setup_only);
	assert_false(c->no_seccomp);
	assert_int_equal(c->guest_argc, 0);
	done(p);
}

static void test_run_every_option(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--kernel", "/k/bzImage", "--initrd",
				 "/k/initrd", "--cpus", "4", "--mem", "2G",
				 "--cmdline", "quiet x=\"1 2\"", "--timeout",
				 "2.5", "-v", "--setup-only", "--root", "/srv",
				 "--rw-root", "--cache", "always", "--share", "/data",
				 "--transport", "mmio", "--no-seccomp", "true");
	expect_ok(p);
	const struct fsvm_config *c = &p->cfg;
	assert_string_equal(c->kernel, "/k/bzImage");
	assert_string_equal(c->initrd, "/k/initrd");
	assert_int_equal(c->cpus, 4);
	assert_int_equal(c->mem, 2 * GIB);
	assert_string_equal(c->cmdline, "quiet x=\"1 2\"");
	assert_true(c->timeout == 2.5);
	assert_true(c->verbose);
	assert_true(c->setup_only);
	assert_true(c->no_seccomp);
	assert_string_equal(c->root, "/srv");
	assert_true(c->rw_root);
	assert_string_equal(c->cache, "always");
	assert_int_equal(c->transport, CLI_TRANSPORT_MMIO);
	assert_int_equal(c->nr_shares, 1);
	assert_string_equal(c->shares[0].host, "/data");
	assert_int_equal(c->guest_argc, 1);
	assert_string_equal(c->guest_argv[0], "true");
	assert_int_equal(c->command, CLI_RUN);
	done(p);
}

static void test_run_options_with_equals(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--cpus=3", "--mem=1024M",
				 "--timeout=10", "--verbose", "--cache=none",
				 "--kernel=/bz", "--transport=pci");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 3);
	assert_int_equal(p->cfg.mem, GIB);
	assert_true(p->cfg.timeout == 10);
	assert_true(p->cfg.verbose);
	assert_string_equal(p->cfg.cache, "none");
	assert_string_equal(p->cfg.kernel, "/bz");
	assert_int_equal(p->cfg.transport, CLI_TRANSPORT_PCI);
	done(p);
}

static void test_last_option_wins(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--cpus", "2", "--cpus", "8");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 8);
	done(p);
}

static void expect_guest_argv(const struct parsed *p,
			      const char *const *want, int n)
{
	assert_int_equal(p->cfg.guest_argc, n);
	for (int i = 0; i < n; i++)
		assert_string_equal(p->cfg.guest_argv[i], want[i]);
}

static void test_dashdash_keeps_arguments(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--cpus", "2", "--", "echo", "a b",
				 "\"q\"", "'s t'", "-v", "--", "");
	expect_ok(p);
	const char *const want[] = {"echo", "a b", "\"q\"", "'s t'", "-v",
				    "--", ""};
	expect_guest_argv(p, want, 7);
	assert_false(p->cfg.verbose); /* -v after -- is the guest's */
	assert_int_equal(p->cfg.cpus, 2);
	/* The guest argv is the caller's own array, not a copy. */
	assert_ptr_equal(p->cfg.guest_argv, &p->argv[5]);
	done(p);
}

static void test_guest_command_ends_options(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "echo", "-n", "x");
	expect_ok(p);
	expect_guest_argv(p, (const char *const[]){"echo", "-n", "x"}, 3);
	done(p);

	p = parse("run", "-v", "ls", "-v", "--mem", "1", "--help");
	expect_ok(p);
	expect_guest_argv(p, (const char *const[]){"ls", "-v", "--mem", "1",
						   "--help"}, 5);
	assert_true(p->cfg.verbose);
	assert_int_equal(p->cfg.mem, cli_default_mem());
	assert_int_equal(p->cfg.command, CLI_RUN);
	done(p);
}

/* The result of a parse that is expected to fail, with nothing left to
 * free should an assertion on it fail. */
static int parse_error(const char *arg1, const char *arg2, char *err,
		       size_t errlen)
{
	struct parsed *p = parse("run", arg1, arg2);
	int ret = p->ret;
	snprintf(err, errlen, "%s", p->err);
	done(p);
	return ret;
}

static void test_bad_cpus(void **state)
{
	(void)state;
	const char *bad[] = {"0", "65", "x", "2x", "", "-1", "1.5",
			     "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_bad_value("--cpus", bad[i],
				 "--cpus: '%s' is not a number from 1 to 64");
}

static void expect_cpus(const char *value, unsigned int cpus)
{
	struct parsed *p = parse("run", "--cpus", value);
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, cpus);
	done(p);
}

static void test_good_cpus(void **state)
{
	(void)state;
	expect_cpus("1", 1);
	expect_cpus("64", 64);
	expect_cpus("007", 7);
}

static void test_bad_mem(void **state)
{
	(void)state;
	/* 65537K is above the minimum but not a whole number of pages. */
	const char *bad[] = {"0", "12Q", "63M", "2T", "65537K", "", "-1",
			     "1.5G", "M", "1G ", " 1G", "1Ti1", "1025G",
			     "67108863K"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_bad_value("--mem", bad[i],
				 "--mem: '%s' is not a size from 64M to 1T (e.g. 512M, 2G)");
}

static void expect_mem(const char *value, uint64_t bytes)
{
	struct parsed *p = parse("run", "--mem", value);
	expect_ok(p);
	assert_int_equal(p->cfg.mem, bytes);
	done(p);
}

static void test_good_mem(void **state)
{
	(void)state;
	expect_mem("64M", 64 * MIB);
	expect_mem("64", 64 * MIB); /* plain numbers are MiB */
	expect_mem("65536K", 64 * MIB);
	expect_mem("65540K", 64 * MIB + 4096);
	expect_mem("1T", 1ULL << 40);
	expect_mem("1024G", 1ULL << 40);
	expect_mem("2GiB", 2 * GIB);
	expect_mem("3gb", 3 * GIB);
}

static void test_bad_timeout(void **state)
{
	(void)state;
	const char *bad[] = {"0", "-1", "abc", "inf", "nan", "", "1s",
			     "1e999", "-inf", "0.0"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_bad_value("--timeout", bad[i],
				 "--timeout: '%s' is not a positive number of seconds (at most 1e9)");
}

/* A timeout beyond time_t's range passed the check, and then converting
 * it to a timerfd's seconds is undefined (run.c's add_timer). */
static void test_unrepresentable_timeout_rejected(void **state)
{
	(void)state;
	const char *huge[] = {"1e19", "1e300"};
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		char err[256];
		int ret = parse_error("--timeout", huge[i], err, sizeof(err));
		if (ret != -EINVAL)
			fail_msg("--timeout %s accepted", huge[i]);
		assert_non_null(strstr(err, "--timeout"));
	}
}

static void expect_timeout(const char *value, double seconds)
{
	struct parsed *p = parse("run", "--timeout", value);
	expect_ok(p);
	assert_true(p->cfg.timeout == seconds);
	done(p);
}

static void test_good_timeout(void **state)
{
	(void)state;
	expect_timeout("30", 30);
	expect_timeout("0.5", 0.5);
	expect_timeout("1e3", 1000);
}

/* Options that take one of a few words. */
static void test_bad_choices(void **state)
{
	(void)state;
	static const struct {
		const char *option, *fmt, *bad[4];
	} cases[] = {
		{"--cache", "--cache: '%s' is not none, auto or always",
		 {"", "sometimes", "NONE", "auto "}},
		{"--transport", "--transport: '%s' is not pci or mmio",
		 {"", "PCI", "virtio-mmio", "mmio "}},
		{"--guest-kernel",
		 "--guest-kernel: '%s' is not 6.1, 6.12, microvm or a folder (a path with a '/')",
		 {"", "6.2", "6.1.0-57-amd64", "vmlinuz"}},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (size_t i = 0; i < 4; i++)
			expect_bad_value(cases[c].option, cases[c].bad[i],
					 cases[c].fmt);
}

/* --guest-kernel picks a packaged guest or names a folder; without it
 * $FSVM_GUEST_KERNEL does, else the default; a bad variable is one line. */
static void test_guest_kernel(void **state)
{
	(void)state;
	unsetenv("FSVM_GUEST_KERNEL");
	struct parsed *p = parse("run");
	expect_ok(p);
	assert_string_equal(p->cfg.guest_kernel, CLI_DEFAULT_GUEST_KERNEL);
	done(p);
	static const char *const good[] = {"6.1", "6.12", "microvm",
					   "/opt/guest", "./mine"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		p = parse("run", "--guest-kernel", good[i], "--", "true");
		expect_ok(p);
		assert_string_equal(p->cfg.guest_kernel, good[i]);
		assert_null(p->cfg.kernel);
		done(p);
	}
	setenv("FSVM_GUEST_KERNEL", "6.1", 1);
	p = parse("run");
	expect_ok(p);
	assert_string_equal(p->cfg.guest_kernel, "6.1");
	done(p);
	/* The option wins over the variable. */
	p = parse("run", "--guest-kernel=6.12");
	expect_ok(p);
	assert_string_equal(p->cfg.guest_kernel, "6.12");
	done(p);
	setenv("FSVM_GUEST_KERNEL", "5.10", 1);
	expect_error(parse("run"),
		     "FSVM_GUEST_KERNEL: '5.10' is not 6.1, 6.12, microvm or a folder (a path with a '/')");
	unsetenv("FSVM_GUEST_KERNEL");
}

/* --microvm boots the microVM guest (or a --kernel) over virtio-mmio named
 * on the command line; naming the microVM guest is the same; PCI cannot
 * go with it. */
static void test_microvm(void **state)
{
	(void)state;
	unsetenv("FSVM_GUEST_KERNEL");
	struct parsed *p = parse("run", "--microvm", "--", "true");
	expect_ok(p);
	assert_true(p->cfg.microvm);
	assert_string_equal(p->cfg.guest_kernel, CLI_MICROVM_GUEST);
	assert_int_equal(p->cfg.transport, CLI_TRANSPORT_MMIO);
	done(p);
	p = parse("run", "--guest-kernel", "microvm");
	expect_ok(p);
	assert_true(p->cfg.microvm);
	assert_int_equal(p->cfg.transport, CLI_TRANSPORT_MMIO);
	done(p);
	setenv("FSVM_GUEST_KERNEL", "microvm", 1);
	p = parse("run");
	expect_ok(p);
	assert_true(p->cfg.microvm);
	done(p);
	/* A kernel of the user's own is booted as it is asked. */
	p = parse("run", "--kernel", "/k/vmlinux");
	expect_ok(p);
	assert_false(p->cfg.microvm);
	assert_int_equal(p->cfg.transport, CLI_TRANSPORT_PCI);
	done(p);
	unsetenv("FSVM_GUEST_KERNEL");
	p = parse("run", "--microvm", "--kernel", "/k/vmlinux", "--transport", "mmio");
	expect_ok(p);
	assert_true(p->cfg.microvm);
	assert_string_equal(p->cfg.kernel, "/k/vmlinux");
	done(p);
	expect_error(parse("run", "--microvm", "--transport", "pci"),
		     "--microvm: its shares are virtio-mmio devices, so --transport pci does not apply");
	p = parse("run");
	expect_ok(p);
	assert_false(p->cfg.microvm);
	done(p);
}

static void test_unknown_option(void **state)
{
	(void)state;
	expect_error(parse("run", "--bogus"),
		     "unknown option '--bogus' (try fsvm --help)");
	expect_error(parse("run", "-x", "ls"),
		     "unknown option '-x' (try fsvm --help)");
	expect_error(parse("run", "--cpus", "2", "--nope=3"),
		     "unknown option '--nope=3' (try fsvm --help)");
}

/* virtme-ng's spellings, and near misses named. */
static void test_other_spellings(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "-p", "3", "-m", "1G", "true");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 3);
	assert_int_equal(p->cfg.mem, 1ull << 30);
	done(p);
	p = parse("run", "--memory=2G", "true");
	expect_ok(p);
	assert_int_equal(p->cfg.mem, 2ull << 30);
	done(p);
	expect_error(parse("run", "-m"), "option '-m' needs a value");
	expect_error(parse("run", "--timout", "3", "true"),
		     "unknown option '--timout' (did you mean '--timeout'?)");
	expect_error(parse("run", "--sahre=/x", "true"),
		     "unknown option '--sahre=/x' (did you mean '--share'?)");
	expect_error(parse("run", "--ent", "A=1", "true"),
		     "unknown option '--ent' (did you mean '--entrypoint', '--env' or '--net'?)");
}

static void test_missing_value(void **state)
{
	(void)state;
	const char *opts[] = {"--kernel", "--initrd", "--cpus", "--mem",
			      "--cmdline", "--timeout", "--root", "--share",
			      "--cache", "--transport", "--guest-kernel"};
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		char msg[64];
		snprintf(msg, sizeof(msg), "option '%s' needs a value", opts[i]);
		expect_error(parse("run", "-v", opts[i]), msg);
	}
}

/* getopt takes these silently; fsvm does not. */
/* --snapshot-to keeps the flags that made the machine, as given (a
 * --share's value whole), and what the host chose; a restore parses them
 * again under its own, which may not touch the machine. */
static void test_snapshot_and_restore(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--mem", "300M", "--share", "/tmp:/t:ro",
				 "--snapshot-to", "/snap", "--cpus=2", "--", "sh",
				 "-c", "warm");
	expect_ok(p);
	assert_string_equal(p->cfg.snapshot_to, "/snap");
	assert_true(p->cfg.stdin_none);
	assert_int_equal(p->cfg.guest_argc, 3);
	const char *want[] = {"--mem", "300M", "--share", "/tmp:/t:ro", "--cpus=2",
			      "--cpus=2", "--mem=307200K", "--guest-kernel=6.12"};
	assert_int_equal(p->cfg.nr_snapshot_words, 8);
	for (unsigned int i = 0; i < 8; i++)
		assert_string_equal(p->cfg.snapshot_words[i], want[i]);

	char *argv[] = {"fsvm", "run", "--restore", "/snap", "--timeout", "5",
			"-v", "--env", "A=1", "--", "true", NULL};
	struct fsvm_config cfg;
	char err[256];
	assert_int_equal(cli_parse_restore(p->cfg.snapshot_words,
					   p->cfg.nr_snapshot_words, 11, argv,
					   &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.mem, 300 * MIB);
	assert_int_equal(cfg.cpus, 2);
	assert_int_equal(cfg.nr_shares, 1);
	assert_string_equal(cfg.shares[0].guest, "/t");
	assert_true(cfg.shares[0].readonly);
	assert_string_equal(cfg.restore, "/snap");
	assert_true(cfg.verbose);
	assert_int_equal(cfg.nr_env, 1);
	assert_string_equal(cfg.guest_argv[0], "true");
	cli_free(&cfg);

	char *machine[] = {"fsvm", "run", "--restore", "/snap", "--cpus", "4",
			   "--", "true", NULL};
	assert_int_equal(cli_parse_restore(p->cfg.snapshot_words,
					   p->cfg.nr_snapshot_words, 8, machine,
					   &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "--restore: the machine and its shares are the snapshot's, so '--cpus' does not apply (a restore takes --timeout, --json, -v, --cwd, --env, --exec and --stdin)");
	cli_free(&cfg);
	done(p);

	expect_error(parse("run", "--restore", "/snap", "--share", "/tmp", "--", "true"),
		     "--restore: the machine and its shares are the snapshot's, so '--share' does not apply (a restore takes --timeout, --json, -v, --cwd, --env, --exec and --stdin)");
	expect_error(parse("run", "--snapshot-to", "/snap", "--net", "user"),
		     "--net: a snapshot cannot hold it yet (docs/snapshot.md)");
	expect_error(parse("run", "--restore", "/a", "--snapshot-to", "/b", "--", "true"),
		     "--restore and --snapshot-to: a restored VM cannot be snapshotted again yet");
}

static void test_no_silent_misparse(void **state)
{
	(void)state;
	expect_error(parse("run", "--mic", "--", "true"),
		     "unknown option '--mic' (did you mean '--microvm' or '--mac'?)");
	expect_error(parse("run", "--cpu=2", "true"),
		     "option '--cpu': write it whole, '--cpus'");
	expect_error(parse("run", "--env", "--", "true"),
		     "option '--env' needs a value, not '--' (if it is one: --env=--)");
	expect_error(parse("run", "--share", "--cpus", "2", "true"),
		     "option '--share' needs a value, not '--cpus' (if it is one: --share=--cpus)");
	expect_error(parse("run", "--json", "out.json", "--cpus", "0"),
		     "--json takes its file as --json=out.json or --json-file out.json ('out.json' would run as the guest's command)");
	/* What is meant, said so, passes. */
	struct parsed *j = parse("run", "--json-file", "out.json", "true");
	expect_ok(j);
	assert_true(j->cfg.json);
	assert_string_equal(j->cfg.json_file, "out.json");
	done(j);
	struct parsed *p = parse("run", "--initrd=--x", "--append", "-- a", "true");
	expect_ok(p);
	assert_string_equal(p->cfg.initrd, "--x");
	assert_int_equal(p->cfg.guest_argc, 1);
	assert_string_equal(p->cfg.guest_argv[0], "true");
	done(p);
}

/* --verbose=1 gives a value to an option that takes none: reporting that
 * it "needs a value" sends the user the wrong way. */
static void test_value_for_flag_not_reported_as_missing(void **state)
{
	(void)state;
	const char *args[] = {"--verbose=1", "--setup-only=yes", "--help=x",
			      "--rw-root=no", "--no-seccomp=1"};
	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		char err[256];
		assert_int_equal(parse_error(args[i], "ls", err, sizeof(err)),
				 -EINVAL);
		/* The option is named, with or without its value. */
		size_t name_len = strcspn(args[i], "=");
		assert_non_null(memmem(err, strlen(err), args[i], name_len));
		if (strstr(err, "needs a value"))
			fail_msg("'%s' reported as: %s", args[i], err);
	}
}

/* An unknown letter inside a group of short options must be named, not
 * the word before the group. */
static void test_unknown_short_option_in_group_named(void **state)
{
	(void)state;
	char err[256];
	assert_int_equal(parse_error("-xv", "ls", err, sizeof(err)), -EINVAL);
	if (!strstr(err, "-x"))
		fail_msg("error does not name -x: %s", err);
}

static void test_unknown_subcommand(void **state)
{
	(void)state;
	expect_error(parse("start"), "unknown command 'start' (try fsvm --help)");
	expect_error(parse("Run"), "unknown command 'Run' (did you mean 'run'?)");
	expect_error(parse("-v", "run"), "unknown command '-v' (try fsvm --help)");
	expect_error(parse(""), "unknown command '' (try fsvm --help)");
}

static void test_repeated_parses_are_independent(void **state)
{
	(void)state;
	/* Leave getopt mid-way through a group of short options... */
	char err[256];
	assert_int_equal(parse_error("-vxv", "ls", err, sizeof(err)), -EINVAL);
	/* ...then start over: nothing may carry across. */
	struct parsed *p = parse("run", "--cpus", "3", "y");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 3);
	assert_false(p->cfg.verbose);
	expect_guest_argv(p, (const char *const[]){"y"}, 1);
	done(p);
	p = parse("run", "-v", "z");
	expect_ok(p);
	assert_true(p->cfg.verbose);
	assert_int_equal(p->cfg.cpus, cli_default_cpus());
	expect_guest_argv(p, (const char *const[]){"z"}, 1);
	done(p);
}

static void test_error_truncated_to_buffer(void **state)
{
	(void)state;
	char *argv[] = {"fsvm", "bogus-command-name", NULL};
	struct fsvm_config cfg;
	char *err = malloc(12); /* exact size: ASan sees any overrun */
	assert_int_equal(cli_parse(2, argv, &cfg, err, 12), -EINVAL);
	assert_string_equal(err, "unknown com");
	free(err);
}

static void expect_share(const char *spec, const char *host,
			 const char *guest, bool readonly)
{
	char *copy = strdup(spec);
	struct cli_share share;
	assert_int_equal(cli_parse_share(copy, &share), 0);
	assert_string_equal(share.host, host);
	if (guest)
		assert_string_equal(share.guest, guest);
	else
		assert_null(share.guest);
	assert_int_equal(share.readonly, readonly);
	free(copy);
}

static void test_share_forms(void **state)
{
	(void)state;
	expect_share("/h", "/h", NULL, false);
	expect_share("h", "h", NULL, false);
	expect_share("/h:/g", "/h", "/g", false);
	expect_share("/h:/g:ro", "/h", "/g", true);
	expect_share("/h:/g:rw", "/h", "/g", false);
	expect_share("/h:ro", "/h", NULL, true);
	expect_share("/h:rw", "/h", NULL, false);
	expect_share("/h::ro", "/h", NULL, true);
	expect_share("/h:", "/h", NULL, false);
	expect_share("/h:/g:ro,rw", "/h", "/g", false);
	expect_share("/h:dev,ro", "/h", NULL, true);
	char spec[] = "/h:/g:dev";
	struct cli_share share;
	assert_int_equal(cli_parse_share(spec, &share), 0);
	assert_true(share.devices);
	assert_false(share.readonly);
}

static void test_share_rejects(void **state)
{
	(void)state;
	const char *bad[] = {"", ":/g", ":ro", "/h:rel", "/h:/g:xx",
			     "/h:/g:ro:x", "/h:/g:", "/h:/g:RO", "/h:/g:ro,,",
			     "/h:/g:,", "/h:dev,suid"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *copy = strdup(bad[i]);
		struct cli_share share;
		if (cli_parse_share(copy, &share) != -EINVAL)
			fail_msg("share '%s' accepted", bad[i]);
		free(copy);
	}
}

static void test_disk_forms(void **state)
{
	(void)state;
	char a[] = "/d.img", b[] = "/d.img:ro,serial=scratch,direct",
	     c[] = "d.img,rw,serial=x", d[] = "/dev/sdb:rw";
	struct cli_disk disk;
	assert_int_equal(cli_parse_disk(a, &disk), 0);
	assert_string_equal(disk.path, "/d.img");
	assert_false(disk.readonly || disk.direct || disk.serial[0]);
	assert_int_equal(cli_parse_disk(b, &disk), 0);
	assert_string_equal(disk.path, "/d.img");
	assert_true(disk.readonly && disk.direct);
	assert_string_equal(disk.serial, "scratch");
	assert_int_equal(cli_parse_disk(c, &disk), 0);
	assert_string_equal(disk.path, "d.img");
	assert_false(disk.readonly);
	assert_string_equal(disk.serial, "x");
	assert_int_equal(cli_parse_disk(d, &disk), 0);
	assert_string_equal(disk.path, "/dev/sdb");
	assert_false(disk.readonly);
}

static void test_disk_rejects(void **state)
{
	(void)state;
	const char *bad[] = {"", ":ro", ",ro", "/d,fast", "/d,serial=",
			     "/d,serial=123456789012345678901", "/d,serial=a b",
			     "/d,,ro", "/d,"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *copy = strdup(bad[i]);
		struct cli_disk disk;
		if (cli_parse_disk(copy, &disk) != -EINVAL)
			fail_msg("disk '%s' accepted", bad[i]);
		free(copy);
	}
}

static void test_share_option(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--share", "/a:/b:ro", "--share=/c",
				 "ls");
	expect_ok(p);
	assert_int_equal(p->cfg.nr_shares, 2);
	assert_string_equal(p->cfg.shares[0].host, "/a");
	assert_string_equal(p->cfg.shares[0].guest, "/b");
	assert_true(p->cfg.shares[0].readonly);
	assert_string_equal(p->cfg.shares[1].host, "/c");
	assert_null(p->cfg.shares[1].guest);
	assert_false(p->cfg.shares[1].readonly);
	done(p);
	/* The message quotes the value as given, before it was split. */
	expect_bad_value("--share", "/h:rel:ro",
			 "--share: '%s' is not HOST[:GUEST][:OPTIONS] with an absolute GUEST path and options ro, rw, dev");
	/* Device nodes are host root's business. */
	expect_error(parse("run", "--share", "/a:dev", "ls"),
		     "--share /a: device nodes (dev) need --host-root");
	p = parse("run", "--host-root", "--share", "/a:/b:dev,ro", "ls");
	expect_ok(p);
	assert_true(p->cfg.host_root);
	assert_true(p->cfg.shares[0].devices);
	done(p);
}

static void test_id_maps(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--uid-map", "0:1000", "--uid-map",
				 "1:100000:65536", "--gid-map=0:100", "ls");
	expect_ok(p);
	assert_int_equal(p->cfg.nr_uid_maps, 2);
	assert_int_equal(p->cfg.uid_map[0].guest, 0);
	assert_int_equal(p->cfg.uid_map[0].host, 1000);
	assert_int_equal(p->cfg.uid_map[0].count, 1);
	assert_int_equal(p->cfg.uid_map[1].guest, 1);
	assert_int_equal(p->cfg.uid_map[1].host, 100000);
	assert_int_equal(p->cfg.uid_map[1].count, 65536);
	assert_int_equal(p->cfg.nr_gid_maps, 1);
	assert_int_equal(p->cfg.gid_map[0].host, 100);
	done(p);
	const char *bad[] = {"", "0", "0:", ":0", "a:1", "0:1:0", "0:1:2:3",
			     "0:4294967295:2", "4294967296:0", "0:-1", "0 :1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cli_id_map map;
		if (cli_parse_id_map(bad[i], &map) != -EINVAL)
			fail_msg("id map '%s' accepted", bad[i]);
	}
	expect_bad_value("--uid-map", "1:2:x",
			 "--uid-map: '%s' is not GUEST:HOST[:COUNT] (ids below 2^32)");
	expect_error(parse("run", "--host-root", "--gid-map", "0:5", "ls"),
		     "--host-root: ids pass unchanged, so --uid-map and --gid-map do not apply");
	p = parse("run", "--uid-map", "0:1", "--uid-map", "1:2", "--uid-map", "2:3",
		  "--uid-map", "3:4", "--uid-map", "4:5", "--uid-map", "5:6",
		  "--uid-map", "6:7", "--uid-map", "7:8", "--uid-map", "8:9", "ls");
	assert_int_equal(p->ret, -EINVAL);
	assert_string_equal(p->err, "--uid-map 8:9: at most 8 maps");
	done(p);
}

static void test_share_limit(void **state)
{
	(void)state;
	const char *args[2 * (CLI_MAX_SHARES + 1) + 3] = {"fsvm", "run"};
	int n = 2;
	for (int i = 0; i <= CLI_MAX_SHARES; i++) {
		args[n++] = "--share";
		args[n++] = i < CLI_MAX_SHARES ? "/ok" : "/ninth";
	}
	args[n] = NULL;
	struct parsed *p = parse_args(args);
	assert_int_equal(p->cfg.nr_shares, CLI_MAX_SHARES);
	expect_error(p, "--share /ninth: at most 8 shares");
}

static void expect_size(const char *s, uint64_t bytes)
{
	uint64_t v = 0;
	if (cli_parse_size(s, &v))
		fail_msg("'%s' rejected", s);
	assert_int_equal(v, bytes);
}

static void test_size_units(void **state)
{
	(void)state;
	expect_size("0", 0);
	expect_size("512", 512 * MIB);
	expect_size("1K", 1024);
	expect_size("1k", 1024);
	expect_size("3M", 3 * MIB);
	expect_size("3m", 3 * MIB);
	expect_size("2G", 2 * GIB);
	expect_size("1T", 1ULL << 40);
	expect_size("1048576K", GIB);
}

static void test_size_suffixes(void **state)
{
	(void)state;
	expect_size("2MiB", 2 * MIB);
	expect_size("2MB", 2 * MIB);
	expect_size("2Mb", 2 * MIB);
	expect_size("2Mi", 2 * MIB);
	expect_size("4KiB", 4096);
	expect_size("1GiB", GIB);
	expect_size("1TB", 1ULL << 40);
}

static void expect_bad_size(const char *s)
{
	uint64_t v = 12345;
	if (cli_parse_size(s, &v) != -EINVAL)
		fail_msg("'%s' accepted as %llu", s, (unsigned long long)v);
	assert_int_equal(v, 12345); /* untouched on error */
}

static void test_size_rejects(void **state)
{
	(void)state;
	const char *bad[] = {"", "M", "abc", "-1", "+1", " 1", "1 ", "1Q",
			     "1MM", "1iB", "1B", "1MiBx", "1.5G", "0x10",
			     "1MIB"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_bad_size(bad[i]);
}

static void test_size_overflow(void **state)
{
	(void)state;
	expect_size("16777215T", ((1ULL << 24) - 1) << 40);
	expect_bad_size("16777216T"); /* 2^64 */
	expect_size("17592186044415", ((1ULL << 44) - 1) << 20);
	expect_bad_size("17592186044416"); /* 2^44 MiB = 2^64 */
	expect_bad_size("18014398509481984K"); /* 2^54 KiB */
	expect_bad_size("18446744073709551615K"); /* ULLONG_MAX KiB */
	expect_bad_size("18446744073709551616"); /* > ULLONG_MAX */
	expect_bad_size("99999999999999999999999999G");
}

static void test_host_defaults(void **state)
{
	(void)state;
	unsigned int cpus = cli_default_cpus();
	uint64_t mem = cli_default_mem();
	assert_in_range(cpus, 1, 8);
	assert_in_range(mem, 512 * MIB, 4 * GIB);
	assert_int_equal(mem % MIB, 0);
}

static void test_user_features(void **state)
{
	(void)state;
	setenv("FSVM_TEST_PASSED", "from the caller", 1);
	unsetenv("FSVM_TEST_UNSET");
	struct parsed *p = parse("run", "--cwd", "/srv/x", "--env", "A=1",
				 "--env", "B=", "--env", "FSVM_TEST_PASSED",
				 "--env", "FSVM_TEST_UNSET", "--env", "C=x=y\nz",
				 "--user", "--append", "quiet", "--cmdline",
				 "x=\"1 2\"", "--json", "true");
	expect_ok(p);
	const struct fsvm_config *c = &p->cfg;
	assert_string_equal(c->cwd, "/srv/x");
	assert_int_equal(c->nr_env, 4);
	assert_string_equal(c->env[0], "A=1");
	assert_string_equal(c->env[1], "B=");
	assert_string_equal(c->env[2], "FSVM_TEST_PASSED=from the caller");
	assert_string_equal(c->env[3], "C=x=y\nz");
	assert_true(c->user);
	assert_string_equal(c->cmdline, "quiet x=\"1 2\"");
	assert_true(c->json);
	assert_null(c->json_file);
	done(p);
	p = parse("run", "--json=/tmp/out.json", "true");
	expect_ok(p);
	assert_string_equal(p->cfg.json_file, "/tmp/out.json");
	done(p);
}

static void test_user_feature_errors(void **state)
{
	(void)state;
	expect_error(parse("run", "--cwd", "rel"),
		     "--cwd: 'rel' is not an absolute path");
	expect_error(parse("run", "--env", "=x"),
		     "--env: '=x' is not NAME or NAME=VALUE");
	expect_error(parse("run", "--env", ""),
		     "--env: '' is not NAME or NAME=VALUE");
	expect_error(parse("run", "--user", "--uid-map", "0:1"),
		     "--user: it maps your ids itself, so --host-root, --uid-map and --gid-map do not apply");
	char big[1100];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	struct parsed *p = parse("run", "--append", big, "--append", big);
	assert_int_equal(p->ret, -EINVAL);
	assert_non_null(strstr(p->err, "longer than 2047 bytes"));
	done(p);
}

static void test_rodir_rwdir(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--rodir", "/data", "--rwdir",
				 "/work=/home/me/src", "true");
	expect_ok(p);
	assert_int_equal(p->cfg.nr_shares, 2);
	assert_string_equal(p->cfg.shares[0].host, "/data");
	assert_null(p->cfg.shares[0].guest);
	assert_true(p->cfg.shares[0].readonly);
	assert_string_equal(p->cfg.shares[1].host, "/home/me/src");
	assert_string_equal(p->cfg.shares[1].guest, "/work");
	assert_false(p->cfg.shares[1].readonly);
	done(p);
	expect_error(parse("run", "--rodir", "work=/x"),
		     "--rodir: 'work=/x' is not [GUEST=]HOST with an absolute GUEST");
	expect_error(parse("run", "--rwdir", "/x="),
		     "--rwdir: '/x=' is not [GUEST=]HOST with an absolute GUEST");
}

/* Writes text to a fresh file; returns its path (static buffer). */
static const char *config_file(const char *text)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/test_cli.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_config_file(void **state)
{
	(void)state;
	const char *path = config_file(
		"{\"cpus\": 3, \"mem\": \"1G\", \"timeout\": 2.5,\n"
		" \"share\": [\"/a:/b:ro\", \"/c\"], \"env\": [\"X=1\"],\n"
		" \"verbose\": true, \"rw-root\": false, \"cache\": \"none\",\n"
		" \"append\": \"quiet\", \"json\": true,\n"
		" \"command\": [\"make\", \"-C\", \"/b\"]}");
	struct parsed *p = parse("run", "--config", path);
	expect_ok(p);
	const struct fsvm_config *c = &p->cfg;
	assert_int_equal(c->cpus, 3);
	assert_int_equal(c->mem, GIB);
	assert_true(c->timeout == 2.5);
	assert_int_equal(c->nr_shares, 2);
	assert_string_equal(c->shares[0].guest, "/b");
	assert_true(c->shares[0].readonly);
	assert_string_equal(c->shares[1].host, "/c");
	assert_string_equal(c->env[0], "X=1");
	assert_true(c->verbose);
	assert_false(c->rw_root);
	assert_string_equal(c->cache, "none");
	assert_string_equal(c->cmdline, "quiet");
	assert_true(c->json);
	expect_guest_argv(p, (const char *const[]){"make", "-C", "/b"}, 3);
	done(p);

	/* Flags override the file, wherever --config stands; lists add. */
	p = parse("run", "--cpus", "2", "--config", path, "--cache", "auto",
		  "--share", "/d", "--append", "loud", "ls");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 2);
	assert_string_equal(p->cfg.cache, "auto");
	assert_int_equal(p->cfg.nr_shares, 3);
	assert_string_equal(p->cfg.shares[2].host, "/d");
	assert_string_equal(p->cfg.cmdline, "quiet loud");
	expect_guest_argv(p, (const char *const[]){"ls"}, 1);
	done(p);
	unlink(path);
}

/* config_error: the file's one line for text. */
static void expect_config_error(const char *text, const char *msg)
{
	const char *path = config_file(text);
	char want[256];
	snprintf(want, sizeof(want), "%s: %s", path, msg);
	expect_config_failure(parse("run", "--config", path, "true"), want);
	unlink(path);
}

static void test_bad_config_files(void **state)
{
	(void)state;
	expect_config_error("{\"cpus\": 65}",
			    "key 'cpus': '65' is not a number from 1 to 64");
	expect_config_error("{\"mem\": \"12Q\"}",
			    "key 'mem': '12Q' is not a size from 64M to 1T (e.g. 512M, 2G)");
	expect_config_error("{\"bogus\": 1}",
			    "key 'bogus': not an option of fsvm run (see fsvm --help)");
	expect_config_error("{\"config\": \"x\"}",
			    "key 'config': not an option of fsvm run (see fsvm --help)");
	expect_config_error("{\"verbose\": 1}", "key 'verbose': expected true or false");
	expect_config_error("{\"cpus\": true}",
			    "key 'cpus': expected a string or a number");
	expect_config_error("{\"cpus\": [1, 2]}",
			    "key 'cpus': given once only, not as a list");
	expect_config_error("{\"share\": [{}]}",
			    "key 'share': expected a string or a number");
	expect_config_error("{\"command\": []}",
			    "key 'command': expected a list of 1 to 4096 strings");
	expect_config_error("{\"command\": [\"ls\", 1]}",
			    "key 'command': expected a list of strings");
	expect_config_error("[]", "expected one JSON object ({\"cpus\": 2, ...})");
	expect_config_error("{\"cpus\": 2} {}", "line 1: text after the object");
	expect_config_error("{\n\"cpus\": 2,,\n}",
			    "line 2: not valid JSON (quoted object property name expected)");
	expect_config_error("{\"cpus\": 2", "line 1: not valid JSON (it ends too early)");
	/* Strict: what json-c would take by default, with a meaning unsaid. */
	expect_config_error("{\"cpus\": 2,\n\"mem\": \"1G\",\n\"cpus\": 3}",
			    "line 3: a key given twice");
	expect_config_error("{\"cpus\": 2,}", "line 1: not valid JSON (unexpected character)");
	expect_config_error("{\"cpus\": 2, /* two */ \"mem\": \"1G\"}",
			    "line 1: not valid JSON (quoted object property name expected)");
	/* A key's name inside a value or a nested list is no key. */
	const char *path = config_file("{\"env\": [\"cpus\"], \"cpus\": \"2\"}");
	struct parsed *p = parse("run", "--config", path, "true");
	unlink(path);
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 2);
	done(p);
	expect_config_failure(parse("run", "--config", "/nonexistent/vm.json"),
			      "--config /nonexistent/vm.json: No such file or directory");
}

/* Where the summary goes is known even when a flag or the file is bad:
 * a CI step reading the file always finds one. */
static void test_summary_file_known_on_errors(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--cpus", "0", "--json-file", "/tmp/s.json", "true");
	assert_int_equal(p->ret, -EINVAL);
	assert_true(p->cfg.json);
	assert_string_equal(p->cfg.json_file, "/tmp/s.json");
	done(p);
	p = parse("run", "--bogus", "--json=/tmp/s.json", "true");
	assert_int_equal(p->ret, -EINVAL);
	assert_string_equal(p->cfg.json_file, "/tmp/s.json");
	done(p);
	p = parse("run", "--json", "--config", "/nonexistent/vm.json", "true");
	assert_int_equal(p->ret, -EBADMSG);
	assert_true(p->cfg.json);
	assert_null(p->cfg.json_file);
	done(p);
	/* A value that is another option is no file name. */
	p = parse("run", "--bogus", "--json-file", "--cpus", "2", "true");
	assert_int_equal(p->ret, -EINVAL);
	assert_false(p->cfg.json);
	done(p);
	p = parse("run", "--check", "--", "true");
	expect_ok(p);
	assert_true(p->cfg.check);
	done(p);
}

/* The HOME the tests run with: a fresh folder, so the user's own
 * ~/.config/fsvm/config.json never counts. */
static char test_home[64];

/* Writes text to path (made or replaced). */
static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void home_config(const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/.config", test_home);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.config/fsvm", test_home);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.config/fsvm/config.json", test_home);
	if (text)
		write_file(path, text, strlen(text));
	else
		unlink(path);
}

/* $FSVM_CONFIG, else ~/.config/fsvm/config.json when there is one, then
 * --config, then the flags. */
static void test_default_config_file(void **state)
{
	(void)state;
	unsetenv("FSVM_CONFIG");
	struct parsed *p = parse("run");
	expect_ok(p); /* none: the defaults */
	assert_int_equal(p->cfg.cpus, cli_default_cpus());
	done(p);
	home_config("{\"cpus\": 3, \"env\": [\"D=home\"]}");
	p = parse("run");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 3);
	assert_string_equal(p->cfg.env[0], "D=home");
	done(p);
	const char *path = config_file("{\"cpus\": 4, \"env\": [\"C=config\"]}");
	p = parse("run", "--env", "F=flag", "--config", path);
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 4);
	assert_int_equal(p->cfg.nr_env, 3);
	assert_string_equal(p->cfg.env[0], "D=home");
	assert_string_equal(p->cfg.env[1], "C=config");
	assert_string_equal(p->cfg.env[2], "F=flag");
	done(p);
	p = parse("run", "--config", path, "--cpus", "5");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 5);
	done(p);
	/* $FSVM_CONFIG instead of the home's; empty: none at all. */
	setenv("FSVM_CONFIG", path, 1);
	p = parse("run");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 4);
	assert_int_equal(p->cfg.nr_env, 1);
	assert_string_equal(p->cfg.env[0], "C=config");
	done(p);
	setenv("FSVM_CONFIG", "", 1);
	p = parse("run");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, cli_default_cpus());
	done(p);
	setenv("FSVM_CONFIG", "/nonexistent/config.json", 1);
	expect_config_failure(parse("run"),
		     "FSVM_CONFIG=/nonexistent/config.json: No such file or directory");
	/* --help wins over a bad default file; kconfig reads none. */
	expect_command(parse("run", "--help"), CLI_HELP);
	expect_command(parse("kconfig"), CLI_KCONFIG);
	unsetenv("FSVM_CONFIG");
	unlink(path);
	/* The home's file is as strict as any. */
	char want[256];
	home_config("{\"cpus\": 2,\n \"cpus\": 3}");
	snprintf(want, sizeof(want), "%s/.config/fsvm/config.json: line 2: a key given twice",
		 test_home);
	expect_config_failure(parse("run"), want);
	home_config("{\"cpus\": 2, // two\n}");
	snprintf(want, sizeof(want),
		 "%s/.config/fsvm/config.json: line 1: not valid JSON (quoted object property name expected)",
		 test_home);
	expect_config_failure(parse("run"), want);
	home_config("{\"mem\": \"lots\"}");
	snprintf(want, sizeof(want),
		 "%s/.config/fsvm/config.json: key 'mem': 'lots' is not a size from 64M to 1T (e.g. 512M, 2G)",
		 test_home);
	expect_config_failure(parse("run"), want);
	home_config(NULL);
}

static void test_profiles(void **state)
{
	(void)state;
	unsetenv("FSVM_CONFIG");
	home_config(NULL);
	const char *path = config_file(
		"{\"cpus\": 2, \"mem\": \"1G\", \"env\": [\"A=top\"],\n"
		" \"profiles\": {\"ci\": {\"mem\": \"2G\", \"timeout\": 600,\n"
		"                        \"env\": [\"P=ci\"], \"command\": [\"make\", \"check\"]},\n"
		"              \"dev\": {\"verbose\": true}}}");
	struct parsed *p = parse("run", "--config", path);
	expect_ok(p); /* no --profile: none of them */
	assert_int_equal(p->cfg.mem, GIB);
	assert_false(p->cfg.verbose);
	assert_int_equal(p->cfg.guest_argc, 0);
	done(p);
	p = parse("run", "--profile", "ci", "--config", path);
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 2);
	assert_int_equal(p->cfg.mem, 2 * GIB);
	assert_true(p->cfg.timeout == 600);
	assert_int_equal(p->cfg.nr_env, 2);
	assert_string_equal(p->cfg.env[1], "P=ci");
	expect_guest_argv(p, (const char *const[]){"make", "check"}, 2);
	done(p);
	p = parse("run", "--config", path, "--profile=ci", "--mem", "3G", "true");
	expect_ok(p); /* flags override the profile */
	assert_int_equal(p->cfg.mem, 3 * GIB);
	expect_guest_argv(p, (const char *const[]){"true"}, 1);
	done(p);
	char want[512];
	expect_config_failure(parse("run", "--config", path, "--profile", "big"),
		     "--profile 'big': no such profile (there are: ci, dev)");
	/* A profile of the default file follows --config's own options. */
	home_config("{\"profiles\": {\"fast\": {\"cpus\": 4}}}");
	const char *plain = config_file("{\"cpus\": 1}");
	p = parse("run", "--config", plain, "--profile", "fast");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 4);
	done(p);
	home_config(NULL);
	snprintf(want, sizeof(want),
		 "--profile 'fast': there are no \"profiles\" in %s", plain);
	expect_config_failure(parse("run", "--config", plain, "--profile", "fast"), want);
	unlink(plain);
	expect_config_failure(parse("run", "--profile", "ci"),
		     "--profile 'ci': there is no config file to take it from ($FSVM_CONFIG, ~/.config/fsvm/config.json or --config FILE)");
	expect_error(parse("run", "--profile", "--", "true"),
		     "option '--profile' needs a value, not '--' (if it is one: --profile=--)");
	unlink(path);
	expect_config_error("{\"profiles\": [\"ci\"]}",
			    "key 'profiles': expected an object of profiles ({\"ci\": {\"cpus\": 2}})");
	expect_config_error("{\"profiles\": {\"ci\": 2}}",
			    "key 'profiles': profile 'ci' is not an object of options");
	expect_config_error("{\"profile\": \"ci\"}",
			    "key 'profile': not an option of fsvm run (see fsvm --help)");
	/* Profiles are as strict as the file, used or not: a key twice. */
	expect_config_error("{\"profiles\": {\"ci\": {\"cpus\": 2,\n\"cpus\": 3}}}",
			    "line 2: a key given twice");
	expect_config_error("{\"profiles\": {\"ci\": {},\n\"ci\": {}}}",
			    "line 2: a key given twice");
	/* The same key in two objects is no repeat. */
	path = config_file("{\"cpus\": 2, \"profiles\": {\"a\": {\"cpus\": 3}, \"b\": {\"cpus\": 4}}}");
	p = parse("run", "--config", path, "--profile", "b");
	expect_ok(p);
	assert_int_equal(p->cfg.cpus, 4);
	done(p);
	unlink(path);
	path = config_file("{\"profiles\": {\"ci\": {\"mem\": \"lots\", \"profiles\": {}}}}");
	snprintf(want, sizeof(want),
		 "%s: profile 'ci': key 'mem': 'lots' is not a size from 64M to 1T (e.g. 512M, 2G)",
		 path);
	expect_config_failure(parse("run", "--config", path, "--profile", "ci"), want);
	unlink(path);
	path = config_file("{\"profiles\": {\"ci\": {\"profiles\": {}}}}");
	snprintf(want, sizeof(want),
		 "%s: profile 'ci': key 'profiles': a profile holds options, not profiles",
		 path);
	expect_config_failure(parse("run", "--config", path, "--profile", "ci"), want);
	unlink(path);
}

/* docker's env-file format, through --env's handler. */
static void test_env_file(void **state)
{
	(void)state;
	setenv("FSVM_TEST_PASSED", "from the caller", 1);
	unsetenv("FSVM_TEST_UNSET");
	char path[96];
	snprintf(path, sizeof(path), "%s/vars.env", test_home);
	static const char text[] =
		"\xef\xbb\xbf" "A=1\n"
		"# a comment\n"
		"\n"
		"   \t\n"
		"  B= spaced value \n"
		"C=x=y \"q\" $HOME\n"
		"FSVM_TEST_PASSED\n"
		"FSVM_TEST_UNSET\n"
		"  # indented comment\n"
		"D=crlf\r\n"
		"E=";
	write_file(path, text, sizeof(text) - 1);
	struct parsed *p = parse("run", "--env", "Z=first", "--env-file", path,
				 "--env", "A=2", "true");
	expect_ok(p);
	const char *const want[] = {"Z=first", "A=1", "B= spaced value ",
				    "C=x=y \"q\" $HOME",
				    "FSVM_TEST_PASSED=from the caller",
				    "D=crlf", "E=", "A=2"};
	assert_int_equal(p->cfg.nr_env, 8);
	for (unsigned int i = 0; i < 8; i++)
		assert_string_equal(p->cfg.env[i], want[i]);
	done(p);
	/* In a config file, one or a list. */
	char json[256];
	snprintf(json, sizeof(json), "{\"env-file\": [\"%s\", \"%s\"]}", path, path);
	const char *config = config_file(json);
	p = parse("run", "--config", config, "true");
	expect_ok(p);
	assert_int_equal(p->cfg.nr_env, 12);
	done(p);
	unlink(config);

	static const struct {
		const char *text;
		size_t len;
		const char *msg;
	} bad[] = {
		{"A=1\n\n=x\n", 9, "3: '=x' is not NAME=VALUE or NAME (a name without blanks)"},
		{"MY VAR=1\n", 9, "1: 'MY VAR=1' is not NAME=VALUE or NAME (a name without blanks)"},
		{"A=1\nB\tC\n", 8, "2: 'B\tC' is not NAME=VALUE or NAME (a name without blanks)"},
		{"A=a\0b\n", 6, "1: a NUL byte in the line"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char msg[256];
		write_file(path, bad[i].text, bad[i].len);
		snprintf(msg, sizeof(msg), "--env-file %s:%s", path, bad[i].msg);
		expect_error(parse("run", "--env-file", path, "true"), msg);
	}
	unlink(path);
	char msg[256];
	snprintf(msg, sizeof(msg), "--env-file %s: No such file or directory", path);
	expect_error(parse("run", "--env-file", path, "true"), msg);
	snprintf(msg, sizeof(msg), "--env-file %s: Is a directory", test_home);
	expect_error(parse("run", "--env-file", test_home, "true"), msg);
}

/* virtme-ng's --exec: a string for the guest's sh -c. */
static void test_exec(void **state)
{
	(void)state;
	struct parsed *p = parse("run", "--exec", "cd /tmp && ls | wc -l", "--cpus", "2");
	expect_ok(p);
	expect_guest_argv(p, (const char *const[]){"/bin/sh", "-c", "cd /tmp && ls | wc -l"}, 3);
	assert_int_equal(p->cfg.cpus, 2);
	done(p);
	expect_error(parse("run", "--exec", "make", "--", "ls"),
		     "--exec: its CMD is the command (the guest's sh -c runs it), so 'ls' after it does not apply");
	expect_error(parse("run", "--exec", "make", "ls"),
		     "--exec: its CMD is the command (the guest's sh -c runs it), so 'ls' after it does not apply");
	expect_error(parse("run", "--exec", ""), "--exec: the command is empty");
	/* The flags' command wins over a config file's, either way round. */
	const char *path = config_file("{\"exec\": \"echo from file\"}");
	p = parse("run", "--config", path);
	expect_ok(p);
	expect_guest_argv(p, (const char *const[]){"/bin/sh", "-c", "echo from file"}, 3);
	done(p);
	p = parse("run", "--config", path, "--", "true");
	expect_ok(p);
	expect_guest_argv(p, (const char *const[]){"true"}, 1);
	done(p);
	unlink(path);
	path = config_file("{\"command\": [\"ls\", \"-l\"]}");
	p = parse("run", "--config", path, "--exec", "uname");
	expect_ok(p);
	expect_guest_argv(p, (const char *const[]){"/bin/sh", "-c", "uname"}, 3);
	done(p);
	unlink(path);
}

/* --help wins over every other flag and mistake, wherever it stands
 * before the guest's command. */
static void test_help_wins(void **state)
{
	(void)state;
	expect_command(parse("run", "--cpus", "--help"), CLI_HELP);
	expect_command(parse("run", "-m", "-h"), CLI_HELP);
	expect_command(parse("run", "--env-file", "/nonexistent", "--help"), CLI_HELP);
	expect_command(parse("run", "--exec", "x", "-h", "--", "y"), CLI_HELP);
	expect_command(parse("run", "--profile", "none", "--help"), CLI_HELP);
	expect_command(parse("kconfig", "a", "b", "--help"), CLI_HELP);
	expect_command(parse("bogus", "--help"), CLI_HELP);
	expect_command(parse("--cpus", "2", "-h"), CLI_HELP);
	/* After "--" it is the guest command's word. */
	struct parsed *p = parse("run", "--", "ls", "--help");
	expect_ok(p);
	assert_int_equal(p->cfg.command, CLI_RUN);
	done(p);
	expect_error(parse("bogus", "--", "--help"),
		     "unknown command 'bogus' (try fsvm --help)");
	expect_error(parse("rnu"), "unknown command 'rnu' (did you mean 'run'?)");
	expect_error(parse("kconfgi"), "unknown command 'kconfgi' (did you mean 'kconfig'?)");
}

/* The option table as cli_list_options prints it, one name a line. */
static size_t option_names(char names[][32], size_t max)
{
	char *text = NULL;
	size_t len = 0, n = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	cli_list_options(f);
	assert_int_equal(fclose(f), 0);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "--", 2))
			continue;
		assert_true(n < max);
		snprintf(names[n++], 32, "%.*s", (int)strcspn(line + 2, " "), line + 2);
	}
	free(text);
	return n;
}

static void test_list_options(void **state)
{
	(void)state;
	expect_command(parse("--list-options"), CLI_LIST_OPTIONS);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	cli_list_options(f);
	assert_int_equal(fclose(f), 0);
	static const char *const lines[] = {
		"\n--cpus VALUE\n", "\n--memory VALUE\n", "\n--exec VALUE\n",
		"\n--env-file VALUE\n", "\n--profile VALUE\n", "\n--json\n",
		"\n--verbose\n", "\n-p VALUE\n", "\n-m VALUE\n", "\n-v\n"};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (!strstr(text, lines[i]))
			fail_msg("no %s in --list-options: %s", lines[i], text);
	assert_true(!strncmp(text, "--config VALUE\n", 15));
	free(text);
}

/* Every option's near misses (a letter wrong, two swapped, one dropped
 * or doubled) are answered with it. */
static void test_near_misses_of_every_option(void **state)
{
	(void)state;
	char names[96][32];
	size_t n = option_names(names, 96);
	assert_true(n > 40);
	for (size_t i = 0; i < n; i++) {
		const char *name = names[i];
		size_t len = strlen(name), mid = len / 2;
		char typos[4][40];
		snprintf(typos[0], 40, "--%s", name);
		typos[0][2 + len - 1] = name[len - 1] == 'q' ? 'z' : 'q';
		snprintf(typos[1], 40, "--%s", name);
		typos[1][2 + mid - 1] = name[mid];
		typos[1][2 + mid] = name[mid - 1];
		snprintf(typos[2], 40, "--%.*s%s", (int)mid, name, name + mid + 1);
		snprintf(typos[3], 40, "--%.*s%s", (int)mid + 1, name, name + mid);
		for (size_t t = 0; t < 4; t++) {
			if (!strcmp(typos[t] + 2, name))
				continue; /* swapped two equal letters */
			char err[256], want[128];
			struct parsed *p = parse("run", typos[t], "--", "true");
			snprintf(err, sizeof(err), "%s", p->err);
			int ret = p->ret;
			done(p);
			/* Near two (--ent: --env or --net), both are named. */
			snprintf(want, sizeof(want), "'--%s'", name);
			const char *mean = strstr(err, "(did you mean ");
			if (ret != -EINVAL || !mean || !strstr(mean, want))
				fail_msg("%s for --%s: %s", typos[t], name, err);
		}
	}
}

int main(void)
{
	const struct CMUnitTest cli[] = {
		cmocka_unit_test(test_no_arguments),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_summary_file_known_on_errors),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_kconfig_and_modules),
		cmocka_unit_test(test_net_options),
		cmocka_unit_test(test_run_defaults),
		cmocka_unit_test(test_run_every_option),
		cmocka_unit_test(test_run_options_with_equals),
		cmocka_unit_test(test_last_option_wins),
		cmocka_unit_test(test_dashdash_keeps_arguments),
		cmocka_unit_test(test_guest_command_ends_options),
		cmocka_unit_test(test_bad_cpus),
		cmocka_unit_test(test_good_cpus),
		cmocka_unit_test(test_bad_mem),
		cmocka_unit_test(test_good_mem),
		cmocka_unit_test(test_bad_timeout),
		cmocka_unit_test(test_good_timeout),
		cmocka_unit_test(test_unrepresentable_timeout_rejected),
		cmocka_unit_test(test_bad_choices),
		cmocka_unit_test(test_guest_kernel),
		cmocka_unit_test(test_microvm),
		cmocka_unit_test(test_unknown_option),
		cmocka_unit_test(test_missing_value),
		cmocka_unit_test(test_no_silent_misparse),
		cmocka_unit_test(test_snapshot_and_restore),
		cmocka_unit_test(test_other_spellings),
		cmocka_unit_test(test_value_for_flag_not_reported_as_missing),
		cmocka_unit_test(test_unknown_short_option_in_group_named),
		cmocka_unit_test(test_unknown_subcommand),
		cmocka_unit_test(test_repeated_parses_are_independent),
		cmocka_unit_test(test_error_truncated_to_buffer),
		cmocka_unit_test(test_share_forms),
		cmocka_unit_test(test_share_rejects),
		cmocka_unit_test(test_disk_forms),
		cmocka_unit_test(test_disk_rejects),
		cmocka_unit_test(test_share_option),
		cmocka_unit_test(test_id_maps),
		cmocka_unit_test(test_share_limit),
		cmocka_unit_test(test_size_units),
		cmocka_unit_test(test_size_suffixes),
		cmocka_unit_test(test_size_rejects),
		cmocka_unit_test(test_size_overflow),
		cmocka_unit_test(test_host_defaults),
		cmocka_unit_test(test_user_features),
		cmocka_unit_test(test_user_feature_errors),
		cmocka_unit_test(test_rodir_rwdir),
		cmocka_unit_test(test_config_file),
		cmocka_unit_test(test_bad_config_files),
		cmocka_unit_test(test_default_config_file),
		cmocka_unit_test(test_profiles),
		cmocka_unit_test(test_env_file),
		cmocka_unit_test(test_exec),
		cmocka_unit_test(test_help_wins),
		cmocka_unit_test(test_list_options),
		cmocka_unit_test(test_near_misses_of_every_option),
	};
	snprintf(test_home, sizeof(test_home), "/tmp/test_cli_home.XXXXXX");
	if (!mkdtemp(test_home))
		return 1;
	setenv("HOME", test_home, 1);
	unsetenv("FSVM_CONFIG");
	int failed = cmocka_run_group_tests(cli, NULL, NULL);
	char dir[96];
	snprintf(dir, sizeof(dir), "%s/.config/fsvm", test_home);
	rmdir(dir);
	snprintf(dir, sizeof(dir), "%s/.config", test_home);
	rmdir(dir);
	return rmdir(test_home) || failed;
}
