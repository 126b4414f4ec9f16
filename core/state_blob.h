/* Bytes of saved state, written and read little-endian: the growing
 * buffer a part of the machine saves itself into, and the bounded reader
 * it restores from (a snapshot's sections, hostile like any input). */
#ifndef FSVM_STATE_BLOB_H
#define FSVM_STATE_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct state_out {
	unsigned char *buf;
	size_t len, cap;
	int err; /* the first failure (-ENOMEM, -EFBIG); later puts do nothing */
};

/* n zeroed bytes at the end, to fill in; NULL once err is set. At most
 * 64 MiB in all, a snapshot's state file. */
void *state_room(struct state_out *o, size_t n);
void state_put(struct state_out *o, const void *p, size_t n);
void state_put_u8(struct state_out *o, uint8_t v);
void state_put_u16(struct state_out *o, uint16_t v);
void state_put_u32(struct state_out *o, uint32_t v);
void state_put_u64(struct state_out *o, uint64_t v);
/* Hands the bytes over (*buf, *len: the caller frees) or returns err. */
int state_out_finish(struct state_out *o, unsigned char **buf, size_t *len);
void state_out_fini(struct state_out *o);

struct state_in {
	const unsigned char *p;
	size_t left;
	bool short_read; /* a get ran past the end: it read zeros */
};

static inline struct state_in state_in(const unsigned char *p, size_t len)
{
	return (struct state_in){.p = p, .left = len};
}

/* Each get past the end reads zeros and sets short_read, so a parser
 * reads its fields and checks once. */
void state_get(struct state_in *in, void *p, size_t n);
uint8_t state_get_u8(struct state_in *in);
uint16_t state_get_u16(struct state_in *in);
uint32_t state_get_u32(struct state_in *in);
uint64_t state_get_u64(struct state_in *in);
/* Whole: every field there and nothing after them. */
static inline bool state_in_whole(const struct state_in *in)
{
	return !in->short_read && in->left == 0;
}

#endif
