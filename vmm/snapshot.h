/* A snapshot of the whole VM (docs/snapshot.md): taken at the guest
 * init's snapshot point into a folder (`memory` and `state`), and a new
 * VM, built as the snapshot's was, restored from it. Each part of the
 * machine saves and restores its own section; this file names them,
 * orders them and checks that the machine is the one the snapshot holds. */
#ifndef FSVM_VMM_SNAPSHOT_H
#define FSVM_VMM_SNAPSHOT_H

#include <stddef.h>

#include "arch/x86/board.h"
#include "core/snapshot_file.h"
#include "devices/device.h"
#include "vmm/console.h"

/* The folder's files. */
#define SNAPSHOT_MEMORY_FILE "memory"
#define SNAPSHOT_STATE_FILE "state"
/* At most this many words of flags made the snapshot's machine. */
#define SNAPSHOT_WORDS_MAX 512

/* What a snapshot holds: the board (its vCPUs, VM and virtio bus), the
 * console's UARTs and the devices. */
struct snapshot_machine {
	struct board *board;
	struct console *con;
	struct machine *machine;
};

/* With the vCPUs out of KVM_RUN: settles them, waits for the shares'
 * requests in hand, writes dirfd's memory and state (the flags, words,
 * first), each whole or not at all. 0, or -errno with a line in err. */
int snapshot_take(const struct snapshot_machine *sm, int dirfd,
		  const char *const *words, unsigned int nr_words, char *err,
		  size_t errlen);

/* Loads dir's state (checked whole) and opens its memory (at least the
 * state's size), *mem_fd; 0, or -errno with a line in err. */
int snapshot_open(const char *dir, struct snapshot *s, int *mem_fd, char *err,
		  size_t errlen);

/* The flags that made the snapshot's machine, pointing into s (at most
 * SNAPSHOT_WORDS_MAX, NULL-terminated, malloc'd array): 0 or -EBADMSG
 * with a line in err. */
int snapshot_words(const struct snapshot *s, char ***words,
		   unsigned int *nr_words, char *err, size_t errlen);

/* Into a machine built as the snapshot's (RAM mapped from its memory,
 * the devices added, the vCPUs made, none run): every section, the VM's
 * before the vCPUs', each device's before its transport's, which starts
 * it. 0, or -errno with a line in err. */
int snapshot_restore(const struct snapshot_machine *sm,
		     const struct snapshot *s, char *err, size_t errlen);

#endif
