#!/bin/sh
# A running fsvm is under its system-call filter, every thread of it, with
# no new privileges; with --no-seccomp it is under none.
. "$(dirname "$0")/lib.sh"
share=$TMP/share
mkdir -p "$share"
give_to_test_user "$share"

# filter_status [OPTIONS...]: runs a guest that waits on the share and sets
# $seccomp and $nnp to the values its fsvm's threads show (one line each
# when they agree), then lets it end.
filter_status() {
	rm -f "$share/ready" "$share/done"
	"$FSVM" run --timeout 300 "$@" --share "$share:/mnt/s" -- sh -c \
		'touch /mnt/s/ready || exit 1; while [ ! -e /mnt/s/done ]; do sleep 0.2; done' \
		>"$TMP/out" 2>"$TMP/err" &
	pid=$!
	wait_for_file "$share/ready" $pid
	# The main thread, the vCPU and the virtio-fs workers.
	threads=$(ls /proc/$pid/task 2>/dev/null | wc -l)
	seccomp=$(sed -n 's/^Seccomp:\t//p' /proc/$pid/task/*/status 2>/dev/null | sort -u)
	nnp=$(sed -n 's/^NoNewPrivs:\t//p' /proc/$pid/task/*/status 2>/dev/null | sort -u)
	touch "$share/done"
	wait $pid
	rc=$?
	[ "$rc" = 0 ] || tail -n 5 "$TMP/err" >&2
}

filter_status
expect_eq "status" 0 "$rc"
[ "$threads" -ge 4 ] || fail "only $threads threads seen: the guest never started its shares' workers?"
expect_eq "Seccomp (2: filter) of every thread" 2 "$seccomp"
expect_eq "NoNewPrivs of every thread" 1 "$nnp"

filter_status --no-seccomp
expect_eq "--no-seccomp: status" 0 "$rc"
expect_eq "--no-seccomp: Seccomp" 0 "$seccomp"
expect_eq "--no-seccomp: NoNewPrivs" 0 "$nnp"
finish
