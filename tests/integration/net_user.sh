#!/bin/sh
# --net user: the guest's eth0 behind passt, started by fsvm as the test
# user. In a network namespace of the test's own (the same on any host):
# a dummy interface with the default routes (passt hands the guest its
# addresses), a web server there and on the loopback, and a DNS server
# that passt's DHCP names (from this namespace's resolv.conf). The guest
# fetches by address and by name, moves 100 MiB each way with matching
# checksums, cannot reach the host's loopback unless host-loopback is
# asked for, resolves names when the host's resolver is systemd-resolved's
# loopback one, serves a port --publish forwards, and its command's status is
# fsvm's.
if [ -z "${NET_TEST_NS:-}" ]; then
	NET_TEST_NS=1 exec unshare --net --mount -- "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

# The namespace's network: "outside" addresses on a dummy interface.
ip link set lo up &&
	ip link add up0 type dummy && ip link set up0 up &&
	ip addr add 10.0.2.15/24 dev up0 && ip route add default via 10.0.2.2 &&
	ip addr add 10.0.9.53/32 dev up0 && ip addr add 10.0.9.80/32 dev up0 ||
	{ echo "FAIL: cannot make the test's network (dummy interfaces?)" >&2; exit 1; }
echo "nameserver 10.0.9.53" >"$TMP/resolv.conf"
mount --bind "$TMP/resolv.conf" /etc/resolv.conf || { echo "FAIL: cannot mount resolv.conf" >&2; exit 1; }
mounts="/etc/resolv.conf $mounts"

www=$TMP/www
mkdir -p "$www" "$TMP/share"
echo "small file" >"$www/small"
head -c 100M /dev/urandom >"$www/big"
big_sum=$(sha256sum <"$www/big" | cut -d' ' -f1)
port=$((20000 + $$ % 20000))
python3 "$TOP/tests/integration/net_servers.py" "$www" $port --dns 10.0.9.53 web.fsvm-test 10.0.9.80 &
servers=$!
trap 'kill $servers 2>/dev/null; cleanup' EXIT # $servers: a list
i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/small" || [ $i -ge 50 ]; do sleep 0.2; i=$((i + 1)); done
give_to_test_user "$TMP/share"

run_fsvm run --net user --timeout 500 --mem 1G -- sh -c '
echo "addr $(ip -4 -o addr show dev eth0 | awk "{ print \$4 }")"
echo "route $(ip route show default)"
echo "mtu $(cat /sys/class/net/eth0/mtu)"
echo "resolv $(grep nameserver /etc/resolv.conf)"
echo "by-address $(curl -sS -m 30 http://10.0.9.80:'$port'/small)"
echo "by-name $(curl -sS -m 30 http://web.fsvm-test:'$port'/small)"
curl -sS -m 3 -o /dev/null http://10.0.2.2:'$port'/small 2>/dev/null && echo "loopback reached" || echo "loopback refused"
curl -sS -m 300 -o /tmp/big http://10.0.9.80:'$port'/big && echo "down $(sha256sum </tmp/big | cut -d" " -f1)"
echo "up $(curl -sS -m 300 -H "Expect:" -T /tmp/big http://10.0.9.80:'$port'/upload 2>&1)"
exit 7'
expect_status "status is the command's" 7 "$rc"
expect_match "DHCP address" "^addr 10\.0\.2\.15/24$" "$out"
expect_match "default route" "^route default via 10\.0\.2\.2 dev eth0" "$out"
expect_match "passt's MTU" "^mtu 65520$" "$out"
expect_match "DNS from DHCP" "^resolv nameserver 10\.0\.9\.53$" "$out"
expect_match "fetch by address" "^by-address small file$" "$out"
expect_match "fetch by name" "^by-name small file$" "$out"
expect_match "host loopback out of reach" "^loopback refused$" "$out"
expect_match "100 MiB to the guest" "^down $big_sum$" "$out"
expect_match "100 MiB from the guest" "^up $big_sum$" "$out"

# host-loopback: the gateway address is the host's loopback.
run_fsvm run -v --net user,host-loopback --timeout 300 -- sh -c '
echo "loopback $(curl -sS -m 30 http://10.0.2.2:'$port'/small)"'
expect_status "host-loopback: status" 0 "$rc"
expect_match "host-loopback: fetch" "^loopback small file$" "$out"
expect_match "host-loopback: frames counted" "eth0 frames: rx_frames [1-9][0-9]* rx_bytes [1-9]" "$err"

# A host whose resolver is on its own loopback, systemd-resolved's
# 127.0.0.53, which passt cannot hand the guest: fsvm gives passt the
# servers systemd-resolved itself asks, from its own resolv.conf.
echo "nameserver 127.0.0.53" >"$TMP/resolv-loopback.conf"
mkdir -p /run/systemd/resolve && mount -t tmpfs resolved /run/systemd/resolve &&
	mounts="/run/systemd/resolve $mounts" &&
	echo "nameserver 10.0.9.53" >/run/systemd/resolve/resolv.conf &&
	mount --bind "$TMP/resolv-loopback.conf" /etc/resolv.conf && mounts="/etc/resolv.conf $mounts" ||
	fail "cannot play systemd-resolved"
run_fsvm run --net user --timeout 300 -- sh -c '
echo "resolv $(grep nameserver /etc/resolv.conf)"
echo "by-name $(curl -sS -m 30 http://web.fsvm-test:'$port'/small)"'
expect_status "loopback resolver: status" 0 "$rc"
expect_match "loopback resolver: systemd-resolved's servers" "^resolv nameserver 10\.0\.9\.53$" "$out"
expect_match "loopback resolver: fetch by name" "^by-name small file$" "$out"

# --publish: a host port reaches a server in the guest.
hport=$((port + 1))
"$FSVM" run --net user --publish $hport:8080 --share "$TMP/share" --timeout 300 -- sh -c '
cd /tmp && echo "from the guest" >index.txt
python3 -m http.server 8080 >/dev/null 2>&1 &
until curl -s -o /dev/null http://127.0.0.1:8080/index.txt; do sleep 0.2; done
touch '"$TMP/share"'/ready
i=0; while [ ! -e '"$TMP/share"'/done ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done' >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_for_file "$TMP/share/ready" $pid
expect_eq "publish: host reaches the guest" "from the guest" "$(curl -sS -m 30 "http://127.0.0.1:$hport/index.txt" 2>&1)"
touch "$TMP/share/done"
wait $pid
expect_status "publish: status" 0 $?
finish
