/* What fsvm and the guest init agree on: files in a cpio archive appended
 * to the initrd, unpacked by the kernel into the initramfs before init
 * starts, and the ports the init reports through. */
#ifndef FSVM_GUEST_PROTOCOL_H
#define FSVM_GUEST_PROTOCOL_H

#define GUEST_SPEC_DIR "fsvm"
/* The command: each argument NUL-terminated, in order. Absent: a shell. */
#define GUEST_SPEC_ARGV GUEST_SPEC_DIR "/argv"
/* Present when the user's terminal is interactive: keep the guest tty
 * cooked; absent: raw, so output bytes pass unchanged. Holds the
 * terminal's size, "ROWS COLS" (empty if unknown). */
#define GUEST_SPEC_TTY GUEST_SPEC_DIR "/tty"

/* The shares to mount, as NUL-terminated fields, three per share:
 * virtio-fs tag, mode, guest path. The first share is the root. */
#define GUEST_SPEC_MOUNTS GUEST_SPEC_DIR "/mounts"
#define GUEST_MOUNT_RO "ro"
#define GUEST_MOUNT_RW "rw"
#define GUEST_MOUNT_OVERLAY "overlay" /* read-only share, tmpfs writes */
#define GUEST_ROOT_TAG "root"
/* Present when every share has a DAX window: mount them with dax=inode
 * (the device marks the files it can map). */
#define GUEST_SPEC_DAX GUEST_SPEC_DIR "/dax"
/* The caller's working directory: the command starts there if it exists. */
#define GUEST_SPEC_CWD GUEST_SPEC_DIR "/cwd"
/* Present when the user named the folder (--cwd): no folder there fails
 * the run (125) instead of starting in /. */
#define GUEST_SPEC_CWD_REQUIRED GUEST_SPEC_DIR "/cwd-required"
/* Variables for the command's environment, each "NAME=VALUE"
 * NUL-terminated; they override the init's own (PATH, HOME, TERM). */
#define GUEST_SPEC_ENV GUEST_SPEC_DIR "/env"
/* Present with --user: the command's ids and home, as NUL-terminated
 * fields: uid, gid (decimal), home folder, user name. */
#define GUEST_SPEC_USER GUEST_SPEC_DIR "/user"
/* Modules of a --kernel of the user's own (kernel developers' mode), to
 * load instead of the initramfs's: the files, and their names in load
 * order, one a line. */
#define GUEST_SPEC_MODULES GUEST_SPEC_DIR "/modules/"
#define GUEST_SPEC_MODULES_ORDER GUEST_SPEC_MODULES "load-order"

/* Present when the VM has a network device: the init brings eth0 up and
 * configures it before the command starts. NUL-terminated fields: "dhcp"
 * (address, gateway, MTU and DNS from the backend's DHCP server: passt),
 * or "static" followed by ADDRESS/PREFIX, the gateway and a DNS server
 * (each "" for none). IPv6 is the kernel's own (router advertisements). */
#define GUEST_SPEC_NET GUEST_SPEC_DIR "/net"
#define GUEST_NET_DHCP "dhcp"
#define GUEST_NET_STATIC "static"

/* A container's job (`fsvm oci`, from an OCI bundle's config.json): what a
 * container runtime gives its process beyond `fsvm run`'s job. */

/* The guest's host name (sethostname before the command starts): its
 * bytes, 64 at most; empty: the kernel's. */
#define GUEST_SPEC_HOSTNAME GUEST_SPEC_DIR "/hostname"
/* Present: GUEST_SPEC_MOUNTS names the root alone, and the new root gets
 * exactly these mounts instead of the init's own /dev, /proc, /sys and
 * /run, in order, after the root switch (a destination resolves in the
 * new root, its symbolic links included; a missing one is made: a folder,
 * or an empty file for a file's bind). Four NUL-terminated fields each:
 * type, source, destination, options. type is a file system (proc,
 * sysfs, tmpfs, devpts, mqueue, cgroup2, devtmpfs, ...: the guest's own,
 * source its device name), GUEST_FSMOUNT_SHARE (source: a share's tag;
 * dax=inode with GUEST_SPEC_DAX) or GUEST_FSMOUNT_BIND (source: an
 * absolute path in the new root, or GUEST_SPEC_FILES followed by NAME,
 * "fsvm/files/0": a file the job carries). options is mount(8)'s
 * comma-separated list: flags (ro, nosuid, nodev, noexec, relatime, bind,
 * rbind, private, ...) and file-system data for the rest (none for a
 * bind). A tmpfs on /dev gets the nodes and links runc makes there, and
 * GUEST_STDOUT_TTY's device as /dev/console. */
#define GUEST_SPEC_FSMOUNTS GUEST_SPEC_DIR "/fsmounts"
#define GUEST_FSMOUNT_SHARE "virtiofs"
#define GUEST_FSMOUNT_BIND "bind"
/* Copies of the host files a container binds (its /etc/hosts, ...). */
#define GUEST_SPEC_FILES GUEST_SPEC_DIR "/files/"
/* The shares after the root: tags "share0", "share1", ... in order. */
#define GUEST_SHARE_TAG_FMT "share%u"
/* Paths in the new root hidden from the command (an empty read-only file
 * or folder over each: OCI maskedPaths) and made read-only
 * (readonlyPaths), NUL-terminated each; a missing one is skipped. */
#define GUEST_SPEC_MASKED GUEST_SPEC_DIR "/masked"
#define GUEST_SPEC_READONLY GUEST_SPEC_DIR "/readonly"
/* The command's process beyond GUEST_SPEC_USER (whose home may then be
 * "": the new root's /etc/passwd entry for the uid, else "/"):
 * NUL-terminated "KEY=VALUE" fields, any of:
 *   groups=G1,G2,...   supplementary groups (default: none)
 *   rlimit=R,SOFT,HARD a resource limit (R: RLIMIT_* number; decimal
 *                      limits, RLIM_INFINITY as "unlimited"); repeatable
 *   caps=B,E,P,I,A     capability sets as hex masks (0x optional):
 *                      bounding, effective, permitted, inheritable,
 *                      ambient (absent: root's; bits past the kernel's
 *                      last capability are ignored)
 *   no_new_privs=1     PR_SET_NO_NEW_PRIVS before exec
 *   umask=OCTAL
 *   env=exact          the environment is GUEST_SPEC_ENV alone (and
 *                      HOME, if it lacks one), not the init's PATH,
 *                      HOME and TERM under it */
#define GUEST_SPEC_PROCESS GUEST_SPEC_DIR "/process"
/* Present: fsvm sends the init messages in COM2's receive FIFO: a byte
 * 1-64 is a signal for the command's process (a container's: `fsvm oci
 * kill`); GUEST_INPUT_WINSIZE and four bytes, the rows and the columns
 * (16 bits each, little-endian), the user's terminal's new size, for the
 * command's terminal (an interactive run's). fsvm sends none before
 * GUEST_MARK_COMMAND, so the init opens GUEST_STDERR_TTY for reading
 * before that mark. */
#define GUEST_SPEC_SIGNALS GUEST_SPEC_DIR "/signals"
#define GUEST_INPUT_WINSIZE 0x80
#define GUEST_INPUT_WINSIZE_LEN 5

/* Present: the init serves `fsvm oci exec` (a second process in the
 * container) on vsock port GUEST_EXEC_PORT, which fsvm's virtio-vsock
 * device connects each host exec to. The stream is frames: a type byte, a
 * 32-bit big-endian length (at most GUEST_EXEC_FRAME_MAX), the payload.
 * The host sends the process (ARG, ENV, CWD, USER, PROCESS, TTY frames,
 * any order), then START; then STDIN (an empty one: end of input) and
 * SIGNAL. The guest sends STDOUT and STDERR, then EXIT last (or, before
 * START is answered, ERROR: one line, and the stream ends). */
#define GUEST_SPEC_EXEC GUEST_SPEC_DIR "/exec"
/* Present: fsvm's stdin is the command's. The init connects to the host
 * (CID 2) on vsock port GUEST_STDIN_PORT and gives the command a pipe of
 * what comes, to the stream's end. The port is below those of the
 * device's own streams (VIRTIO_VSOCK_FIRST_HOST_PORT, 1024 on). */
#define GUEST_SPEC_STDIN GUEST_SPEC_DIR "/stdin"
#define GUEST_STDIN_PORT 1023
#define GUEST_EXEC_PORT 1024
#define GUEST_EXEC_FRAME_MAX 65536
enum guest_exec_frame {
	GUEST_EXEC_ARG = 1, /* an argument, in order */
	GUEST_EXEC_ENV,     /* NAME=VALUE: the whole environment (HOME from
			     * the passwd entry if none) */
	GUEST_EXEC_CWD,     /* the folder (default /) */
	GUEST_EXEC_USER,    /* "UID GID" (default 0 0) */
	GUEST_EXEC_PROCESS, /* a GUEST_SPEC_PROCESS field */
	GUEST_EXEC_TTY,     /* "ROWS COLS" (0 0: unknown): a terminal, whose
			     * output is STDOUT */
	GUEST_EXEC_START,
	GUEST_EXEC_STDIN,
	GUEST_EXEC_SIGNAL,  /* a byte: the signal's number */
	GUEST_EXEC_STDOUT,
	GUEST_EXEC_STDERR,
	GUEST_EXEC_EXIT,    /* a byte: the exit status (128+N: signal N) */
	GUEST_EXEC_ERROR,   /* the process could not start: why */
};

/* Present: the boot is a snapshot's (fsvm run --snapshot-to). The init
 * does all it does before a command (modules, the shares, the root) but
 * run one: it writes GUEST_MARK_SNAPSHOT, where fsvm stops the VM and
 * saves it. What follows the mark runs in each VM restored from it
 * (fsvm run --restore): the init reads its job from the exit device, a
 * 32-bit read of EXIT_DEV_REG_JOB_LEN (the archive's length, at most
 * GUEST_JOB_MAX) and that many byte reads of EXIT_DEV_REG_JOB (rep insb:
 * one exit a page), a newc cpio archive like the initramfs's job,
 * unpacked under GUEST_RESTORED_JOB_DIR; it reads the command's files
 * (argv, tty, cwd, cwd-required, env, user) from there, sets its
 * terminals up again and runs the command. */
#define GUEST_SPEC_SNAPSHOT GUEST_SPEC_DIR "/snapshot"
#define GUEST_RESTORED_JOB_DIR "/run/fsvm-job"
#define GUEST_JOB_MAX (4u << 20)

/* The exit device: I/O ports through which the guest init hands back its
 * command's exit status, and marks the steps of its boot (fsvm -v shows
 * them on its timeline). */
#define EXIT_DEV_PORT 0xf4
#define EXIT_DEV_LEN 8
#define EXIT_DEV_REG_STATUS 0 /* byte write: exit status, ends the VM */
#define EXIT_DEV_REG_MARK 1   /* byte write: a GUEST_MARK_* */
#define EXIT_DEV_REG_JOB 2    /* byte read: a restored VM's job, in order */
/* 32-bit write: the time on the kernel's message clock in microseconds, sent just
 * before GUEST_MARK_INIT: fsvm reckons when the kernel's clock started. */
#define EXIT_DEV_REG_CLOCK 4
/* 32-bit read: the length of a restored VM's job (0: none). */
#define EXIT_DEV_REG_JOB_LEN 4

/* The steps the init marks. GUEST_MARK_COMMAND also tells fsvm that from
 * now on only the exit device gives the VM a status. */
#define GUEST_MARK_COMMAND 1      /* starting the command */
#define GUEST_MARK_INIT 2         /* init is running */
#define GUEST_MARK_MODULES 3      /* modules loaded */
#define GUEST_MARK_ROOT 4         /* the root share is mounted */
#define GUEST_MARK_COMMAND_EXIT 5 /* the command ended */
/* Sent with the status when the kernel has oopsed (tainted 'D'): fsvm
 * ends with 125, not the command's status, as a crash says where. */
#define GUEST_MARK_KERNEL_OOPSED 6
/* The snapshot point (GUEST_SPEC_SNAPSHOT): the VM stops here, and each
 * VM restored from it goes on from here. */
#define GUEST_MARK_SNAPSHOT 7

/* Console devices: the command's stdin/stdout, and its stderr (which also
 * carries kernel messages). */
#define GUEST_STDOUT_TTY "/dev/ttyS0"
#define GUEST_STDERR_TTY "/dev/ttyS1"

#endif
