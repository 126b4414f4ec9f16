#!/bin/sh
# fsvm as podman's OCI runtime, the rest of oci_podman.sh: a port mapping answered from the guest
# (podman's bridge reaching it through the namespace's tap), rootless podman, and ten containers
# at once, each with its own status, leaving no state, process or cgroup behind.
. "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/bin" && ln -s "$TOP/fsvm" "$TMP/bin/fsvm-runtime" ||
	{ echo "FAIL: cannot link fsvm-runtime" >&2; exit 1; }
OCI_RUNTIME=$TMP/bin/fsvm-runtime
. "$(dirname "$0")/oci_env.sh"
state_root=/run/fsvm # podman gives its runtime no --root: fsvm's default

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

# Ten at once, each with its own status; then no state, no process, no cgroup of theirs. Each
# has 256 MiB (podman's --memory is the guest's RAM): ten of the default 512 MiB would be more
# than the lab's 3 GiB, and this run twice crashed the lab's kernel inside KVM_RUN.
pids=""
mem_mib='while read -r k v u; do [ "$k" = MemTotal: ] && echo $((v / 1024)); done </proc/meminfo'
for i in 1 2 3 4 5 6 7 8 9 10; do
	oci_podman run --rm --network none --memory 256m --name "many$i" "$OCI_IMAGE" \
		sh -c "echo many $i; [ \$($mem_mib) -le 256 ] || echo \"no --memory: \$($mem_mib) MiB\"; exit $i" \
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
expect_eq "no container cgroup left" "" "$(ls -d /sys/fs/cgroup/libpod_parent/libpod-* 2>/dev/null)"

finish
