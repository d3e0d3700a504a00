/*
 * runtime/local/seccomp.c: the seccomp program every sandbox runs under
 * (docs/local-runtime.md, "Seccomp"): a deny list of system calls that
 * reach kernel-wide state, built as classic BPF in C (no library) and
 * handed to bwrap --seccomp as a memfd.
 *
 * Rules: refused calls fail with EPERM (programs cope with that); a
 * foreign architecture is killed, and on x86-64 every x32 call is
 * refused, so the numbers below cannot be bypassed through another ABI.
 * Calls nothing else in the runtime.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <unistd.h>

#include "local_int.h"

/*
 * System calls refused with EPERM inside a sandbox: kernel-wide state,
 * module and kexec loading, BPF and perf (large attack surface), the
 * keyring, io_uring, handle-based opens that bypass the mount tree,
 * accounting and swap. Mounts are already confined to the sandbox's own
 * user and mount namespaces; new user namespaces are refused by the
 * sandbox's outer user namespace (max_user_namespaces 1, spawn.c).
 */
static const int deny_nrs[] = {
#ifdef SYS_kexec_load
	SYS_kexec_load,
#endif
#ifdef SYS_kexec_file_load
	SYS_kexec_file_load,
#endif
#ifdef SYS_init_module
	SYS_init_module,
#endif
#ifdef SYS_finit_module
	SYS_finit_module,
#endif
#ifdef SYS_delete_module
	SYS_delete_module,
#endif
#ifdef SYS_bpf
	SYS_bpf,
#endif
#ifdef SYS_perf_event_open
	SYS_perf_event_open,
#endif
#ifdef SYS_keyctl
	SYS_keyctl,
#endif
#ifdef SYS_add_key
	SYS_add_key,
#endif
#ifdef SYS_request_key
	SYS_request_key,
#endif
#ifdef SYS_io_uring_setup
	SYS_io_uring_setup,
#endif
#ifdef SYS_io_uring_enter
	SYS_io_uring_enter,
#endif
#ifdef SYS_io_uring_register
	SYS_io_uring_register,
#endif
#ifdef SYS_open_by_handle_at
	SYS_open_by_handle_at,
#endif
#ifdef SYS_acct
	SYS_acct,
#endif
#ifdef SYS_swapon
	SYS_swapon,
#endif
#ifdef SYS_swapoff
	SYS_swapoff,
#endif
#ifdef SYS_reboot
	SYS_reboot,
#endif
#ifdef SYS_lookup_dcookie
	SYS_lookup_dcookie,
#endif
#ifdef SYS_quotactl
	SYS_quotactl,
#endif
#ifdef SYS_uselib
	SYS_uselib,
#endif
#ifdef SYS_iopl
	SYS_iopl,
#endif
#ifdef SYS_ioperm
	SYS_ioperm,
#endif
#ifdef SYS_userfaultfd
	SYS_userfaultfd,
#endif
#ifdef SYS_fanotify_init
	SYS_fanotify_init,
#endif
#ifdef SYS_syslog
	SYS_syslog,
#endif
};

#if defined(__x86_64__)
#define RL_AUDIT_ARCH	AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define RL_AUDIT_ARCH	AUDIT_ARCH_AARCH64
#endif

int
rl_seccomp_fd(char *err, size_t errlen)
{
#ifdef RL_AUDIT_ARCH
	struct sock_filter prog[8 + NELEM(deny_nrs) * 2];
	size_t n = 0, i;
	int fd;

	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, arch));
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    RL_AUDIT_ARCH, 1, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_KILL_PROCESS);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
	/* x32 system calls */
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
	    0x40000000, 0, 1);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ERRNO | EPERM);
#endif
	for (i = 0; i < NELEM(deny_nrs); i++) {
		prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ |
		    BPF_K, (unsigned)deny_nrs[i], 0, 1);
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
		    SECCOMP_RET_ERRNO | EPERM);
	}
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ALLOW);
	if ((fd = memfd_create("sandbox-seccomp", MFD_CLOEXEC)) == -1) {
		snprintf(err, errlen, "memfd_create: %s", strerror(errno));
		return -1;
	}
	if (write(fd, prog, n * sizeof(prog[0])) !=
	    (ssize_t)(n * sizeof(prog[0])) || lseek(fd, 0, SEEK_SET) == -1) {
		snprintf(err, errlen, "seccomp program: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
#else
	snprintf(err, errlen, "seccomp filter not built for this architecture");
	return -1;
#endif
}

