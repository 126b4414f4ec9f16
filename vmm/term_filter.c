/* A terminal filter for guest console output: a parser after the DEC/ECMA-48
 * one terminals use (ground, escape, CSI, string states), which keeps text
 * and SGR and drops everything else a terminal would act on. */
#include "vmm/term_filter.h"

#include <stdbool.h>
#include <string.h>

#define ESC 0x1b
#define CAN 0x18 /* CAN and SUB abort a sequence in a terminal */
#define SUB 0x1a
#define BEL 0x07
#define DEL 0x7f
#define ST_8BIT 0x9c

static bool kept_control(uint8_t b)
{
	return b == '\t' || b == '\n' || b == '\r' || b == '\b';
}

/* Bytes a UTF-8 character starting with lead has, or 0 if lead cannot
 * start one (a continuation, an overlong C0/C1 lead, beyond U+10FFFF). */
static uint8_t utf8_length(uint8_t lead)
{
	if (lead >= 0xc2 && lead <= 0xdf)
		return 2;
	if (lead >= 0xe0 && lead <= 0xef)
		return 3;
	if (lead >= 0xf0 && lead <= 0xf4)
		return 4;
	return 0;
}

/* Whether b may come next in the character held in f: the second byte's
 * range excludes overlong forms, surrogates and code points past
 * U+10FFFF, so no terminal decodes what we pass to something else. */
static bool utf8_next_ok(const struct term_filter *f, uint8_t b)
{
	uint8_t lo = 0x80, hi = 0xbf;
	if (f->utf8_len == 1) {
		switch (f->utf8[0]) {
		case 0xe0:
			lo = 0xa0;
			break;
		case 0xed:
			hi = 0x9f;
			break;
		case 0xf0:
			lo = 0x90;
			break;
		case 0xf4:
			hi = 0x8f;
			break;
		}
	}
	return b >= lo && b <= hi;
}

/* An SGR a terminal may act on: none of its numbers (fields split at ';'
 * or ':', so an extended colour's own "8" counts too: safe whatever the
 * terminal makes of 38;5;N) is 8 (conceal, hidden text), or 11 or 12
 * (which on the Linux console switch the character mapping as SO/SI do). */
static bool sgr_is_safe(const struct term_filter *f)
{
	unsigned int value = 0;
	for (size_t i = 0; i <= f->csi_len; i++) {
		if (i == f->csi_len || f->csi[i] == ';' || f->csi[i] == ':') {
			if (value == 8 || value == 11 || value == 12)
				return false;
			value = 0;
		} else if (value < 1000) {
			/* Saturates: "0008" is 8, a huge number is not. */
			value = value * 10 + (unsigned int)(f->csi[i] - '0');
		}
	}
	return true;
}

static size_t ground_byte(struct term_filter *f, uint8_t b, uint8_t *out);

/* A byte after ESC (or the C1 control it stands for), in TF_ESCAPE. */
static void escape_byte(struct term_filter *f, uint8_t b)
{
	switch (b) {
	case '[':
		f->state = TF_CSI;
		f->csi_len = 0;
		break;
	case ']': /* OSC */
	case 'P': /* DCS */
	case 'X': /* SOS */
	case '^': /* PM */
	case '_': /* APC */
		f->state = TF_STRING;
		break;
	default:
		/* ESC c, ESC 7, ESC ( 0 ...: dropped, intermediates first. */
		f->state = b < 0x30 ? TF_ESCAPE_INT : TF_GROUND;
		break;
	}
}

static size_t csi_byte(struct term_filter *f, uint8_t b, uint8_t *out)
{
	if (b >= 0x40) { /* the final byte */
		bool keep = f->state == TF_CSI && b == 'm' && sgr_is_safe(f);
		f->state = TF_GROUND;
		if (!keep)
			return 0;
		out[0] = ESC;
		out[1] = '[';
		memcpy(out + 2, f->csi, f->csi_len);
		out[2 + f->csi_len] = 'm';
		return 3 + (size_t)f->csi_len;
	}
	/* A private marker (<=>?), an intermediate or too long: never an
	 * SGR we keep, though it still ends only at its final byte. */
	if (f->state == TF_CSI &&
	    (b < '0' || b > ';' || f->csi_len == TERM_FILTER_CSI_MAX))
		f->state = TF_CSI_IGNORE;
	if (f->state == TF_CSI)
		f->csi[f->csi_len++] = b;
	return 0;
}

/* A byte inside an escape or CSI sequence. */
static size_t sequence_byte(struct term_filter *f, uint8_t b, uint8_t *out)
{
	if (b == ESC) {
		f->state = TF_ESCAPE;
		return 0;
	}
	if (b == CAN || b == SUB) {
		f->state = TF_GROUND;
		return 0;
	}
	/* Terminals carry out controls met inside a sequence and go on. */
	if (b < 0x20) {
		if (!kept_control(b))
			return 0;
		out[0] = b;
		return 1;
	}
	if (b == DEL)
		return 0;
	if (b >= 0x80) {
		/* Not part of any sequence: the sequence is dropped, the
		 * byte starts over as text. */
		f->state = TF_GROUND;
		return ground_byte(f, b, out);
	}
	switch (f->state) {
	case TF_ESCAPE:
		escape_byte(f, b);
		return 0;
	case TF_ESCAPE_INT:
		if (b >= 0x30)
			f->state = TF_GROUND;
		return 0;
	default:
		return csi_byte(f, b, out);
	}
}

/* A byte inside a string: dropped, with its terminator. Nothing is held:
 * an unterminated string swallows what follows, as it does in xterm, until
 * BEL, ST (ESC \ or 0x9C), CAN, SUB or another ESC sequence. */
static void string_byte(struct term_filter *f, uint8_t b)
{
	if (b == ESC)
		f->state = TF_ESCAPE;
	else if (b == BEL || b == CAN || b == SUB || b == ST_8BIT)
		f->state = TF_GROUND;
}

static size_t utf8_byte(struct term_filter *f, uint8_t b, uint8_t *out)
{
	if (!utf8_next_ok(f, b)) {
		/* A broken character is dropped; b starts over. */
		f->state = TF_GROUND;
		return ground_byte(f, b, out);
	}
	if (f->utf8[0] == 0xc2 && b <= 0x9f) {
		/* U+0080..U+009F: a UTF-8 terminal acts on it as the C1 control
		 * ESC (b - 0x40) is, so parse it as that: its sequence is
		 * dropped whole, not left to show as text. */
		escape_byte(f, b - 0x40);
		return 0;
	}
	f->utf8[f->utf8_len++] = b;
	if (f->utf8_len < f->utf8_need)
		return 0;
	f->state = TF_GROUND;
	memcpy(out, f->utf8, f->utf8_len);
	return f->utf8_len;
}

static size_t ground_byte(struct term_filter *f, uint8_t b, uint8_t *out)
{
	if (b == ESC) {
		f->state = TF_ESCAPE;
		return 0;
	}
	if (b >= 0x80) {
		/* Lone continuations and invalid leads (raw C1 bytes among
		 * them, which an 8-bit terminal would act on) are dropped. */
		f->utf8_need = utf8_length(b);
		if (f->utf8_need) {
			f->utf8[0] = b;
			f->utf8_len = 1;
			f->state = TF_UTF8;
		}
		return 0;
	}
	if ((b < 0x20 && !kept_control(b)) || b == DEL)
		return 0;
	out[0] = b;
	return 1;
}

size_t term_filter(struct term_filter *f, const uint8_t *in, size_t len,
		   uint8_t *out)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		uint8_t b = in[i];
		switch (f->state) {
		case TF_GROUND:
			n += ground_byte(f, b, out + n);
			break;
		case TF_UTF8:
			n += utf8_byte(f, b, out + n);
			break;
		case TF_STRING:
			string_byte(f, b);
			break;
		default:
			n += sequence_byte(f, b, out + n);
			break;
		}
	}
	return n;
}
