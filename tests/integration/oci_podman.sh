#!/bin/sh
# fsvm as podman's OCI runtime (fsvm-runtime, docs/OCI.md), on an image made from the host's
# busybox (oci_env.sh, no registry): a container's output and exit status, its environment,
# folder and user, a volume both ways, a read-only root, a terminal, podman stop's SIGTERM
# reaching the command, a detached container's logs, a port mapping answered from the guest,
# rootless podman, ten containers at once leaving no state behind, and bad bundles refused with
# one line in the runtime's JSON log.
. "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/bin" && ln -s "$TOP/fsvm" "$TMP/bin/fsvm-runtime" ||
	{ echo "FAIL: cannot link fsvm-runtime" >&2; exit 1; }
OCI_RUNTIME=$TMP/bin/fsvm-runtime
. "$(dirname "$0")/oci_env.sh"
state_root=/run/fsvm # podman's runtime root is its own; fsvm's default is where state goes

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

# -p: podman's bridge and its port mapping reach the guest through the namespace's tap.
port=$((20000 + $$ % 20000))
oci_capture oci_podman run -d --name web -p "127.0.0.1:$port:80" "$OCI_IMAGE" httpd -f -p 80 -h /www
expect_status "run -d -p" 0 "$rc"
i=0
until page=$(curl -s -m 2 "http://127.0.0.1:$port/index.html") || [ $i -ge 120 ]; do
	sleep 0.5
	i=$((i + 1))
done
expect_eq "-p: the guest's web server answers" "fsvm-test image" "$page"
oci_podman rm -f -t 0 web >/dev/null 2>&1

oci_capture oci_podman_user run --rm --network none "$OCI_IMAGE" sh -c 'echo "rootless $(id -u)"; exit 5'
expect_status "rootless podman" 5 "$rc"
expect_eq "rootless podman: the container's root" "rootless 0" "$out"

# Ten at once, each with its own status; then no state, no process, no cgroup of theirs.
pids=""
for i in 1 2 3 4 5 6 7 8 9 10; do
	oci_podman run --rm --network none --name "many$i" "$OCI_IMAGE" sh -c "echo many $i; exit $i" \
		>"$TMP/many$i.out" 2>&1 &
	pids="$pids $!"
done
i=0
for pid in $pids; do
	i=$((i + 1))
	wait "$pid"
	expect_status "container many$i of ten" "$i" "$?"
	expect_eq "container many$i's output" "many $i" "$(cat "$TMP/many$i.out")"
done
expect_eq "no container state left" "" "$(ls -A "$state_root" 2>/dev/null)"
expect_eq "no fsvm process left" "" "$(pgrep -x fsvm-runtime)"

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
