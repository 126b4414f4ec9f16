# Shared helpers for integration tests (sourced, not run).
# FSVM is the binary under test; every check fails loudly with its context.
# TOP is the source tree (tests live two levels below it).
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
FSVM=${FSVM:-$TOP/fsvm}
TMP=$(mktemp -d /tmp/fsvm-test.XXXXXX)
mounts=""
cleanup() {
	for m in $mounts; do umount "$m" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
failures=0

# ext4_dir SIZE: sets EXT4_DIR to a fresh folder on an ext4 loop image (user
# xattrs, O_DIRECT and file handles, which the lab's tmpfs lacks).
ext4_dir() {
	# The lab runs the guest kernel, whose modules live in the build tree.
	modprobe -q loop 2>/dev/null || modprobe -q -d "$TOP/build/guest/kernel/modules" loop
	modprobe -q ext4 2>/dev/null || modprobe -q -d "$TOP/build/guest/kernel/modules" ext4
	truncate -s "$1" "$TMP/ext4.img" && mkfs.ext4 -q -F -i 4096 "$TMP/ext4.img" &&
		mkdir -p "$TMP/ext4" && mount -o loop "$TMP/ext4.img" "$TMP/ext4" ||
		{ echo "FAIL: cannot make an ext4 folder" >&2; exit 1; }
	mounts="$TMP/ext4 $mounts"
	EXT4_DIR=$TMP/ext4
}

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: expected [$2], got [$3]"
}

# expect_match WHAT REGEX TEXT
expect_match() {
	printf '%s' "$3" | grep -Eq -- "$2" || fail "$1: [$3] does not match /$2/"
}

# run_fsvm ARGS...: runs fsvm, leaving $out, $err and $rc.
run_fsvm() {
	"$FSVM" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
}

# wait_for_file PATH PID: waits up to 300 s for a guest to create PATH, less
# if PID (its fsvm) ends first.
wait_for_file() {
	i=0
	while [ ! -e "$1" ] && [ $i -lt 3000 ] && kill -0 "$2" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
}

finish() {
	[ "$failures" -eq 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
	exit 0
}
