/* Host terminal <-> guest serial consoles. */
#include "vmm/console.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/irq.h"
#include "core/log.h"
#include "vmm/panic_watch.h"

static void console_irq_com1(void *opaque, bool level)
{
	irq_set_line(opaque, SERIAL_COM1_IRQ, level);
}

static void console_irq_com2(void *opaque, bool level)
{
	irq_set_line(opaque, SERIAL_COM2_IRQ, level);
}

static void console_write_filtered(struct term_filter *filter, int fd,
				   uint8_t byte)
{
	uint8_t buf[TERM_FILTER_OUT_SIZE(1)];
	size_t len = term_filter(filter, &byte, 1, buf);
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* the console is lost, not the VM */
		done += (size_t)n;
	}
}

static void console_out_byte(void *opaque, uint8_t byte)
{
	struct console *con = opaque;
	console_write_filtered(&con->out_filter, STDOUT_FILENO, byte);
}

/* COM2 carries the kernel console: its first byte is a boot mark, and
 * every byte goes past the panic watch (unfiltered: it reads the kernel's
 * own words). */
static void console_err_byte(void *opaque, uint8_t byte)
{
	struct console *con = opaque;
	timeline_mark(&con->vm->timeline, TL_FIRST_CONSOLE);
	panic_watch_byte(&con->watch, byte);
	kernel_report_byte(&con->report, byte);
	if (con->filter_err)
		console_write_filtered(&con->err_filter, STDERR_FILENO, byte);
}

int console_init(struct console *con, struct vm *vm, bool batch)
{
	con->vm = vm;
	con->stdin_fd = STDIN_FILENO;
	con->interactive = !batch && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (con->interactive && ioctl(STDOUT_FILENO, TIOCGWINSZ, &con->size) < 0)
		con->size = (struct winsize){0};
	/* The guest is not trusted with a terminal the user did not hand it;
	 * pipes and files get its bytes exactly. */
	con->filter_out = isatty(STDOUT_FILENO) && !con->interactive;
	con->filter_err = isatty(STDERR_FILENO) && !con->interactive;
	con->out_filter = con->err_filter = (struct term_filter){0};
	serial_init(&con->out, con->filter_out ? -1 : STDOUT_FILENO,
		    console_irq_com1, vm);
	serial_init(&con->err, con->filter_err ? -1 : STDERR_FILENO,
		    console_irq_com2, vm);
	if (con->filter_out) {
		con->out.on_tx = console_out_byte;
		con->out.tx_opaque = con;
	}
	con->watch = (struct panic_watch){.vm = vm};
	memset(&con->report, 0, sizeof(con->report));
	con->err.on_tx = console_err_byte;
	con->err.tx_opaque = con;
	int err = io_bus_register(&vm->pio, SERIAL_COM1_BASE, SERIAL_NR_PORTS,
				  serial_io, &con->out);
	if (!err)
		err = io_bus_register(&vm->pio, SERIAL_COM2_BASE,
				      SERIAL_NR_PORTS, serial_io, &con->err);
	return err;
}

/* The escape key, as QEMU's: Ctrl-A x ends the VM, Ctrl-A Ctrl-A is a
 * Ctrl-A for the guest, Ctrl-A and any other key go to it both. Returns
 * how many of in's n bytes go on to the guest, put in out (room for
 * n + 1: a Ctrl-A held from the last read comes first). */
static size_t console_escape(struct console *con, const uint8_t *in, size_t n,
			     uint8_t *out)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		if (!con->escape_held && in[i] == CONSOLE_ESCAPE) {
			con->escape_held = true;
			continue;
		}
		if (con->escape_held) {
			con->escape_held = false;
			if (in[i] == 'x') {
				vm_stop(con->vm, EXIT_VMM_ERROR,
					EXIT_REASON_ESCAPE_KEY,
					"ended with the escape key (Ctrl-A x)");
				return len;
			}
			if (in[i] != CONSOLE_ESCAPE)
				out[len++] = CONSOLE_ESCAPE;
		}
		out[len++] = in[i];
	}
	return len;
}

static void console_on_stdin(void *opaque, uint32_t events)
{
	struct console *con = opaque;
	(void)events;
	uint8_t buf[256], out[sizeof(buf) + 1];
	size_t space = serial_rx_space(&con->out);
	if (space < 2) {
		/* The guest has not drained its FIFO (room for a key and a
		 * held Ctrl-A wanted): back off, do not spin. */
		usleep(1000);
		return;
	}
	ssize_t n = read(con->stdin_fd, buf,
			 space - 1 < sizeof(buf) ? space - 1 : sizeof(buf));
	if (n > 0 && con->escape_key)
		serial_receive(&con->out, out,
			       console_escape(con, buf, (size_t)n, out));
	else if (n > 0)
		serial_receive(&con->out, buf, (size_t)n);
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		event_loop_del(con->loop, con->stdin_fd); /* hung up */
}

int console_start(struct console *con, struct event_loop *loop)
{
	if (!con->interactive)
		return 0;
	con->loop = loop;
	if (tcgetattr(con->stdin_fd, &con->saved) == 0) {
		struct termios raw = con->saved;
		/* Output too: the guest's tty already turned its newlines
		 * into CR LF, and a second pass would make that CR CR LF. */
		cfmakeraw(&raw);
		if (tcsetattr(con->stdin_fd, TCSANOW, &raw) == 0)
			con->raw = true;
	}
	return event_loop_add(loop, con->stdin_fd, EPOLLIN, console_on_stdin,
			      con);
}

void console_restore(struct console *con)
{
	if (con->raw)
		tcsetattr(con->stdin_fd, TCSANOW, &con->saved);
	con->raw = false;
}
