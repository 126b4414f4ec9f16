#!/bin/sh
# fsvm as podman's OCI runtime (fsvm-runtime, docs/OCI.md), on an image made from the host's
# busybox (oci_env.sh, no registry): a container's output and exit status, its environment,
# folder and user, a volume both ways, a read-only root, a terminal, stdin (-i), podman stop's SIGTERM
# reaching the command, a detached container's logs, podman exec (status, stderr, stdin, a
# terminal), and bad bundles refused with one line in the runtime's JSON log
# (oci_podman_fleet.sh has the rest).
. "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/bin" && ln -s "$TOP/fsvm" "$TMP/bin/fsvm-runtime" ||
	{ echo "FAIL: cannot link fsvm-runtime" >&2; exit 1; }
OCI_RUNTIME=$TMP/bin/fsvm-runtime
. "$(dirname "$0")/oci_env.sh"

oci_capture oci_podman run --rm --network none "$OCI_IMAGE" sh -c 'echo ok; exit 3'
expect_status "the container's status" 3 "$rc"
expect_eq "its output" "ok" "$out"

oci_capture oci_podman run --rm --network none -e FOO=bar -w /tmp -u 65534:65534 "$OCI_IMAGE" \
	sh -c 'echo "foo=$FOO cwd=$(pwd) ids=$(id -u):$(id -g) host=$(hostname)"'
expect_status "-e -w -u" 0 "$rc"
expect_match "environment, folder and ids" "^foo=bar cwd=/tmp ids=65534:65534 host=[0-9a-f]" "$out"

mkdir -p "$TMP/vol" && echo "from the host" >"$TMP/vol/in"
oci_capture oci_podman run --rm --network none -v "$TMP/vol:/vol" "$OCI_IMAGE" \
	sh -c 'cat /vol/in; echo "from the guest" >/vol/out'
expect_status "-v" 0 "$rc"
expect_eq "a host file read in the guest" "from the host" "$out"
expect_eq "a guest file on the host" "from the guest" "$(cat "$TMP/vol/out" 2>/dev/null)"

oci_capture oci_podman run --rm --network none --read-only "$OCI_IMAGE" sh -c 'echo x >/root/x'
expect_match "--read-only refuses a write" "Read-only file system" "$err"
[ "$rc" -ne 0 ] || fail "--read-only: the write succeeded (status 0)"

oci_capture oci_podman run --rm --network none -t "$OCI_IMAGE" sh -c 'test -t 0 && test -t 1 && echo tty'
expect_status "-t" 0 "$rc"
expect_match "-t gives the command a terminal" "^tty" "$out"

# -i without -t: podman's stdin is the container's, bytes and end; without -i it is empty.
printf 'line one\nline two\n' >"$TMP/stdin-run"
oci_capture oci_podman run --rm -i --network none "$OCI_IMAGE" sh -c 'wc -l; echo "end:$?"' <"$TMP/stdin-run"
expect_status "-i" 0 "$rc"
expect_eq "-i: stdin through, and its end" "$(printf '2\nend:0')" "$(echo "$out" | tr -d ' ')"
oci_capture oci_podman run --rm --network none "$OCI_IMAGE" sh -c 'wc -c' <"$TMP/stdin-run"
expect_eq "without -i: stdin is empty" "0" "$(echo "$out" | tr -d ' ')"

# podman stop: SIGTERM through the runtime's kill reaches the command, whose status is the
# container's.
oci_capture oci_podman run -d --name stopme --network none "$OCI_IMAGE" \
	sh -c 'trap "echo got TERM; exit 9" TERM; echo started; while :; do sleep 0.1; done'
expect_status "run -d" 0 "$rc"
i=0
until oci_podman logs stopme 2>/dev/null | grep -q started || [ $i -ge 600 ]; do
	sleep 0.2
	i=$((i + 1))
done
oci_capture oci_podman stop -t 60 stopme
expect_status "podman stop" 0 "$rc"
expect_match "podman logs: the command's output" "got TERM" "$(oci_podman logs stopme 2>&1)"
expect_eq "the command's status after SIGTERM" 9 \
	"$(oci_podman inspect --format '{{.State.ExitCode}}' stopme 2>&1)"
oci_podman rm stopme >/dev/null 2>&1

# podman exec: a second process in the running VM, with its own status, stdin and terminal.
oci_capture oci_podman run -d --name execme --network none "$OCI_IMAGE" \
	sh -c 'echo started; while :; do sleep 0.1; done'
expect_status "run -d for exec" 0 "$rc"
i=0
until oci_podman logs execme 2>/dev/null | grep -q started || [ $i -ge 600 ]; do
	sleep 0.2
	i=$((i + 1))
done
oci_capture oci_podman exec -u 65534 -w /tmp execme sh -c 'echo "exec $(id -u) $(pwd)"; echo oops >&2; exit 4'
expect_status "podman exec: its status" 4 "$rc"
expect_eq "podman exec: its output" "exec 65534 /tmp" "$out"
expect_eq "podman exec: its stderr" "oops" "$err"
printf 'line one\nline two\n' >"$TMP/stdin"
oci_capture oci_podman exec -i execme sh -c 'wc -l' <"$TMP/stdin"
expect_eq "podman exec -i: stdin through" "2" "$(echo "$out" | tr -d ' ')"
oci_capture oci_podman exec -t execme sh -c 'test -t 0 && echo tty'
expect_match "podman exec -t: a terminal" "^tty" "$out"
expect_eq "the container outlives its execs" "running" \
	"$(oci_podman inspect --format '{{.State.Status}}' execme 2>&1)"
oci_podman rm -f -t 0 execme >/dev/null 2>&1

# Bad bundles: one line in the JSON log, a non-zero status, nothing left behind.
bad_bundle() { # NAME WHAT EXPECTED-MESSAGE: makes $TMP/NAME, broken by WHAT, and runs create
	b=$TMP/$1
	mkdir -p "$b/rootfs/bin" && cp /bin/busybox "$b/rootfs/bin/sh" && echo data >"$b/rootfs/bin/data"
	printf '{"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": {"args": ["sh"], "cwd": "/"}}' \
		>"$b/config.json"
	case $2 in
	no-config) rm "$b/config.json" ;;
	bad-json) printf '{"ociVersion": "1.0.2",' >"$b/config.json" ;;
	version) sed -i 's/1\.0\.2/7.0.0/' "$b/config.json" ;;
	no-rootfs) rm -r "$b/rootfs" ;;
	not-exec) sed -i 's/\["sh"\]/["data"]/' "$b/config.json" ;;
	esac
	rm -f "$TMP/log"
	oci_capture "$OCI_RUNTIME" --root "$TMP/state" --log "$TMP/log" --log-format json \
		create --bundle "$b" "bad-$1"
	[ "$rc" -ne 0 ] || fail "bad bundle $1: create succeeded"
	expect_match "bad bundle $1: the log's line" "^\{\"level\":\"error\",\"msg\":\".*$3" \
		"$(cat "$TMP/log" 2>/dev/null)"
	expect_eq "bad bundle $1: one line" 1 "$(wc -l <"$TMP/log" 2>/dev/null)"
	expect_eq "bad bundle $1: no state left" "" "$(ls -A "$TMP/state" 2>/dev/null)"
}
bad_bundle config no-config "config.json: No such file"
bad_bundle json bad-json "not a JSON object"
bad_bundle version version "ociVersion '7.0.0'"
bad_bundle rootfs no-rootfs "root.path"
bad_bundle exec not-exec "not executable"

finish
