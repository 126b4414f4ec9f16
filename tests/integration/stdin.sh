#!/bin/sh
# fsvm's stdin, when it is a pipe or a file, is the command's: bytes and
# their end come through, as a pipe; a large stream passes in bounded
# memory; --stdin none keeps it empty.
. "$(dirname "$0")/lib.sh"

# run_piped INPUT_COMMAND ARGS...: run_fsvm with INPUT_COMMAND's output as
# fsvm's stdin.
run_piped() {
	input=$1
	shift
	sh -c "$input" | "$FSVM" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	case $rc in 124 | 125) tail -n 20 "$TMP/err" >&2 ;; esac
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
}

run_piped "printf 'one\ntwo\nthree\n'" run --timeout 300 -- wc -l
expect_status "wc -l of a pipe: status" 0 "$rc"
expect_eq "wc -l of a pipe" 3 "$out"

# A script on stdin, as `fsvm run -- sh < ci.sh`: its status is fsvm's.
printf 'echo from-the-script\nexit 5\n' >"$TMP/ci.sh"
"$FSVM" run --timeout 300 -- sh <"$TMP/ci.sh" >"$TMP/out" 2>"$TMP/err"
expect_eq "a script on stdin: status" 5 "$?"
expect_eq "a script on stdin: output" "from-the-script" "$(cat "$TMP/out")"

# A file's bytes exactly (random ones: any value, no line discipline), as
# a pipe the command can open by name.
head -c $((4 << 20)) /dev/urandom >"$TMP/random"
want=$(sha256sum <"$TMP/random" | cut -d' ' -f1)
"$FSVM" run --timeout 300 -- sh -c 'test -p /dev/stdin && sha256sum /dev/stdin' \
	<"$TMP/random" >"$TMP/out" 2>"$TMP/err"
expect_status "a file on stdin: status" 0 "$?"
expect_eq "a file on stdin: its bytes, through a pipe" "$want" "$(cut -d' ' -f1 "$TMP/out")"

# The end of an empty pipe reaches the command (no hang).
run_piped ":" run --timeout 300 -- sh -c 'cat; echo "end:$?"'
expect_status "an empty pipe: status" 0 "$rc"
expect_eq "an empty pipe: cat ends" "end:0" "$out"

# --stdin none: the command's stdin is empty, the pipe is left alone.
run_piped "echo should-not-arrive" run --timeout 300 --stdin none -- sh -c 'cat; echo "none:$?"'
expect_status "--stdin none: status" 0 "$rc"
expect_eq "--stdin none: nothing read" "none:0" "$out"
expect_error "--stdin with a bad mode" "^fsvm: --stdin: 'pipe' is not auto or none$" run --stdin pipe -- true

# A command that stops reading early ends the run; the endless pipe
# behind it does not keep fsvm.
run_piped "yes" run --timeout 300 -- head -n 2
expect_status "yes | head: status" 0 "$rc"
expect_eq "yes | head" "$(printf 'y\ny')" "$out"

# 1 GiB through in bounded memory: fsvm's peak (guest RAM it touched
# included) stays well below the stream's size.
mkdir -p "$TMP/json" && give_to_test_user "$TMP/json"
run_piped "head -c $((1 << 30)) /dev/zero" run --timeout 580 --mem 512M \
	--json-file "$TMP/json/summary.json" -- wc -c
expect_status "1 GiB on stdin: status" 0 "$rc"
expect_eq "1 GiB on stdin: every byte" $((1 << 30)) "$out"
peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_rss_bytes"])' "$TMP/json/summary.json")
[ "$peak" -lt $((768 << 20)) ] || fail "1 GiB on stdin: fsvm's peak RSS was $peak bytes"
finish
