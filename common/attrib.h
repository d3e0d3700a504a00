/* attrib.h: compiler attributes used across the project. */
#ifndef ATTRIB_H
#define ATTRIB_H

#define PRINTF(f, a)  __attribute__((format(printf, f, a)))
#define WUNRES        __attribute__((warn_unused_result))
#define NONNULL(...)  __attribute__((nonnull(__VA_ARGS__)))
#define MALLOC        __attribute__((malloc))
#define NORETURN      __attribute__((noreturn))
#define UNUSED        __attribute__((unused))

/* Marks a result deliberately ignored (a best-effort close, a log write). */
static inline void ign(int r) { (void)r; }

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Stays on in release builds: a broken invariant is a bug, not peer input. */
#define ASSERT(e) \
	((e) ? (void)0 : fatalx("assertion failed: %s (%s:%d)", #e, __FILE__, __LINE__))

#endif
