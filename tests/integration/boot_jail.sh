#!/bin/sh
# A running fsvm is jailed: its root holds only its shares and
# /proc/self/fd, and code running inside it (gdb calls open() in it, as
# code that took fsvm over would) opens no host path but the shares', not
# /proc/self/mem; every thread keeps only the file server's capabilities.
# As the test user (in its user namespace) and as root with --host-root.
. "$(dirname "$0")/lib.sh"
share=$TMP/share
mkdir -p "$share"
echo "outside" >"$TMP/outside"
chmod 644 "$TMP/outside"
give_to_test_user "$share"

# in_fsvm EXPR: what EXPR, called in the jailed fsvm $pid, returns. gdb
# reads fsvm's libraries from the host's root: the jail has none.
in_fsvm() {
	gdb -nx -batch -iex 'set sysroot /' -p "$pid" -ex "call (int)$1" >"$TMP/gdb" 2>&1
	sed -n 's/^\$1 = //p' "$TMP/gdb"
	grep -q '^\$1 = ' "$TMP/gdb" || { echo "gdb, calling $1:"; tail -n 5 "$TMP/gdb"; } >&2
}

# jailed FSVM OPTIONS...: runs a guest that waits on the share, looks at
# its fsvm from outside and from inside, then lets it end.
jailed() {
	vmm=$1
	shift
	rm -f "$share/ready" "$share/done"
	"$vmm" run "$@" --timeout 300 --share "$share:/mnt/s$share_opts" -- sh -c \
		'touch /mnt/s/ready || exit 1; while [ ! -e /mnt/s/done ]; do sleep 0.2; done; cat /mnt/s/ready' \
		>"$TMP/out" 2>"$TMP/err" &
	pid=$!
	wait_for_file "$share/ready" $pid
	root=$(ls /proc/$pid/root 2>&1 | tr '\n' ' ')
	shares=$(ls /proc/$pid/root/shares 2>&1 | tr '\n' ' ')
	caps=$(sed -n 's/^CapEff:\t//p' /proc/$pid/task/*/status | sort -u)
	bounds=$(sed -n 's/^CapBnd:\t//p' /proc/$pid/task/*/status | sort -u)
	# A stop and a debugger cut fsvm's pauses short: they go on (status 0).
	kill -STOP $pid && sleep 0.5 && kill -CONT $pid
	outside=$(in_fsvm "open(\"$TMP/outside\", 0)")
	passwd=$(in_fsvm 'open("/etc/passwd", 0)')
	mem=$(in_fsvm 'open("/proc/self/mem", 2)')
	own=$(in_fsvm 'open("/shares/1/ready", 0)')
	echo "jailed" >"$share/done"
	wait $pid
	rc=$?
	[ "$rc" = 0 ] || tail -n 5 "$TMP/err" >&2
}

# check WHO CAPS: what every run shows.
check() {
	expect_eq "$1: status" 0 "$rc"
	expect_eq "$1: the jail's root" "proc shares " "$root"
	# The root share (the host's /, read-only) and --share.
	expect_eq "$1: the shares" "0 1 " "$shares"
	expect_eq "$1: a host file outside the shares" -1 "$outside"
	expect_eq "$1: /etc/passwd" -1 "$passwd"
	expect_eq "$1: /proc/self/mem" -1 "$mem"
	expect_match "$1: a file of the share opens" '^[0-9]+$' "$own"
	expect_eq "$1: capabilities of every thread" "$2" "$caps"
	expect_eq "$1: bounding set of every thread" "$2" "$bounds"
}

# CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETFCAP; and
# CAP_MKNOD for a share that may hold device nodes.
file_server=000000008000001b
share_opts=""
jailed "$FSVM"
check "test user" $file_server
jailed "$FSVM_AS_ROOT" --host-root
check "--host-root" $file_server
share_opts=":dev"
jailed "$FSVM_AS_ROOT" --host-root
check "--host-root, :dev" 000000008800001b
finish
