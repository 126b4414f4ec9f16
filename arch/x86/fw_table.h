/* What the firmware tables the guest reads (MP, ACPI) have in common. */
#ifndef FSVM_FW_TABLE_H
#define FSVM_FW_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* The byte that makes a table's bytes sum to zero (mod 256). */
static inline uint8_t fw_table_checksum(const void *p, size_t len)
{
	uint8_t sum = 0;
	for (size_t i = 0; i < len; i++)
		sum += ((const uint8_t *)p)[i];
	return (uint8_t)-sum;
}

#endif
