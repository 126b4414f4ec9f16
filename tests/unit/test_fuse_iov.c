/* Unit tests for fs/iov: lengths, copies and views across iovecs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "fs/iov.h"

static char a[5] = "abcde", b[1] = "f", c[4] = "ghij";

/* "abcde" | "" (NULL base) | "f" | "ghij" */
static const struct iovec three[] = {
	{ a, sizeof(a) }, { NULL, 0 }, { b, sizeof(b) }, { c, sizeof(c) },
};

static void length_sums_and_saturates(void **state)
{
	(void)state;
	struct iovec huge[2] = { { a, SIZE_MAX - 2 }, { b, 5 } };

	assert_int_equal(iov_length(three, 4), 10);
	assert_int_equal(iov_length(three, 0), 0);
	assert_int_equal(iov_length(three, -3), 0);
	assert_true(iov_length(huge, 2) == SIZE_MAX);
}

static void copy_from_crosses_entries(void **state)
{
	(void)state;
	char out[16] = { 0 };

	assert_int_equal(iov_copy_from(three, 4, 0, out, 10), 10);
	assert_string_equal(out, "abcdefghij");
	memset(out, 0, sizeof(out));
	assert_int_equal(iov_copy_from(three, 4, 4, out, 3), 3);
	assert_string_equal(out, "efg");
	/* Short at the end, nothing past it, nothing for a huge offset. */
	memset(out, 0, sizeof(out));
	assert_int_equal(iov_copy_from(three, 4, 8, out, 16), 2);
	assert_string_equal(out, "ij");
	assert_int_equal(iov_copy_from(three, 4, 10, out, 1), 0);
	assert_int_equal(iov_copy_from(three, 4, SIZE_MAX, out, 1), 0);
	assert_int_equal(iov_copy_from(three, -1, 0, out, 1), 0);
}

static void copy_to_crosses_entries(void **state)
{
	(void)state;
	char x[3] = { 0 }, y[4] = { 0 };
	struct iovec iov[3] = { { x, 3 }, { NULL, 0 }, { y, 4 } };

	assert_int_equal(iov_copy_to(iov, 3, 2, "12345678", 8), 5);
	assert_memory_equal(x, "\0\0" "1", 3);
	assert_memory_equal(y, "2345", 4);
	assert_int_equal(iov_copy_to(iov, 3, 7, "z", 1), 0);
}

static void view_starts_at_offset_and_caps_length(void **state)
{
	(void)state;
	struct iovec view[4];
	size_t len;

	int n = iov_view(view, 4, three, 4, 3, 4, &len);

	/* "de" | "f" | "g": the empty entry is left out. */
	assert_int_equal(n, 3);
	assert_int_equal(len, 4);
	assert_ptr_equal(view[0].iov_base, a + 3);
	assert_int_equal(view[0].iov_len, 2);
	assert_ptr_equal(view[1].iov_base, b);
	assert_ptr_equal(view[2].iov_base, c);
	assert_int_equal(view[2].iov_len, 1);

	/* Unbounded length: the rest; offset past the end: nothing. */
	n = iov_view(view, 4, three, 4, 0, SIZE_MAX, &len);
	assert_int_equal(n, 3);
	assert_int_equal(len, 10);
	assert_int_equal(iov_view(view, 4, three, 4, 10, 5, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(iov_view(view, 4, three, 4, 2, 0, &len), 0);
}

static void view_stops_when_full(void **state)
{
	(void)state;
	struct iovec view[2];
	size_t len;

	assert_int_equal(iov_view(view, 2, three, 4, 0, SIZE_MAX, &len), 2);
	assert_int_equal(len, 6);
	assert_int_equal(iov_view(view, 0, three, 4, 0, SIZE_MAX, &len), 0);
	assert_int_equal(len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(length_sums_and_saturates),
		cmocka_unit_test(copy_from_crosses_entries),
		cmocka_unit_test(copy_to_crosses_entries),
		cmocka_unit_test(view_starts_at_offset_and_caps_length),
		cmocka_unit_test(view_stops_when_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
