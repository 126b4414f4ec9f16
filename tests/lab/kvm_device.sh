#!/bin/sh
# A check of the KVM the guest suite runs on (the lab's), not of fsvm (tests/integration/run-all
# runs it first): /dev/kvm is a character device and tools/kvm-check says it can run stock kernels.
root=$(cd "$(dirname "$0")/../.." && pwd)
[ -c /dev/kvm ] || { echo "FAIL: /dev/kvm is not a character device"; exit 1; }
kvm=$("$root/tools/kvm-check") || { echo "FAIL: $kvm"; exit 1; }
echo "$kvm"
