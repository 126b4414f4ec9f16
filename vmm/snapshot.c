/* Taking a VM's snapshot at its snapshot point, and restoring one. */
#include "vmm/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/arch.h"
#include "core/log.h"
#include "core/vcpu.h"

#define PRODUCER "fsvm " FSVM_VERSION
/* RAM is written in chunks, a chunk of zeros left a hole: most of a
 * booted guest's RAM was never touched. */
#define MEMORY_CHUNK (2u << 20)

/* NUL-terminated strings one after another. */
static void put_strings(struct state_out *out, const char *const *s,
			unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		state_put(out, s[i], strlen(s[i]) + 1);
}

static void put_device_types(struct state_out *out, const struct machine *m)
{
	const char *types[DEVICE_MAX_INSTANCES];
	for (unsigned int i = 0; i < m->nr_devices; i++)
		types[i] = m->devices[i].type->name;
	put_strings(out, types, m->nr_devices);
}

static void save_transport(struct virtio_bus *bus, unsigned int i,
			   struct state_out *out)
{
	if (bus->mmio)
		virtio_mmio_save(&bus->transports[i].mmio, out);
	else
		virtio_pci_save(&bus->transports[i].pci, out);
}

/* One section from a part's blob; false (with err) when it failed. */
static bool add_blob(struct snapshot_writer *w, const char *name,
		     struct state_out *out, int ret, char *err, size_t errlen)
{
	if (!ret)
		ret = out->err;
	if (ret) {
		snprintf(err, errlen, "%s: cannot save it: %s", name,
			 ret == -EBUSY ? "a request is still waiting (on a lock?)"
				       : strerror(-ret));
		state_out_fini(out);
		*out = (struct state_out){0};
		return false;
	}
	snapshot_add(w, name, out->buf, out->len);
	state_out_fini(out);
	*out = (struct state_out){0};
	return true;
}

static bool add_arch_blob(struct snapshot_writer *w, const char *name,
			  int ret, unsigned char *buf, size_t len, char *err,
			  size_t errlen)
{
	if (ret) {
		snprintf(err, errlen, "%s: cannot save it: %s", name,
			 strerror(-ret));
		return false;
	}
	snapshot_add(w, name, buf, len);
	free(buf);
	return true;
}

static bool collect(const struct snapshot_machine *sm,
		    struct snapshot_writer *w, const char *const *words,
		    unsigned int nr_words, char *err, size_t errlen)
{
	struct vm *vm = &sm->board->vm;
	struct machine *m = sm->machine;
	struct virtio_bus *bus = &sm->board->virtio;
	struct state_out out = {0};
	char name[SNAPSHOT_NAME_MAX + 1];
	unsigned char *buf = NULL;
	size_t len = 0;

	put_strings(&out, words, nr_words);
	if (!add_blob(w, "options", &out, 0, err, errlen))
		return false;
	put_device_types(&out, m);
	if (!add_blob(w, "devices", &out, 0, err, errlen))
		return false;
	int ret = arch_vm_save_state(vm, &buf, &len);
	if (!add_arch_blob(w, "vm", ret, buf, len, err, errlen))
		return false;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		snprintf(name, sizeof(name), "vcpu.%u", i);
		ret = arch_vcpu_save_state(&vm->vcpus[i], &buf, &len);
		if (!add_arch_blob(w, name, ret, buf, len, err, errlen))
			return false;
	}
	serial_save(&sm->con->out, &out);
	if (!add_blob(w, "serial.0", &out, 0, err, errlen))
		return false;
	serial_save(&sm->con->err, &out);
	if (!add_blob(w, "serial.1", &out, 0, err, errlen))
		return false;
	for (unsigned int i = 0; i < m->nr_devices; i++) {
		const struct device_type *t = m->devices[i].type;
		if (!t->save)
			continue;
		snprintf(name, sizeof(name), "dev.%u", i);
		ret = t->save(m->devices[i].dev, &out);
		if (!add_blob(w, name, &out, ret, err, errlen))
			return false;
	}
	for (unsigned int i = 0; i < bus->nr_devices; i++) {
		snprintf(name, sizeof(name), "virtio.%u", i);
		save_transport(bus, i, &out);
		if (!add_blob(w, name, &out, 0, err, errlen))
			return false;
	}
	return true;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	const uint64_t *q = (const uint64_t *)p;
	for (size_t i = 0; i < len / sizeof(*q); i++)
		if (q[i])
			return false;
	return true;
}

/* Guest RAM as it lies in the host's mapping (the regions one after
 * another), through a temporary file renamed into place when whole. */
static int write_memory(const struct guest_mem *mem, int dirfd)
{
	static const char tmp[] = SNAPSHOT_MEMORY_FILE ".tmp";
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			0600);
	if (fd < 0)
		return -errno;
	int err = 0;
	for (uint64_t at = 0; !err && at < mem->ram_size; at += MEMORY_CHUNK) {
		size_t len = mem->ram_size - at < MEMORY_CHUNK
				     ? (size_t)(mem->ram_size - at)
				     : MEMORY_CHUNK;
		const uint8_t *p = mem->base + at;
		if (all_zero(p, len)) {
			if (lseek(fd, (off_t)len, SEEK_CUR) < 0)
				err = -errno;
			continue;
		}
		while (!err && len) {
			ssize_t n = write(fd, p, len);
			if (n < 0 && errno != EINTR)
				err = -errno;
			if (n > 0) {
				p += n;
				len -= (size_t)n;
			}
		}
	}
	if (!err && (ftruncate(fd, (off_t)mem->ram_size) < 0 || fsync(fd) < 0))
		err = -errno;
	close(fd);
	if (!err && renameat(dirfd, tmp, dirfd, SNAPSHOT_MEMORY_FILE) < 0)
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

int snapshot_take(const struct snapshot_machine *sm, int dirfd,
		  const char *const *words, unsigned int nr_words, char *err,
		  size_t errlen)
{
	struct vm *vm = &sm->board->vm;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		int ret = vcpu_settle(&vm->vcpus[i]);
		if (ret)
			return log_refusal(ret, err, errlen,
					   "vCPU %u: cannot complete its last exit: %s",
					   i, strerror(-ret));
	}
	/* An older state beside the new memory would be a snapshot of two
	 * VMs: it goes first, and the new one comes last. */
	if (unlinkat(dirfd, SNAPSHOT_STATE_FILE, 0) < 0 && errno != ENOENT)
		return log_refusal(-errno, err, errlen, "%s: %s",
				   SNAPSHOT_STATE_FILE, strerror(errno));
	struct snapshot_writer w;
	snapshot_writer_init(&w, PRODUCER, vm->mem.ram_size);
	int ret = collect(sm, &w, words, nr_words, err, errlen) ? 0 : -EIO;
	if (!ret && (ret = write_memory(&vm->mem, dirfd)))
		snprintf(err, errlen, "%s: %s", SNAPSHOT_MEMORY_FILE,
			 strerror(-ret));
	if (!ret && (ret = snapshot_write(&w, dirfd, SNAPSHOT_STATE_FILE)))
		snprintf(err, errlen, "%s: %s", SNAPSHOT_STATE_FILE,
			 strerror(-ret));
	snapshot_writer_fini(&w);
	return ret;
}

int snapshot_open(const char *dir, struct snapshot *s, int *mem_fd, char *err,
		  size_t errlen)
{
	*mem_fd = -1;
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return log_refusal(-errno, err, errlen, "%s", strerror(errno));
	int ret = snapshot_load(s, dirfd, SNAPSHOT_STATE_FILE, PRODUCER, err,
				errlen);
	struct stat st;
	if (!ret) {
		*mem_fd = openat(dirfd, SNAPSHOT_MEMORY_FILE, O_RDONLY | O_CLOEXEC);
		if (*mem_fd < 0 || fstat(*mem_fd, &st) < 0)
			ret = log_refusal(-errno, err, errlen, "%s: %s",
					  SNAPSHOT_MEMORY_FILE, strerror(errno));
		else if (!S_ISREG(st.st_mode) ||
			 (uint64_t)st.st_size < s->memory_size)
			ret = log_refusal(-EBADMSG, err, errlen,
					  "%s: %lld bytes, the state says %llu",
					  SNAPSHOT_MEMORY_FILE, (long long)st.st_size,
					  (unsigned long long)s->memory_size);
	}
	close(dirfd);
	if (ret) {
		if (*mem_fd >= 0)
			close(*mem_fd);
		*mem_fd = -1;
		snapshot_fini(s);
	}
	return ret;
}

/* NUL-terminated strings filling a section: at most max, into list. */
static int get_strings(const struct snapshot_section *sec, const char **list,
		       unsigned int max, unsigned int *n)
{
	*n = 0;
	if (sec->len && sec->data[sec->len - 1])
		return -EBADMSG;
	for (size_t at = 0; at < sec->len; at += strlen(list[*n - 1]) + 1) {
		if (*n == max)
			return -EBADMSG;
		list[(*n)++] = (const char *)sec->data + at;
	}
	return 0;
}

static const struct snapshot_section *find(const struct snapshot *s,
					   const char *name, char *err,
					   size_t errlen)
{
	const struct snapshot_section *sec = snapshot_find(s, name);
	if (!sec)
		log_refusal(-EBADMSG, err, errlen, "state: no section %s", name);
	return sec;
}

int snapshot_words(const struct snapshot *s, char ***words,
		   unsigned int *nr_words, char *err, size_t errlen)
{
	const struct snapshot_section *sec = find(s, "options", err, errlen);
	if (!sec)
		return -EBADMSG;
	const char **list = calloc(SNAPSHOT_WORDS_MAX + 1, sizeof(*list));
	if (!list)
		return log_refusal(-ENOMEM, err, errlen, "out of memory");
	if (get_strings(sec, list, SNAPSHOT_WORDS_MAX, nr_words)) {
		free(list);
		return log_refusal(-EBADMSG, err, errlen,
				   "state: section options: not the flags of a run");
	}
	*words = (char **)list;
	return 0;
}

/* The machine is the snapshot's: the same devices, in the same order. */
static int check_devices(const struct snapshot *s, const struct machine *m,
			 char *err, size_t errlen)
{
	const struct snapshot_section *sec = find(s, "devices", err, errlen);
	if (!sec)
		return -EBADMSG;
	const char *types[DEVICE_MAX_INSTANCES];
	unsigned int n;
	if (get_strings(sec, types, DEVICE_MAX_INSTANCES, &n))
		return log_refusal(-EBADMSG, err, errlen,
				   "state: section devices: not a list of devices");
	for (unsigned int i = 0; i < n || i < m->nr_devices; i++)
		if (i >= n || i >= m->nr_devices ||
		    strcmp(types[i], m->devices[i].type->name))
			return log_refusal(-EBADMSG, err, errlen,
					   "the snapshot's device %u is %s, this machine's %s (its shares or flags changed?)",
					   i, i < n ? types[i] : "none",
					   i < m->nr_devices ? m->devices[i].type->name : "none");
	return 0;
}

/* A section's blob through restore, whose every byte must be used. */
static int restore_section(const struct snapshot *s, const char *name,
			   int (*restore)(void *part, struct state_in *in,
					  char *why, size_t whylen),
			   void *part, char *err, size_t errlen)
{
	const struct snapshot_section *sec = find(s, name, err, errlen);
	if (!sec)
		return -EBADMSG;
	struct state_in in = state_in(sec->data, sec->len);
	char why[256] = "";
	int ret = restore(part, &in, why, sizeof(why));
	if (!ret && !state_in_whole(&in))
		ret = log_refusal(-EBADMSG, why, sizeof(why), "bytes left over");
	return ret ? log_refusal(ret, err, errlen, "state: section %s: %s", name,
				 why[0] ? why : strerror(-ret))
		   : 0;
}

static int restore_serial(void *part, struct state_in *in, char *why,
			  size_t whylen)
{
	int ret = serial_restore(part, in);
	return ret ? log_refusal(ret, why, whylen, "its registers are cut short") : 0;
}

struct transport_part {
	struct virtio_bus *bus;
	unsigned int index;
};

static int restore_transport(void *part, struct state_in *in, char *why,
			     size_t whylen)
{
	struct transport_part *t = part;
	return t->bus->mmio ? virtio_mmio_restore(&t->bus->transports[t->index].mmio,
						  in, why, whylen)
			    : virtio_pci_restore(&t->bus->transports[t->index].pci,
						 in, why, whylen);
}

static int restore_arch(const struct snapshot *s, const char *name,
			struct vm *vm, struct vcpu *vcpu, char *err,
			size_t errlen)
{
	const struct snapshot_section *sec = find(s, name, err, errlen);
	if (!sec)
		return -EBADMSG;
	char why[256] = "";
	int ret = vcpu ? arch_vcpu_restore_state(vcpu, sec->data, sec->len, why,
						 sizeof(why))
		       : arch_vm_restore_state(vm, sec->data, sec->len, why,
					       sizeof(why));
	return ret ? log_refusal(ret, err, errlen, "state: section %s: %s", name,
				 why[0] ? why : strerror(-ret))
		   : 0;
}

int snapshot_restore(const struct snapshot_machine *sm,
		     const struct snapshot *s, char *err, size_t errlen)
{
	struct vm *vm = &sm->board->vm;
	struct machine *m = sm->machine;
	char name[SNAPSHOT_NAME_MAX + 1];
	if (s->memory_size != vm->mem.ram_size)
		return log_refusal(-EBADMSG, err, errlen,
				   "state: %llu bytes of RAM, this machine has %llu",
				   (unsigned long long)s->memory_size,
				   (unsigned long long)vm->mem.ram_size);
	snprintf(name, sizeof(name), "vcpu.%u", vm->nr_vcpus);
	if (snapshot_find(s, name))
		return log_refusal(-EBADMSG, err, errlen,
				   "state: more vCPUs than this machine's %u",
				   vm->nr_vcpus);
	int ret = check_devices(s, m, err, errlen);
	if (!ret)
		ret = restore_arch(s, "vm", vm, NULL, err, errlen);
	for (unsigned int i = 0; !ret && i < vm->nr_vcpus; i++) {
		snprintf(name, sizeof(name), "vcpu.%u", i);
		ret = restore_arch(s, name, vm, &vm->vcpus[i], err, errlen);
	}
	if (!ret)
		ret = restore_section(s, "serial.0", restore_serial,
				      &sm->con->out, err, errlen);
	if (!ret)
		ret = restore_section(s, "serial.1", restore_serial,
				      &sm->con->err, err, errlen);
	for (unsigned int i = 0; !ret && i < m->nr_devices; i++) {
		const struct device_type *t = m->devices[i].type;
		if (!t->restore)
			continue;
		snprintf(name, sizeof(name), "dev.%u", i);
		ret = restore_section(s, name, t->restore, m->devices[i].dev,
				      err, errlen);
	}
	struct virtio_bus *bus = &sm->board->virtio;
	for (unsigned int i = 0; !ret && i < bus->nr_devices; i++) {
		snprintf(name, sizeof(name), "virtio.%u", i);
		struct transport_part part = {.bus = bus, .index = i};
		ret = restore_section(s, name, restore_transport, &part, err,
				      errlen);
	}
	return ret;
}
