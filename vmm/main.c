/* fsvm: boots a Linux guest under KVM and runs a command in it. */
#include <stdio.h>

#include "vmm/cli.h"
#include "vmm/core/log.h"
#include "vmm/kconfig.h"
#include "vmm/run.h"
#include "vmm/core/vm.h"

int main(int argc, char **argv)
{
	struct fsvm_config cfg;
	char err[256];

	if (cli_parse(argc, argv, &cfg, err, sizeof(err))) {
		log_error("%s", err);
		return EXIT_VMM_ERROR;
	}
	switch (cfg.command) {
	case CLI_HELP:
		fputs(cli_usage, stdout);
		return 0;
	case CLI_VERSION:
		printf("fsvm %s\n", FSVM_VERSION);
		return 0;
	case CLI_KCONFIG: {
		int missing = kconfig_check(cfg.kconfig, stdout, stderr);
		return missing < 0 ? EXIT_VMM_ERROR : missing > 0;
	}
	case CLI_RUN:
		break;
	}
	log_verbose = cfg.verbose;
	return fsvm_run(&cfg);
}
