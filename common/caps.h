/*
 * caps.h: the capabilities root keeps inside a sandbox, on both runtimes
 * (docs/threat-model.md, "Root inside a sandbox", says why each is safe
 * where it is granted). The local runtime hands the mask to the agent
 * (--nest-caps), which grants it in the sandbox's own user namespace; the
 * Kubernetes runtime writes the names into the pod's securityContext
 * (drop ALL, add these).
 *
 * It is the set container engines grant by default less NET_RAW (raw
 * sockets: packet crafting on the sandbox's own network is no use behind
 * an HTTP proxy) and MKNOD (device nodes: /dev is the runtime's).
 */
#ifndef COMMON_CAPS_H
#define COMMON_CAPS_H

/* X(name without CAP_, number from linux/capability.h) */
#define SANDBOX_CAPS(X)			\
	X(CHOWN, 0)			\
	X(DAC_OVERRIDE, 1)		\
	X(FOWNER, 3)			\
	X(FSETID, 4)			\
	X(KILL, 5)			\
	X(SETGID, 6)			\
	X(SETUID, 7)			\
	X(SETPCAP, 8)			\
	X(NET_BIND_SERVICE, 10)		\
	X(SYS_CHROOT, 18)		\
	X(AUDIT_WRITE, 29)		\
	X(SETFCAP, 31)

#define SANDBOX_CAP_BIT(name, nr)	| (1ULL << (nr))
/* 0xa00405fb */
#define SANDBOX_CAPS_MASK	(0ULL SANDBOX_CAPS(SANDBOX_CAP_BIT))

#endif
