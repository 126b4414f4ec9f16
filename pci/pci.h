/* PCI devices as the host bridge sees them: a 256-byte configuration space
 * with writable-bit masks, BARs the guest may move, and access hooks. */
#ifndef FSVM_PCI_H
#define FSVM_PCI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/state_blob.h"

#define PCI_CFG_SIZE 256
#define PCI_BAR_COUNT 6
#define PCI_CAP_START 0x40

struct pci_dev;

struct pci_bar {
	uint64_t addr;
	uint64_t size; /* power of two; 0: BAR unused */
	bool is64;
	bool prefetch;
	bool io; /* in port I/O space, not memory */
};

struct pci_dev {
	/* The one lock of the device's state: its config space, its BARs and
	 * what its callbacks keep. Every config-space access and every BAR
	 * access routed to the device holds it, so the callbacks below all
	 * run under it and take no lock of their own for device state. */
	pthread_mutex_t lock;
	uint8_t cfg[PCI_CFG_SIZE];
	uint8_t wmask[PCI_CFG_SIZE]; /* bits the guest may change */
	struct pci_bar bars[PCI_BAR_COUNT];
	uint8_t next_cap;            /* where the next capability goes */
	uint8_t *last_cap_next;      /* link of the last capability */
	/* An access inside BAR bar at offset off (data little-endian). */
	void (*bar_access)(struct pci_dev *dev, int bar, uint64_t off,
			   bool is_write, uint8_t *data, unsigned int size);
	/* The guest wrote config space at [off, off + size). */
	void (*cfg_written)(struct pci_dev *dev, unsigned int off,
			    unsigned int size);
	/* The guest moved a BAR (after sizing or reprogramming). */
	void (*bar_moved)(struct pci_dev *dev, int bar, uint64_t old_addr);
	/* Accesses to [unlocked_off, unlocked_off + unlocked_len) of BAR
	 * unlocked_bar run bar_access without the lock: doorbells that may
	 * run requests there and then, which must not hold up the device's
	 * registers (len 0: none; set before the device is plugged). */
	int unlocked_bar;
	uint64_t unlocked_off, unlocked_len;
	void *opaque;
};

/* Fills the header for an endpoint (header type 0). */
void pci_dev_init(struct pci_dev *dev, uint16_t vendor, uint16_t device,
		  uint32_t class_rev, uint16_t subsys_vendor,
		  uint16_t subsys_id);
/* Declares a memory BAR (size a power of two, at least 16) at a placement
 * chosen by the VMM. */
void pci_dev_set_bar(struct pci_dev *dev, int bar, uint64_t addr,
		     uint64_t size, bool is64, bool prefetch);
/* Declares a port I/O BAR (size a power of two, 4 to 256). */
void pci_dev_set_io_bar(struct pci_dev *dev, int bar, uint16_t port,
			uint16_t size);
/* Appends a capability (len bytes at data, id in data[0]); returns its
 * config-space offset or 0 when the space is full. */
unsigned int pci_dev_add_cap(struct pci_dev *dev, const void *data,
			     unsigned int len);

/* Config-space access as the host bridge forwards it, under dev->lock. */
void pci_cfg_access(struct pci_dev *dev, unsigned int off, bool is_write,
		    uint8_t *data, unsigned int size);

/* A memory access at guest-physical addr (io false) or a port access (io
 * true): if the device decodes that space and addr falls in one of its
 * BARs there, runs bar_access and returns true. Lookup and access are one
 * step under dev->lock, so a config write on another vCPU cannot move the
 * BAR between them; an access to the unlocked range is looked up under
 * the lock and run after it. */
bool pci_bar_access(struct pci_dev *dev, bool io, uint64_t addr,
		    bool is_write, uint8_t *data, unsigned int size);

/* For a snapshot: the config space as the guest left it. */
void pci_dev_save(const struct pci_dev *dev, struct state_out *out);
/* Into a device as new, under dev->lock: the guest's config writes
 * replayed, BARs first, so only what it may write changes and the device
 * hears of each write (its BAR moves, MSI-X enabled) as from the guest. */
void pci_dev_restore(struct pci_dev *dev, struct state_in *in);

#endif
