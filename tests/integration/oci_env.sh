# Podman and containerd for the tests of OCI runtimes (sourced by tests, after lib.sh; run-all
# does not run it). Debian's podman and containerd keep everything in OCI_DIR, nothing in the
# host's /etc or /var (the lab's root is the host's, read-only): podman's containers.conf is ours
# (CONTAINERS_CONF), its storage vfs, its cgroups cgroupfs, its events a file, its networks'
# files ours; containerd's config, root, state and socket too. The test image (OCI_IMAGE) is the
# host's busybox-static and a link for each applet, imported from a tarball, no registry: once
# a lab boot, for root and for the test user each (in the lab OCI_DIR is /tmp/fsvm-oci, and the
# lab's /tmp is new each boot; elsewhere it is the test's own $TMP/oci).
#
# Nothing here knows which runtime runs the containers: OCI_RUNTIME (set it before calling
# anything; crun by default) is podman's --runtime and ctr's --runc-binary. Podman goes by the
# runtime's file name: ours is listed beside crun in runtime_supports_json (conmon then passes
# it --log-format=json --log FILE) and runtime_supports_nocgroups (--cgroups disabled).
#
#   oci_podman ARGS...       podman as root
#   oci_podman_user ARGS...  podman as the test user (TEST_UID), rootless; when the host has no
#                            passwd entry or subordinate ids for it, copies of /etc/passwd,
#                            group, subuid and subgid with them are bound over the host's, in
#                            a mount namespace of that podman's own (the host's stay as they are)
#   oci_containerd_start     containerd for the test (stopped at its end), the image imported
#                            into it (its root is kept: once a lab boot)
#   oci_ctr ARGS...          ctr on that containerd, namespace OCI_CTR_NS
#   oci_ctr_run ARGS...      ctr run with OCI_RUNTIME as the runc shim's runtime
#   oci_capture CMD ARGS...  runs CMD, leaving $out, $err and $rc (as run_fsvm does)
#   oci_log_runtime DIR      OCI_RUNTIME becomes a wrapper of it that logs each call to
#                            DIR/calls.log (argv, caller) and keeps each created bundle's
#                            config.json as DIR/config.N.json
#   oci_cleanup              removes the test's containers (the EXIT trap set here runs it,
#                            then lib.sh's cleanup: a test that sets its own trap calls both)
# OCI_ARCHIVE is the image as a docker-archive (ctr images import), OCI_ROOTFS its tree. The
# functions return their command's status: the test checks it (expect_eq, fail).

OCI_RUNTIME=${OCI_RUNTIME:-$(command -v crun || echo /usr/bin/crun)}
OCI_IMAGE=${OCI_IMAGE:-localhost/fsvm-test:latest}
OCI_CTR_NS=${OCI_CTR_NS:-fsvm-test}
if [ -z "${OCI_DIR:-}" ]; then
	if [ "${LAB:-}" = 1 ]; then OCI_DIR=/tmp/fsvm-oci; else OCI_DIR=$TMP/oci; fi
fi
OCI_ARCHIVE=$OCI_DIR/image.tar
OCI_ROOTFS=$OCI_DIR/rootfs
OCI_USER=$(getent passwd "$TEST_UID" | cut -d: -f1)
OCI_USER=${OCI_USER:-fsvm-oci}
oci_user_dir=$OCI_DIR/user
oci_ctr_sock=$OCI_DIR/containerd/containerd.sock
oci_user_ready=0 oci_user_bind=0 oci_ctr_started=0
mkdir -p "$OCI_DIR/root/tmp" && chmod 755 "$OCI_DIR" || { echo "FAIL: cannot make $OCI_DIR" >&2; exit 1; }

# oci_conf FILE [LINES...]: a containers.conf for OCI_RUNTIME, with LINES in [network].
oci_conf() {
	conf=$1 name=$(basename "$OCI_RUNTIME")
	shift
	new=$(mktemp "$conf.XXXXXX") || return 1 # podman calls run at once: each its own file
	{
		echo '[network]'
		echo 'network_backend = "netavark"'
		for line in "$@"; do echo "$line"; done
		echo '[engine]'
		echo 'cgroup_manager = "cgroupfs"'
		echo 'events_logger = "file"'
		echo "runtime_supports_json = [\"crun\", \"runc\", \"kata\", \"runsc\", \"krun\", \"$name\"]"
		echo "runtime_supports_nocgroups = [\"crun\", \"krun\", \"$name\"]"
	} >"$new" && chmod 644 "$new" && mv "$new" "$conf"
}

oci_podman() {
	oci_conf "$OCI_DIR/root/containers.conf" "network_config_dir = \"$OCI_DIR/root/networks\"" &&
		CONTAINERS_CONF=$OCI_DIR/root/containers.conf TMPDIR=$OCI_DIR/root/tmp \
			podman --root "$OCI_DIR/root/storage" --runroot "$OCI_DIR/root/run" \
			--tmpdir "$OCI_DIR/root/libpod" --storage-driver vfs --runtime "$OCI_RUNTIME" "$@"
}

# The image's tree and tarball (once), then the image in root's podman.
oci_image() {
	if [ ! -s "$OCI_DIR/rootfs.tar" ]; then
		rm -rf "$OCI_ROOTFS" && mkdir -p "$OCI_ROOTFS/bin" && cp /bin/busybox "$OCI_ROOTFS/bin/" &&
			for d in dev proc sys tmp run etc root www; do mkdir "$OCI_ROOTFS/$d" || return 1; done &&
			for a in $(/bin/busybox --list); do
				[ "$a" = busybox ] || ln -s busybox "$OCI_ROOTFS/bin/$a" || return 1
			done &&
			printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$OCI_ROOTFS/etc/passwd" &&
			printf 'root:x:0:\nnobody:x:65534:\n' >"$OCI_ROOTFS/etc/group" &&
			echo "fsvm-test image" >"$OCI_ROOTFS/www/index.html" &&
			chmod 1777 "$OCI_ROOTFS/tmp" &&
			tar -C "$OCI_ROOTFS" --owner=0 --group=0 --numeric-owner -cf "$OCI_DIR/rootfs.tar.new" . &&
			mv "$OCI_DIR/rootfs.tar.new" "$OCI_DIR/rootfs.tar" || return 1
	fi
	if ! oci_podman image exists "$OCI_IMAGE"; then
		oci_podman import -q --change 'CMD ["/bin/sh"]' "$OCI_DIR/rootfs.tar" "$OCI_IMAGE" >/dev/null ||
			return 1
		rm -f "$OCI_ARCHIVE"
	fi
	[ -s "$OCI_ARCHIVE" ] || oci_podman save -q --format docker-archive -o "$OCI_ARCHIVE" "$OCI_IMAGE"
}

# The test user: a passwd entry, subordinate ids, a home and XDG_RUNTIME_DIR of its own.
oci_user() {
	[ $oci_user_ready = 1 ] && return
	mkdir -p "$oci_user_dir/etc" "$oci_user_dir/home" "$oci_user_dir/xdg" "$oci_user_dir/tmp" &&
		chown "$TEST_UID:$TEST_GID" "$oci_user_dir/home" "$oci_user_dir/xdg" "$oci_user_dir/tmp" &&
		chmod 700 "$oci_user_dir/xdg" || return 1
	if ! getent passwd "$TEST_UID" >/dev/null || ! grep -Eq "^($OCI_USER|$TEST_UID):" /etc/subuid ||
		! grep -Eq "^($OCI_USER|$TEST_GID):" /etc/subgid; then
		# The first ids no range in the files holds, from 100000 up.
		start=$(cat /etc/subuid /etc/subgid 2>/dev/null |
			awk -F: 'BEGIN { s = 100000 } $2 + $3 > s { s = $2 + $3 } END { print s }')
		etc=$oci_user_dir/etc
		for f in passwd group subuid subgid; do
			cp "/etc/$f" "$etc/$f" 2>/dev/null || : >"$etc/$f" || return 1
		done
		getent passwd "$TEST_UID" >/dev/null ||
			echo "$OCI_USER:x:$TEST_UID:$TEST_GID::$oci_user_dir/home:/bin/sh" >>"$etc/passwd"
		getent group "$TEST_GID" >/dev/null || echo "$OCI_USER:x:$TEST_GID:" >>"$etc/group"
		echo "$OCI_USER:$start:65536" >>"$etc/subuid"
		echo "$OCI_USER:$start:65536" >>"$etc/subgid"
		chmod 644 "$etc/passwd" "$etc/group" "$etc/subuid" "$etc/subgid" || return 1
		oci_user_bind=1
	fi
	oci_user_ready=1
	oci_image_user || { oci_user_ready=0; return 1; }
}

oci_podman_user() {
	oci_user && oci_conf "$oci_user_dir/containers.conf" || return 1
	set -- setpriv --reuid="$TEST_UID" --regid="$TEST_GID" --clear-groups \
		env HOME="$oci_user_dir/home" USER="$OCI_USER" LOGNAME="$OCI_USER" \
		XDG_RUNTIME_DIR="$oci_user_dir/xdg" TMPDIR="$oci_user_dir/tmp" \
		CONTAINERS_CONF="$oci_user_dir/containers.conf" \
		podman --root "$oci_user_dir/home/storage" --runroot "$oci_user_dir/xdg/storage" \
		--storage-driver vfs --runtime "$OCI_RUNTIME" "$@"
	[ $oci_user_bind = 1 ] || { "$@"; return; }
	# newuidmap and podman read the files; the mounts die with this namespace (unless podman's
	# pause process keeps it: oci_cleanup ends that). Its mounts are slaves of the host's, and
	# shared again among themselves, as rootless podman wants "/".
	unshare --mount --propagation slave -- sh -c 'mount --make-rshared / || exit 125
	for f in passwd group subuid subgid; do
		mount --bind "$0/$f" "/etc/$f" || exit 125
	done
	exec "$@"' "$oci_user_dir/etc" "$@"
}

# The test user's copy of the image (oci_user makes it).
oci_image_user() {
	oci_podman_user image exists "$OCI_IMAGE" ||
		oci_podman_user import -q --change 'CMD ["/bin/sh"]' "$OCI_DIR/rootfs.tar" "$OCI_IMAGE" >/dev/null
}

oci_ctr() {
	ctr --address "$oci_ctr_sock" --namespace "$OCI_CTR_NS" "$@"
}

oci_ctr_run() {
	oci_ctr run --runc-binary "$OCI_RUNTIME" "$@"
}

# Whether containerd answers (ctr waits 10 s for a socket that is not there).
oci_containerd_up() {
	[ -S "$oci_ctr_sock" ] && oci_ctr --connect-timeout 2s version >/dev/null 2>&1
}

# containerd with a config of ours, unless one already answers on OCI_DIR's socket.
oci_containerd_start() {
	d=$OCI_DIR/containerd
	if ! oci_containerd_up; then
		mkdir -p "$d" && cat >"$d/config.toml" <<-EOF || return 1
			version = 2
			root = "$d/root"
			state = "$d/state"
			disabled_plugins = ["io.containerd.grpc.v1.cri"]
			[grpc]
			  address = "$oci_ctr_sock"
			[ttrpc]
			  address = "$oci_ctr_sock.ttrpc"
			[plugins."io.containerd.internal.v1.opt"]
			  path = "$d/opt"
		EOF
		containerd --config "$d/config.toml" >>"$d/log" 2>&1 </dev/null &
		echo $! >"$d/pid"
		i=0
		until oci_containerd_up; do
			i=$((i + 1))
			if [ $i -gt 300 ] || ! kill -0 "$(cat "$d/pid")" 2>/dev/null; then
				echo "oci_env: containerd did not start; its log:" >&2
				tail -n 20 "$d/log" >&2
				return 1
			fi
			sleep 0.1
		done
		oci_ctr_started=1
	fi
	oci_ctr images ls -q | grep -qx "$OCI_IMAGE" || {
		oci_image && oci_ctr images import "$OCI_ARCHIVE" >/dev/null
	}
}

oci_capture() {
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
}

oci_log_runtime() {
	mkdir -p "$1" && chmod 1777 "$1" && : >>"$1/calls.log" && chmod 666 "$1/calls.log" || return 1
	w=$1/$(basename "$OCI_RUNTIME")
	cat >"$w" <<-EOF || return 1
		#!/bin/sh
		log=$1 real=$OCI_RUNTIME
	EOF
	cat >>"$w" <<-'EOF' || return 1
		echo "$(cat /proc/$PPID/comm 2>/dev/null) uid $(id -u): $*" >>"$log/calls.log"
		prev= bundle=. op=
		for a in "$@"; do
			case $prev in --bundle | -b) bundle=$a ;; esac
			case $a in create | run) [ -z "$op" ] && op=$a ;; esac
			prev=$a
		done
		[ -z "$op" ] || cp "$bundle/config.json" "$log/config.$(ls "$log" | wc -l).json"
		exec "$real" "$@"
	EOF
	chmod 755 "$w" && OCI_RUNTIME=$w
}

oci_cleanup() {
	if [ -d "$OCI_DIR/root/storage" ]; then
		oci_podman rm -a -f -t 0 >/dev/null 2>&1
	fi
	if [ $oci_user_ready = 1 ]; then
		oci_podman_user rm -a -f -t 0 >/dev/null 2>&1
		# Rootless podman's pause process holds its namespaces, which the next test must
		# not join: they were made in this test's mount namespace, with its bound files.
		pause=$oci_user_dir/xdg/libpod/tmp/pause.pid
		[ -s "$pause" ] && kill -KILL "$(cat "$pause")" 2>/dev/null
		rm -f "$pause"
	fi
	if [ $oci_ctr_started = 1 ]; then
		for t in $(oci_ctr tasks ls -q 2>/dev/null); do
			oci_ctr tasks kill -s KILL "$t" >/dev/null 2>&1
			oci_ctr tasks rm -f "$t" >/dev/null 2>&1
		done
		for c in $(oci_ctr containers ls -q 2>/dev/null); do oci_ctr containers rm "$c" >/dev/null 2>&1; done
		pid=$(cat "$OCI_DIR/containerd/pid")
		kill "$pid" 2>/dev/null
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	fi
}
trap 'oci_cleanup; cleanup' EXIT

oci_image || { echo "FAIL: cannot make the test image $OCI_IMAGE" >&2; exit 1; }
