/* libFuzzer target for the snapshot state's parsers (arch/x86/
 * snapshot_state.h): the input as a vCPU blob and as a VM blob, each
 * parsed without KVM, and a vCPU's host matched against this one. What a
 * parse accepts is read whole, so ASan sees a part that points past. */
#include <stdint.h>
#include <string.h>

#include "arch/x86/snapshot_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the reads add up to, so that they are not optimised away. */
volatile unsigned int fuzz_sink;

static unsigned int sum(const unsigned char *p, size_t len)
{
	unsigned int s = 0;
	for (size_t i = 0; i < len; i++)
		s += p[i];
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct vcpu_state st;
	if (vcpu_state_parse(data, size, &st, err, sizeof(err)) == 0) {
		fuzz_sink += sum(st.xsave, st.host.xsave_size);
		fuzz_sink += sum(st.msrs, (size_t)st.nr_msrs * 16);
		struct snapshot_host here = st.host;
		here.signature ^= 0x10;
		snapshot_host_match(&st.host, &here, err, sizeof(err));
	}
	struct vm_state vm;
	vm_state_parse(data, size, &vm, err, sizeof(err));
	return 0;
}
