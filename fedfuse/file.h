/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * file.h - open files: the FUSE handlers from open to release, and what the rest of the glue
 * needs of an open file.
 */
#ifndef FEDFUSE_FILE_H
#define FEDFUSE_FILE_H

#include "fedfuse/request.h"

#define FF_MAX_IO (1024 * 1024) /* the largest read or write request */

/* An open file. Control files carry their text instead of a backend handle. */
struct ff_file {
	struct ff_mount *mnt;
	struct ff_inode *inode;
	ff_fh *fh;
	int fd;		/* kernel descriptor for splicing, or -1 */
	int flock_fd;	/* the description its flock()s are taken on, or -1 (lock.h) */
	int flock_held; /* LOCK_SH, LOCK_EX or 0: what that holds, where the server keeps it too */
	bool wrote;
	bool flushed; /* FLUSH came (close(2)) and nothing since: RELEASE is on its way */
	char *text;
	size_t len;
};

static inline struct ff_file *ff_file_of(struct fuse_file_info *fi)
{
	return (struct ff_file *)(uintptr_t)fi->fh;
}

/* Open files stay on their location; while it is down they fail with EIO. */
static inline int ff_file_usable(struct ff_file *f)
{
	return ff_mount_usable(f->mnt) < 0 ? -EIO : 0;
}

/* The file is used again after a FLUSH (a descriptor dup'd before the close). */
void ff_file_used(struct ff_file *f);
/* Were all files open on `inode` closed by their programs (FLUSH, no use since), their
 * RELEASE on its way or running (a file being released is no longer in s->handles)? */
bool ff_files_closing(struct ff_state *s, struct ff_inode *inode);
/* Last close: the backend handle, the inode's open count, a hidden name. */
void ff_file_release(struct ff_state *s, struct ff_file *f);

void ff_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ff_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi);
void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void ff_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
		  struct fuse_file_info *fi);
void ff_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ff_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void ff_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ff_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock);
void ff_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
	      int sleep);
void ff_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op);
void ff_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		  struct fuse_file_info *fi);
void ff_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);
void ff_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			struct fuse_file_info *fi_out, size_t len, int flags);

#endif /* FEDFUSE_FILE_H */
