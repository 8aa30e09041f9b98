/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * servers_env.h - where the unit tests that talk to the test servers (scripts/test-servers)
 * find them: the servers.env of FEDFUSE_TEST_STATE (default /tmp/fedfuse-servers).
 */
#ifndef FEDFUSE_TEST_SERVERS_ENV_H
#define FEDFUSE_TEST_SERVERS_ENV_H

/* The value of `key` in servers.env (g_free it), or NULL when the servers give none. */
char *servers_env(const char *key);

#endif /* FEDFUSE_TEST_SERVERS_ENV_H */
