/* Saved state's bytes (core/state_blob.h). */
#include "core/state_blob.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STATE_MAX (64u << 20)

void *state_room(struct state_out *o, size_t n)
{
	if (o->err)
		return NULL;
	if (n > STATE_MAX - o->len) {
		o->err = -EFBIG;
		return NULL;
	}
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		while (cap < o->len + n)
			cap *= 2;
		unsigned char *b = realloc(o->buf, cap);
		if (!b) {
			o->err = -ENOMEM;
			return NULL;
		}
		o->buf = b;
		o->cap = cap;
	}
	void *p = o->buf + o->len;
	memset(p, 0, n);
	o->len += n;
	return p;
}

void state_put(struct state_out *o, const void *p, size_t n)
{
	void *to = state_room(o, n);
	if (to && n)
		memcpy(to, p, n);
}

void state_put_u8(struct state_out *o, uint8_t v)
{
	state_put(o, &v, 1);
}

void state_put_u16(struct state_out *o, uint16_t v)
{
	v = htole16(v);
	state_put(o, &v, sizeof(v));
}

void state_put_u32(struct state_out *o, uint32_t v)
{
	v = htole32(v);
	state_put(o, &v, sizeof(v));
}

void state_put_u64(struct state_out *o, uint64_t v)
{
	v = htole64(v);
	state_put(o, &v, sizeof(v));
}

int state_out_finish(struct state_out *o, unsigned char **buf, size_t *len)
{
	if (o->err) {
		state_out_fini(o);
		return o->err;
	}
	*buf = o->buf ? o->buf : malloc(1);
	*len = o->len;
	*o = (struct state_out){0};
	return *buf ? 0 : -ENOMEM;
}

void state_out_fini(struct state_out *o)
{
	int err = o->err;
	free(o->buf);
	*o = (struct state_out){.err = err};
}

void state_get(struct state_in *in, void *p, size_t n)
{
	if (n > in->left) {
		memset(p, 0, n);
		in->short_read = true;
		in->left = 0;
		return;
	}
	memcpy(p, in->p, n);
	in->p += n;
	in->left -= n;
}

uint8_t state_get_u8(struct state_in *in)
{
	uint8_t v;
	state_get(in, &v, 1);
	return v;
}

uint16_t state_get_u16(struct state_in *in)
{
	uint16_t v;
	state_get(in, &v, sizeof(v));
	return le16toh(v);
}

uint32_t state_get_u32(struct state_in *in)
{
	uint32_t v;
	state_get(in, &v, sizeof(v));
	return le32toh(v);
}

uint64_t state_get_u64(struct state_in *in)
{
	uint64_t v;
	state_get(in, &v, sizeof(v));
	return le64toh(v);
}
