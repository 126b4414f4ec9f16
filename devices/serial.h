/* 16550A UART: enough of the chip for Linux's 8250 driver, with the
 * transmitter wired to a host fd and the receiver fed by the VMM. */
#ifndef FSVM_SERIAL_H
#define FSVM_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/state_blob.h"

#define SERIAL_COM1_BASE 0x3f8
#define SERIAL_COM1_IRQ 4
#define SERIAL_COM2_BASE 0x2f8
#define SERIAL_COM2_IRQ 3
#define SERIAL_NR_PORTS 8
#define SERIAL_RX_SIZE 4096

struct serial {
	pthread_mutex_t lock;
	uint8_t ier, lcr, mcr, lsr_err, msr, scr, dll, dlm, fcr;
	bool thr_irq;         /* THR-empty interrupt pending */
	bool irq_level;       /* current level of the IRQ line */
	uint8_t rx[SERIAL_RX_SIZE];
	size_t rx_head, rx_len;
	int out_fd;           /* transmitted bytes go here; -1 drops them */
	/* Raises or lowers the interrupt line (KVM_IRQ_LINE in the VMM). */
	void (*set_irq)(void *opaque, bool level);
	void *irq_opaque;
	/* Sees every transmitted byte (console watchers, e.g. panic). */
	void (*on_tx)(void *opaque, uint8_t byte);
	void *tx_opaque;
};

void serial_init(struct serial *s, int out_fd,
		 void (*set_irq)(void *opaque, bool level), void *irq_opaque);

/* Register access at offset 0..7 from the port base (io_bus handler). */
void serial_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
	       unsigned int size);

/* Queues received bytes; returns how many fit. */
size_t serial_receive(struct serial *s, const uint8_t *buf, size_t len);
size_t serial_rx_space(struct serial *s);

/* For a snapshot: the registers, what the receiver holds, the line's
 * level. restore (on a UART as new) raises the line again if it was
 * up; -EBADMSG for state cut short or a receiver past its size. */
void serial_save(struct serial *s, struct state_out *out);
int serial_restore(struct serial *s, struct state_in *in);

#endif
