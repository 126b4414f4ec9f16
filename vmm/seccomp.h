/* The system-call filter fsvm runs under once the VM is set up. */
#ifndef FSVM_SECCOMP_H
#define FSVM_SECCOMP_H

#include <stdbool.h>

/* Sets PR_SET_NO_NEW_PRIVS and loads, for every thread of the process, a
 * filter that allows only the system calls running the VM makes; any other
 * kills the process (SIGSYS). Call it once set-up is done, before the vCPUs
 * start. With debugger (--gdb), also what the gdb stub asks of KVM.
 * Returns 0 or a negative errno. */
int seccomp_lock_down(bool debugger);

#endif
