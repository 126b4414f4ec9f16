/* The virtio-fs device, one per share: its features, config space (the
 * tag, the request queues) and DAX window, its FUSE server, and its
 * wiring to a transport, the machine and the report. Its queues are
 * served by the queue engine (devices/virtio_fs_queues.c). */
#include "devices/virtio_fs.h"

#include <errno.h>
#include <linux/fuse.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "core/log.h"
#include "devices/device.h"
#include "fs/fuse_state.h"

/* DRIVER_OK, a reset and a doorbell are the queue engine's to serve. */
static int virtio_fs_activate(void *opaque, struct virtio_queue *queues,
			      unsigned int nr, uint64_t features)
{
	struct virtio_fs *fs = opaque;
	(void)features;
	return virtio_fs_queues_start(&fs->queues, fs->server, queues, nr);
}

static void virtio_fs_reset(void *opaque)
{
	struct virtio_fs *fs = opaque;
	virtio_fs_queues_stop(&fs->queues);
}

static void virtio_fs_notify(void *opaque, unsigned int q)
{
	struct virtio_fs *fs = opaque;
	virtio_fs_queues_notify(&fs->queues, q);
}

static int dax_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		   uint64_t foffset, bool writable)
{
	return dax_window_map(opaque, moffset, len, fd, foffset, writable);
}

static int dax_unmap(void *opaque, uint64_t moffset, uint64_t len)
{
	return dax_window_unmap(opaque, moffset, len);
}

static void dax_file_grown(void *opaque)
{
	dax_window_file_grown(opaque);
}

struct fuse_dax_ops virtio_fs_dax_ops(struct dax_window *w)
{
	return (struct fuse_dax_ops){.map = dax_map,
				     .unmap = dax_unmap,
				     .file_grown = dax_file_grown,
				     .window_size = w->size,
				     .opaque = w};
}

int virtio_fs_create(struct virtio_fs *fs, const char *tag,
		     const struct fuse_server_config *cfg,
		     unsigned int nr_request_queues, uint64_t dax_size,
		     unsigned int dax_max_maps)
{
	memset(fs, 0, sizeof(*fs));
	if (strlen(tag) > sizeof(fs->config.tag) || nr_request_queues == 0 ||
	    nr_request_queues > VIRTIO_FS_MAX_REQUEST_QUEUES)
		return -EINVAL;
	memcpy(fs->config.tag, tag, strlen(tag));
	fs->config.num_request_queues = nr_request_queues;
	int err = virtio_fs_queues_init(&fs->queues);
	if (err)
		return err;
	struct fuse_server_config server_cfg = *cfg;
	if (dax_size) {
		err = dax_window_create(&fs->dax, dax_size, dax_max_maps);
		if (err)
			return err;
		fs->dax_ops = virtio_fs_dax_ops(&fs->dax);
		server_cfg.dax = &fs->dax_ops;
	}
	err = fuse_server_create(&server_cfg, &fs->server);
	if (err)
		return err;

	fs->dev = (struct virtio_dev){
		.device_id = VIRTIO_ID_FS,
		.features = (1ULL << VIRTIO_F_VERSION_1) |
			    (1ULL << VIRTIO_RING_F_INDIRECT_DESC) |
			    (1ULL << VIRTIO_RING_F_EVENT_IDX),
		/* Queue 0 is the high-priority queue (FORGET, INTERRUPT). */
		.num_queues = (uint16_t)(1 + nr_request_queues),
		.queue_max_size = VIRTIO_FS_QUEUE_SIZE,
		.config = &fs->config,
		.config_len = sizeof(fs->config),
		.shm_id = VIRTIO_FS_SHMCAP_ID_CACHE,
		.shm_size = dax_size,
		.shm_hva = fs->dax.base,
		.activate = virtio_fs_activate,
		.reset = virtio_fs_reset,
		.notify = virtio_fs_notify,
		.opaque = fs,
	};
	return 0;
}

/* A host file under DAX mappings changed size. */
static void on_dax_watch(void *opaque, uint32_t events)
{
	(void)events;
	struct virtio_fs *fs = opaque;
	unsigned int changed = dax_window_watch_events(&fs->dax);
	if (changed)
		log_info("%.*s: %u DAX mapping(s) followed a host file's new size",
			 (int)sizeof(fs->config.tag), fs->config.tag, changed);
}

/* KVM could not back a guest page: a DAX page whose host file shrank,
 * before the file's watch told us. */
static unsigned int virtio_fs_repair_memory(void *dev)
{
	struct virtio_fs *fs = dev;
	unsigned int repaired = fs->dax.base ? dax_window_repair(&fs->dax) : 0;
	if (repaired)
		log_error("warning: %.*s: %u DAX mapping(s) reached past the end of files truncated on the host; those pages now read as zeros",
			  (int)sizeof(fs->config.tag), fs->config.tag, repaired);
	return repaired;
}

/* The data path, counted even at 0: READ/WRITE, or DAX mappings instead. */
static bool always_reported(uint32_t op)
{
	return op == FUSE_READ || op == FUSE_WRITE || op == FUSE_SETUPMAPPING ||
	       op == FUSE_REMOVEMAPPING;
}

/* Every request the guest made of the share, by opcode: the round trips
 * an operation costs, and the data path. */
static void virtio_fs_report(void *dev, struct device_report *out)
{
	struct virtio_fs *fs = dev;

	snprintf(out->name, sizeof(out->name), "%.*s",
		 (int)sizeof(fs->config.tag), fs->config.tag);
	out->what = "requests";
	uint64_t unnamed = 0; /* opcodes we do not serve, all together */
	for (uint32_t op = 0; op < FUSE_OPCODE_LIMIT; op++) {
		uint64_t count = fuse_server_count(fs->server, op);
		const char *name = fuse_opcode_name(op);
		if (!name)
			unnamed += count;
		else if (count || always_reported(op))
			device_report_add(out, name, count);
	}
	if (unnamed)
		device_report_add(out, "other", unnamed);
	/* -v only: how the requests spread over the queues (one per vCPU
	 * with a multiqueue guest) and how many ran on the vCPU that rang or
	 * on a helper, which no counter of the report holds. */
	char line[256];
	int n = snprintf(line, sizeof(line), "%.*s requests per queue: hiprio %llu, request",
			 (int)sizeof(fs->config.tag), fs->config.tag,
			 (unsigned long long)atomic_load_explicit(
				 &fs->queues.queue_requests[0],
				 memory_order_relaxed));
	for (unsigned int q = 1;
	     q <= fs->config.num_request_queues && n < (int)sizeof(line); q++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %llu",
			      (unsigned long long)atomic_load_explicit(
				      &fs->queues.queue_requests[q],
				      memory_order_relaxed));
	log_info("%s", line);
	log_info("%.*s requests run in place: %llu, on helper threads: %llu",
		 (int)sizeof(fs->config.tag), fs->config.tag,
		 (unsigned long long)atomic_load_explicit(
			 &fs->queues.requests_in_place, memory_order_relaxed),
		 (unsigned long long)atomic_load_explicit(
			 &fs->queues.requests_on_helpers,
			 memory_order_relaxed));
	virtio_fs_queues_log_states(&fs->queues, out->name);
}

static const struct device_type virtio_fs_type;

/* One device per share, in the order given (the root first), with a
 * request queue per vCPU: Linux 6.11+ sends each CPU's requests down a
 * queue of its own (older guests use the first only). */
static int virtio_fs_add(struct machine *m)
{
	const struct virtio_fs_options *o =
		machine_options(m, VIRTIO_FS_DEVICE_NAME);
	if (!o)
		return 0; /* a machine with no shares */
	unsigned int queues = m->vm->nr_vcpus;
	if (queues > VIRTIO_FS_MAX_REQUEST_QUEUES)
		queues = VIRTIO_FS_MAX_REQUEST_QUEUES;
	if (queues == 0)
		queues = 1;
	for (unsigned int i = 0; i < o->nr_shares; i++) {
		const struct virtio_fs_share *s = &o->shares[i];
		struct virtio_fs *fs = calloc(1, sizeof(*fs));
		if (!fs)
			return -ENOMEM;
		int err = virtio_fs_create(fs, s->tag, &s->fuse, queues, s->dax_size,
					   s->dax_max_maps);
		if (!err)
			err = virtio_bus_add(m->virtio, &fs->dev);
		if (!err && fs->dax.base)
			err = event_loop_add(m->loop, fs->dax.watch_fd, EPOLLIN,
					     on_dax_watch, fs);
		if (!err)
			err = machine_add_device(m, &virtio_fs_type, fs);
		if (err)
			return err;
	}
	return 0;
}


/* --- snapshots --- */

/* 0 for a file the guest holds no node of: its open answers ESTALE. */
static uint64_t dax_key_of(void *opaque, int fd)
{
	struct virtio_fs *fs = opaque;
	uint64_t nodeid;
	fuse_server_node_of_fd(fs->server, fd, &nodeid);
	return nodeid;
}

static int dax_open_key(void *opaque, uint64_t nodeid, bool writable)
{
	struct virtio_fs *fs = opaque;
	return fuse_server_open_node(fs->server, nodeid, writable);
}

/* The device's state: the FUSE state's length and bytes, the window's
 * size (0: none) and, with a window, its mappings. */
int virtio_fs_save_state(struct virtio_fs *fs, struct state_out *out)
{
	unsigned char *fuse;
	size_t len;
	int err = fuse_server_save_state(fs->server, &fuse, &len);
	if (err)
		return err;
	state_put_u32(out, (uint32_t)len); /* a state file holds 64 MiB */
	state_put(out, fuse, len);
	free(fuse);
	state_put_u64(out, fs->dax.size);
	if (fs->dax.base)
		dax_window_save(&fs->dax, out, dax_key_of, fs);
	return out->err;
}

int virtio_fs_restore_state(struct virtio_fs *fs, struct state_in *in,
			    char *err, size_t errlen)
{
	/* The tag need not end in a NUL: %.*s stops at one or at its size. */
	int tag_len = (int)sizeof(fs->config.tag);
	uint32_t len = state_get_u32(in);
	if (in->short_read || len > in->left)
		return log_refusal(-EBADMSG, err, errlen, "%.*s: its state is cut short",
				   tag_len, fs->config.tag);
	char why[256];
	int ret = fuse_server_restore_state(fs->server, in->p, len, why,
					    sizeof(why));
	if (ret)
		return log_refusal(ret, err, errlen, "%.*s: %s", tag_len,
				   fs->config.tag, why);
	in->p += len;
	in->left -= len;
	uint64_t dax_size = state_get_u64(in);
	if (in->short_read)
		ret = log_refusal(-EBADMSG, err, errlen, "%.*s: its state is cut short",
				  tag_len, fs->config.tag);
	else if (dax_size != fs->dax.size)
		ret = log_refusal(-EBADMSG, err, errlen,
				  "%.*s: a DAX window of %llu bytes, this device's is %llu",
				  tag_len, fs->config.tag,
				  (unsigned long long)dax_size,
				  (unsigned long long)fs->dax.size);
	else if (fs->dax.base) {
		ret = dax_window_restore(&fs->dax, in, dax_open_key, fs, why,
					 sizeof(why));
		if (ret)
			log_refusal(ret, err, errlen, "%.*s: %s", tag_len,
				    fs->config.tag, why);
	}
	if (ret)
		fuse_server_forget_state(fs->server);
	return ret;
}

/* How long a snapshot waits for a share's requests in hand to be
 * answered: those the guest sent just before its mark. One still waiting
 * after it (on a lock the guest holds elsewhere) refuses the snapshot. */
#define DRAIN_WAIT_MS 2000

static int virtio_fs_save_dev(void *dev, struct state_out *out)
{
	struct virtio_fs *fs = dev;
	const struct timespec tick = {.tv_nsec = 1000000};
	for (int ms = 0; !virtio_fs_queues_idle(&fs->queues); ms++) {
		if (ms == DRAIN_WAIT_MS)
			return -EBUSY;
		nanosleep(&tick, NULL);
	}
	return virtio_fs_save_state(fs, out);
}

static int virtio_fs_restore_dev(void *dev, struct state_in *in, char *err,
				 size_t errlen)
{
	return virtio_fs_restore_state(dev, in, err, errlen);
}

static const struct device_type virtio_fs_type = {
	.name = VIRTIO_FS_DEVICE_NAME,
	.add = virtio_fs_add,
	.report = virtio_fs_report,
	.repair_memory = virtio_fs_repair_memory,
	.save = virtio_fs_save_dev,
	.restore = virtio_fs_restore_dev,
};
DEVICE_REGISTER(virtio_fs_type);
