#!/bin/sh
# The default root is the host's own, read-only under a throwaway overlay;
# a read-only share refuses writes; symlinks never lead out of a share.
# Shares honour no set-id bits, so the guest's root can run the host's
# setuid-root mount (owned by nobody in the guest) as root.
. "$(dirname "$0")/lib.sh"
ro=$TMP/ro
mkdir -p "$ro"
echo original >"$ro/file"
# Somewhere the guest cannot see: it mounts its own /run.
secret=$(mktemp /run/fsvm-secret.XXXXXX)
echo "host secret" >"$secret"
ln -s "$secret" "$ro/escape"

run_fsvm run --share "$ro:/ro:ro" -- sh -c '
	cat /etc/os-release
	echo "---"
	echo overlay > /etc/fsvm-overlay-test && cat /etc/fsvm-overlay-test
	echo "---"
	echo x > /ro/new 2>/dev/null && echo "ro: write allowed" || echo "ro: write refused"
	echo y >> /ro/file 2>/dev/null && echo "ro: append allowed" || echo "ro: append refused"
	rm /ro/file 2>/dev/null && echo "ro: unlink allowed" || echo "ro: unlink refused"
	touch /tmp/probe; mv /tmp/probe /ro/ 2>/dev/null && echo "ro: rename allowed" || echo "ro: rename refused"
	mkdir /ro/d 2>/dev/null && echo "ro: mkdir allowed" || echo "ro: mkdir refused"
	cat /ro/file
	echo "link: $(readlink /ro/escape)"
	cat /ro/escape 2>/dev/null || echo "escape: no such file in the guest"
	grep " /ro " /proc/mounts | cut -d" " -f3,4 | cut -d, -f1
	grep -c "^[^ ]* \(/\|/ro\) [^ ]* [^ ]*nosuid" /proc/mounts | sed "s/^/nosuid mounts: /"
	mount -t tmpfs scratch /mnt && echo "mount as root: ok"'
expect_eq "status" 0 "$rc"
expect_eq "os-release" "$(cat /etc/os-release)" "$(echo "$out" | sed -n '1,/^---$/p' | sed '$d')"
expect_match "overlay write" "^overlay$" "$(echo "$out" | sed -n '/^---$/,/^---$/p' | sed -n 2p)"
[ -e /etc/fsvm-overlay-test ] && fail "the overlay wrote through to the host"
for op in write append unlink rename mkdir; do
	expect_match "ro $op" "ro: $op refused" "$out"
done
expect_match "ro file intact" "^original$" "$out"
expect_eq "host file intact" original "$(cat "$ro/file")"
[ -e "$ro/new" ] && fail "a read-only share created a file on the host"
expect_match "symlink text" "link: $secret" "$out"
expect_match "symlink target not reachable" "escape: no such file in the guest" "$out"
case $out in *"host secret"*) fail "a symlink led out of the share" ;; esac
expect_match "mount is virtiofs ro" "virtiofs ro" "$out"
expect_match "the root and /ro are nosuid" "^nosuid mounts: 2$" "$out"
expect_match "the guest's root runs the host's setuid mount" "^mount as root: ok$" "$out"
rm -f "$secret"

# Every cache mode reads and writes the same files.
rw=$TMP/rw
mkdir -p "$rw"
give_to_test_user "$rw"
for mode in none auto always; do
	echo "host-$mode" >"$rw/file"
	give_to_test_user "$rw/file"
	run_fsvm run --cache "$mode" --share "$rw:/mnt/rw" -- sh -c 'cat /mnt/rw/file; echo "guest" >> /mnt/rw/file'
	expect_eq "cache=$mode status" 0 "$rc"
	expect_eq "cache=$mode read" "host-$mode" "$out"
	expect_eq "cache=$mode write" "host-$mode
guest" "$(cat "$rw/file")"
done
finish
