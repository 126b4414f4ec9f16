#!/bin/sh
# /dev/kvm is a character device and tools/kvm-check says it can run stock guest kernels.
root=$(cd "$(dirname "$0")/../.." && pwd)
[ -c /dev/kvm ] || { echo "FAIL: /dev/kvm is not a character device"; exit 1; }
kvm=$("$root/tools/kvm-check") || { echo "FAIL: $kvm"; exit 1; }
echo "$kvm"
