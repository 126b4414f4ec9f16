#!/bin/sh
# The --json summary is written on every exit of `fsvm run`, a bad flag and
# a bad config file included, with a reason CI can tell apart (docs/json.md).
# What needs a guest (a panic, a reset, a timeout, seccomp) is
# tests/integration/exit_reasons.sh's. Needs no KVM and no root.
FSVM=$(cd "$(dirname "$0")/../.." && pwd)/fsvm
. "$(dirname "$0")/../integration/lib.sh"

# summary FILE: "fsvm_json|status|ended_by|reason|message".
summary() {
	python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
e = j["exit"]
print(j["fsvm_json"], e["status"], e["ended_by"], e["reason"], e["message"], sep="|")' "$1" 2>&1
}

run_fsvm run --cpus 0 --json-file "$TMP/flag.json" -- true
expect_eq "bad flag: status" 125 "$rc"
expect_eq "bad flag: one line" "fsvm: --cpus: '0' is not a number from 1 to 64" "$err"
expect_eq "bad flag: summary" "2|125|fsvm|bad_usage|--cpus: '0' is not a number from 1 to 64" \
	"$(summary "$TMP/flag.json")"

# The file named after the bad flag, and an unknown flag.
run_fsvm run --bogus --json="$TMP/unknown.json" -- true
expect_eq "unknown flag: status" 125 "$rc"
expect_match "unknown flag: summary" "^2\|125\|fsvm\|bad_usage\|unknown option '--bogus'" \
	"$(summary "$TMP/unknown.json")"

# --json alone: the summary on stdout.
run_fsvm run --json --timeout -1 -- true
expect_eq "bad flag, --json: status" 125 "$rc"
printf '%s\n' "$out" >"$TMP/stdout.json"
expect_match "bad flag, --json: summary on stdout" "^2\|125\|fsvm\|bad_usage\|--timeout: " \
	"$(summary "$TMP/stdout.json")"

printf '{"cpus": 2,\n "cpus": 3}\n' >"$TMP/twice.json"
run_fsvm run --config "$TMP/twice.json" --json-file "$TMP/config.json" -- true
expect_eq "bad config: status" 125 "$rc"
expect_eq "bad config: summary" "2|125|fsvm|bad_config|$TMP/twice.json: line 2: a key given twice" \
	"$(summary "$TMP/config.json")"
run_fsvm run --config "$TMP/none.json" --json-file "$TMP/noconfig.json" -- true
expect_eq "missing config: summary" "2|125|fsvm|bad_config|--config $TMP/none.json: No such file or directory" \
	"$(summary "$TMP/noconfig.json")"
# A value the file gives that fsvm refuses is the file's too.
printf '{"mem": "lots"}\n' >"$TMP/mem.json"
run_fsvm run --config "$TMP/mem.json" --json-file "$TMP/value.json" -- true
expect_match "bad config value: summary" "^2\|125\|fsvm\|bad_config\|$TMP/mem.json: key 'mem'" \
	"$(summary "$TMP/value.json")"
finish
