/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * xattr.h - extended attributes through the mount: the backend's, less the junction values,
 * plus the read-only user.fedfuse.location of every object.
 */
#ifndef FEDFUSE_XATTR_H
#define FEDFUSE_XATTR_H

#include "fedfuse/request.h"

void ff_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		 int flags);
void ff_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void ff_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void ff_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif /* FEDFUSE_XATTR_H */
