# Shared helpers for the tests in tests/integration and tests/cli (sourced, not run).
# FSVM runs the binary under test as an unprivileged user (TEST_UID:TEST_GID,
# no groups: fsvm needs nothing more than /dev/kvm); FSVM_AS_ROOT runs it as
# root, for what only root may do. tests/cli sets FSVM to fsvm itself, run as
# whoever runs the test. Every check fails loudly with its context.
# TOP is the source tree (tests live two levels below it).
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
FSVM=${FSVM:-$TOP/tests/integration/fsvm-as-user}
FSVM_AS_ROOT=${FSVM_AS_ROOT:-$TOP/fsvm}
TEST_UID=${FSVM_TEST_UID:-4242}
TEST_GID=${FSVM_TEST_GID:-4242}
TMP=$(mktemp -d /tmp/fsvm-test.XXXXXX)
chmod 755 "$TMP" # the test user reads what tests leave here
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
	# The lab runs the 6.1 guest kernel, whose modules live in the build tree.
	modprobe -q loop 2>/dev/null || modprobe -q -d "$TOP/build/guest/6.1/kernel/modules" loop
	modprobe -q ext4 2>/dev/null || modprobe -q -d "$TOP/build/guest/6.1/kernel/modules" ext4
	truncate -s "$1" "$TMP/ext4.img" && mkfs.ext4 -q -F -i 4096 "$TMP/ext4.img" &&
		mkdir -p "$TMP/ext4" && mount -o loop "$TMP/ext4.img" "$TMP/ext4" ||
		{ echo "FAIL: cannot make an ext4 folder" >&2; exit 1; }
	mounts="$TMP/ext4 $mounts"
	EXT4_DIR=$TMP/ext4
	give_to_test_user "$EXT4_DIR"
}

# give_to_test_user PATH: what the tests made as root becomes the test
# user's, as if that user had made it (the guest's root is that user).
give_to_test_user() {
	chown -R "$TEST_UID:$TEST_GID" "$@"
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

# expect_status WHAT EXPECTED RC: fsvm's status; when it is not the one
# expected, the end of fsvm's stderr ($TMP/err) goes to the test's log.
expect_status() {
	expect_eq "$1" "$2" "$3"
	[ "$2" = "$3" ] || tail -n 20 "$TMP/err" >&2
}

# run_fsvm ARGS...: runs fsvm as the test user, leaving $out, $err and $rc.
# A guest or fsvm that failed (125) or timed out (124: with where its vCPUs
# waited) leaves its last words in the test's log: run-all runs a test again
# when they name the lab's CPU fault, and shows where a stuck guest was.
run_fsvm() {
	"$FSVM" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	case $rc in 124 | 125) tail -n 20 "$TMP/err" >&2 ;; esac
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
}

# expect_error WHAT REGEX ARGS...: fsvm ARGS fails as bad input must: 125 and
# one line on stderr, which matches REGEX.
expect_error() {
	what=$1 regex=$2
	shift 2
	run_fsvm "$@"
	expect_eq "$what: status" 125 "$rc"
	expect_eq "$what: one line" 1 "$(printf '%s\n' "$err" | wc -l)"
	expect_match "$what: message" "$regex" "$err"
}

# run_fsvm_as_root ARGS...: the same, fsvm started as root.
run_fsvm_as_root() {
	FSVM=$FSVM_AS_ROOT run_fsvm "$@"
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
