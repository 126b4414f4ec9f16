# Shared helpers for integration tests (sourced, not run).
# FSVM is the binary under test; every check fails loudly with its context.
set -u
FSVM=${FSVM:-$(cd "$(dirname "$0")/../.." && pwd)/fsvm}
TMP=$(mktemp -d /tmp/fsvm-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
failures=0

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

finish() {
	[ "$failures" -eq 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
	exit 0
}
