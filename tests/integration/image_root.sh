#!/bin/sh
# fsvm run --image (vmm/image.c) with podman images made here by podman import from small roots
# of the host's busybox (no registry), in a store of the test's own (CONTAINERS_STORAGE_CONF,
# overlay: podman image mount is a real mount): the image's files are the guest's / (a file only
# it has is seen, the host's are not), its Env (under --env), WorkingDir (unless --cwd), User and
# Entrypoint apply, CMD replaces its Cmd, the command's status comes through; an image without
# /bin/sh run without a command, a missing image and a user who is not root each fail in one
# line; and after every run, a killed fsvm's too, nothing of the image is left mounted.
. "$(dirname "$0")/lib.sh"

store=$TMP/storage
mkdir -p "$store/tmp" || { echo "FAIL: cannot make the store" >&2; exit 1; }
cat >"$TMP/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$store/graph"
runroot = "$store/run"
EOF
cat >"$TMP/containers.conf" <<EOF
[network]
network_backend = "netavark"
network_config_dir = "$store/networks"
[engine]
tmp_dir = "$store/tmp"
events_logger = "file"
EOF
export CONTAINERS_STORAGE_CONF=$TMP/storage.conf CONTAINERS_CONF=$TMP/containers.conf TMPDIR=$store/tmp

# image NAME [--sh] [--change ...]: NAME from a busybox root (with sh and the other applets
# linked with --sh) that also holds /opt/only-in-image, /work and a user app (1000:1000).
image() {
	name=$1 root=$TMP/root-$1
	shift
	mkdir -p "$root/bin" "$root/etc" "$root/opt" "$root/work" "$root/home/app" "$root/tmp" &&
		cp /bin/busybox "$root/bin/" && echo "the image's own" >"$root/opt/only-in-image" &&
		printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n' >"$root/etc/passwd" &&
		printf 'root:x:0:\napp:x:1000:\n' >"$root/etc/group" && chmod 1777 "$root/tmp" || return 1
	if [ "${1:-}" = --sh ]; then
		shift
		for a in $(/bin/busybox --list); do
			[ "$a" = busybox ] || ln -s busybox "$root/bin/$a" || return 1
		done
	fi
	tar -C "$root" --owner=0 --group=0 --numeric-owner -cf "$root.tar" . &&
		podman import -q "$@" "$root.tar" "localhost/fsvm-image-$name:1" >/dev/null 2>"$TMP/podman.err" ||
		{ cat "$TMP/podman.err" >&2; return 1; }
}
image plain --sh --change 'ENV FOO=from-image' --change 'ENV BAR=image-bar' \
	--change 'WORKDIR /work' --change 'CMD ["sh", "-c", "echo image cmd; exit 7"]' &&
	image entry --sh --change 'USER app' --change 'ENTRYPOINT ["/bin/echo", "entry"]' \
		--change 'CMD ["default"]' &&
	image nosh || { echo "FAIL: cannot make the test images" >&2; exit 1; }
plain=localhost/fsvm-image-plain:1

# Nothing of the test's store is mounted, and podman lists no image as mounted.
expect_unmounted() {
	expect_eq "$1: mounts left in the store" "" "$(grep -F " $store/" /proc/mounts)"
	expect_eq "$1: podman image mount lists" "" "$(podman image mount 2>/dev/null)"
}

# No command: the image's Cmd, its status fsvm's.
run_fsvm_as_root run --image "$plain"
expect_status "the image's Cmd: status" 7 "$rc"
expect_eq "the image's Cmd: output" "image cmd" "$out"
expect_unmounted "after a run"

# The image is /: its file is there, the host's are not; its Env under --env's, its folder.
run_fsvm_as_root run --image "$plain" --env BAR=flag -- sh -c \
	'cat /opt/only-in-image; test -e /etc/debian_version && echo "the host root seen"
	 echo "$FOO $BAR $(pwd) $(id -u):$(id -g)"; exit 42'
expect_status "CMD's status" 42 "$rc"
expect_eq "CMD in the image" "the image's own
from-image flag /work 0:0" "$out"
run_fsvm_as_root run --image "$plain" --cwd /tmp -- pwd
expect_status "--cwd" 0 "$rc"
expect_eq "--cwd over the image's WorkingDir" "/tmp" "$out"
# Writes go to the throwaway overlay, never to the image.
run_fsvm_as_root run --image "$plain" -- sh -c 'echo x >/opt/only-in-image && cat /opt/only-in-image'
expect_eq "a write in the guest" "x" "$out"
run_fsvm_as_root run --image "$plain" -- cat /opt/only-in-image
expect_eq "the image after a guest's write" "the image's own" "$out"

# Entrypoint and Cmd, CMD after it, --entrypoint instead; the image's User.
entry=localhost/fsvm-image-entry:1
run_fsvm_as_root run --image "$entry"
expect_eq "Entrypoint then Cmd" "entry default" "$out"
run_fsvm_as_root run --image "$entry" -- one two
expect_eq "Entrypoint then CMD" "entry one two" "$out"
run_fsvm_as_root run --image "$entry" --entrypoint /bin/sh -- -c 'echo "$(id -u):$(id -g) $HOME"'
expect_status "--entrypoint" 0 "$rc"
expect_eq "--entrypoint, as the image's User" "1000:1000 /home/app" "$out"

# No /bin/sh in the image and no command: fsvm run's default, a shell, is not found (127).
run_fsvm_as_root run --image localhost/fsvm-image-nosh:1
expect_status "no /bin/sh: status" 127 "$rc"
expect_match "no /bin/sh: message" "/bin/sh: command not found" "$err"
run_fsvm_as_root run --image localhost/fsvm-image-nosh:1 -- /bin/busybox echo ok
expect_eq "no /bin/sh, a command given" "ok" "$out"
expect_unmounted "after the failed runs"

# Bad input: one line and 125.
expect_error_as_root() { # WHAT REGEX ARGS...
	what=$1 regex=$2
	shift 2
	run_fsvm_as_root "$@"
	expect_eq "$what: status" 125 "$rc"
	expect_eq "$what: one line" 1 "$(printf '%s\n' "$err" | wc -l)"
	expect_match "$what: message" "$regex" "$err"
}
expect_error_as_root "a missing image" \
	"^fsvm: --image: no image localhost/nope:1 in podman's store; podman pull localhost/nope:1$" \
	run --image localhost/nope:1 -- true
expect_error_as_root "--rw-root" "so --root and --rw-root do not apply" run --image "$plain" --rw-root
expect_error "not root" "podman mounts images for root only.*podman unshare fsvm run --image" \
	run --image "$plain" -- true

# fsvm killed mid-run: its watcher still unmounts the image.
"$FSVM_AS_ROOT" run --image "$plain" -- sleep 600 >/dev/null 2>&1 &
pid=$!
i=0
until [ -n "$(podman image mount 2>/dev/null)" ] || [ $i -ge 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
expect_match "mounted while fsvm runs" "fsvm-image-plain" "$(podman image mount 2>/dev/null)"
kill -KILL $pid
wait $pid 2>/dev/null
i=0
while [ -n "$(podman image mount 2>/dev/null)" ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
expect_unmounted "after fsvm was killed"

podman rmi -a -f >/dev/null 2>&1
finish
