/* Unit tests for devices/serial: the 16550A UART model. */
#include <errno.h>
#include <fcntl.h>
#include <linux/serial_reg.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "devices/serial.h"

#define MAX_EVENTS 64

/* A UART whose output goes into a pipe, with its IRQ and TX hooks recorded. */
struct uart {
	struct serial s;
	int rfd, wfd;
	bool levels[MAX_EVENTS];
	unsigned int nr_levels;
	uint8_t tx[MAX_EVENTS];
	unsigned int nr_tx;
};

static void record_irq(void *opaque, bool level)
{
	struct uart *u = opaque;
	assert_true(u->nr_levels < MAX_EVENTS);
	u->levels[u->nr_levels++] = level;
}

static void record_tx(void *opaque, uint8_t byte)
{
	struct uart *u = opaque;
	assert_true(u->nr_tx < MAX_EVENTS);
	u->tx[u->nr_tx++] = byte;
}

static int setup_uart(void **state)
{
	struct uart *u = calloc(1, sizeof(*u));
	int fds[2];
	if (!u || pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	u->rfd = fds[0];
	u->wfd = fds[1];
	serial_init(&u->s, u->wfd, record_irq, u);
	*state = u;
	return 0;
}

static int teardown_uart(void **state)
{
	struct uart *u = *state;
	close(u->rfd);
	close(u->wfd);
	pthread_mutex_destroy(&u->s.lock);
	free(u);
	return 0;
}

static void out(struct uart *u, unsigned int reg, uint8_t v)
{
	serial_io(&u->s, reg, true, &v, 1);
}

static uint8_t in(struct uart *u, unsigned int reg)
{
	uint8_t v = 0xa5;
	serial_io(&u->s, reg, false, &v, 1);
	return v;
}

static void out_str(struct uart *u, const char *str)
{
	for (; *str; str++)
		out(u, UART_TX, (uint8_t)*str);
}

/* Everything written to out_fd so far, as a string. */
static const char *drain(struct uart *u)
{
	static char buf[256];
	ssize_t n = read(u->rfd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void receive_str(struct uart *u, const char *str)
{
	size_t len = strlen(str);
	assert_int_equal(serial_receive(&u->s, (const uint8_t *)str, len), len);
}

static void test_reset_state(void **state)
{
	struct uart *u = *state;
	assert_int_equal(in(u, UART_LSR), UART_LSR_THRE | UART_LSR_TEMT);
	assert_int_equal(in(u, UART_IIR), UART_IIR_NO_INT);
	assert_int_equal(in(u, UART_IER), 0);
	assert_int_equal(in(u, UART_MSR),
			 UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS);
	assert_int_equal(in(u, UART_RX), 0); /* nothing received */
	assert_int_equal(u->nr_levels, 0);
}

static void test_thr_goes_to_out_fd(void **state)
{
	struct uart *u = *state;
	out_str(u, "hello\n");
	assert_string_equal(drain(u), "hello\n");
	assert_int_equal(in(u, UART_LSR) & UART_LSR_DR, 0); /* not echoed */
}

static void test_out_fd_minus_one_drops(void **state)
{
	struct uart *u = *state;
	u->s.out_fd = -1;
	u->s.on_tx = record_tx;
	u->s.tx_opaque = u;
	out_str(u, "x");
	assert_string_equal(drain(u), "");
	assert_int_equal(u->nr_tx, 1); /* the hook still sees it */
}

static void test_on_tx_sees_each_byte(void **state)
{
	struct uart *u = *state;
	u->s.on_tx = record_tx;
	u->s.tx_opaque = u;
	out_str(u, "ab\nc");
	assert_int_equal(u->nr_tx, 4);
	assert_memory_equal(u->tx, "ab\nc", 4);
	assert_string_equal(drain(u), "ab\nc");
}

static void test_dlab_selects_divisor(void **state)
{
	struct uart *u = *state;
	out(u, UART_IER, UART_IER_RDI);
	out(u, UART_LCR, UART_LCR_DLAB | UART_LCR_WLEN8);
	assert_int_equal(in(u, UART_DLL), 0x0c); /* 9600 baud at reset */
	assert_int_equal(in(u, UART_DLM), 0);
	out(u, UART_DLL, 0x01);
	out(u, UART_DLM, 0x02);
	assert_int_equal(in(u, UART_DLL), 0x01);
	assert_int_equal(in(u, UART_DLM), 0x02);
	assert_int_equal(in(u, UART_LCR), UART_LCR_DLAB | UART_LCR_WLEN8);
	assert_string_equal(drain(u), ""); /* DLL write is not a THR write */
	out(u, UART_LCR, UART_LCR_WLEN8);
	assert_int_equal(in(u, UART_IER), UART_IER_RDI); /* untouched */
	out_str(u, "z");
	assert_string_equal(drain(u), "z");
	out(u, UART_LCR, UART_LCR_DLAB);
	assert_int_equal(in(u, UART_DLL), 0x01); /* THR write left DLL alone */
}

static void test_dlab_read_does_not_consume_rx(void **state)
{
	struct uart *u = *state;
	receive_str(u, "q");
	out(u, UART_LCR, UART_LCR_DLAB);
	assert_int_equal(in(u, UART_DLL), 0x0c);
	out(u, UART_LCR, 0);
	assert_int_equal(in(u, UART_RX), 'q');
}

static void test_ier_keeps_low_bits(void **state)
{
	struct uart *u = *state;
	out(u, UART_IER, 0xff);
	assert_int_equal(in(u, UART_IER), 0x0f);
}

static void test_iir_fifo_bits(void **state)
{
	struct uart *u = *state;
	assert_int_equal(in(u, UART_IIR), 0x01);
	out(u, UART_FCR, UART_FCR_ENABLE_FIFO);
	assert_int_equal(in(u, UART_IIR), 0xc1);
	out(u, UART_FCR, 0);
	assert_int_equal(in(u, UART_IIR), 0x01);
}

static void test_thre_interrupt_acked_by_iir(void **state)
{
	struct uart *u = *state;
	out(u, UART_IER, UART_IER_THRI);
	assert_int_equal(u->nr_levels, 1);
	assert_true(u->levels[0]);
	assert_int_equal(in(u, UART_IIR), UART_IIR_THRI);
	assert_int_equal(u->nr_levels, 2);
	assert_false(u->levels[1]);
	assert_int_equal(in(u, UART_IIR), UART_IIR_NO_INT);
	/* Each transmitted byte empties THR again and re-raises it. */
	out_str(u, "a");
	assert_int_equal(u->nr_levels, 3);
	assert_true(u->levels[2]);
	out(u, UART_FCR, UART_FCR_ENABLE_FIFO);
	assert_int_equal(in(u, UART_IIR), 0xc0 | UART_IIR_THRI);
	assert_int_equal(in(u, UART_IIR), 0xc0 | UART_IIR_NO_INT);
}

static void test_thre_needs_ier(void **state)
{
	struct uart *u = *state;
	out_str(u, "abc");
	assert_int_equal(u->nr_levels, 0);
	assert_int_equal(in(u, UART_IIR), UART_IIR_NO_INT);
	/* Rewriting an already-enabled THRI does not raise it again. */
	out(u, UART_IER, UART_IER_THRI);
	assert_int_equal(in(u, UART_IIR), UART_IIR_THRI);
	out(u, UART_IER, UART_IER_THRI);
	assert_int_equal(in(u, UART_IIR), UART_IIR_NO_INT);
	assert_int_equal(u->nr_levels, 2);
}

static void test_receive_in_order(void **state)
{
	struct uart *u = *state;
	receive_str(u, "abc");
	assert_int_equal(in(u, UART_LSR) & UART_LSR_DR, UART_LSR_DR);
	assert_int_equal(in(u, UART_RX), 'a');
	assert_int_equal(in(u, UART_RX), 'b');
	assert_true(in(u, UART_LSR) & UART_LSR_DR);
	assert_int_equal(in(u, UART_RX), 'c');
	assert_int_equal(in(u, UART_LSR) & UART_LSR_DR, 0);
	assert_int_equal(in(u, UART_RX), 0);
	assert_int_equal(u->nr_levels, 0); /* IER.RDI off: no interrupt */
}

static void test_rda_irq_levels(void **state)
{
	struct uart *u = *state;
	out(u, UART_IER, UART_IER_RDI);
	assert_int_equal(u->nr_levels, 0);
	receive_str(u, "x");
	receive_str(u, "y"); /* still high: no second edge */
	assert_int_equal(in(u, UART_IIR), UART_IIR_RDI);
	assert_int_equal(in(u, UART_IIR), UART_IIR_RDI); /* IIR read: no ack */
	assert_int_equal(in(u, UART_RX), 'x');
	assert_int_equal(u->nr_levels, 1);
	assert_int_equal(in(u, UART_RX), 'y');
	assert_int_equal(u->nr_levels, 2);
	assert_true(u->levels[0]);
	assert_false(u->levels[1]);
	assert_int_equal(in(u, UART_IIR), UART_IIR_NO_INT);
}

static void test_rda_has_priority_over_thre(void **state)
{
	struct uart *u = *state;
	out(u, UART_IER, UART_IER_RDI | UART_IER_THRI);
	receive_str(u, "k");
	assert_int_equal(in(u, UART_IIR), UART_IIR_RDI);
	assert_int_equal(in(u, UART_RX), 'k');
	/* THRE stayed pending underneath, and is acknowledged now. */
	assert_int_equal(in(u, UART_IIR), UART_IIR_THRI);
	assert_int_equal(in(u, UART_IIR), UART_IIR_NO_INT);
	assert_int_equal(u->nr_levels, 2);
	assert_true(u->levels[0]);
	assert_false(u->levels[1]);
}

static void test_disabling_ier_lowers_irq(void **state)
{
	struct uart *u = *state;
	out(u, UART_IER, UART_IER_RDI);
	receive_str(u, "x");
	out(u, UART_IER, 0);
	assert_int_equal(u->nr_levels, 2);
	assert_false(u->levels[1]);
	assert_int_equal(in(u, UART_IIR), UART_IIR_NO_INT);
}

static void test_loopback_modem_lines(void **state)
{
	struct uart *u = *state;
	out(u, UART_MCR, UART_MCR_LOOP);
	assert_int_equal(in(u, UART_MSR), 0);
	out(u, UART_MCR, UART_MCR_LOOP | UART_MCR_RTS);
	assert_int_equal(in(u, UART_MSR), UART_MSR_CTS);
	out(u, UART_MCR, UART_MCR_LOOP | UART_MCR_DTR);
	assert_int_equal(in(u, UART_MSR), UART_MSR_DSR);
	out(u, UART_MCR, UART_MCR_LOOP | UART_MCR_OUT1);
	assert_int_equal(in(u, UART_MSR), UART_MSR_RI);
	out(u, UART_MCR, UART_MCR_LOOP | UART_MCR_OUT2);
	assert_int_equal(in(u, UART_MSR), UART_MSR_DCD);
	out(u, UART_MCR, 0x1f);
	assert_int_equal(in(u, UART_MSR), UART_MSR_CTS | UART_MSR_DSR |
						  UART_MSR_RI | UART_MSR_DCD);
	out(u, UART_MCR, 0);
	assert_int_equal(in(u, UART_MSR),
			 UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS);
}

static void test_loopback_data(void **state)
{
	struct uart *u = *state;
	u->s.on_tx = record_tx;
	u->s.tx_opaque = u;
	out(u, UART_IER, UART_IER_RDI);
	out(u, UART_MCR, UART_MCR_LOOP);
	out_str(u, "hi");
	assert_string_equal(drain(u), "");
	assert_int_equal(u->nr_tx, 0); /* nothing left the chip */
	assert_true(in(u, UART_LSR) & UART_LSR_DR);
	assert_int_equal(in(u, UART_IIR), UART_IIR_RDI);
	assert_int_equal(in(u, UART_RX), 'h');
	assert_int_equal(in(u, UART_RX), 'i');
	out(u, UART_MCR, 0);
	out_str(u, "o");
	assert_string_equal(drain(u), "o");
}

static void test_mcr_keeps_low_bits(void **state)
{
	struct uart *u = *state;
	out(u, UART_MCR, 0xff);
	assert_int_equal(in(u, UART_MCR), 0x1f);
}

static void fill_rx(struct uart *u)
{
	uint8_t *buf = malloc(SERIAL_RX_SIZE + 10);
	for (size_t i = 0; i < SERIAL_RX_SIZE + 10; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(serial_receive(&u->s, buf, SERIAL_RX_SIZE + 10),
			 SERIAL_RX_SIZE);
	free(buf);
}

static void test_overrun_reported_once(void **state)
{
	struct uart *u = *state;
	fill_rx(u);
	/* serial_receive never overruns: it takes only what fits. */
	assert_int_equal(serial_receive(&u->s, (const uint8_t *)"z", 1), 0);
	assert_int_equal(in(u, UART_LSR) & UART_LSR_OE, 0);
	/* A looped-back byte with the FIFO full is an overrun. */
	out(u, UART_MCR, UART_MCR_LOOP);
	out_str(u, "!");
	uint8_t lsr = in(u, UART_LSR);
	assert_true(lsr & UART_LSR_OE);
	assert_true(lsr & UART_LSR_DR);
	assert_int_equal(in(u, UART_LSR) & UART_LSR_OE, 0); /* cleared by read */
	assert_int_equal(in(u, UART_RX), 0); /* the oldest byte survived */
	assert_int_equal(in(u, UART_RX), 1);
}

static void test_rx_space(void **state)
{
	struct uart *u = *state;
	assert_int_equal(serial_rx_space(&u->s), SERIAL_RX_SIZE);
	receive_str(u, "0123456789");
	assert_int_equal(serial_rx_space(&u->s), SERIAL_RX_SIZE - 10);
	in(u, UART_RX);
	assert_int_equal(serial_rx_space(&u->s), SERIAL_RX_SIZE - 9);
	out(u, UART_FCR, UART_FCR_ENABLE_FIFO | UART_FCR_CLEAR_RCVR);
	assert_int_equal(serial_rx_space(&u->s), SERIAL_RX_SIZE);
	assert_int_equal(in(u, UART_LSR) & UART_LSR_DR, 0);
	assert_int_equal(in(u, UART_IIR), 0xc1); /* FIFO on, clear bit not kept */
}

static void test_rx_ring_wraps(void **state)
{
	struct uart *u = *state;
	fill_rx(u);
	for (unsigned int i = 0; i < 100; i++)
		assert_int_equal(in(u, UART_RX), (uint8_t)i);
	uint8_t more[100];
	for (unsigned int i = 0; i < 100; i++)
		more[i] = (uint8_t)(0x80 + i);
	assert_int_equal(serial_receive(&u->s, more, 100), 100);
	assert_int_equal(serial_rx_space(&u->s), 0);
	for (unsigned int i = 100; i < SERIAL_RX_SIZE; i++)
		assert_int_equal(in(u, UART_RX), (uint8_t)i);
	for (unsigned int i = 0; i < 100; i++)
		assert_int_equal(in(u, UART_RX), (uint8_t)(0x80 + i));
	assert_int_equal(in(u, UART_LSR) & UART_LSR_DR, 0);
}

static void test_scratch_register(void **state)
{
	struct uart *u = *state;
	out(u, UART_SCR, 0x5a);
	assert_int_equal(in(u, UART_SCR), 0x5a);
	out(u, UART_SCR, 0xa5);
	assert_int_equal(in(u, UART_SCR), 0xa5);
	assert_string_equal(drain(u), "");
}

static void test_status_registers_read_only(void **state)
{
	struct uart *u = *state;
	out(u, UART_LSR, 0xff);
	out(u, UART_MSR, 0x00);
	assert_int_equal(in(u, UART_LSR), UART_LSR_THRE | UART_LSR_TEMT);
	assert_int_equal(in(u, UART_MSR),
			 UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS);
}

/* Saved with received bytes waiting and its interrupt up, restored into a
 * UART as new: the same registers and bytes, the line raised again;
 * anything cut short is refused. */
static void test_snapshot_restore(void **state)
{
	struct uart *u = *state;
	out(u, UART_LCR, UART_LCR_DLAB);
	out(u, UART_DLL, 0x01);
	out(u, UART_LCR, UART_LCR_WLEN8);
	out(u, UART_SCR, 0x5a);
	out(u, UART_IER, UART_IER_RDI);
	receive_str(u, "abc");
	assert_int_equal(in(u, UART_RX), 'a');
	struct state_out o = {0};
	serial_save(&u->s, &o);
	unsigned char *buf;
	size_t len;
	assert_int_equal(state_out_finish(&o, &buf, &len), 0);

	void *other;
	assert_int_equal(setup_uart(&other), 0);
	struct uart *v = other;
	for (size_t n = 0; n < len; n++) {
		struct state_in cut = state_in(buf, n);
		assert_int_equal(serial_restore(&v->s, &cut), -EBADMSG);
	}
	assert_int_equal(v->nr_levels, 0);
	struct state_in whole = state_in(buf, len);
	assert_int_equal(serial_restore(&v->s, &whole), 0);
	assert_true(state_in_whole(&whole));
	assert_int_equal(v->nr_levels, 1);
	assert_true(v->levels[0]);
	assert_int_equal(in(v, UART_SCR), 0x5a);
	assert_int_equal(in(v, UART_LCR), UART_LCR_WLEN8);
	assert_int_equal(in(v, UART_IIR) & 0x0f, UART_IIR_RDI);
	assert_int_equal(in(v, UART_RX), 'b');
	assert_int_equal(in(v, UART_RX), 'c');
	out(v, UART_LCR, UART_LCR_DLAB);
	assert_int_equal(in(v, UART_DLL), 0x01);
	/* A receiver longer than the FIFO is not one a UART could hold. */
	unsigned char *bad = malloc(len);
	memcpy(bad, buf, len);
	bad[10] = 0xff;
	bad[11] = 0xff;
	struct state_in huge = state_in(bad, len);
	assert_int_equal(serial_restore(&v->s, &huge), -EBADMSG);
	free(bad);
	free(buf);
	teardown_uart(&other);
}

#define UART_TEST(fn) \
	cmocka_unit_test_setup_teardown(fn, setup_uart, teardown_uart)

int main(void)
{
	const struct CMUnitTest serial[] = {
		UART_TEST(test_reset_state),
		UART_TEST(test_thr_goes_to_out_fd),
		UART_TEST(test_out_fd_minus_one_drops),
		UART_TEST(test_on_tx_sees_each_byte),
		UART_TEST(test_dlab_selects_divisor),
		UART_TEST(test_dlab_read_does_not_consume_rx),
		UART_TEST(test_ier_keeps_low_bits),
		UART_TEST(test_iir_fifo_bits),
		UART_TEST(test_thre_interrupt_acked_by_iir),
		UART_TEST(test_thre_needs_ier),
		UART_TEST(test_receive_in_order),
		UART_TEST(test_rda_irq_levels),
		UART_TEST(test_rda_has_priority_over_thre),
		UART_TEST(test_disabling_ier_lowers_irq),
		UART_TEST(test_loopback_modem_lines),
		UART_TEST(test_loopback_data),
		UART_TEST(test_mcr_keeps_low_bits),
		UART_TEST(test_overrun_reported_once),
		UART_TEST(test_rx_space),
		UART_TEST(test_rx_ring_wraps),
		UART_TEST(test_scratch_register),
		UART_TEST(test_status_registers_read_only),
		UART_TEST(test_snapshot_restore),
	};
	return cmocka_run_group_tests(serial, NULL, NULL);
}
