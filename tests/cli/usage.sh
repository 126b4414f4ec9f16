#!/bin/sh
# fsvm's command line before any KVM: bad options and config files are one
# clear line on stderr and exit 125, never a crash; --help and --version
# answer. (No /dev/kvm: tests/cli/check.sh.) Needs no KVM, no guest and no root: fsvm
# runs as whoever runs the test.
FSVM=$(cd "$(dirname "$0")/../.." && pwd)/fsvm
. "$(dirname "$0")/../integration/lib.sh"

expect_error "no command" "no command given"
expect_error "unknown flag" "unknown option '--bogus'" run --bogus
expect_error "missing value" "option '--cpus' needs a value" run --cpus
expect_error "bad cpus" "--cpus: 'x'" run --cpus x -- true
expect_error "too many cpus" "--cpus: '65'" run --cpus 65 -- true
expect_error "bad mem" "--mem: '12Q'" run --mem 12Q -- true
expect_error "tiny mem" "--mem: '1M'" run --mem 1M -- true
expect_error "bad timeout" "--timeout: '-1'" run --timeout -1 -- true
expect_error "bad share" "--share: ':/x'" run --share :/x -- true
expect_error "bad cache" "--cache: 'sometimes'" run --cache sometimes -- true
expect_error "a prefix" "^fsvm: unknown option '--mic' .did you mean '--microvm' or '--mac'..$" run --mic -- true
expect_error "-- as a value" "option '--env' needs a value, not '--'" run --env -- true
expect_error "an option as a value" "option '--share' needs a value, not '--cpus'" run --share --cpus 2 -- true
expect_error "--json FILE" "--json takes its file as --json=out.json or --json-file out.json" run --json out.json --cpus 1
expect_error "a near miss" "unknown option '--timout' .did you mean '--timeout'" run --timout 3 -- true
expect_error "bad transport" "--transport: 'usb' is not pci or mmio" run --transport usb -- true
expect_error "bad disk option" "--disk: 'a.img,fast' is not FILE" run --disk a.img,fast -- true
expect_error "long disk serial" "a serial of 1 to 20" run --disk a.img,serial=123456789012345678901 -- true
expect_error "disk on the microVM guest" "--disk: the microVM guest has no block layer" \
	run --microvm --disk a.img -- true
expect_error "bad gdb port" "--gdb: '70000' is not a port from 1 to 65535" run --gdb 70000 -- true
expect_error "gdb-wait alone" "--gdb-wait: there is no --gdb to wait for" run --gdb-wait -- true

# --config: a bad value is one line naming the file and the key; a file
# that is not JSON one line naming the file and the line.
printf '{"cpus": 2,\n "mem": "lots"}\n' >"$TMP/bad.json"
printf '{"cpus": 2,,}' >"$TMP/bad2.json"
chmod 644 "$TMP/bad.json" "$TMP/bad2.json"
run_fsvm run --config "$TMP/bad.json" -- true
expect_eq "bad config: status" 125 "$rc"
expect_eq "bad config: one line" "fsvm: $TMP/bad.json: key 'mem': 'lots' is not a size from 64M to 1T (e.g. 512M, 2G)" "$err"
run_fsvm run --config "$TMP/bad2.json" -- true
expect_eq "config not JSON: status" 125 "$rc"
expect_match "config not JSON: message" "^fsvm: $TMP/bad2.json: line 1: not valid JSON" "$err"

run_fsvm --version
expect_eq "--version" 0 "$rc"
expect_match "--version output" "^fsvm [0-9]" "$out"
run_fsvm run --cpus x --bogus --help
expect_eq "--help beside bad flags: status" 0 "$rc"
expect_match "--help beside bad flags" "Usage: fsvm run" "$out"
run_fsvm --help
expect_eq "--help: status" 0 "$rc"
expect_match "--help output" "Usage: fsvm run" "$out"
expect_match "--help says the defaults" "half the host's CPUs, 1 to 8" "$out"
expect_match "--help says the RAM default" "an eighth of the host's RAM, 512M to 4G" "$out"
finish
