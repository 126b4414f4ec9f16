/* fsvm: boots a Linux guest under KVM and runs a command in it. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/vm.h"
#include "vmm/cli.h"
#include "vmm/guest_load.h"
#include "vmm/kconfig.h"
#include "vmm/oci.h"
#include "vmm/run.h"
#include "vmm/snapshot.h"
#include "vmm/summary.h"

/* fsvm's version and the kernel the default guest boots. */
static void print_version(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], kernel[128] = "";
	snprintf(path, sizeof(path), "%s/%s/kernel/version",
		 guest_dir(dir, sizeof(dir)), CLI_DEFAULT_GUEST_KERNEL);
	FILE *f = fopen(path, "re");
	if (f) {
		if (!fgets(kernel, sizeof(kernel), f))
			kernel[0] = '\0';
		kernel[strcspn(kernel, "\n")] = '\0';
		fclose(f);
	}
	printf("fsvm %s\n", FSVM_VERSION);
	if (kernel[0])
		printf("guest kernel: Linux %s (%s/%s, the default)\n", kernel,
		       dir, CLI_DEFAULT_GUEST_KERNEL);
	else
		printf("guest kernel: none in %s (`make guest` in the source tree makes it)\n",
		       dir);
}

/* The summary's file, opened before set-up (which ends in a sandbox);
 * NULL without --json, or after one line when it cannot be opened. */
static FILE *open_summary(const struct fsvm_config *cfg, bool *failed)
{
	*failed = false;
	if (!cfg->json)
		return NULL;
	if (!cfg->json_file)
		return stdout;
	FILE *f = fopen(cfg->json_file, "we");
	if (!f) {
		log_error("--json=%s: %s", cfg->json_file, strerror(errno));
		*failed = true;
	}
	return f;
}

static int finish(struct fsvm_config *cfg, struct run_summary *sum, int status)
{
	if (sum->out && summary_write_json(sum, status, cfg))
		status = EXIT_VMM_ERROR;
	if (sum->out && sum->out != stdout)
		fclose(sum->out);
	cli_free(cfg);
	return status;
}

/* --restore DIR: the snapshot, and the flags that made its machine
 * parsed again before the restore's own. 0, or fsvm's status after one
 * line. */
static int open_restore(int argc, char **argv, struct fsvm_config *cfg,
			struct snapshot *snap, int *mem_fd,
			struct run_summary *sum)
{
	char err[512], line[400];
	char **words = NULL;
	unsigned int n;
	char *dir = strdup(cfg->restore);
	bool unopened;
	int ret = dir ? 0 : -ENOMEM;
	enum exit_reason reason = EXIT_REASON_BAD_SNAPSHOT;
	if (!ret && ((ret = snapshot_open(dir, snap, mem_fd, line, sizeof(line))) ||
		     (ret = snapshot_words(snap, &words, &n, line, sizeof(line)))))
		snprintf(err, sizeof(err), "--restore %s: %s", dir, line);
	if (!ret) {
		cli_free(cfg);
		if ((ret = cli_parse_restore((const char *const *)words, n, argc,
					     argv, cfg, line, sizeof(line)))) {
			snprintf(err, sizeof(err), "--restore %s: %s", dir, line);
			reason = EXIT_REASON_BAD_USAGE;
		}
	}
	free(words);
	free(dir);
	if (!ret)
		return 0;
	log_error("%s", err);
	summary_init(sum, open_summary(cfg, &unopened));
	snprintf(sum->message, sizeof(sum->message), "%.*s",
		 (int)sizeof(sum->message) - 1, err);
	return finish(cfg, sum, summary_failed(sum, reason));
}

int main(int argc, char **argv)
{
	struct fsvm_config cfg;
	char err[512];

	/* The OCI runtime: `fsvm oci ...`, or fsvm under the name container
	 * engines are given (a link named fsvm-runtime). */
	const char *name = strrchr(argv[0], '/');
	if (!strcmp(name ? name + 1 : argv[0], "fsvm-runtime"))
		return oci_main(argc, argv, FSVM_VERSION);
	if (argc > 1 && !strcmp(argv[1], "oci"))
		return oci_main(argc - 1, argv + 1, FSVM_VERSION);

	static struct run_summary sum;
	bool unopened;
	int parsed = cli_parse(argc, argv, &cfg, err, sizeof(err));
	if (parsed) {
		log_error("%s", err);
		/* A bad flag or config still gets its summary, when the flags
		 * said where. */
		summary_init(&sum, open_summary(&cfg, &unopened));
		snprintf(sum.message, sizeof(sum.message), "%.*s",
			 (int)sizeof(sum.message) - 1, err);
		return finish(&cfg, &sum,
			      summary_failed(&sum, parsed == -EBADMSG
							   ? EXIT_REASON_BAD_CONFIG
							   : EXIT_REASON_BAD_USAGE));
	}
	switch (cfg.command) {
	case CLI_HELP:
		fputs(cli_usage, stdout);
		return 0;
	case CLI_VERSION:
		print_version();
		return 0;
	case CLI_LIST_OPTIONS:
		cli_list_options(stdout);
		return 0;
	case CLI_KCONFIG: {
		int missing = kconfig_check(cfg.kconfig, cfg.kconfig_features, stdout, stderr);
		return missing < 0 ? EXIT_VMM_ERROR : missing > 0;
	}
	case CLI_RUN:
		break;
	}
	static struct snapshot snap;
	int mem_fd = -1;
	if (cfg.restore) {
		int status = open_restore(argc, argv, &cfg, &snap, &mem_fd, &sum);
		if (status)
			return status;
	}
	log_verbose = cfg.verbose;
	summary_init(&sum, open_summary(&cfg, &unopened));
	if (unopened) {
		cli_free(&cfg);
		return EXIT_VMM_ERROR;
	}
	return finish(&cfg, &sum, cfg.restore ? fsvm_restore(&cfg, &snap, mem_fd, &sum)
					      : fsvm_run(&cfg, &sum));
}
