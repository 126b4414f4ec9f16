/* Interrupt delivery shared by every virtio device's queues. */
#include <stdint.h>
#include <unistd.h>

#include "virtio/virtio_dev.h"

void virtio_queue_interrupt(struct virtio_queue *q)
{
	if (q->call_fd < 0 || !split_ring_should_interrupt(&q->ring))
		return;
	if (q->int_status)
		atomic_fetch_or(q->int_status, 1u);
	uint64_t one = 1;
	/* EAGAIN means the counter is saturated: the interrupt is pending. */
	if (write(q->call_fd, &one, sizeof(one)) < 0)
		return;
}
