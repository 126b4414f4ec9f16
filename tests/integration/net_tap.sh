#!/bin/sh
# --net tap:NAME: an existing tap device, as an orchestrator leaves one (made
# by root, owned by the user who runs fsvm), in a network namespace of the
# test's own (a tap no one owns is anyone's). A static address from --net's ip=/gw=; 100 MiB each way with
# matching checksums (the guest's TSO and checksum offloads pass through the
# tap's virtio-net header); fsvm as root too; a tap that does not exist or
# is not the user's is one clear line.
if [ -z "${NET_TEST_NS:-}" ]; then
	NET_TEST_NS=1 exec unshare --net -- "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

ip link set lo up &&
	ip tuntap add tap0 mode tap user "$TEST_UID" group "$TEST_GID" &&
	ip tuntap add rootonly mode tap user 0 &&
	ip addr add 10.0.7.1/24 dev tap0 && ip link set tap0 up ||
	{ echo "FAIL: cannot make tap devices" >&2; exit 1; }

www=$TMP/www
mkdir -p "$www"
echo "small file" >"$www/small"
head -c 100M /dev/urandom >"$www/big"
big_sum=$(sha256sum <"$www/big" | cut -d' ' -f1)
port=$((20000 + $$ % 20000))
python3 "$TOP/tests/integration/net_servers.py" "$www" $port &
servers=$!
trap 'kill $servers 2>/dev/null; cleanup' EXIT
i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/small" || [ $i -ge 50 ]; do sleep 0.2; i=$((i + 1)); done

run_fsvm run -v --net tap:tap0,ip=10.0.7.2/24,gw=10.0.7.1 --timeout 500 --mem 1G -- sh -c '
echo "addr $(ip -4 -o addr show dev eth0 | awk "{ print \$4 }")"
echo "offloads $(cat /sys/class/net/eth0/features 2>/dev/null)"
echo "fetch $(curl -sS -m 30 http://10.0.7.1:'$port'/small)"
curl -sS -m 300 -o /tmp/big http://10.0.7.1:'$port'/big && echo "down $(sha256sum </tmp/big | cut -d" " -f1)"
echo "up $(curl -sS -m 300 -H "Expect:" -T /tmp/big http://10.0.7.1:'$port'/upload 2>&1)"'
expect_status "status" 0 "$rc"
expect_match "static address" "^addr 10\.0\.7\.2/24$" "$out"
expect_match "fetch" "^fetch small file$" "$out"
expect_match "100 MiB to the guest" "^down $big_sum$" "$out"
expect_match "100 MiB from the guest" "^up $big_sum$" "$out"
expect_match "no frame dropped" "eth0 frames: rx_frames [0-9]* rx_bytes [0-9]* tx_frames [0-9]* tx_bytes [0-9]*$" \
	"$(echo "$err" | grep 'eth0 frames:')"

run_fsvm_as_root run --net tap:tap0,ip=10.0.7.2/24 --timeout 300 -- sh -c '
echo "fetch $(curl -sS -m 30 http://10.0.7.1:'$port'/small)"'
expect_status "as root: status" 0 "$rc"
expect_match "as root: fetch" "^fetch small file$" "$out"

expect_error "no such tap" "tap:nope: no such network interface" run --net tap:nope -- true
expect_error "another's tap" "tap:rootonly: not yours to open" run --net tap:rootonly -- true
finish
