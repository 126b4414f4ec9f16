/* A filter for guest bytes bound for the user's terminal: only text, tab,
 * newline, carriage return, backspace and colour/attribute (SGR) sequences
 * pass, so a hostile guest cannot set the clipboard or title, hide text,
 * move the cursor or make the terminal answer into our stdin. */
#ifndef FSVM_TERM_FILTER_H
#define FSVM_TERM_FILTER_H

#include <stddef.h>
#include <stdint.h>

/* The longest SGR parameter string kept; a longer CSI is dropped. */
#define TERM_FILTER_CSI_MAX 64
/* Bytes a call may write beyond its input: those held from earlier calls
 * (a CSI's "ESC [" and parameters, or the start of a UTF-8 character). */
#define TERM_FILTER_CARRY_MAX (2 + TERM_FILTER_CSI_MAX)
/* The output buffer a call over len bytes needs. */
#define TERM_FILTER_OUT_SIZE(len) ((len) + TERM_FILTER_CARRY_MAX)

enum term_filter_state {
	TF_GROUND,
	TF_UTF8,       /* inside a multibyte character */
	TF_ESCAPE,     /* after ESC */
	TF_ESCAPE_INT, /* after ESC and an intermediate byte */
	TF_CSI,        /* in a CSI that may still be an SGR */
	TF_CSI_IGNORE, /* in a CSI that will be dropped */
	TF_STRING,     /* in an OSC, DCS, SOS, PM or APC string */
};

/* One per output stream; zeroed is the initial state. */
struct term_filter {
	enum term_filter_state state;
	uint8_t utf8[4];
	uint8_t utf8_len, utf8_need;
	uint8_t csi[TERM_FILTER_CSI_MAX];
	uint8_t csi_len;
};

/* Filters len bytes of in into out (TERM_FILTER_OUT_SIZE(len) bytes);
 * returns how many were written. O(len), no allocation, no I/O. */
size_t term_filter(struct term_filter *f, const uint8_t *in, size_t len,
		   uint8_t *out);

#endif
