#!/bin/sh
# fsvm kconfig: Debian's guest config has what fsvm needs; a copy without
# virtio-fs gets a fragment naming it. Needs no KVM, no guest and no root,
# only Debian's config (make guest): fsvm runs as whoever runs the test.
FSVM=$(cd "$(dirname "$0")/../.." && pwd)/fsvm
. "$(dirname "$0")/../integration/lib.sh"

config=${FSVM_GUEST_DIR:-$TOP/build/guest}/6.1/kernel/config
[ -s "$config" ] || { echo "FAIL: no $config (make guest)" >&2; exit 1; }

run_fsvm kconfig "$config"
expect_eq "debian: status" 0 "$rc"
expect_eq "debian: no fragment" "" "$out"
expect_match "debian: verdict" "has everything fsvm needs" "$err"
expect_match "debian: modules named" "modules .*CONFIG_VIRTIO_FS" "$err"

grep -v '^CONFIG_VIRTIO_FS=' "$config" >"$TMP/no-virtiofs.config"
chmod 644 "$TMP/no-virtiofs.config"
run_fsvm kconfig "$TMP/no-virtiofs.config"
expect_eq "no virtiofs: status" 1 "$rc"
expect_eq "no virtiofs: fragment" "CONFIG_VIRTIO_FS=y" "$(printf '%s\n' "$out" | grep -v '^#')"
expect_match "no virtiofs: verdict" "lacks 1 option" "$err"

# The fragment merges: appended, the config passes.
cat "$TMP/no-virtiofs.config" >"$TMP/merged.config"
printf '%s\n' "$out" >>"$TMP/merged.config"
run_fsvm kconfig "$TMP/merged.config"
expect_eq "merged: status" 0 "$rc"

# --net: what the guest's network needs too, only when asked.
run_fsvm kconfig --net "$config"
expect_eq "debian --net: status" 0 "$rc"
expect_match "debian --net: virtio-net a module" "modules .*CONFIG_VIRTIO_NET" "$err"
grep -v '^CONFIG_VIRTIO_NET=' "$config" >"$TMP/no-net.config"
chmod 644 "$TMP/no-net.config"
run_fsvm kconfig "$TMP/no-net.config"
expect_eq "no virtio-net, no --net: status" 0 "$rc"
run_fsvm kconfig --net "$TMP/no-net.config"
expect_eq "no virtio-net, --net: status" 1 "$rc"
expect_eq "no virtio-net, --net: fragment" "CONFIG_VIRTIO_NET=y" "$(printf '%s\n' "$out" | grep -v '^#')"

# --disk: virtio-blk (a module will do) and the block layer, only when asked.
run_fsvm kconfig --disk "$config"
expect_eq "debian --disk: status" 0 "$rc"
expect_match "debian --disk: virtio-blk a module" "modules .*CONFIG_VIRTIO_BLK" "$err"
grep -v '^CONFIG_VIRTIO_BLK=' "$config" >"$TMP/no-blk.config"
chmod 644 "$TMP/no-blk.config"
run_fsvm kconfig --net "$TMP/no-blk.config"
expect_eq "no virtio-blk, no --disk: status" 0 "$rc"
run_fsvm kconfig --disk --net "$TMP/no-blk.config"
expect_eq "no virtio-blk, --disk --net: status" 1 "$rc"
expect_eq "no virtio-blk, --disk: fragment" "CONFIG_VIRTIO_BLK=y" "$(printf '%s\n' "$out" | grep -v '^#')"

# A config with none of it: every option, virtio-pci first of its pair.
echo "# CONFIG_64BIT is not set" >"$TMP/empty.config"
chmod 644 "$TMP/empty.config"
run_fsvm kconfig "$TMP/empty.config"
expect_eq "empty: status" 1 "$rc"
for o in CONFIG_VIRTIO_PCI CONFIG_FUSE_FS CONFIG_FUSE_DAX CONFIG_OVERLAY_FS \
	CONFIG_SERIAL_8250_CONSOLE CONFIG_DEVTMPFS; do
	expect_match "empty: $o" "^$o=y$" "$(printf '%s\n' "$out" | grep "^$o=")"
done

run_fsvm kconfig "$TMP/nonexistent.config"
expect_eq "missing file: status" 125 "$rc"
expect_match "missing file: one line" "cannot read .*nonexistent.config" "$err"

finish
