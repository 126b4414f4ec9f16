# fsvm: a small KVM hypervisor with an embedded virtio-fs device.
#   make          build ./fsvm
#   make run      install what is needed, build fsvm and the default guest, run a demo
#   make test     after every edit, no root, no KVM, about a minute: the layering
#                 check, unit tests (also under ASan+UBSan and TSan), the fuzz
#                 seeds and a short round through each target, fsvm's command
#                 line (tests/cli)
#   make check    make test, then what needs KVM: the unit test and fuzz target
#                 that make VMs, and the guest suite (in the lab where this
#                 host's KVM cannot boot stock kernels); docs/HACKING.md
#   make fuzz     fuzz every target for FUZZ_SECONDS (600) each
#   make bench    benchmarks, fsvm beside QEMU + virtiofsd and 9p
#   make install  fsvm, its guests, man page and bash completion under PREFIX
#                 (/usr/local)

CC      ?= gcc
BUILD   := build
GUEST   := $(BUILD)/guest
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -MMD -MP
LDLIBS  := -lpthread -lseccomp -lcap-ng -ljson-c -lm -luring -lz
VERSION := $(shell cat VERSION)
PREFIX  ?= /usr/local
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# TSan does not model fences (gcc warns); ours order guest-shared rings
# against the guest's vCPUs, which TSan cannot see anyway.
TSAN    := -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan

# Everything but main() goes into a library that unit tests link against.
LIB_SRCS := $(filter-out vmm/main.c,$(wildcard vmm/*.c core/*.c arch/x86/*.c pci/*.c devices/*.c virtio/*.c fs/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
SAN_OBJS := $(LIB_SRCS:%.c=$(BUILD)/san/%.o)
TSAN_OBJS := $(LIB_SRCS:%.c=$(BUILD)/tsan/%.o)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
# test_seccomp runs its cases under fsvm's system-call filter, which allows
# what fsvm calls, not what the sanitizers' runtimes add (ASan's thread start
# asks for the CPU affinity): it runs as fsvm is built, without them.
UNIT_SAN_BINS := $(filter-out $(BUILD)/tests-san/test_seccomp,\
		 $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests-san/%))
# test_identity and test_guest_net unshare a user namespace, and
# test_guest_container a mount namespace, which only a single-threaded
# process may: TSan's runtime runs a thread of its own (in a forked child
# too). test_seccomp: as above.
UNIT_TSAN_SRCS := $(filter-out tests/unit/test_identity.c tests/unit/test_jail.c tests/unit/test_seccomp.c tests/unit/test_guest_net.c tests/unit/test_guest_container.c tests/unit/test_job_archive.c,$(UNIT_SRCS))
UNIT_TSAN_BINS := $(UNIT_TSAN_SRCS:tests/unit/%.c=$(BUILD)/tests-tsan/%)

.PHONY: all deps guest guest-microvm guest-modular run test check unit integration fuzz fuzz-check fuzz-corpus bench clean man install uninstall
all: fsvm

deps:
	@tools/deps

# Every object, not the archive: devices register themselves in a section
# that no call reaches (devices/device.h).
fsvm: $(BUILD)/obj/vmm/main.o $(LIB_OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The version is VERSION's; the default guest is found beside the binary at
# run time (vmm/guest_load.c), so no path of this tree is compiled in.
$(BUILD)/obj/vmm/main.o: VERSION
$(BUILD)/obj/vmm/main.o: CFLAGS += -DFSVM_VERSION='"$(VERSION)"'
# A snapshot names the fsvm that made it, and a restore takes no other's.
SNAPSHOT_OBJS := $(addsuffix /vmm/snapshot.o,$(BUILD)/obj $(BUILD)/san $(BUILD)/tsan)
$(SNAPSHOT_OBJS): VERSION
$(SNAPSHOT_OBJS): CFLAGS += -DFSVM_VERSION='"$(VERSION)"'

# The man page is --help itself (help2man), so the two never disagree;
# docs/fsvm.h2m adds what --help is too short for (the --json format).
man: $(BUILD)/fsvm.1
$(BUILD)/fsvm.1: fsvm docs/fsvm.h2m
	@mkdir -p $(dir $@)
	help2man --no-info --no-discard-stderr --version-string="fsvm $(VERSION)" \
		--name="run a command in a KVM guest that shares the host's files" \
		--include=docs/fsvm.h2m --output=$@ ./fsvm

# PREFIX/bin/fsvm finds its guest in PREFIX/lib/fsvm; DESTDIR stages. The
# binary is stripped: its debug information names this tree. The microVM
# guest goes too when it was built (make guest-microvm takes a kernel
# build: install does not force one). What this writes is the man page's
# FILES (docs/fsvm.h2m).
COMPLETIONS := share/bash-completion/completions
install: fsvm guest $(BUILD)/fsvm.1
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/$(COMPLETIONS)
	install -s -m 755 fsvm $(DESTDIR)$(PREFIX)/bin/fsvm
	ln -sf fsvm $(DESTDIR)$(PREFIX)/bin/fsvm-runtime # the OCI runtime (docs/OCI.md)
	for k in $(GUEST_KERNELS) microvm; do \
		if [ $$k = microvm ] && [ ! -e $(GUEST)/microvm/kernel/vmlinux ]; then \
			echo "install: no microVM guest built (make guest-microvm), so none installed"; \
			continue; \
		fi; \
		install -d $(DESTDIR)$(PREFIX)/lib/fsvm/$$k/kernel && \
		install -m 644 $(GUEST)/$$k/kernel/vmlinux $(GUEST)/$$k/kernel/version \
			$(DESTDIR)$(PREFIX)/lib/fsvm/$$k/kernel/ && \
		install -m 644 $(GUEST)/$$k/initramfs.cpio $(DESTDIR)$(PREFIX)/lib/fsvm/$$k/ \
		|| exit 1; \
	done
	install -m 644 $(BUILD)/fsvm.1 $(DESTDIR)$(PREFIX)/share/man/man1/fsvm.1
	install -m 644 completion/fsvm.bash $(DESTDIR)$(PREFIX)/$(COMPLETIONS)/fsvm

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/fsvm $(DESTDIR)$(PREFIX)/bin/fsvm-runtime \
		$(DESTDIR)$(PREFIX)/share/man/man1/fsvm.1 \
		$(DESTDIR)$(PREFIX)/$(COMPLETIONS)/fsvm
	rm -rf $(DESTDIR)$(PREFIX)/lib/fsvm

# Archives: a unit test links only the objects it uses.
$(BUILD)/libfsvm.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libfsvm-san.a: $(SAN_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libfsvm-tsan.a: $(TSAN_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -c -o $@ $<

$(BUILD)/tsan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TSAN) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libfsvm.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c,$^) $(filter %.a,$^) $(LDLIBS) -lcmocka

$(BUILD)/tests-san/%: tests/unit/%.c $(BUILD)/libfsvm-san.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -o $@ $(filter %.c %.a,$^) $(LDLIBS) -lcmocka

$(BUILD)/tests-tsan/%: tests/unit/%.c $(BUILD)/libfsvm-tsan.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TSAN) -o $@ $(filter %.c %.a,$^) $(LDLIBS) -lcmocka

# guest/ is the init's own, in no library: a test of it builds the files.
$(addsuffix /test_dhcp,$(BUILD)/tests $(BUILD)/tests-san $(BUILD)/tests-tsan): guest/dhcp.c
$(addsuffix /test_job_archive,$(BUILD)/tests $(BUILD)/tests-san): guest/job_archive.c
$(addsuffix /test_guest_net,$(BUILD)/tests $(BUILD)/tests-san): guest/net.c guest/dhcp.c
$(addsuffix /test_guest_container,$(BUILD)/tests $(BUILD)/tests-san): guest/container_mounts.c guest/mounts.c guest/process.c guest/signals.c guest/spec.c guest/exec_agent.c

# The guests: Debian's stock kernels (fetched, never installed), each with
# our initramfs holding its own modules, side by side in $(GUEST)/SERIES/
# (--guest-kernel SERIES picks one).
GUEST_KERNELS := 6.1 6.12
GUEST_FILES := $(foreach k,$(GUEST_KERNELS),$(GUEST)/$(k)/kernel/vmlinux $(GUEST)/$(k)/initramfs.cpio)

$(GUEST)/%/kernel/vmlinuz:
	tools/fetch-kernel $(GUEST)/$*/kernel $*

# The same kernel uncompressed: fsvm boots it straight into startup_64, so the
# guest neither decompresses nor relocates itself (seconds in the lab).
$(GUEST)/%/kernel/vmlinux: $(GUEST)/%/kernel/vmlinuz tools/extract-vmlinux
	tools/extract-vmlinux $< $@

$(GUEST)/init: $(wildcard guest/*.c guest/*.h)
	@mkdir -p $(dir $@)
	@echo "guest: building the guest init $@ (static, from guest/*.c)"
	$(CC) -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -Os -static -o $@ $(wildcard guest/*.c)
	@echo "guest: $@ is $$(du -h $@ | cut -f1)"

$(GUEST)/%/initramfs.cpio: $(GUEST)/init guest/mkinitramfs tools/kernel-modules $(GUEST)/%/kernel/vmlinuz
	guest/mkinitramfs $@ $(GUEST)/init $(GUEST)/$*/kernel

guest: $(GUEST_FILES)

# The microVM guest: a small kernel built from Debian's linux-source with
# guest/microvm.config (cached outside the clone, so built once a machine),
# and the init alone (the kernel has everything built in).
guest-microvm: $(GUEST)/microvm/kernel/vmlinux $(GUEST)/microvm/initramfs.cpio

$(GUEST)/microvm/kernel/vmlinux: guest/microvm.config guest/mkmicrovm
	guest/mkmicrovm $(GUEST)/microvm

$(GUEST)/microvm/initramfs.cpio: $(GUEST)/init guest/mkinitramfs $(GUEST)/microvm/kernel/vmlinux
	guest/mkinitramfs $@ $(GUEST)/init $(GUEST)/microvm/kernel

# A kernel developer's kernel, for tests only: the microVM kernel with
# virtio-fs, FUSE and overlay as modules, installed beside it.
guest-modular: $(GUEST)/modular/kernel/vmlinux

$(GUEST)/modular/kernel/vmlinux: guest/microvm.config guest/modular.config guest/mkmicrovm
	guest/mkmicrovm --modular $(GUEST)/modular

# Every test binary runs, then the failures (if any) fail the target. A
# TSan report stops its test binary with a failure. Those that make KVM
# VMs (UNIT_KVM) run in the lab on a machine with no /dev/kvm
# (tools/unit-run); make test leaves them to make check.
UNIT_KVM := test_virtio_pci test_vcpu_state
# Of those, the ones that need a KVM that runs guests, not PVM's (which
# cannot move a restored guest's TSC): the lab's where this host's is PVM.
UNIT_GUEST_KVM := test_vcpu_state
UNIT_ALL_BINS := $(UNIT_BINS) $(UNIT_SAN_BINS) $(UNIT_TSAN_BINS)
UNIT_KVM_BINS := $(filter $(addprefix %/,$(UNIT_KVM)),$(UNIT_ALL_BINS))
unit: $(UNIT_ALL_BINS)
	@tools/unit-run --kvm "$(UNIT_KVM)" --guest-kvm "$(UNIT_GUEST_KVM)" $(UNIT_ALL_BINS)

# libFuzzer targets (clang, ASan+UBSan), each linked against the code it
# drives built for fuzzing, with the harness's helpers (tests/fuzz/*.c but
# the targets and the seed writer). `make fuzz` runs each for FUZZ_SECONDS,
# one at a time; `make fuzz-check` replays the corpus through every target
# and fuzzes each for FUZZ_CHECK_SECONDS (make test does so for those that
# need no KVM, FUZZ_KVM; make check for the rest).
FUZZ_CC := clang
FUZZ_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -g -O1 -MMD -MP \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_LIB_SRCS := $(wildcard fs/*.c virtio/*.c pci/*.c core/*.c arch/x86/*.c) devices/virtio_fs.c \
	devices/virtio_fs_queues.c \
	devices/virtio_net.c \
	devices/virtio_blk.c \
	devices/virtio_vsock.c \
	devices/device.c \
	$(filter-out $(FUZZ_SRCS) tests/fuzz/make_corpus.c,$(wildcard tests/fuzz/*.c))
FUZZ_KVM := fuzz_virtio_pci
FUZZ_KVM_BINS := $(filter $(addprefix %/,$(FUZZ_KVM)),$(FUZZ_BINS))
FUZZ_SECONDS ?= 600
FUZZ_CHECK_SECONDS ?= 10

fuzz: $(FUZZ_BINS)
	tests/fuzz/run $(FUZZ_SECONDS) $(FUZZ_BINS)

fuzz-check: $(FUZZ_BINS)
	@tests/fuzz/run $(FUZZ_CHECK_SECONDS) $(FUZZ_BINS)

# The seed inputs are committed; this writes them again.
fuzz-corpus: tests/fuzz/make_corpus.c
	@mkdir -p $(BUILD)/fuzz
	$(CC) -std=gnu11 -Wall -Wextra -Werror -o $(BUILD)/fuzz/make_corpus $<
	$(BUILD)/fuzz/make_corpus

$(BUILD)/fuzz-obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(BUILD)/libfsvm-fuzz.a: $(FUZZ_LIB_SRCS:%.c=$(BUILD)/fuzz-obj/%.o)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/fuzz/%: $(BUILD)/fuzz-obj/tests/fuzz/%.o $(BUILD)/libfsvm-fuzz.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -lpthread -luring -lz

# Benchmarks, side by side (bench/, results in bench/results/): the request
# path natively, then boots and file systems against QEMU's peers, each in
# one lab run where this host's KVM cannot boot stock kernels.
bench: fsvm guest $(BUILD)/bench/device $(BUILD)/bench/doorbell $(BUILD)/bench/queue_depth
	bench/device
	bench/boot
	bench/fs

# bench/device drives the request path natively (no VM); bench/doorbell
# the doorbell's round trip through the device (bench/device_rig.c: the
# device on synthetic guest memory); bench/queue_depth a deep queue
# through the worker, with its helpers or alone.
$(BUILD)/bench/device $(BUILD)/bench/doorbell $(BUILD)/bench/queue_depth: $(BUILD)/bench/%: bench/%.c $(BUILD)/libfsvm.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c,$^) $(filter %.a,$^) $(LDLIBS)
$(BUILD)/bench/doorbell $(BUILD)/bench/queue_depth: bench/device_rig.c bench/device_rig.h

# make test: no root, no KVM, no guest (Debian's kernel config only, for
# fsvm kconfig; the man page, whose sections tests/cli checks). Every part
# runs; any that failed fails the target.
# tools/check-layers: includes point only down the layers.
test: fsvm $(BUILD)/fsvm.1 $(filter-out $(UNIT_KVM_BINS),$(UNIT_ALL_BINS)) \
		$(filter-out $(FUZZ_KVM_BINS),$(FUZZ_BINS)) $(GUEST)/6.1/kernel/vmlinuz
	@rc=0; \
	tools/check-layers || rc=1; \
	tools/unit-run $(filter-out $(UNIT_KVM_BINS),$(UNIT_ALL_BINS)) || rc=1; \
	tests/fuzz/run $(FUZZ_CHECK_SECONDS) $(filter-out $(FUZZ_KVM_BINS),$(FUZZ_BINS)) || rc=1; \
	FSVM_GUEST_DIR=$(GUEST) tests/integration/run-all --cli || rc=1; \
	exit $$rc

# Guest tests need a KVM that runs stock kernels: this host's, or the lab's
# (tests/integration/run-all). INTEGRATION_KVM adds what needs KVM's API
# only (make check: --unit BIN, --fuzz BIN), run on this host's /dev/kvm if
# there is one, else in the same lab.
integration: fsvm guest guest-microvm guest-modular
	FSVM_FUZZ_SECONDS=$(FUZZ_CHECK_SECONDS) tests/integration/run-all $(INTEGRATION_KVM)

# The builds on the way use every CPU (a fresh clone compiles some 200
# test binaries); the tests themselves run one at a time.
NPROC := $(shell nproc)
check: deps
	@$(MAKE) --no-print-directory -j$(NPROC) test
	@$(MAKE) --no-print-directory -j$(NPROC) $(UNIT_KVM_BINS) $(FUZZ_KVM_BINS)
	@$(MAKE) --no-print-directory -j$(NPROC) integration \
		INTEGRATION_KVM="$(addprefix --unit ,$(filter-out $(addprefix %/,$(UNIT_GUEST_KVM)),$(UNIT_KVM_BINS))) \
		$(addprefix --guest-unit ,$(filter $(addprefix %/,$(UNIT_GUEST_KVM)),$(UNIT_KVM_BINS))) \
		$(addprefix --fuzz ,$(FUZZ_KVM_BINS))"

run: deps
	@$(MAKE) --no-print-directory fsvm guest
	tools/demo

clean:
	rm -rf $(BUILD) fsvm

# Keep the objects built on the way to the test binaries.
.SECONDARY:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
