/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_dir.c - open directories of the file:// backend: opendir reopens the node itself for
 * reading, readdir hands out the stream's entries with the filesystem's own offsets.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "backends/local/local.h"

int local_opendir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh **dh)
{
	char proc[PROC_FD_LEN];
	struct local_dir *d;
	DIR *dp;
	int fd, rc;

	rc = local_pin_by_proc(cred, node, &fd, proc);
	if (rc)
		return rc;
	/* A readable descriptor of the node itself, read permission checked as the caller;
	 * ENOTDIR for anything but a directory. Not openat(fd, "."), which also wants search
	 * permission on the directory: `ls` of an r-- directory works natively. */
	fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && local_out_of_fds())
		fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = -errno;
	local_node_unpin(node);
	if (fd < 0)
		return rc;
	dp = fdopendir(fd);
	if (!dp) {
		rc = -errno;
		goto out_close;
	}

	d = g_new0(struct local_dir, 1);
	g_mutex_init(&d->lock);
	d->fd = fd;
	d->dp = dp;
	d->pos = 0;
	*dh = (ff_dh *)d;
	return 0;

out_close:
	close(fd);
	return rc;
}

int local_readdir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
		  bool plus, ff_fill_fn fill, void *buf)
{
	struct local_dir *d = (struct local_dir *)dh;
	int rc;

	rc = local_become(cred);
	if (rc)
		return rc;

	g_mutex_lock(&d->lock);
	/* Anywhere but where the stream stands (a restart, a seek, a resumption after an entry
	 * the last call could not hand out and that the kernel asks for again), seek: offsets are
	 * the filesystem's own cookies (d_off). */
	if (off != d->pos) {
		if (off == 0)
			rewinddir(d->dp);
		else
			seekdir(d->dp, off);
		d->pos = off;
		d->pending = NULL;
	}

	for (;;) {
		struct dirent *de = d->pending;
		ff_node *child = NULL;
		struct stat st;

		if (!de) {
			errno = 0;
			de = readdir(d->dp);
			if (!de) {
				rc = -errno; /* 0 at the end */
				break;
			}
			d->pending = de;
		}

		if (local_is_dot_or_dotdot(de->d_name))
			goto next;

		/* A file's attributes cost one call, its node two more (open, and close when the
		 * core has the file already): a file goes by name first, with a node only when
		 * the core asks for one. Its descriptor keeps an object the core holds from
		 * giving its (st_dev, st_ino) to another. */
		rc = FF_FILL_WANT_NODE;
		if (plus && de->d_type == DT_REG &&
		    fstatat(d->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			rc = fill(buf, de->d_name, &st, de->d_off, NULL, true);
		if (rc == FF_FILL_WANT_NODE) {
			if (plus && local_node_at(d->fd, de->d_name, &child, &st) == -ENOENT)
				goto next; /* removed since it was listed */
			if (!child) {
				/* Plain mode, or a plus entry that cannot be looked up (no search
				 * permission on the directory, out of descriptors...): the name
				 * without a node, as getdents gives it; a lookup will report why. */
				memset(&st, 0, sizeof(st));
				st.st_ino = de->d_ino;
				st.st_mode = DTTOIF(de->d_type); /* 0 for DT_UNKNOWN */
			} else {
				local_give(loc, child, &st);
			}
			rc = fill(buf, de->d_name, &st, de->d_off, child, false); /* takes child */
		}
		if (rc == FF_FILL_FULL) {
			rc = 0; /* full: the entry stays pending, at d->pos */
			break;
		}
		if (rc < 0)
			break;
next:
		d->pending = NULL;
		d->pos = de->d_off;
	}
	g_mutex_unlock(&d->lock);
	return rc;
}

int local_releasedir(void *loc, ff_dh *dh)
{
	struct local_dir *d = (struct local_dir *)dh;
	int rc = closedir(d->dp) < 0 ? -errno : 0;

	g_mutex_clear(&d->lock);
	g_free(d);
	return rc;
}

int local_fsyncdir(void *loc, ff_dh *dh, int datasync)
{
	struct local_dir *d = (struct local_dir *)dh;
	int rc = datasync ? fdatasync(d->fd) : fsync(d->fd);

	return rc < 0 ? -errno : 0;
}
