/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_sock.c - Ctrl-C for SMB calls. libsmbclient waits for its server in a loop of its own that
 * only an answer, a timeout or a dead connection ends, and it does not tell which socket a
 * context uses. So each context learns its sockets when it connects: the TCP sockets to the
 * server's address that appeared meanwhile (connections to one address are made one at a
 * time, so none is taken for another's). While a caller's operation holds a context, an
 * interrupt shuts those sockets down (struct ff_host's interrupt_hook): the call fails at once,
 * the operation answers EINTR, and the pool retires the context. The server's late answer goes
 * nowhere. A socket is checked to be the same one (its inode) before it is shut down: its
 * descriptor may have been closed and reused.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/smb/smb.h"

struct smb_sock {
	int fd;
	ino_t ino;
};

/* The core's services (attach()), or NULL. */
static const struct ff_host *host;

void smb_attach(const struct ff_host *h)
{
	host = h;
}

bool smb_interrupted(void)
{
	return host && host->interrupted && host->interrupted();
}

/* Serialises connections to one address: the key is "ADDR port", the value its GMutex. */
static GMutex peers_lock;
static GHashTable *peers;

static bool same_peer(int fd, const struct sockaddr_storage *peer)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0 || sa.ss_family != peer->ss_family)
		return false;
	if (sa.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)&sa, *b = (const void *)peer;

		return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
	}
	if (sa.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&sa, *b = (const void *)peer;

		return a->sin6_port == b->sin6_port &&
		       memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(a->sin6_addr)) == 0;
	}
	return false;
}

/* The sockets of this process connected to `peer` (struct smb_sock). */
static GArray *peer_sockets(const struct sockaddr_storage *peer)
{
	GArray *out = g_array_new(FALSE, FALSE, sizeof(struct smb_sock));
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return out;
	while ((e = readdir(d)) != NULL) {
		char path[64], link[64];
		struct smb_sock s;
		unsigned long ino;
		ssize_t n;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		s.fd = atoi(e->d_name);
		if (s.fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", s.fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino) != 1)
			continue;
		s.ino = (ino_t)ino;
		if (same_peer(s.fd, peer))
			g_array_append_val(out, s);
	}
	closedir(d);
	return out;
}

struct smb_connecting {
	struct sockaddr_storage peer;
	GMutex *lock;
	GArray *before;
};

struct smb_connecting *smb_sock_connect_begin(const struct sockaddr_storage *peer)
{
	struct smb_connecting *c = g_new0(struct smb_connecting, 1);
	char addr[INET6_ADDRSTRLEN + 8] = "";
	const void *a;
	char *key;
	int port;

	c->peer = *peer;
	if (peer->ss_family == AF_INET6) {
		a = &((const struct sockaddr_in6 *)peer)->sin6_addr;
		port = ntohs(((const struct sockaddr_in6 *)peer)->sin6_port);
	} else {
		a = &((const struct sockaddr_in *)peer)->sin_addr;
		port = ntohs(((const struct sockaddr_in *)peer)->sin_port);
	}
	inet_ntop(peer->ss_family, a, addr, sizeof(addr));
	key = g_strdup_printf("%s %d", addr, port);
	g_mutex_lock(&peers_lock);
	if (!peers)
		peers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	c->lock = g_hash_table_lookup(peers, key);
	if (!c->lock) {
		c->lock = g_new0(GMutex, 1); /* kept for the daemon's life: one per server */
		g_mutex_init(c->lock);
		g_hash_table_insert(peers, g_steal_pointer(&key), c->lock);
	}
	g_mutex_unlock(&peers_lock);
	g_free(key);
	g_mutex_lock(c->lock);
	c->before = peer_sockets(peer);
	return c;
}

void smb_sock_connect_end(struct smb_connecting *c, struct smb_conn *conn)
{
	GArray *after;

	if (!c)
		return;
	if (conn) {
		after = peer_sockets(&c->peer);
		for (guint i = 0; i < after->len; i++) {
			struct smb_sock *s = &g_array_index(after, struct smb_sock, i);
			bool old = false;

			for (guint j = 0; j < c->before->len && !old; j++)
				old = g_array_index(c->before, struct smb_sock, j).ino == s->ino;
			if (old)
				continue;
			if (!conn->socks)
				conn->socks = g_array_new(FALSE, FALSE, sizeof(struct smb_sock));
			g_array_append_val(conn->socks, *s);
		}
		g_array_free(after, TRUE);
	}
	g_mutex_unlock(c->lock);
	g_array_free(c->before, TRUE);
	g_free(c);
}

/* From the thread that read the interrupt: make the context's pending call fail now. */
static void smb_sock_fire(void *arg)
{
	struct smb_conn *conn = arg;

	g_atomic_int_set(&conn->interrupted, 1);
	for (guint i = 0; conn->socks && i < conn->socks->len; i++) {
		struct smb_sock *s = &g_array_index(conn->socks, struct smb_sock, i);
		struct stat st;

		if (fstat(s->fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == s->ino)
			shutdown(s->fd, SHUT_RDWR);
	}
}

void smb_sock_watch(struct smb_conn *conn, bool on)
{
	if (host && host->interrupt_hook && conn->socks)
		host->interrupt_hook(on ? smb_sock_fire : NULL, on ? conn : NULL);
}

void smb_sock_free(struct smb_conn *conn)
{
	if (conn->socks)
		g_array_free(conn->socks, TRUE);
	conn->socks = NULL;
}
