#!/bin/sh
# Kernel developers' mode: a kernel with its modules from --modules DIR, laid
# out as `make modules_install INSTALL_MOD_PATH=DIR` leaves them: Debian's
# packaged kernel (virtio-pci, FUSE, virtio-fs and overlay are modules), and
# a kernel built from linux-source with virtio-fs, FUSE and overlay as modules.
# The initrd has only fsvm's init, no modules: the share mounts only if fsvm
# brought them, and the guest sees the tree at /lib/modules/$(uname -r).
. "$(dirname "$0")/lib.sh"

kdir=$TOP/build/guest/6.1/kernel
mods=$kdir/modules
ver=$(cat "$kdir/version")
[ -f "$mods/lib/modules/$ver/modules.dep" ] || { echo "FAIL: no module tree in $mods (make guest)" >&2; exit 1; }

# An initramfs of the init alone.
mkdir -p "$TMP/bare/dev"
cp "$TOP/build/guest/init" "$TMP/bare/init"
(cd "$TMP/bare" && find . | cpio -o -H newc --owner 0:0 --quiet) >"$TMP/bare.cpio"
chmod 644 "$TMP/bare.cpio"

check='awk "{ print \$1 }" /proc/modules | grep -x -e virtiofs -e fuse -e virtio_pci -e overlay | LC_ALL=C sort | tr "\n" " "
echo; uname -r; test -f /lib/modules/$(uname -r)/modules.dep && echo tree-shared
modprobe -n -v loop >/dev/null && echo modprobe-finds-loop'
for kernel in vmlinuz vmlinux; do
	run_fsvm run --timeout 600 --kernel "$kdir/$kernel" --modules "$mods" \
		--initrd "$TMP/bare.cpio" -- sh -c "$check"
	expect_eq "$kernel: status" 0 "$rc"
	expect_eq "$kernel: modules loaded" "fuse overlay virtio_pci virtiofs " "$(printf '%s\n' "$out" | sed -n 1p)"
	expect_eq "$kernel: version" "$ver" "$(printf '%s\n' "$out" | sed -n 2p)"
	expect_match "$kernel: tree at /lib/modules" "tree-shared" "$out"
	expect_match "$kernel: modprobe" "modprobe-finds-loop" "$out"
done

# A kernel built here from Debian's linux-source (make guest-modular: the
# microVM config with virtio-fs, FUSE and overlay as modules), its modules
# installed by `make modules_install INSTALL_MOD_PATH=DIR`.
mdir=$TOP/build/guest/modular/kernel
mver=$(cat "$mdir/version")
[ -f "$mdir/modules/lib/modules/$mver/modules.dep" ] || { echo "FAIL: no module tree in $mdir/modules (make guest-modular)" >&2; exit 1; }
grep -qx 'CONFIG_VIRTIO_FS=m' "$mdir/config" || { echo "FAIL: $mdir/config does not build virtio-fs as a module" >&2; exit 1; }
run_fsvm run --timeout 600 --kernel "$mdir/vmlinux" --modules "$mdir/modules" \
	--initrd "$TMP/bare.cpio" -- sh -c 'awk "{ print \$1 }" /proc/modules | LC_ALL=C sort | tr "\n" " "
echo; uname -r; cat /proc/sys/kernel/tainted'
expect_eq "built kernel: status" 0 "$rc"
expect_eq "built kernel: modules loaded" "fuse overlay virtiofs " "$(printf '%s\n' "$out" | sed -n 1p)"
expect_eq "built kernel: version" "$mver" "$(printf '%s\n' "$out" | sed -n 2p)"
# Loaded from the build's own tree: no module from elsewhere taints it.
expect_eq "built kernel: not tainted" 0 "$(printf '%s\n' "$out" | sed -n 3p)"

# Without the modules the same initrd cannot mount the root: one line says
# which option the kernel lacks.
run_fsvm run --timeout 600 --kernel "$kdir/vmlinux" --initrd "$TMP/bare.cpio" -- true
expect_eq "no modules: status" 125 "$rc"
expect_match "no modules: names the option" "has no virtiofs file system: build it with CONFIG_VIRTIO_FS" "$err"

# A --modules folder that is not an installed tree: one line.
run_fsvm run --modules "$TMP" -- true
expect_eq "bad --modules: status" 125 "$rc"
expect_match "bad --modules: message" "no lib/modules/VERSION" "$err"
finish
