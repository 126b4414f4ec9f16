/* A FUSE server's state as a blob, for a VM snapshot: the guest kernel
 * keeps node ids, open file handles and the INIT it negotiated, so a server
 * made for the restored guest must take them back as they were. */
#ifndef FSVM_FUSE_STATE_H
#define FSVM_FUSE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fuse_server.h"

/*
 * The blob, version 1: little-endian, no padding, nothing implied.
 *
 * Header, 48 bytes:
 *   0  8  magic "fsvmFUSE"
 *   8  4  version, 1
 *  12  4  session: bit 0 initialized (INIT ran); other bits 0
 *  16  8  the INIT flags agreed (srv->flags: flags2 in the high half)
 *  24  8  the next node id the server would hand out (ids are never
 *         reused, so forgotten ones stay dead), at least 2
 *  32  8  the next fh, at least 1
 *  40  4  inodes that follow (root, node id 1, is the share's and not
 *         among them)
 *  44  4  handles that follow them
 * Then each inode, 44 bytes and its path:
 *   0  8  node id (INODE_SEALED set for a pseudo file system's mount
 *         point), neither 0 nor 1, below the next node id
 *   8  8  lookup count (the guest's references), at least 1
 *  16  8  st_dev, 24 8 st_ino: the host file it was
 *  32  4  file type (the S_IFMT bits of st_mode)
 *  36  4  flags: bit 0 stale (its file could not be named at save:
 *         unlinked, moved out of the share); other bits 0
 *  40  4  path length, 0 exactly when stale; the path follows:
 *         relative to the share's root, no NUL, no empty, "." or ".."
 *         component, shorter than PATH_MAX
 * Then each handle, 20 bytes:
 *   0  8  fh, neither 0 nor past the next fh
 *   8  8  node id of its file: root's or an inode's above, or 0 when its
 *         file had none (the handle comes back stale)
 *  16  4  the host open flags (O_DIRECTORY for a directory: then exactly
 *         O_RDONLY | O_DIRECTORY); writable when they open for writing
 * Nothing may follow. A directory's read position is not kept: each
 * READDIR names its own offset.
 *
 * Restoring checks every file against the host again: a node's path is
 * opened below the root (RESOLVE_BENEATH, no symlinks, O_PATH|O_NOFOLLOW)
 * and must still be the same (st_dev, st_ino) and type, on a pseudo file
 * system exactly when sealed; one that is not comes back stale, with its
 * node id, lookup count and handles: every request on it answers ESTALE
 * and FORGET (RELEASE) still drops it. A file whose inode number the host
 * gave to a new file after the old one's last reference went looks the
 * same (as it would to the running server: (st_dev, st_ino) is the key).
 */

/* Writes the server's state into a malloc'd blob (*buf, *len). The server
 * must be quiescent (no request in flight; the caller stopped the
 * queues). Returns 0 or -errno. */
int fuse_server_save_state(struct fuse_server *srv, unsigned char **buf,
			   size_t *len);

/* Into a fresh server (created on the same share, no request run yet):
 * restores what save wrote. Returns 0 or -errno: -EBADMSG for a blob that
 * is not one, -ENFILE past the server's caps, -EINVAL for INIT flags this
 * server would not offer, -EROFS for a writable handle on a read-only
 * share, -EBUSY for a server that is not fresh; then err (errlen bytes)
 * holds one line naming what is wrong, and the server is fresh again.
 * Any input is survivable. */
int fuse_server_restore_state(struct fuse_server *srv, const unsigned char *buf,
			      size_t len, char *err, size_t errlen);

/* Undoes a restore that succeeded, for a caller whose own restore failed
 * after it: the server is fresh again (its next ids stay where they are).
 * No request may be in flight. */
void fuse_server_forget_state(struct fuse_server *srv);

/* For the device's DAX window, which names its mappings' files by node
 * id in a snapshot: the node id of the file open at fd (0 and -ENOENT
 * when the guest holds no node of it), and the regular file a node names
 * opened again for a mapping, read-only or read-write (an fd, -ESTALE for
 * an unknown or stale node, -EROFS for writable on a read-only share, or
 * another -errno). */
int fuse_server_node_of_fd(struct fuse_server *srv, int fd, uint64_t *nodeid);
int fuse_server_open_node(struct fuse_server *srv, uint64_t nodeid,
			  bool writable);

#endif
