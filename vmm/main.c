/* fsvm: boots a Linux guest under KVM and runs a command in it. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/vm.h"
#include "vmm/cli.h"
#include "vmm/guest_load.h"
#include "vmm/kconfig.h"
#include "vmm/oci.h"
#include "vmm/run.h"
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

	if (cli_parse(argc, argv, &cfg, err, sizeof(err))) {
		log_error("%s", err);
		cli_free(&cfg);
		return EXIT_VMM_ERROR;
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
	log_verbose = cfg.verbose;
	/* The summary's file is opened now: set-up ends in a sandbox. */
	FILE *json = stdout;
	if (cfg.json_file && !(json = fopen(cfg.json_file, "we"))) {
		log_error("--json=%s: %s", cfg.json_file, strerror(errno));
		cli_free(&cfg);
		return EXIT_VMM_ERROR;
	}
	static struct run_summary sum;
	int status = fsvm_run(&cfg, &sum);
	if (cfg.json && summary_write_json(&sum, status, &cfg, json))
		status = EXIT_VMM_ERROR;
	if (json != stdout)
		fclose(json);
	cli_free(&cfg);
	return status;
}
