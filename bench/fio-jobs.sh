# The workloads of the reference threads and DESIGN.md section 9, sized for
# the lab (sourced). Each prints lines "NAME VALUE [VALUE]":
# fio_jobs DIR: each fio job on DIR, "NAME READ_IOPS WRITE_IOPS".
# create_files DIR N: "create-file MS_PER_FILE" for N empty files.
# metadata DIR N: "metadata-ops OPS_PER_S" for N rounds of create, stat and
#   unlink, and "metadata-stat STATS_PER_S" for the stats alone.
# tree DIR TARBALL: a source tree of about 1,000 files, "tree-tar-x MS",
#   "tree-find-stat MS", "tree-git-status MS" (the tarball holds a git
#   checkout), "tree-rm-rf MS".

FIO_SIZE=${FIO_SIZE:-32M}
FIO_RUNTIME=${FIO_RUNTIME:-10}

fio_job() { # NAME DIR ARGS...
	local name=$1 dir=$2
	shift 2
	fio --name="$name" --directory="$dir" --filename=bench.dat --size="$FIO_SIZE" \
		--runtime="$FIO_RUNTIME" --time_based --output-format=json "$@" 2>/dev/null |
		python3 -c 'import json,sys
j=json.load(sys.stdin)["jobs"][0]
print("%s %.0f %.0f" % (sys.argv[1], j["read"]["iops"], j["write"]["iops"]))' "$name"
}

fio_jobs() {
	local dir=$1
	# Lay the file out once so every job reads real data.
	fio --name=layout --directory="$dir" --filename=bench.dat --size="$FIO_SIZE" \
		--rw=write --bs=1M --ioengine=psync --end_fsync=1 >/dev/null 2>&1
	local engine bs
	for engine in psync mmap; do
		for bs in 4k 1m; do
			fio_job "seqread-$engine-$bs" "$dir" --rw=read --bs="$bs" --ioengine=$engine
			fio_job "randread-$engine-$bs" "$dir" --rw=randread --bs="$bs" --ioengine=$engine
		done
	done
	fio_job randread-psync-4k-2jobs "$dir" --rw=randread --bs=4k --ioengine=psync \
		--numjobs=2 --group_reporting
	fio_job randrw-libaio-4k-qd64-direct "$dir" --rw=randrw --bs=4k \
		--ioengine=libaio --iodepth=64 --direct=1
	fio_job seqwrite-psync-4k "$dir" --rw=write --bs=4k --ioengine=psync
	fio_job randwrite-psync-4k "$dir" --rw=randwrite --bs=4k --ioengine=psync
	fio_job seqwrite-psync-1m "$dir" --rw=write --bs=1M --ioengine=psync
	rm -f "$dir/bench.dat"
}

create_files() {
	local dir=$1/create n=$2 t0 t1
	mkdir -p "$dir"
	t0=${EPOCHREALTIME/./}
	for i in $(seq "$n"); do : >"$dir/f$i"; done
	t1=${EPOCHREALTIME/./}
	rm -rf "$dir"
	awk -v us=$((10#$t1 - 10#$t0)) -v n="$n" 'BEGIN { printf "create-file %.3f\n", us / n / 1000 }'
}

metadata() {
	python3 - "$1/metadata" "$2" <<'PY'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
stat_s = 0.0
t0 = time.monotonic()
for i in range(n):
    p = "%s/f%d" % (d, i)
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
    s0 = time.monotonic()
    os.stat(p)
    stat_s += time.monotonic() - s0
    os.unlink(p)
total = time.monotonic() - t0
os.rmdir(d)
print("metadata-ops %.0f" % (3 * n / total))
print("metadata-stat %.0f" % (n / stat_s))
PY
}

tree() {
	local dir=$1/tree tarball=$2 t
	step() { # NAME CMD...: times CMD in milliseconds
		local name=$1 t0
		shift
		t0=${EPOCHREALTIME/./}
		"$@" >/dev/null 2>&1 || echo "tree: $name failed" >&2
		echo "$name $(((${EPOCHREALTIME/./} - t0) / 1000))"
	}
	mkdir -p "$dir"
	step tree-tar-x tar -xf "$tarball" -C "$dir"
	step tree-find-stat find "$dir" -exec stat -c %s {} +
	step tree-git-status git -C "$dir/src" -c safe.directory='*' status --porcelain
	step tree-rm-rf rm -rf "$dir"
}

# make_tree_tarball OUT: about 1,000 small files in 40 folders, checked in to
# git, as a tarball for tree().
make_tree_tarball() {
	local src
	src=$(mktemp -d)
	mkdir -p "$src/src"
	for d in $(seq 40); do
		mkdir -p "$src/src/dir$d"
		for f in $(seq 25); do
			printf 'file %d of folder %d\n%s\n' "$f" "$d" "$(seq -s ' ' "$f" $((f + 60)))" \
				>"$src/src/dir$d/file$f.c"
		done
	done
	git -C "$src/src" init -q && git -C "$src/src" add -A &&
		git -C "$src/src" -c user.name=bench -c user.email=bench@fsvm commit -qm tree
	tar -cf "$1" -C "$src" src
	rm -rf "$src"
}
