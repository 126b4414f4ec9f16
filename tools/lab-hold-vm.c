/* The lab's init runs this once: it makes one empty KVM VM and leaves a
 * child holding it open for the lab's whole life.
 *
 * Why: while any VM exists, KVM keeps its preempt-notifier static key on.
 * Without a held VM, the first VM made after none and the last one closed
 * each patch that key's jump in __schedule (text_poke with int3 and IPIs
 * to every CPU), and the lab's emulator, QEMU 7.2's TCG, now and then
 * wedges both lab CPUs right there (docs/LAB.md). */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		perror("lab-hold-vm: /dev/kvm");
		return 1;
	}
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0) {
		perror("lab-hold-vm: KVM_CREATE_VM");
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("lab-hold-vm: fork");
		return 1;
	}
	if (child == 0)
		for (;;)
			pause();
	return 0;
}
