#!/bin/sh
# The guest command's exit status, stdout and stderr come back separately.
. "$(dirname "$0")/lib.sh"

run_fsvm run -- sh -c 'echo to-stdout; echo to-stderr >&2; exit 7'
expect_eq "exit status" 7 "$rc"
expect_eq "stdout" "to-stdout" "$out"
expect_match "stderr" "to-stderr" "$err"
case $out in *to-stderr*) fail "stderr leaked into stdout" ;; esac

# Arguments keep their spaces and quotes on their way to the guest.
run_fsvm run -- printf '[%s]\n' 'a b' '"q"' "it's" '' '*'
expect_eq "status" 0 "$rc"
expect_eq "arguments" "$(printf '[%s]\n' 'a b' '"q"' "it's" '' '*')" "$out"

run_fsvm run -- true
expect_eq "true" 0 "$rc"
run_fsvm run -- false
expect_eq "false" 1 "$rc"
finish
