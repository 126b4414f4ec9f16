/* --gdb: a gdb stub (core/gdb_stub.c) on a thread of its own, on a socket
 * only the user reaches (127.0.0.1, or a UNIX socket of mode 0600), with
 * the vCPUs as its threads: it stops them all outside KVM_RUN when one
 * hits a breakpoint, when gdb interrupts or arrives, and (--gdb-wait)
 * before the first instruction. */
#ifndef FSVM_GDB_SERVER_H
#define FSVM_GDB_SERVER_H

#include <stdbool.h>

#include "core/vcpu.h"

/* Set-up, after the vCPUs are created and while fsvm has the user's
 * rights: listens on spec (a port, or a path with a '/'). With wait, the
 * vCPUs stop before their first instruction until gdb lets them go. */
int gdb_server_open(struct vm *vm, const char *spec, bool wait,
		    const char **why);

/* Starts the stub's thread: after the last set-up a single thread must
 * make (the namespaces), before the vCPUs start. */
int gdb_server_start(struct vm *vm);

/* The vCPU thread, before each KVM_RUN: waits while the world is stopped
 * for gdb. False: the VM is ending. */
bool gdb_vcpu_checkpoint(struct vcpu *vcpu);

/* A KVM_EXIT_DEBUG on the vCPU's thread: the world stops if it was gdb's;
 * the guest's own exception goes back to it. Returns true (the vCPU goes
 * on to its checkpoint). */
bool gdb_vcpu_debug_exit(struct vcpu *vcpu);

/* The vCPU's thread leaves its loop: no kicks from now on. */
void gdb_vcpu_gone(struct vcpu *vcpu);

/* The VM is ending: every stopped vCPU goes (to its end), and the stub
 * tells a waiting gdb the VM exited. */
void gdb_server_release(struct vm *vm);

#endif
