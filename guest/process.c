/* The command's process: GUEST_SPEC_PROCESS parsed strictly, applied in
 * the child before exec in runc's order; the home of a uid from the new
 * root's passwd. No libcap: the init is static and depends on nothing. */
#include "guest/process.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guest/protocol.h"
#include "guest/spec.h"

#define EXIT_SETUP_FAILED 125
#define PASSWD_LINE_MAX 4096
#define PASSWD_MAX_BYTES (4 << 20) /* a passwd bigger than that: not read on */
#define CAPS_MAX 64                /* bits in a mask */

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The len characters at s as a number in base (16: "0x" may lead), at
 * most max: digits alone, no sign, no space. */
static bool parse_number(const char *s, size_t len, unsigned int base,
			 uint64_t max, uint64_t *out)
{
	if (base == 16 && len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
	}
	if (!len)
		return false;
	uint64_t value = 0;
	for (size_t i = 0; i < len; i++) {
		int d = digit_value(s[i]);
		if (d < 0 || (unsigned int)d >= base || (unsigned int)d > max ||
		    value > (max - (unsigned int)d) / base)
			return false;
		value = value * base + (unsigned int)d;
	}
	*out = value;
	return true;
}

struct span {
	const char *start;
	size_t len;
};

/* value's comma-separated items (an empty one among them too); how many,
 * or -1 when more than max. */
static int split_commas(const char *value, struct span *items, int max)
{
	int n = 0;
	for (const char *p = value;; p++) {
		const char *comma = strchrnul(p, ',');
		if (n == max)
			return -1;
		items[n++] = (struct span){p, (size_t)(comma - p)};
		if (!*comma)
			return n;
		p = comma;
	}
}

static const char *parse_groups(const char *value, struct process_spec *p)
{
	static struct span items[PROCESS_MAX_GROUPS];
	int n = *value ? split_commas(value, items, PROCESS_MAX_GROUPS) : 0;
	if (n < 0)
		return "too many groups";
	for (int i = 0; i < n; i++) {
		uint64_t gid;
		if (!parse_number(items[i].start, items[i].len, 10,
				  (gid_t)-1 - 1, &gid))
			return "not a list of decimal group ids";
		p->groups[i] = (gid_t)gid;
	}
	p->nr_groups = (unsigned int)n;
	return NULL;
}

static bool parse_limit(const struct span *s, rlim_t *out)
{
	static const char unlimited[] = "unlimited";
	if (s->len == sizeof(unlimited) - 1 &&
	    !memcmp(s->start, unlimited, s->len)) {
		*out = RLIM_INFINITY;
		return true;
	}
	uint64_t v;
	if (!parse_number(s->start, s->len, 10, RLIM_INFINITY, &v))
		return false;
	*out = (rlim_t)v;
	return true;
}

static const char *parse_rlimit(const char *value, struct process_spec *p)
{
	struct span items[3];
	uint64_t resource;
	struct process_rlimit r;
	if (p->nr_rlimits == PROCESS_MAX_RLIMITS)
		return "too many limits";
	if (split_commas(value, items, 3) != 3)
		return "not RESOURCE,SOFT,HARD";
	if (!parse_number(items[0].start, items[0].len, 10, RLIM_NLIMITS - 1,
			  &resource))
		return "no such resource";
	r.resource = (int)resource;
	if (!parse_limit(&items[1], &r.limit.rlim_cur) ||
	    !parse_limit(&items[2], &r.limit.rlim_max))
		return "a limit is neither decimal nor \"unlimited\"";
	if (r.limit.rlim_cur > r.limit.rlim_max)
		return "the soft limit is above the hard one";
	p->rlimits[p->nr_rlimits++] = r;
	return NULL;
}

static const char *parse_caps(const char *value, struct process_spec *p)
{
	struct span items[5];
	uint64_t *const sets[] = {&p->bounding, &p->effective, &p->permitted,
				  &p->inheritable, &p->ambient};
	if (split_commas(value, items, 5) != 5)
		return "not five masks: bounding, effective, permitted, inheritable, ambient";
	for (int i = 0; i < 5; i++)
		if (!parse_number(items[i].start, items[i].len, 16, UINT64_MAX,
				  sets[i]))
			return "a mask is not hexadecimal";
	p->has_caps = true;
	return NULL;
}

static const char *parse_umask(const char *value, struct process_spec *p)
{
	uint64_t mask;
	if (!parse_number(value, strlen(value), 8, 0777, &mask))
		return "not an octal mode up to 0777";
	p->has_umask = true;
	p->umask = (mode_t)mask;
	return NULL;
}

static const char *parse_no_new_privs(const char *value, struct process_spec *p)
{
	if (strcmp(value, "0") && strcmp(value, "1"))
		return "neither 0 nor 1";
	p->no_new_privs = value[0] == '1';
	return NULL;
}

static const char *parse_env(const char *value, struct process_spec *p)
{
	if (strcmp(value, "exact"))
		return "not \"exact\"";
	p->exact_env = true;
	return NULL;
}

static const struct {
	const char *key;
	const char *(*parse)(const char *value, struct process_spec *p);
	bool repeatable;
} process_keys[] = {
	{"groups", parse_groups, false},
	{"rlimit", parse_rlimit, true},
	{"caps", parse_caps, false},
	{"umask", parse_umask, false},
	{"no_new_privs", parse_no_new_privs, false},
	{"env", parse_env, false},
};

#define NR_PROCESS_KEYS (sizeof(process_keys) / sizeof(process_keys[0]))

int process_parse(char **fields, int count, struct process_spec *p)
{
	bool seen[NR_PROCESS_KEYS] = {false};
	memset(p, 0, sizeof(*p));
	for (int i = 0; i < count; i++) {
		const char *eq = strchr(fields[i], '=');
		const char *why = "unknown field";
		size_t key_len = eq ? (size_t)(eq - fields[i]) : 0;
		for (size_t k = 0; eq && k < NR_PROCESS_KEYS; k++) {
			if (strlen(process_keys[k].key) != key_len ||
			    memcmp(process_keys[k].key, fields[i], key_len))
				continue;
			why = seen[k] && !process_keys[k].repeatable
				      ? "given twice"
				      : process_keys[k].parse(eq + 1, p);
			seen[k] = true;
			break;
		}
		if (why) {
			dprintf(STDERR_FILENO, "fsvm-init: process: %.80s: %s\n",
				fields[i], why);
			return -1;
		}
	}
	return 0;
}

int process_read(struct process_spec *p)
{
	static char buf[1 << 16];
	static char *fields[PROCESS_MAX_FIELDS + 1];
	int n = spec_read_fields("/" GUEST_SPEC_PROCESS, "process", buf,
				 sizeof(buf), fields, PROCESS_MAX_FIELDS);
	return n < 0 ? -1 : process_parse(fields, n, p);
}

/* One passwd line, "name:password:uid:gid:gecos:home:shell": 1 when it
 * is not uid's, else 0 with its home copied, -1 when that cannot be. */
static int passwd_entry_home(char *line, uid_t uid, char *home, size_t size)
{
	char *field[7];
	int n = 0;
	for (char *p = line; n < 7; p++) {
		field[n++] = p;
		p = strchrnul(p, ':');
		if (!*p)
			break;
		*p = '\0';
	}
	uint64_t entry_uid;
	if (n < 6 || !parse_number(field[2], strlen(field[2]), 10,
				   (uid_t)-1 - 1, &entry_uid) ||
	    entry_uid != uid)
		return 1;
	size_t len = strlen(field[5]);
	if (!len || len >= size)
		return -1;
	memcpy(home, field[5], len + 1);
	return 0;
}

int passwd_home(const char *path, uid_t uid, char *home, size_t size)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char line[PASSWD_LINE_MAX];
	size_t total = 0;
	bool in_long_line = false;
	int found = 1;
	while (found > 0 && total < PASSWD_MAX_BYTES &&
	       fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		bool ends = n && line[n - 1] == '\n';
		bool part_of_long = in_long_line || (!ends && !feof(f));
		total += n;
		in_long_line = !ends && !feof(f);
		if (part_of_long)
			continue; /* longer than any entry read: skipped whole */
		if (ends)
			line[n - 1] = '\0';
		found = passwd_entry_home(line, uid, home, size);
	}
	fclose(f);
	return found ? -1 : 0;
}

static void die(const char *what)
{
	dprintf(STDERR_FILENO, "fsvm-init: %s: %s\n", what, strerror(errno));
	_exit(EXIT_SETUP_FAILED);
}

/* The kernel's last capability, asked of the bounding set itself: the
 * new root may have no /proc for /proc/sys/kernel/cap_last_cap. */
static int last_capability(void)
{
	int cap = 0;
	while (cap + 1 < CAPS_MAX && prctl(PR_CAPBSET_READ, cap + 1, 0, 0, 0) >= 0)
		cap++;
	return cap;
}

static void set_capabilities(const struct process_spec *p, uint64_t known)
{
	uint64_t e = p->effective & known, pe = p->permitted & known,
		 i = p->inheritable & known;
	struct __user_cap_header_struct header = {
		.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {
		{.effective = (uint32_t)e,
		 .permitted = (uint32_t)pe,
		 .inheritable = (uint32_t)i},
		{.effective = (uint32_t)(e >> 32),
		 .permitted = (uint32_t)(pe >> 32),
		 .inheritable = (uint32_t)(i >> 32)},
	};
	if (syscall(SYS_capset, &header, data) < 0)
		die("process: capset");
}

void process_become(const struct process_spec *p, const struct run_as *as)
{
	char what[96];
	if (p->has_umask)
		umask(p->umask);
	for (unsigned int i = 0; i < p->nr_rlimits; i++) {
		const struct process_rlimit *r = &p->rlimits[i];
		snprintf(what, sizeof(what), "process: setrlimit %d", r->resource);
		if (setrlimit(r->resource, &r->limit) < 0)
			die(what);
	}
	int last = p->has_caps ? last_capability() : 0;
	uint64_t known = last + 1 >= CAPS_MAX ? UINT64_MAX
					      : (UINT64_C(1) << (last + 1)) - 1;
	/* The bounding set first, while we are root with CAP_SETPCAP. */
	for (int cap = 0; p->has_caps && cap <= last; cap++)
		if (!(p->bounding >> cap & 1) &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			snprintf(what, sizeof(what),
				 "process: cannot drop capability %d", cap);
			die(what);
		}
	/* setuid away from root would clear the permitted set. */
	if (p->has_caps && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		die("process: PR_SET_KEEPCAPS");
	if ((as->set || p->nr_groups) && setgroups(p->nr_groups, p->groups) < 0)
		die("process: setgroups");
	snprintf(what, sizeof(what), "cannot run as uid %u gid %u",
		 (unsigned int)as->uid, (unsigned int)as->gid);
	if (as->set && (setgid(as->gid) < 0 || setuid(as->uid) < 0))
		die(what);
	if (p->has_caps) {
		if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
			die("process: PR_SET_KEEPCAPS");
		set_capabilities(p, known);
		for (int cap = 0; cap <= last; cap++)
			if ((p->ambient >> cap & 1) &&
			    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0) {
				snprintf(what, sizeof(what),
					 "process: cannot raise ambient capability %d",
					 cap);
				die(what);
			}
	}
	if (p->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("process: PR_SET_NO_NEW_PRIVS");
}
