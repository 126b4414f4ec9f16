/* The capabilities fsvm keeps after set-up. */
#include "vmm/capabilities.h"

#include <cap-ng.h>
#include <errno.h>
#include <linux/capability.h>

/* Owning what the guest makes (chown), reaching every file of its ids
 * (the guest's root may read and write them all), setting their times
 * and modes, keeping set-gid bits as asked, and the guest's file
 * capabilities (security.capability). */
static const unsigned int kept[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETFCAP,
};

static bool is_kept(unsigned int cap, bool mknod)
{
	if (cap == CAP_MKNOD)
		return mknod;
	for (unsigned int i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (kept[i] == cap)
			return true;
	return false;
}

int capabilities_drop(bool mknod)
{
	if (capng_get_caps_process())
		return -EPERM;
	/* Changing the bounding set needs CAP_SETPCAP, dropped with it. */
	bool bounds = capng_have_capability(CAPNG_EFFECTIVE, CAP_SETPCAP);
	for (unsigned int cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (is_kept(cap, mknod))
			continue;
		capng_update(CAPNG_DROP,
			     CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_INHERITABLE,
			     cap);
		if (bounds)
			capng_update(CAPNG_DROP, CAPNG_BOUNDING_SET, cap);
	}
	return capng_apply(bounds ? CAPNG_SELECT_ALL : CAPNG_SELECT_BOTH) ? -EPERM : 0;
}
