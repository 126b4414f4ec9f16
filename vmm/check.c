/* The checks a run makes before KVM: each problem one line, all of them. */
#include "vmm/check.h"

#include <limits.h>
#include <stdio.h>

#include "core/log.h"
#include "vmm/disks.h"
#include "vmm/guest_load.h"
#include "vmm/identity.h"
#include "vmm/kernel_modules.h"
#include "vmm/network.h"
#include "vmm/shares.h"

/* The problem a piece just logged (as its run would), kept with its
 * reason for --json. */
static void noted(struct check *c, enum exit_reason reason)
{
	if (c->nr < CHECK_MAX_PROBLEMS) {
		struct check_problem *p = &c->problems[c->nr];
		p->reason = reason;
		log_last_error(p->message, sizeof(p->message));
	}
	c->nr++;
}

static void check_shares(const struct fsvm_config *cfg, struct check *c)
{
	char resolved[PATH_MAX];
	if (shares_check_folder("--root", cfg->root, resolved))
		noted(c, EXIT_REASON_BAD_SHARE);
	for (unsigned int i = 0; i < cfg->nr_shares; i++)
		if (shares_check_folder("--share", cfg->shares[i].host, resolved))
			noted(c, EXIT_REASON_BAD_SHARE);
}

/* The kernel, the initrd and the guest folder that gives what the flags
 * do not: once each, so a missing folder is not also a missing kernel. */
static void check_guest(const struct fsvm_config *cfg, struct check *c)
{
	bool folder = !guest_check_folder(cfg);
	if (!folder)
		noted(c, EXIT_REASON_BAD_KERNEL);
	if ((folder || cfg->kernel) && guest_check_kernel(cfg))
		noted(c, EXIT_REASON_BAD_KERNEL);
	if ((folder || cfg->initrd) && guest_check_initrd(cfg))
		noted(c, EXIT_REASON_BAD_KERNEL);
	static struct kernel_modules modules;
	if (kernel_modules_find(cfg, &modules))
		noted(c, EXIT_REASON_BAD_KERNEL);
}

static void check_identity(const struct fsvm_config *cfg, struct check *c)
{
	struct identity id;
	const char *why = NULL;
	if (identity_plan(cfg, &id, &why)) {
		log_setup_error("identity", why, 0);
		noted(c, EXIT_REASON_BAD_IDS);
	}
}

static void check_devices(const struct fsvm_config *cfg, struct check *c)
{
	for (unsigned int i = 0; i < cfg->nr_disks; i++)
		if (disks_check(&cfg->disks[i]))
			noted(c, EXIT_REASON_BAD_DISK);
	const char *why = NULL;
	int err = network_check(&cfg->net, &why);
	if (err) {
		log_setup_error("network", why, err);
		noted(c, EXIT_REASON_BAD_NETWORK);
	}
}

unsigned int check_run(const struct fsvm_config *cfg, struct check *c)
{
	c->nr = 0;
	check_identity(cfg, c);
	check_guest(cfg, c);
	check_shares(cfg, c);
	check_devices(cfg, c);
	return c->nr;
}
