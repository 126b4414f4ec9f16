#!/bin/sh
# fsvm as containerd's runtime: ctr run through the runc shim with fsvm-runtime as its runc
# binary (docs/OCI.md), on the busybox image oci_env.sh imports: the container's output and
# exit status, a stopped task deleted without leftovers.
. "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/bin" && ln -s "$TOP/fsvm" "$TMP/bin/fsvm-runtime" ||
	{ echo "FAIL: cannot link fsvm-runtime" >&2; exit 1; }
OCI_RUNTIME=$TMP/bin/fsvm-runtime
. "$(dirname "$0")/oci_env.sh"
oci_containerd_start || { echo "FAIL: containerd did not start" >&2; exit 1; }

oci_capture oci_ctr_run --rm "$OCI_IMAGE" fsvm-ctr1 sh -c 'echo "ctr ok"; exit 4'
expect_status "ctr run: the container's status" 4 "$rc"
expect_eq "ctr run: its output" "ctr ok" "$out"
expect_eq "ctr run --rm: no container left" "" "$(oci_ctr containers ls -q)"
expect_eq "no fsvm process left" "" "$(pgrep -x fsvm-runtime)"
finish
