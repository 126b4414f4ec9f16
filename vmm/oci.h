/* `fsvm oci` (or fsvm run as `fsvm-runtime`): a runc-compatible OCI
 * runtime, so podman, containerd and Kubernetes start each container as
 * an fsvm VM. docs/OCI.md. */
#ifndef FSVM_OCI_H
#define FSVM_OCI_H

/* argv[0] is the runtime's name; argv[1...] runc's global flags, the
 * operation and its arguments. Returns the process's exit status. */
int oci_main(int argc, char **argv, const char *version);

#endif
