/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_local_node.c - unit tests of the local backend's node descriptors as a cache: with a
 * small RLIMIT_NOFILE, thousands of nodes stay usable while the process holds no more
 * descriptors than the budget; a node whose descriptor was closed is reopened as the same
 * object (after a rename too), and a removed one says ESTALE; a pinned descriptor is never
 * closed under its user.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/local/local_node.h"

#define LIMIT 256 /* RLIMIT_NOFILE for the test: a budget of 192 cached descriptors */
#define BUDGET (LIMIT / 4 * 3)
#define NODES 3000

static char *dir;
static int dir_fd;

static int open_fds(void)
{
	GDir *d = g_dir_open("/proc/self/fd", 0, NULL);
	int n = 0;

	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

static ff_node *node_of(const char *name)
{
	int fd = openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(fstat(fd, &st), ==, 0);
	return local_node_new(fd, st.st_mode);
}

static ino_t ino_of_node(ff_node *node)
{
	struct stat st;
	int fd = local_node_pin(node);

	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), ==, 0);
	local_node_unpin(node);
	return st.st_ino;
}

static void test_many_nodes(void)
{
	ff_node **nodes = g_new(ff_node *, NODES);
	ino_t *inos = g_new(ino_t, NODES);
	char name[32];
	struct stat st;
	int base = open_fds();

	for (int i = 0; i < NODES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		g_assert_cmpint(close(openat(dir_fd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)),
				==, 0);
		g_assert_cmpint(fstatat(dir_fd, name, &st, 0), ==, 0);
		inos[i] = st.st_ino;
		nodes[i] = node_of(name);
	}
	/* Far fewer descriptors than nodes: the budget and one batch beyond it at most. */
	g_assert_cmpint(open_fds() - base, <=, BUDGET + BUDGET / 16 + 2);
	/* Every node is still its object, whichever were closed, in any order. */
	for (int i = NODES - 1; i >= 0; i -= 7)
		g_assert_cmpuint(ino_of_node(nodes[i]), ==, inos[i]);
	for (int i = 0; i < NODES; i++)
		g_assert_cmpuint(ino_of_node(nodes[i]), ==, inos[i]);
	g_assert_cmpint(open_fds() - base, <=, BUDGET + BUDGET / 16 + 2);

	/* A closed node follows its object through a rename (a handle names no path)... */
	g_assert_cmpint(renameat(dir_fd, "f0", dir_fd, "renamed"), ==, 0);
	for (int i = 1; i < NODES; i++) /* push f0's descriptor out */
		ino_of_node(nodes[i]);
	g_assert_cmpuint(ino_of_node(nodes[0]), ==, inos[0]);
	/* ...and once its object is removed, says so instead of naming another. */
	g_assert_cmpint(unlinkat(dir_fd, "f1", 0), ==, 0);
	for (int i = 2; i < NODES; i++)
		ino_of_node(nodes[i]);
	g_assert_cmpint(local_node_pin(nodes[1]), ==, -ESTALE);

	for (int i = 0; i < NODES; i++)
		local_node_free(nodes[i]);
	g_assert_cmpint(open_fds(), <=, base);
	g_free(nodes);
	g_free(inos);
}

static void test_pinned_stays_open(void)
{
	ff_node *held = node_of("held");
	int fd = local_node_pin(held);
	struct stat before, after;

	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(fstat(fd, &before), ==, 0);
	for (int i = 0; i < 4 * LIMIT; i++) {
		char name[32];
		ff_node *n;

		snprintf(name, sizeof(name), "p%d", i);
		g_assert_cmpint(close(openat(dir_fd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)),
				==, 0);
		n = node_of(name);
		ino_of_node(n);
		local_node_free(n);
		n = node_of(name); /* new nodes push the others out */
		local_node_free(n);
	}
	/* Through all that, the pinned descriptor was neither closed nor reused. */
	g_assert_cmpint(fstat(fd, &after), ==, 0);
	g_assert_cmpuint(after.st_ino, ==, before.st_ino);
	g_assert_cmpint(local_node_pin(held), ==, fd);
	local_node_unpin(held);
	local_node_unpin(held);
	local_node_free(held);
}

int main(int argc, char **argv)
{
	struct rlimit rl = { LIMIT, LIMIT };
	int root, rc;

	g_test_init(&argc, &argv, NULL);
	if (geteuid() != 0) {
		g_test_skip("needs root: reopening by file handle takes CAP_DAC_READ_SEARCH");
		return g_test_run();
	}
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && getenv("LD_PRELOAD") &&
	    strstr(getenv("LD_PRELOAD"), "vgpreload")) {
		/* valgrind keeps descriptors of its own above the limit it lets a program set */
		g_test_skip("valgrind does not let the test lower RLIMIT_NOFILE");
		return g_test_run();
	}
	g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &rl), ==, 0);
	dir = g_dir_make_tmp("local-node-XXXXXX", NULL);
	g_assert_nonnull(dir);
	dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	g_assert_cmpint(close(openat(dir_fd, "held", O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), ==, 0);
	local_nodes_init(root);
	close(root);
	g_test_add_func("/local-node/many-nodes", test_many_nodes);
	g_test_add_func("/local-node/pinned-stays-open", test_pinned_stays_open);
	rc = g_test_run();
	{
		g_autofree char *rm = g_strdup_printf("rm -rf '%s'", dir);

		g_assert_cmpint(system(rm), ==, 0);
	}
	g_free(dir);
	return rc;
}
