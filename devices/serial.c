/* 16550A UART model: registers, FIFO-mode IIR, loopback, THRE/RDA interrupts. */
#include "devices/serial.h"

#include <errno.h>
#include <linux/serial_reg.h>
#include <string.h>
#include <unistd.h>

void serial_init(struct serial *s, int out_fd,
		 void (*set_irq)(void *opaque, bool level), void *irq_opaque)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->out_fd = out_fd;
	s->set_irq = set_irq;
	s->irq_opaque = irq_opaque;
	s->msr = UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
	s->dll = 0x0c; /* 9600 baud, the reset value firmware leaves */
}

/* The bits of IER and MCR a 16550A keeps. */
#define IER_BITS 0x0f
#define MCR_BITS 0x1f

/* The highest-priority pending interrupt, as IIR encodes it. */
static uint8_t serial_pending(const struct serial *s)
{
	if ((s->ier & UART_IER_RDI) && s->rx_len)
		return UART_IIR_RDI;
	if ((s->ier & UART_IER_THRI) && s->thr_irq)
		return UART_IIR_THRI;
	return UART_IIR_NO_INT;
}

static void serial_update_irq(struct serial *s)
{
	bool level = serial_pending(s) != UART_IIR_NO_INT;
	if (level != s->irq_level) {
		s->irq_level = level;
		if (s->set_irq)
			s->set_irq(s->irq_opaque, level);
	}
}

static void serial_push_rx(struct serial *s, uint8_t byte)
{
	if (s->rx_len == SERIAL_RX_SIZE) {
		s->lsr_err |= UART_LSR_OE;
		return;
	}
	s->rx[(s->rx_head + s->rx_len) % SERIAL_RX_SIZE] = byte;
	s->rx_len++;
}

static void serial_transmit(struct serial *s, uint8_t byte)
{
	if (s->mcr & UART_MCR_LOOP) {
		serial_push_rx(s, byte);
		return;
	}
	if (s->on_tx)
		s->on_tx(s->tx_opaque, byte);
	if (s->out_fd < 0)
		return;
	/* A closed or failing reader loses the console, not the VM. */
	while (write(s->out_fd, &byte, 1) < 0 && errno == EINTR)
		;
}

static uint8_t serial_read_reg(struct serial *s, unsigned int reg)
{
	bool dlab = s->lcr & UART_LCR_DLAB;
	uint8_t v;

	switch (reg) {
	case UART_RX:
		if (dlab)
			return s->dll;
		if (!s->rx_len)
			return 0;
		v = s->rx[s->rx_head];
		s->rx_head = (s->rx_head + 1) % SERIAL_RX_SIZE;
		s->rx_len--;
		return v;
	case UART_IER:
		return dlab ? s->dlm : s->ier;
	case UART_IIR:
		v = serial_pending(s);
		/* Reading IIR acknowledges a THRE interrupt. */
		if (v == UART_IIR_THRI)
			s->thr_irq = false;
		if (s->fcr & UART_FCR_ENABLE_FIFO)
			v |= 0xc0;
		return v;
	case UART_LCR:
		return s->lcr;
	case UART_MCR:
		return s->mcr;
	case UART_LSR:
		v = UART_LSR_THRE | UART_LSR_TEMT | s->lsr_err;
		if (s->rx_len)
			v |= UART_LSR_DR;
		s->lsr_err = 0;
		return v;
	case UART_MSR:
		if (s->mcr & UART_MCR_LOOP) {
			/* Loopback wires the modem outputs back to the inputs. */
			v = 0;
			if (s->mcr & UART_MCR_RTS)
				v |= UART_MSR_CTS;
			if (s->mcr & UART_MCR_DTR)
				v |= UART_MSR_DSR;
			if (s->mcr & UART_MCR_OUT1)
				v |= UART_MSR_RI;
			if (s->mcr & UART_MCR_OUT2)
				v |= UART_MSR_DCD;
			return v;
		}
		return s->msr;
	default:
		return s->scr;
	}
}

static void serial_write_reg(struct serial *s, unsigned int reg, uint8_t v)
{
	bool dlab = s->lcr & UART_LCR_DLAB;

	switch (reg) {
	case UART_TX:
		if (dlab) {
			s->dll = v;
			return;
		}
		serial_transmit(s, v);
		/* The byte is gone at once: THR is empty again. */
		s->thr_irq = true;
		return;
	case UART_IER:
		if (dlab) {
			s->dlm = v;
			return;
		}
		/* Enabling THRI with THR empty raises the interrupt at once. */
		if ((v & UART_IER_THRI) && !(s->ier & UART_IER_THRI))
			s->thr_irq = true;
		s->ier = v & IER_BITS;
		return;
	case UART_FCR:
		s->fcr = v & (UART_FCR_ENABLE_FIFO | 0xc0);
		if (v & UART_FCR_CLEAR_RCVR)
			s->rx_head = s->rx_len = 0;
		return;
	case UART_LCR:
		s->lcr = v;
		return;
	case UART_MCR:
		s->mcr = v & MCR_BITS;
		return;
	case UART_LSR:
	case UART_MSR:
		return; /* read-only */
	default:
		s->scr = v;
		return;
	}
}

void serial_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
	       unsigned int size)
{
	struct serial *s = opaque;
	(void)size; /* the 8250 is byte-wide; wider accesses use byte 0 */

	pthread_mutex_lock(&s->lock);
	if (is_write)
		serial_write_reg(s, (unsigned int)offset, data[0]);
	else
		data[0] = serial_read_reg(s, (unsigned int)offset);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

size_t serial_rx_space(struct serial *s)
{
	pthread_mutex_lock(&s->lock);
	size_t space = SERIAL_RX_SIZE - s->rx_len;
	pthread_mutex_unlock(&s->lock);
	return space;
}

size_t serial_receive(struct serial *s, const uint8_t *buf, size_t len)
{
	pthread_mutex_lock(&s->lock);
	size_t n = SERIAL_RX_SIZE - s->rx_len;
	if (n > len)
		n = len;
	for (size_t i = 0; i < n; i++)
		serial_push_rx(s, buf[i]);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return n;
}

void serial_save(struct serial *s, struct state_out *out)
{
	pthread_mutex_lock(&s->lock);
	const uint8_t regs[] = {s->ier, s->lcr, s->mcr, s->lsr_err, s->msr,
				s->scr, s->dll, s->dlm, s->fcr, s->thr_irq};
	state_put(out, regs, sizeof(regs));
	state_put_u32(out, (uint32_t)s->rx_len);
	for (size_t i = 0; i < s->rx_len; i++)
		state_put_u8(out, s->rx[(s->rx_head + i) % SERIAL_RX_SIZE]);
	pthread_mutex_unlock(&s->lock);
}

int serial_restore(struct serial *s, struct state_in *in)
{
	uint8_t regs[10];
	state_get(in, regs, sizeof(regs));
	uint32_t rx_len = state_get_u32(in);
	if (in->short_read || rx_len > SERIAL_RX_SIZE || rx_len > in->left)
		return -EBADMSG;
	pthread_mutex_lock(&s->lock);
	s->ier = regs[0] & IER_BITS;
	s->lcr = regs[1];
	s->mcr = regs[2] & MCR_BITS;
	s->lsr_err = regs[3];
	s->msr = regs[4];
	s->scr = regs[5];
	s->dll = regs[6];
	s->dlm = regs[7];
	s->fcr = regs[8];
	s->thr_irq = regs[9] != 0;
	s->rx_head = 0;
	state_get(in, s->rx, rx_len);
	s->rx_len = rx_len;
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}
