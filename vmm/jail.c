/* fsvm's own view of the host after set-up: its shares and nothing else. */
#include "vmm/jail.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "fs/host_fs.h"

/* Caps on what set-up may leave behind: far above any real run. */
#define JAIL_MAX_COVERS 256 /* pseudo file systems mounted inside shares */
#define JAIL_MAX_MOVES 256  /* directory fds moved into the jail */

struct cover {
	unsigned int share;
	bool is_dir; /* else a file was mounted on a file (a bind of /dev/null) */
	char rel[PATH_MAX]; /* below the share's folder */
};

struct move {
	int fd;
	int flags; /* its open flags, FD_CLOEXEC as O_CLOEXEC */
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX + 16]; /* inside the jail */
};

struct jail {
	const struct jail_share *shares;
	unsigned int n;
	bool copied; /* covers planned and trees copied, by jail_prepare */
	int trees[JAIL_MAX_SHARES]; /* detached copies of the shares' mounts */
	int proc_fd_tree;           /* a detached bind of /proc/self/fd */
	struct cover covers[JAIL_MAX_COVERS];
	unsigned int nr_covers;
	struct move moves[JAIL_MAX_MOVES];
	unsigned int nr_moves;
};

/* The part of path below dir ("" for dir itself), or NULL. */
static const char *below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (!strcmp(dir, "/"))
		return path[0] == '/' ? path + 1 : NULL;
	if (strncmp(path, dir, n))
		return NULL;
	return path[n] == '\0' ? path + n : path[n] == '/' ? path + n + 1 : NULL;
}

/* The share whose folder holds path most closely, or -1. */
static int share_of(const struct jail_share *shares, unsigned int n,
		    const char *path, const char **rel)
{
	int best = -1;
	size_t best_len = 0;
	for (unsigned int i = 0; i < n; i++) {
		const char *r = below(path, shares[i].host);
		size_t len = strlen(shares[i].host);
		if (r && (best < 0 || len > best_len)) {
			best = (int)i;
			best_len = len;
			*rel = r;
		}
	}
	return best;
}

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *out = s;
	for (; *s; s++, out++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*out = *s;
		}
	}
	*out = '\0';
}

static bool covered(const struct jail *p, unsigned int share, const char *rel)
{
	for (unsigned int i = 0; i < p->nr_covers; i++)
		if (p->covers[i].share == share && below(rel, p->covers[i].rel))
			return true;
	return false;
}

/* fsvm never serves the host's pseudo file systems, but a bind of a share
 * holds those mounted inside it: they are covered in the jail, so that
 * nothing there reaches /proc/PID/root or the host's devices. */
static int plan_covers(struct jail *p, const struct jail_share *shares,
		       unsigned int n)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[2 * PATH_MAX];
	int err = 0;
	if (!f)
		return -errno;
	while (!err && fgets(line, sizeof(line), f)) {
		char *save, *mnt = strtok_r(line, " ", &save);
		for (int field = 0; mnt && field < 4; field++)
			mnt = strtok_r(NULL, " ", &save);
		if (!mnt)
			continue;
		unescape(mnt);
		const char *rel = NULL;
		int share = share_of(shares, n, mnt, &rel);
		if (share < 0 || !*rel || covered(p, (unsigned int)share, rel))
			continue;
		int fd = open(mnt, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue; /* covered by a later mount, or gone */
		struct stat st;
		int kind = fstat(fd, &st) ? -errno : host_fs_kind(fd);
		close(fd);
		if (kind != HOST_FS_PSEUDO)
			continue;
		if (p->nr_covers == JAIL_MAX_COVERS) {
			err = -E2BIG;
			break;
		}
		struct cover *c = &p->covers[p->nr_covers++];
		c->share = (unsigned int)share;
		c->is_dir = S_ISDIR(st.st_mode);
		snprintf(c->rel, sizeof(c->rel), "%s", rel);
	}
	fclose(f);
	return err;
}

/* Every directory fd open now (the shares' roots, the FUSE servers'
 * /proc/self/fd) is on the host's mounts, where ".." climbs out of the
 * share: each is reopened on the jail's mounts. One the shares do not
 * hold was inherited, not opened by fsvm, and is closed. */
static int plan_moves(struct jail *p, const struct jail_share *shares,
		      unsigned int n, const int *own, unsigned int nr_own)
{
	/* /proc/self/fd is told by its inode: its path, read from an fd
	 * opened in another mount namespace, may not be whole. */
	struct stat proc_fd;
	if (stat("/proc/self/fd", &proc_fd))
		return -errno;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	int err = 0;
	struct dirent *e;
	while (!err && (e = readdir(d))) {
		char link[32], target[PATH_MAX];
		int fd = atoi(e->d_name);
		struct stat st;
		bool ours = fd == dirfd(d) || e->d_name[0] == '.';
		for (unsigned int i = 0; i < nr_own; i++)
			ours = ours || fd == own[i];
		if (ours || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len < 0) {
			err = -errno;
			break;
		}
		target[len] = '\0';
		if (p->nr_moves == JAIL_MAX_MOVES) {
			err = -EMFILE;
			break;
		}
		struct move *m = &p->moves[p->nr_moves];
		const char *rel = NULL;
		int share = share_of(shares, n, target, &rel);
		if (st.st_dev == proc_fd.st_dev && st.st_ino == proc_fd.st_ino)
			snprintf(m->path, sizeof(m->path), "/proc/self/fd");
		else if (share >= 0)
			snprintf(m->path, sizeof(m->path), JAIL_SHARE_FMT "/%s",
				 (unsigned int)share, rel);
		else {
			log_info("jail: closing fd %d (%s): not in a share", fd,
				 target);
			close(fd);
			continue;
		}
		int fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);
		if (fl < 0 || fdfl < 0) {
			err = -errno;
			break;
		}
		m->fd = fd;
		m->flags = (fl & (O_PATH | O_ACCMODE | O_NOATIME)) |
			   (fdfl & FD_CLOEXEC ? O_CLOEXEC : 0);
		m->dev = st.st_dev;
		m->ino = st.st_ino;
		p->nr_moves++;
	}
	closedir(d);
	return err;
}

/* A small tmpfs, not yet mounted anywhere: the jail's root, or a cover. */
static int new_tmpfs(const char *size, unsigned int attrs)
{
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	int err = fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0555", 0) ||
			  fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) ||
			  fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0)
		  ? -errno
		  : 0;
	int mnt = err ? err : fsmount(fs, FSMOUNT_CLOEXEC, attrs);
	if (mnt < 0 && !err)
		mnt = -errno;
	close(fs);
	return mnt;
}

#define NO_HOST_POWERS (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)

/* Copies of the shares' mounts (with whatever is mounted inside them),
 * taken before anything covers the host's tree. fsvm itself never runs,
 * maps as code or opens as a device anything of a share's: its guest
 * does, through its own kernel. */
static int copy_trees(struct jail *p, const struct jail_share *shares,
		      unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		p->trees[i] = open_tree(AT_FDCWD, shares[i].host,
					OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
						AT_RECURSIVE);
		if (p->trees[i] < 0)
			return -errno;
		/* Private: a copy made in the host's namespace would else stay
		 * a peer of its mounts, and the covers would reach the host. */
		struct mount_attr attr = {
			.attr_set = NO_HOST_POWERS |
				    (shares[i].readonly ? MOUNT_ATTR_RDONLY : 0),
			.propagation = MS_PRIVATE};
		if (mount_setattr(p->trees[i], "", AT_EMPTY_PATH | AT_RECURSIVE,
				  &attr, sizeof(attr)))
			return -errno;
	}
	return 0;
}

/* Taken once fsvm has its guest's ids: one taken before is of no use
 * after them (its fds do not show). */
static int copy_proc_fd(struct jail *p)
{
	p->proc_fd_tree = open_tree(AT_FDCWD, "/proc/self/fd",
				    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	return p->proc_fd_tree < 0 ? -errno : 0;
}

/* What covers a directory: a tiny read-only tmpfs. */
static int empty_dir(void)
{
	return new_tmpfs("4k", NO_HOST_POWERS | MOUNT_ATTR_RDONLY);
}

/* What covers a file: a read-only bind of an empty file made in the
 * jail's root for the purpose (a directory cannot go over a file). */
#define EMPTY_FILE "empty"
static int empty_file(int root)
{
	int fd = openat(root, EMPTY_FILE, O_CREAT | O_RDONLY | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	close(fd);
	int tree = open_tree(root, EMPTY_FILE, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return -errno;
	struct mount_attr ro = {.attr_set = NO_HOST_POWERS | MOUNT_ATTR_RDONLY};
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &ro, sizeof(ro))) {
		int err = -errno;
		close(tree);
		return err;
	}
	return tree;
}

/* The jail's tree, built on a new tmpfs mounted over "/". */
static int build(struct jail *p, unsigned int n, int root)
{
	char path[64];
	if (mkdirat(root, "shares", 0555) || mkdirat(root, "proc", 0555) ||
	    mkdirat(root, "proc/self", 0555) ||
	    mkdirat(root, "proc/self/fd", 0555))
		return -errno;
	for (unsigned int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), JAIL_SHARE_FMT, i);
		if (mkdirat(root, path + 1, 0555) ||
		    move_mount(p->trees[i], "", root, path + 1,
			       MOVE_MOUNT_F_EMPTY_PATH))
			return -errno;
	}
	if (move_mount(p->proc_fd_tree, "", root, "proc/self/fd",
		       MOVE_MOUNT_F_EMPTY_PATH))
		return -errno;
	for (unsigned int i = 0; i < p->nr_covers; i++) {
		char where[PATH_MAX + 16];
		snprintf(where, sizeof(where), "shares/%u/%s",
			 p->covers[i].share, p->covers[i].rel);
		int cover = p->covers[i].is_dir ? empty_dir() : empty_file(root);
		if (cover < 0)
			return cover;
		int err = move_mount(cover, "", root, where,
				     MOVE_MOUNT_F_EMPTY_PATH)
				  ? -errno
				  : 0;
		close(cover);
		if (err)
			return err;
	}
	/* The bound copies stay; the name goes. */
	if (unlinkat(root, EMPTY_FILE, 0) && errno != ENOENT)
		return -errno;
	return 0;
}

/* After pivot_root: each planned fd, reopened on the jail's mounts, must
 * be the same directory, and takes the old one's number. */
static int move_fds(const struct jail *p)
{
	for (unsigned int i = 0; i < p->nr_moves; i++) {
		const struct move *m = &p->moves[i];
		struct stat st;
		int fd = open(m->path, (m->flags & ~O_CLOEXEC) | O_DIRECTORY |
					       O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		int err = fstat(fd, &st) ? -errno
			  : st.st_dev != m->dev || st.st_ino != m->ino ? -ESTALE
			  : dup3(fd, m->fd, m->flags & O_CLOEXEC) < 0 ? -errno
								       : 0;
		close(fd);
		if (err)
			return err;
	}
	return 0;
}

static void close_trees(struct jail *p)
{
	for (unsigned int i = 0; i < p->n; i++)
		if (p->trees[i] >= 0)
			close(p->trees[i]);
	if (p->proc_fd_tree >= 0)
		close(p->proc_fd_tree);
	for (unsigned int i = 0; i < p->n; i++)
		p->trees[i] = -1;
	p->proc_fd_tree = -1;
}

/* What may reach the host's tree by path: the covers' mount points and
 * the shares' folders. */
static int copy_shares(struct jail *p, const char **why)
{
	int err;
	*why = "cannot list the file systems mounted inside the shares";
	if ((err = plan_covers(p, p->shares, p->n)))
		return err;
	*why = "cannot copy the shares' mounts";
	return copy_trees(p, p->shares, p->n);
}

static int enter(struct jail *p, bool *unavailable, const char **why)
{
	int err;
	unsigned int n = p->n;
	*why = "cannot make a mount namespace";
	if (unshare(CLONE_NEWNS)) {
		*unavailable = true;
		return -errno;
	}
	/* Nothing done in here may reach the host's namespace. */
	*why = "cannot make its mounts private";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	if (!p->copied && (err = copy_shares(p, why)))
		return err;
	if ((err = copy_proc_fd(p)))
		return err;
	int own[JAIL_MAX_SHARES + 1];
	memcpy(own, p->trees, n * sizeof(own[0]));
	own[n] = p->proc_fd_tree;
	*why = "cannot list the open directories";
	if ((err = plan_moves(p, p->shares, n, own, n + 1)))
		return err;
	*why = "cannot make its root";
	int root = new_tmpfs("16k", NO_HOST_POWERS);
	if (root < 0)
		return root;
	err = move_mount(root, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) ? -errno : 0;
	if (!err && (err = build(p, n, root)))
		*why = "cannot mount the shares in it";
	/* The old root is mounted over the new one by pivot_root(".", "."):
	 * unmounting "." takes it away, with every mount of the host's. */
	if (!err && (fchdir(root) || syscall(SYS_pivot_root, ".", ".") ||
		     umount2(".", MNT_DETACH) || chdir("/"))) {
		err = -errno;
		*why = "cannot move into it";
	}
	close(root);
	if (!err && (err = move_fds(p)))
		*why = "cannot reopen the shares' folders in it";
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	if (!err && mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof(ro))) {
		err = -errno;
		*why = "cannot make its root read-only";
	}
	return err;
}

int jail_prepare(const struct jail_share *shares, unsigned int n,
		 struct jail **jail, const char **why)
{
	*jail = NULL;
	if (n > JAIL_MAX_SHARES) {
		*why = "too many shares";
		return -E2BIG;
	}
	struct jail *p = calloc(1, sizeof(*p));
	if (!p) {
		*why = "out of memory";
		return -ENOMEM;
	}
	p->shares = shares;
	p->n = n;
	for (unsigned int i = 0; i < n; i++)
		p->trees[i] = -1;
	p->proc_fd_tree = -1;
	/* Copying mounts here needs root; a user's fsvm copies them in its
	 * own namespace, as itself still (its ids are mapped there). */
	int err = copy_shares(p, why);
	if (err == -EPERM) {
		close_trees(p);
		p->nr_covers = 0;
		err = 0;
	} else if (err) {
		jail_free(p);
		return err;
	} else {
		p->copied = true;
	}
	*jail = p;
	return 0;
}

int jail_enter(struct jail *jail, bool *unavailable, const char **why)
{
	*unavailable = false;
	return enter(jail, unavailable, why);
}

void jail_free(struct jail *jail)
{
	if (!jail)
		return;
	close_trees(jail);
	free(jail);
}
