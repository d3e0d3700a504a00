/*
 * addrcount.h: open connections counted per client address (addrcount.c),
 * the one table behind every daemon's per-address cap: the orchestrator's
 * http.max_conns_per_addr, the gateway's limits.max_conns_per_addr and the
 * proxy's limits.unidentified_per_source.
 * Rules: an address is its family and its 16 bytes (IPv4 as the last 4),
 * never a string; an entry lives while its count is above zero; a table
 * made with ADDRCOUNT_LOCKED may be used from several threads (adjust by
 * address then), else it belongs to one thread and entries may be held.
 * Each daemon decides what to do at its cap (evict, 429, refuse); the
 * rule "full" is decided here once: a new connection is over the cap when
 * the address already holds cap connections.
 */
#ifndef COMMON_ADDRCOUNT_H
#define COMMON_ADDRCOUNT_H

#include <netinet/in.h>
#include <sys/socket.h>

#define ADDRCOUNT_LOCKED	0x1

struct addrcount;
struct addrcount_ent;

struct addrcount	*addrcount_new(int flags);
/* Frees the table and every entry left. */
void			 addrcount_free(struct addrcount *);
/*
 * The entry of sa's address, created with a count of 0 (single-threaded
 * tables). addrcount_hold counts one connection in, addrcount_put one out
 * (an entry at 0 is freed). Hold before closing other connections of
 * the same address (an eviction), or the entry may go under you.
 */
struct addrcount_ent	*addrcount_get(struct addrcount *, const struct sockaddr *sa);
void			 addrcount_hold(struct addrcount *, struct addrcount_ent *);
void			 addrcount_put(struct addrcount *, struct addrcount_ent *);
long			 addrcount_n(const struct addrcount_ent *);
/* The address as text ("192.0.2.1", "2001:db8::1", "?" for another family). */
const char		*addrcount_ip(const struct addrcount_ent *);
/* 1 when one more connection of e's address would go beyond cap. */
int			 addrcount_full(const struct addrcount_ent *, long long cap);
/*
 * By address (locked tables): adds d to the count of (fam, a) and returns
 * the new count; the entry goes at 0.
 */
long			 addrcount_adj(struct addrcount *, int fam, const unsigned char a[16], long d);
/* The count of (fam, a) (0: none). */
long			 addrcount_count(struct addrcount *, int fam, const unsigned char a[16]);
/*
 * The address other than (fam, a) holding the most: its count (0: none),
 * its family and bytes in *bfam and b.
 */
long			 addrcount_heaviest(struct addrcount *, int fam, const unsigned char a[16],
			    int *bfam, unsigned char b[16]);
/* sa's family and 16 bytes (IPv4 in the last 4; other families all zero). */
void			 addrcount_key(const struct sockaddr *sa, int *fam, unsigned char a[16]);

#endif
