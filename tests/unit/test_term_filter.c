/* Unit tests for vmm/term_filter: what of a hostile guest's console output
 * reaches a terminal, whole and split across writes at every byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/term_filter.h"

#define MAX_OUT 1024

/* One call over in, into a buffer of exactly the promised size (ASan
 * checks the bound); appends to out. */
static size_t feed(struct term_filter *f, const uint8_t *in, size_t len,
		   uint8_t *out, size_t out_len)
{
	uint8_t *buf = malloc(TERM_FILTER_OUT_SIZE(len));
	assert_non_null(buf);
	size_t n = term_filter(f, in, len, buf);
	assert_true(n <= TERM_FILTER_OUT_SIZE(len));
	assert_true(out_len + n <= MAX_OUT);
	memcpy(out + out_len, buf, n);
	free(buf);
	return out_len + n;
}

static void assert_output(const uint8_t *out, size_t len, const char *want,
			  size_t want_len)
{
	assert_int_equal(len, want_len);
	assert_memory_equal(out, want, want_len);
}

/* in (in_len bytes) gives want in one write, in two at every split point
 * and a byte at a time. */
static void check_len(const char *in, size_t in_len, const char *want,
		      size_t want_len)
{
	const uint8_t *bytes = (const uint8_t *)in;
	uint8_t out[MAX_OUT];
	for (size_t split = 0; split <= in_len; split++) {
		struct term_filter f = {0};
		size_t n = feed(&f, bytes, split, out, 0);
		n = feed(&f, bytes + split, in_len - split, out, n);
		assert_output(out, n, want, want_len);
	}
	struct term_filter f = {0};
	size_t n = 0;
	for (size_t i = 0; i < in_len; i++)
		n = feed(&f, bytes + i, 1, out, n);
	assert_output(out, n, want, want_len);
}

#define check(in, want) check_len(in, sizeof(in) - 1, want, sizeof(want) - 1)

static void test_plain_text_unchanged(void **state)
{
	(void)state;
	check("hello, world\r\n\tcol\b_\n", "hello, world\r\n\tcol\b_\n");
	check("~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./ 0123456789",
	      "~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./ 0123456789");
}

static void test_osc52_clipboard_bel(void **state)
{
	(void)state;
	check("a\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07z", "az");
}

static void test_osc52_clipboard_st(void **state)
{
	(void)state;
	check("a\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\z", "az");
	check("a\x1b]52;c;Y3VybA==\xc2\x9cz", "az"); /* U+009C */
	check("a\x1b]52;c;Y3VybA==\x9cz", "az");     /* raw 8-bit ST */
}

static void test_title_dropped(void **state)
{
	(void)state;
	check("\x1b]0;sudo password:\x07ok\n", "ok\n");
	check("\x1b]2;x\x1b\\\x1b]1;icon\x07ok", "ok");
	/* A hyperlink's text stays, its target goes. */
	check("\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\", "link");
}

static void test_other_strings_dropped(void **state)
{
	(void)state;
	check("a\x1bP$qm\x1b\\b", "ab");           /* DCS DECRQSS: an answer */
	check("a\x1b_Gf=100;AAAA\x1b\\b", "ab");   /* APC: kitty graphics */
	check("a\x1b^private\x1b\\b", "ab");       /* PM */
	check("a\x1bXstart of string\x07" "b", "ab"); /* SOS */
}

static void test_unterminated_string_swallows(void **state)
{
	(void)state;
	/* A newline does not end a string; its terminator does. */
	check("a\x1b]0;title\nhidden text\n", "a");
	check("a\x1b]0;title\nhidden\x07shown\n", "ashown\n");
	/* An ESC ends it and starts the next sequence. */
	check("a\x1b]0;t\x1b[31mred", "a\x1b[31mred");
}

static void test_can_sub_abort(void **state)
{
	(void)state;
	check("\x1b]0;title\x18shown", "shown");
	check("\x1bP1;2|x\x1ashown", "shown");
	check("\x1b[2\x18J", "J");
	check("\x1b[31\x1am", "m");
	check("\x1b(\x18" "B", "B");
}

static void test_csi_dropped(void **state)
{
	(void)state;
	check("a\x1b[2Jb", "ab");          /* clear screen */
	check("a\x1b[Hb\x1b[10;20Hc", "abc"); /* cursor moves */
	check("a\x1b[6nb", "ab");          /* DSR: answers into stdin */
	check("a\x1b[21tb", "ab");         /* reports the title */
	check("a\x1b[?1049h\x1b[?25lb", "ab"); /* modes */
	check("a\x1b[>4;1mb", "ab");       /* modifyOtherKeys, not SGR */
	check("a\x1b[1 qb", "ab");         /* cursor style: intermediate */
	check("a\x1b[1$mb", "ab");
	check("a\x1b[3;1\"pb", "ab");
	check("a\x1b[1;?mb", "ab");
}

static void test_sgr_kept(void **state)
{
	(void)state;
	check("\x1b[1;31mred\x1b[0m", "\x1b[1;31mred\x1b[0m");
	check("\x1b[mx\x1b[;4mx", "\x1b[mx\x1b[;4mx");
	check("\x1b[38;5;196mx\x1b[48;2;10;20;30mx",
	      "\x1b[38;5;196mx\x1b[48;2;10;20;30mx");
	check("\x1b[38:2::255:0:0mx", "\x1b[38:2::255:0:0mx");
	check("\x1b[28mrevealed\x1b[18;80;800m",
	      "\x1b[28mrevealed\x1b[18;80;800m");
}

static void test_sgr_conceal_dropped(void **state)
{
	(void)state;
	check("a\x1b[8mhidden\x1b[0m", "ahidden\x1b[0m");
	check("a\x1b[1;8;31mb", "ab");
	check("a\x1b[008mb", "ab");
	check("a\x1b[8:1mb", "ab");
	/* An extended colour's 8 too: a terminal that does not know 38
	 * would read it as conceal. */
	check("a\x1b[38;5;8mb", "ab");
	/* Linux console: character mappings, as SO/SI. */
	check("a\x1b[11mb\x1b[12mc", "abc");
}

static void test_csi_controls_inside(void **state)
{
	(void)state;
	/* A terminal carries out the newline and then the SGR. */
	check("\x1b[3\n1mx", "\n\x1b[31mx");
	check("\x1b[3\a1mx", "\x1b[31mx");
	check("\x1b[3\x7f" "1mx", "\x1b[31mx");
	check("\x1b\x1b[31mx", "\x1b[31mx");
}

static void test_long_csi(void **state)
{
	(void)state;
	char in[TERM_FILTER_CSI_MAX + 8];
	in[0] = '\x1b';
	in[1] = '[';
	memset(in + 2, '1', TERM_FILTER_CSI_MAX);
	in[2 + TERM_FILTER_CSI_MAX] = 'm';
	in[3 + TERM_FILTER_CSI_MAX] = 'x';
	size_t len = 4 + TERM_FILTER_CSI_MAX;
	/* As long as we keep: whole, including from a byte-wise carry. */
	check_len(in, len, in, len);
	/* One longer: dropped, the text after it kept. */
	memmove(in + 3, in + 2, len - 2);
	check_len(in, len + 1, "x", 1);
}

static void test_escape_sequences_dropped(void **state)
{
	(void)state;
	check("a\x1b" "cb", "ab");          /* reset */
	check("a\x1b" "7b\x1b" "8c", "abc"); /* save/restore cursor */
	check("a\x1b(0b\x1b)Bc", "abc");    /* charsets */
	check("a\x1b#8b", "ab");           /* DECALN fills the screen */
	check("a\x1b%Gb", "ab");
	check("a\x1b=b\x1b>c", "abc");     /* keypad modes */
	check("a\x1b\\b", "ab");           /* a lone ST */
}

static void test_c0_controls(void **state)
{
	(void)state;
	check("a\a\x0e\x0f\x0b\x0c\x00\x7f\x05\x1c\x18\x1a" "b", "ab");
}

static void test_c1_csi_osc(void **state)
{
	(void)state;
	check("a\xc2\x9b" "2Jb", "ab");
	check("a\xc2\x9b" "6nb", "ab");
	/* An SGR by C1 is kept, written the 7-bit way. */
	check("\xc2\x9b" "31mx", "\x1b[31mx");
	check("a\xc2\x9d" "52;c;Y3VybA==\x07z", "az");
	check("a\xc2\x9d" "0;title\xc2\x9cz", "az");
	check("a\xc2\x90$q\xc2\x9c" "b", "ab"); /* DCS */
	check("a\xc2\x9f" "x\x1b\\b", "ab");   /* APC */
	check("a\xc2\x85" "b\xc2\x8d" "c", "abc"); /* NEL, RI */
}

static void test_raw_c1_dropped(void **state)
{
	(void)state;
	/* Not UTF-8: dropped, and what would follow a C1 shows as text. */
	check("a\x9b" "2Jb", "a2Jb");
	check("a\x9d" "0;t\x07" "b", "a0;tb");
	check("\x80\x8f\x9f\xbf", "");
}

static void test_utf8_kept(void **state)
{
	(void)state;
	check("caf\xc3\xa9 5\xe2\x82\xac \xf0\x9f\x98\x80!",
	      "caf\xc3\xa9 5\xe2\x82\xac \xf0\x9f\x98\x80!");
	check("\xc2\xa0\xc2\xbf\xdf\xbf\xef\xbf\xbd\xf4\x8f\xbf\xbf",
	      "\xc2\xa0\xc2\xbf\xdf\xbf\xef\xbf\xbd\xf4\x8f\xbf\xbf");
	check("\x1b[32m\xe2\x9c\x93\x1b[m ok", "\x1b[32m\xe2\x9c\x93\x1b[m ok");
}

static void test_invalid_utf8_dropped(void **state)
{
	(void)state;
	check("a\xc0\x9b" "b", "ab");         /* overlong U+001B */
	check("a\xe0\x82\x9b" "b", "ab");     /* overlong U+009B */
	check("a\xf0\x80\x82\x9b" "b", "ab"); /* overlong U+009B */
	check("a\xed\xa0\x80" "b", "ab");     /* a surrogate */
	check("a\xf4\x90\x80\x80" "b", "ab"); /* past U+10FFFF */
	check("a\xf5\xff\xfe" "b", "ab");
	/* A broken character: dropped, the byte that broke it kept. */
	check("a\xe2\x82" "b\xe2\x1b[31mc", "ab\x1b[31mc");
	/* What breaks it may start a C1 control. */
	check("a\xe2\xc2\x9b" "2Jb", "ab");
}

/* Whether out is what a terminal only shows: text, the kept controls,
 * valid UTF-8 outside U+0080..U+009F and SGRs with no 8, 11 or 12. */
static void assert_inert(const uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len;) {
		uint8_t b = out[i];
		if (b == 0x1b) {
			assert_true(i + 1 < len && out[i + 1] == '[');
			size_t end = i + 2;
			unsigned int value = 0;
			for (; end < len && out[end] != 'm'; end++) {
				uint8_t p = out[end];
				assert_true((p >= '0' && p <= '9') || p == ';' ||
					    p == ':');
				if (p == ';' || p == ':') {
					assert_true(value != 8 && value != 11 &&
						    value != 12);
					value = 0;
				} else if (value < 1000) {
					value = value * 10 + (p - '0');
				}
			}
			assert_true(end < len);
			assert_true(value != 8 && value != 11 && value != 12);
			i = end + 1;
		} else if (b < 0x80) {
			assert_true((b >= 0x20 && b < 0x7f) || b == '\t' ||
				    b == '\n' || b == '\r' || b == '\b');
			i++;
		} else {
			size_t n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
			assert_true(b >= 0xc2 && b <= 0xf4 && i + n <= len);
			uint32_t cp = b & (0x7f >> n);
			for (size_t k = 1; k < n; k++) {
				assert_int_equal(out[i + k] & 0xc0, 0x80);
				cp = cp << 6 | (out[i + k] & 0x3f);
			}
			assert_true(cp >= 0xa0);
			assert_true(n < 3 || cp >= 0x800);
			assert_true(n < 4 || cp >= 0x10000);
			assert_true(cp < 0xd800 || cp > 0xdfff);
			assert_true(cp <= 0x10ffff);
			i += n;
		}
	}
}

/* Random bytes rich in the ones that matter: whatever the split, the
 * output is the same and inert. */
static void test_random_bytes_inert(void **state)
{
	(void)state;
	static const uint8_t alphabet[] = {
		0x1b, '[', ']', 'P', '_', '^', 'X', 'm', '8', '1', ';', ':',
		'?', 'J', '\\', 0x07, 0x18, 0x1a, 0x9c, 0x9b, 0xc2, 0xe2, 0x82,
		0xf0, 0x9f, 'a', '\n', 0x00, 0x7f, 0xed, 0xa0, '(', '0', ' ',
	};
	uint32_t seed = 24;
	uint8_t in[256], whole[MAX_OUT], parts[MAX_OUT];
	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < sizeof(in); i++) {
			seed = seed * 1103515245 + 12345;
			in[i] = (seed >> 16) % 4 ? alphabet[(seed >> 8) %
							sizeof(alphabet)]
						 : (uint8_t)(seed >> 20);
		}
		struct term_filter f = {0};
		size_t whole_len = feed(&f, in, sizeof(in), whole, 0);
		assert_inert(whole, whole_len);
		struct term_filter g = {0};
		size_t parts_len = 0;
		for (size_t i = 0; i < sizeof(in);) {
			size_t n = 1 + (size_t)(seed >> (i % 24)) % 7;
			if (n > sizeof(in) - i)
				n = sizeof(in) - i;
			parts_len = feed(&g, in + i, n, parts, parts_len);
			i += n;
		}
		assert_output(parts, parts_len, (const char *)whole, whole_len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_text_unchanged),
		cmocka_unit_test(test_osc52_clipboard_bel),
		cmocka_unit_test(test_osc52_clipboard_st),
		cmocka_unit_test(test_title_dropped),
		cmocka_unit_test(test_other_strings_dropped),
		cmocka_unit_test(test_unterminated_string_swallows),
		cmocka_unit_test(test_can_sub_abort),
		cmocka_unit_test(test_csi_dropped),
		cmocka_unit_test(test_sgr_kept),
		cmocka_unit_test(test_sgr_conceal_dropped),
		cmocka_unit_test(test_csi_controls_inside),
		cmocka_unit_test(test_long_csi),
		cmocka_unit_test(test_escape_sequences_dropped),
		cmocka_unit_test(test_c0_controls),
		cmocka_unit_test(test_c1_csi_osc),
		cmocka_unit_test(test_raw_c1_dropped),
		cmocka_unit_test(test_utf8_kept),
		cmocka_unit_test(test_invalid_utf8_dropped),
		cmocka_unit_test(test_random_bytes_inert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
