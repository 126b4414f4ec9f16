# The fio workloads of the reference threads, sized for the lab (sourced).
# fio_jobs DIR: runs each job on DIR and prints "NAME READ_IOPS WRITE_IOPS".
# create_files DIR N: prints "create-file MS_PER_FILE" for N empty files.

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
	fio_job randrw-libaio-4k-qd64-direct "$dir" --rw=randrw --bs=4k \
		--ioengine=libaio --iodepth=64 --direct=1
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
