#!/bin/sh
# The features users reach for on their first day, through the real binary
# on the default guest: --cwd, --env, --user, --append, the host-sized
# defaults, --rodir/--rwdir, --json, --config, many VMs from one folder,
# and an installed fsvm (make install) running with the build tree hidden.
. "$(dirname "$0")/lib.sh"

# json_check FILE PYTHON-EXPR...: each expression of the parsed object j
# must be true; says which was not.
json_check() {
	file=$1
	shift
	python3 - "$file" "$@" <<'PY' || fail "json checks on $file: $(cat "$file" 2>/dev/null | head -c 2000)"
import json, sys
j = json.load(open(sys.argv[1]))
bad = [e for e in sys.argv[2:] if not eval(e, {"j": j})]
for e in bad:
    print("not true:", e, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

mkdir -p "$TMP/work/sub" "$TMP/home" "$TMP/js"
give_to_test_user "$TMP/work" "$TMP/home" "$TMP/js" # js: the summaries

# --cwd: the caller's folder by default, the one named otherwise; a named
# folder the guest lacks fails the run with a line that names it.
cd "$TMP/work" && run_fsvm run -- pwd
cd /
expect_eq "default cwd" "$TMP/work" "$out"
run_fsvm run --cwd "$TMP/work/sub" -- pwd
expect_eq "--cwd" "$TMP/work/sub" "$out"
run_fsvm run --cwd /nonexistent/dir -- pwd
expect_eq "--cwd missing: status" 125 "$rc"
expect_match "--cwd missing: message" "fsvm-init: --cwd /nonexistent/dir: No such file or directory" "$err"

# --env: NAME=VALUE as given (spaces, '=' and newlines kept), NAME alone
# the caller's value, an unset NAME nothing; they override the init's.
export FSVM_T_PASSED="from the host"
unset FSVM_T_NOT_SET
run_fsvm run --env 'A=a b=c' \
	--env "NL=x
y" --env FSVM_T_PASSED --env FSVM_T_NOT_SET --env PATH=/bin:/usr/bin -- \
	sh -c 'printf "%s|%s|%s|%s|%s\n" "$A" "$NL" "$FSVM_T_PASSED" "${FSVM_T_NOT_SET-unset}" "$PATH"'
expect_eq "--env" "a b=c|x
y|from the host|unset|/bin:/usr/bin" "$out"

# --user: the command runs as the caller (the test user), with HOME; files
# it makes on a share are the caller's on the host and in the guest.
home=${HOME:-/root}
export HOME="$TMP/home"
run_fsvm run --user --share "$TMP/work:/w" -- \
	sh -c 'id -u; id -g; echo "$HOME"; touch /w/by-user; stat -c %u /w/by-user; touch /root-only 2>/dev/null && echo wrote-root || echo no-root'
expect_eq "--user" "$TEST_UID
$TEST_GID
$TMP/home
$TEST_UID
no-root" "$out"
HOME=$home
expect_eq "--user: host owner" "$TEST_UID" "$(stat -c %u "$TMP/work/by-user")"
run_fsvm run -- id -u
expect_eq "without --user: root" 0 "$out"

# --append (and --cmdline, the same) reach the kernel's command line.
run_fsvm run --append fsvm.t1=one --cmdline fsvm.t2=two -- cat /proc/cmdline
expect_match "--append" "fsvm\.t1=one fsvm\.t2=two" "$out"

# Defaults that suit the host: half its CPUs (1 to 8), an eighth of its RAM
# (512M to 4G), as --help says (tests/cli/usage.sh).
cpus=$(($(nproc) / 2)); [ $cpus -ge 1 ] || cpus=1; [ $cpus -le 8 ] || cpus=8
host_kib=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)
mem_mib=$((host_kib / 8 / 1024))
[ $mem_mib -ge 512 ] || mem_mib=512; [ $mem_mib -le 4096 ] || mem_mib=4096
run_fsvm run -- sh -c 'nproc; sed -n "s/^MemTotal: *\([0-9]*\) kB/\1/p" /proc/meminfo'
expect_eq "default CPUs" "$cpus" "$(echo "$out" | sed -n 1p)"
guest_kib=$(echo "$out" | sed -n 2p)
# The guest kernel keeps some RAM for itself: within 15% below the size.
[ -n "$guest_kib" ] && [ "$guest_kib" -le $((mem_mib * 1024)) ] &&
	[ "$guest_kib" -ge $((mem_mib * 1024 * 85 / 100)) ] ||
	fail "default RAM: guest MemTotal ${guest_kib:-?} kB for ${mem_mib}M"

# --rodir/--rwdir, virtme-ng's spellings of --share.
run_fsvm run --rwdir "/rw=$TMP/work" --rodir "$TMP/home" -- \
	sh -c "echo hi >/rw/from-rwdir && ls -d $TMP/home && { touch $TMP/home/x 2>/dev/null && echo wrote || echo read-only; }"
expect_eq "--rwdir/--rodir: status" 0 "$rc"
expect_eq "--rwdir/--rodir" "$TMP/home
read-only" "$out"
expect_eq "--rwdir wrote on the host" hi "$(cat "$TMP/work/from-rwdir")"

# --json on stdout after the command's output, and --json=FILE.
run_fsvm run --json -- true
printf '%s\n' "$out" >"$TMP/stdout.json"
json_check "$TMP/stdout.json" 'j["exit"]["status"] == 0' \
	'j["exit"]["ended_by"] == "command"' \
	'j["exit"]["meaning"] == "the command succeeded"' 'j["exit"]["reason"] is None'
run_fsvm run --json="$TMP/js/s.json" -- sh -c 'ls / >/dev/null; echo out; exit 3'
expect_eq "--json=FILE: status" 3 "$rc"
expect_eq "--json=FILE: stdout is the command's" out "$out"
json_check "$TMP/js/s.json" 'j["fsvm_json"] == 2' 'j["exit"]["status"] == 3' \
	'j["exit"]["ended_by"] == "command"' \
	'j["exit"]["meaning"] == "the command exited with status 3"' \
	'[e["event"] for e in j["timeline"]][:2] == ["setup-done", "first-kvm-run"]' \
	'j["timeline"][-1]["event"] == "vmm-exit"' \
	'{"init-start", "root-mounted", "command-start", "command-exit"} <= {e["event"] for e in j["timeline"]}' \
	'[t for e, t in sorted((e["ms"], e["event"]) for e in j["timeline"]) if t in ("setup-done", "init-start", "root-mounted", "command-start", "command-exit", "vmm-exit")] == ["setup-done", "init-start", "root-mounted", "command-start", "command-exit", "vmm-exit"]' \
	'j["devices"][0]["type"] == "virtio-fs" and j["devices"][0]["name"] == "root"' \
	'j["devices"][0]["requests"]["LOOKUP"] > 0' \
	'{"LOOKUP", "OPEN", "READ", "WRITE", "SETUPMAPPING", "REMOVEMAPPING"} <= set(j["devices"][0]["requests"])' \
	'j["peak_rss_bytes"] > 1 << 20'
run_fsvm run --timeout 5 --json="$TMP/js/t.json" -- sleep 600
expect_eq "--json timeout: status" 124 "$rc"
json_check "$TMP/js/t.json" 'j["exit"]["status"] == 124' 'j["exit"]["ended_by"] == "timeout"' \
	'j["exit"]["reason"] == "timeout"' '"timed out" in j["exit"]["message"]'
run_fsvm run --json --kernel /nonexistent/bzImage -- true
expect_eq "--json set-up failure: status" 125 "$rc"
printf '%s\n' "$out" >"$TMP/fail.json"
json_check "$TMP/fail.json" 'j["exit"]["ended_by"] == "fsvm"' \
	'j["exit"]["reason"] == "bad_kernel"' \
	'"/nonexistent/bzImage: cannot open the kernel" in j["exit"]["message"]'

# --config: every flag by its long name; flags override the file.
cat >"$TMP/vm.json" <<JSON
{"cwd": "$TMP/work", "env": ["A=from-file", "B=file"], "append": "fsvm.cfg=1",
 "share": ["$TMP/home:/h:ro"], "timeout": 300, "json": "$TMP/js/c.json",
 "command": ["sh", "-c", "pwd; echo \$A \$B; grep -o fsvm.cfg=1 /proc/cmdline; ls -d /h"]}
JSON
run_fsvm run --config "$TMP/vm.json"
expect_eq "--config: status" 0 "$rc"
expect_eq "--config" "$TMP/work
from-file file
fsvm.cfg=1
/h" "$out"
json_check "$TMP/js/c.json" 'j["exit"]["status"] == 0' 'len(j["devices"]) == 2'
run_fsvm run --config "$TMP/vm.json" --env A=from-flag --cwd / -- sh -c 'pwd; echo $A $B'
expect_eq "--config overridden by flags" "/
from-flag file" "$out"

# Many VMs at once from one folder: no fixed paths, no shared files.
pids=""
for i in 1 2 3; do
	(cd "$TMP/work" && "$FSVM" run --json="$TMP/js/many$i.json" -- sh -c "echo vm$i >vm$i.out; cat vm$i.out" \
		>"$TMP/many$i.stdout" 2>"$TMP/many$i.stderr"; echo $? >"$TMP/many$i.rc") &
	pids="$pids $!"
done
wait $pids
for i in 1 2 3; do
	expect_eq "VM $i of 3 at once: status" 0 "$(cat "$TMP/many$i.rc")"
	expect_eq "VM $i of 3 at once: output" "vm$i" "$(cat "$TMP/many$i.stdout")"
	json_check "$TMP/js/many$i.json" 'j["exit"]["status"] == 0'
done

# A missing default guest names the command that makes it.
FSVM_GUEST_DIR=$TMP/no-guest run_fsvm run --setup-only -- true
expect_eq "no guest: status" 125 "$rc"
expect_match "no guest: message" "no-guest/6.12: no such folder .\`make guest\` in fsvm's source tree makes the packaged guests" "$err"

# make install into a fresh prefix; the installed fsvm runs a guest with
# the build tree hidden (an empty tmpfs over build/, in a private mount
# namespace), and its man page renders.
prefix=$TMP/prefix
make -s -C "$TOP" install PREFIX="$prefix" >"$TMP/install.log" 2>&1 ||
	fail "make install: $(tail -n 5 "$TMP/install.log")"
for f in bin/fsvm lib/fsvm/6.1/kernel/vmlinux lib/fsvm/6.1/kernel/version \
	lib/fsvm/6.1/initramfs.cpio lib/fsvm/6.12/kernel/vmlinux \
	lib/fsvm/6.12/initramfs.cpio lib/fsvm/microvm/kernel/vmlinux \
	lib/fsvm/microvm/initramfs.cpio share/man/man1/fsvm.1; do
	[ -s "$prefix/$f" ] || fail "make install: no $prefix/$f"
done
grep -q "$TOP" "$prefix/bin/fsvm" && fail "the installed binary names the build tree"
version=$(FSVM_BIN=$prefix/bin/fsvm "$FSVM" --version)
expect_match "--version" "^fsvm [0-9]+\.[0-9]+\.[0-9]+" "$version"
default=$(sed -n 's/^#define CLI_DEFAULT_GUEST_KERNEL "\(.*\)"/\1/p' "$TOP/vmm/cli.h")
# A literal comparison: kernel versions have regex characters ("+deb12").
expect_eq "--version's guest kernel" "guest kernel: Linux $(cat "$TOP/build/guest/$default/kernel/version") ($prefix/lib/fsvm/$default, the default)" "$(printf '%s\n' "$version" | sed -n 2p)"
unshare -m sh -c 'mount -t tmpfs none "$1/build" && mount --bind /dev/null "$1/fsvm" &&
	cd / && FSVM_BIN=$2/bin/fsvm "$1/tests/integration/fsvm-as-user" run -- sh -c "echo installed-ok; ls $1/build | wc -l"' \
	sh "$TOP" "$prefix" >"$TMP/out" 2>"$TMP/err"
expect_eq "installed fsvm, build tree hidden: status" 0 "$?"
expect_eq "installed fsvm, build tree hidden" "installed-ok
0" "$(cat "$TMP/out")"
man -l "$prefix/share/man/man1/fsvm.1" >"$TMP/man.txt" 2>"$TMP/man.err" </dev/null
expect_eq "man -l: status" 0 "$?"
for opt in --config --cwd --env --user --append --rodir --rwdir --json "JSON SUMMARY"; do
	grep -q -- "$opt" "$TMP/man.txt" || fail "man page lacks $opt"
done
# The page is --help: every option line of --help is in it.
"$prefix/bin/fsvm" --help | sed -n 's/^  \(--[a-z-]*\).*/\1/p' | while read -r opt; do
	grep -q -- "$opt" "$TMP/man.txt" || echo "$opt"
done >"$TMP/missing"
[ -s "$TMP/missing" ] && fail "man page lacks --help's $(tr '\n' ' ' <"$TMP/missing")"
finish
