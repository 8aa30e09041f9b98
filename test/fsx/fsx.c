// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fsx - a file system exerciser: random reads, writes, truncates, mmap reads and writes,
 * O_DIRECT reads and writes, fallocates, copy_file_range calls, SEEK_DATA/SEEK_HOLE, syncs and reopens on
 * ONE file, every result checked against an in-memory model of the file's bytes and size.
 * fedfuse's CI runs it on every backend (DESIGN §9); scripts/soak runs it for longer.
 * Deterministic for a seed, on any machine.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef FALLOC_FL_KEEP_SIZE
#include <linux/falloc.h>
#endif

#define HISTORY 40 /* operations shown after a failure */
#define ALIGN 4096 /* for "aligned" offsets and lengths; fixed, so seeds replay anywhere */
#define HEX_ROWS 4 /* rows of 16 bytes in the dump around the first bad byte */

/* ---- the random number generator ------------------------------------------------------------ */

/* splitmix64: a 64-bit state advanced by a constant and mixed; fully portable. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- operations ----------------------------------------------------------------------------- */

enum kind {
	OP_READ,
	OP_WRITE,
	OP_MAPREAD,
	OP_MAPWRITE,
	OP_DREAD,
	OP_DWRITE,
	OP_TRUNCATE,
	OP_FALLOCATE,
	OP_COPY,
	OP_SYNC,
	OP_REOPEN,
	OP_SEEK,
	OP_CHECK,
	NKINDS
};

struct kind_info {
	const char *name;
	unsigned int weight; /* out of the sum of all weights; OP_CHECK is periodic, weight 0 */
	char flag;	     /* the option that disables it */
	bool off;	     /* disabled by option or by detection */
	unsigned long done;
};

static struct kind_info kinds[NKINDS] = {
	[OP_READ] = { .name = "read", .weight = 16 },
	[OP_WRITE] = { .name = "write", .weight = 20 },
	[OP_MAPREAD] = { .name = "mapread", .weight = 8, .flag = 'R' },
	[OP_MAPWRITE] = { .name = "mapwrite", .weight = 10, .flag = 'W' },
	[OP_DREAD] = { .name = "dread", .weight = 6, .flag = 'D' },
	[OP_DWRITE] = { .name = "dwrite", .weight = 6, .flag = 'X' },
	[OP_TRUNCATE] = { .name = "truncate", .weight = 8, .flag = 'T' },
	[OP_FALLOCATE] = { .name = "fallocate", .weight = 12, .flag = 'F' },
	[OP_COPY] = { .name = "copy", .weight = 10, .flag = 'C' },
	[OP_SYNC] = { .name = "fsync", .weight = 4, .flag = 'Y' },
	[OP_REOPEN] = { .name = "reopen", .weight = 4, .flag = 'O' },
	[OP_SEEK] = { .name = "seek", .weight = 4, .flag = 'E' },
	[OP_CHECK] = { .name = "check", .weight = 0 },
};

/* fallocate modes, each detected at start. */
enum { FA_PLAIN, FA_KEEP, FA_PUNCH, FA_ZERO, FA_ZERO_KEEP, NFA };
static const struct {
	const char *name;
	int mode;
} fa_modes[NFA] = {
	[FA_PLAIN] = { "plain", 0 },
	[FA_KEEP] = { "keep_size", FALLOC_FL_KEEP_SIZE },
	[FA_PUNCH] = { "punch_hole", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE },
	[FA_ZERO] = { "zero_range", FALLOC_FL_ZERO_RANGE },
	[FA_ZERO_KEEP] = { "zero_keep", FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE },
};
static bool fa_ok[NFA];

enum { CP_WITHIN, CP_FROM_SCRATCH, CP_TO_SCRATCH, NCP };
static const char *const cp_names[NCP] = { "within", "from_scratch", "to_scratch" };

struct op {
	unsigned long num; /* 1-based */
	enum kind kind;
	int sub;	/* fallocate mode, copy direction; 1: fdatasync, truncate(2) by path,
			 * mapwrite without msync, reopen with O_TRUNC */
	off_t off, len; /* the range the operation touches (in the file, or its source) */
	off_t off2;	/* copy: the destination offset */
	off_t size0;	/* model size before */
	off_t size1;	/* model size after */
	bool fallback;	/* drawn as a disabled kind, done as a read */
	bool precheck;	/* read-check the bytes it destroys before destroying them */
};

/* ---- state ---------------------------------------------------------------------------------- */

struct model {
	const char *path;
	int fd;
	uint8_t *good; /* expected bytes; bytes at and past `size` are zero */
	off_t size;
};

static struct model file, scratch;
static uint8_t *buf;	 /* what was read */
static uint8_t *pattern; /* what is written */
static off_t maxlen = 256 * 1024, maxoplen = 64 * 1024;
static unsigned long nops = 10000, check_every = 100;
static uint64_t seed = 1;
static bool quiet, verbose;
static long pagesize;
static int saved_argc;
static char **saved_argv;

static struct op history[HISTORY];
static unsigned long nhistory;
static struct op *cur; /* the operation being done, NULL during setup */

static sigjmp_buf sigbus_jmp;
static volatile sig_atomic_t in_mapping;

static uint8_t *dbuf;	    /* aligned buffer for O_DIRECT reads */
static bool dread_aligned;  /* O_DIRECT here needs offsets and lengths aligned to ALIGN */
static bool dwrite_aligned; /* the same for O_DIRECT writes */

/* ---- reporting ------------------------------------------------------------------------------ */

/* The data operation `num` writes: never zero (so a hole shows), different from the 254 ops
 * before and after it at every position, and different from its neighbour bytes. */
static uint8_t pat_byte(unsigned long num, off_t pos)
{
	return 1 + (uint8_t)(((uint64_t)pos % 251 + (uint64_t)num * 7) % 255);
}

static void describe(const struct op *o, char *s, size_t n)
{
	int k = 0;

	switch (o->kind) {
	case OP_READ:
	case OP_WRITE:
	case OP_MAPREAD:
	case OP_DREAD:
	case OP_DWRITE:
		k = snprintf(s, n, "0x%jx thru 0x%jx (0x%jx bytes)", (intmax_t)o->off,
			     (intmax_t)(o->off + o->len - 1), (intmax_t)o->len);
		break;
	case OP_MAPWRITE:
		k = snprintf(s, n, "0x%jx thru 0x%jx (0x%jx bytes)%s", (intmax_t)o->off,
			     (intmax_t)(o->off + o->len - 1), (intmax_t)o->len,
			     o->sub ? ", no msync" : "");
		break;
	case OP_TRUNCATE:
		k = snprintf(s, n, "%s from 0x%jx to 0x%jx", o->sub ? "truncate(2)" : "ftruncate",
			     (intmax_t)o->size0, (intmax_t)o->off);
		break;
	case OP_SEEK:
		k = snprintf(s, n, "SEEK_DATA/SEEK_HOLE from 0x%jx", (intmax_t)o->off);
		break;
	case OP_FALLOCATE:
		k = snprintf(s, n, "%s 0x%jx thru 0x%jx (0x%jx bytes)", fa_modes[o->sub].name,
			     (intmax_t)o->off, (intmax_t)(o->off + o->len - 1), (intmax_t)o->len);
		break;
	case OP_COPY:
		k = snprintf(s, n, "%s 0x%jx thru 0x%jx to 0x%jx (0x%jx bytes)", cp_names[o->sub],
			     (intmax_t)o->off, (intmax_t)(o->off + o->len - 1), (intmax_t)o->off2,
			     (intmax_t)o->len);
		break;
	case OP_SYNC:
		k = snprintf(s, n, "%s", o->sub ? "fdatasync" : "fsync");
		break;
	case OP_REOPEN:
		k = snprintf(s, n, "%ssize 0x%jx", o->sub ? "with O_TRUNC, " : "",
			     (intmax_t)o->size0);
		break;
	case OP_CHECK:
	case NKINDS:
		k = snprintf(s, n, "size 0x%jx", (intmax_t)o->size0);
		break;
	}
	if (k >= 0 && (size_t)k < n && o->size1 != o->size0 && o->kind != OP_TRUNCATE)
		snprintf(s + k, n - k, ", size 0x%jx -> 0x%jx", (intmax_t)o->size0,
			 (intmax_t)o->size1);
}

static void print_op(FILE *out, const char *prefix, const struct op *o)
{
	char d[160];

	describe(o, d, sizeof(d));
	fprintf(out, "%s%7lu %-9s %s%s\n", prefix, o->num, kinds[o->kind].name, d,
		o->fallback ? " (in place of a disabled kind)" : "");
}

static void print_history(void)
{
	unsigned long first = nhistory > HISTORY ? nhistory - HISTORY : 0;

	fprintf(stderr, "fsx: the last %lu operations (oldest first):\n", nhistory - first);
	for (unsigned long i = first; i < nhistory; i++) {
		const struct op *o = &history[i % HISTORY];

		print_op(stderr, o == cur ? "fsx: >" : "fsx:  ", o);
	}
}

static void print_rerun(void)
{
	fprintf(stderr, "fsx: rerun with:");
	for (int i = 0; i < saved_argc; i++)
		fprintf(stderr, " %s", saved_argv[i]);
	fprintf(stderr, "\n");
}

/* Write the model next to the file (FILE.fsxgood), for cmp(1) against the real one. */
static void save_model(void)
{
	char *p;
	int fd;

	if (asprintf(&p, "%s.fsxgood", file.path) < 0)
		return;
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, file.good, file.size) == file.size)
			fprintf(stderr, "fsx: expected contents saved in %s\n", p);
		close(fd);
	}
	free(p);
}

static void __attribute__((noreturn)) fail_end(void)
{
	if (nhistory)
		print_history();
	print_rerun();
	save_model();
	exit(1);
}

static void __attribute__((format(printf, 1, 2))) fail_head(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "fsx: FAILED: %s, seed %" PRIu64, file.path, seed);
	if (cur) {
		fprintf(stderr, ", operation %lu\n", cur->num);
		print_op(stderr, "fsx:  ", cur);
	} else {
		fprintf(stderr, ", during setup\n");
	}
	fprintf(stderr, "fsx: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

/* A system call failed: say which, on which file, with which errno. */
static void __attribute__((noreturn)) fail_sys(const char *call, const struct model *m)
{
	int e = errno;

	fail_head("%s on %s failed: %s (errno %d, %s)", call, m->path, strerror(e), e,
		  strerrorname_np(e) ? strerrorname_np(e) : "?");
	fail_end();
}

/* Which of the recent writes left byte `b` at `pos`, if one did: names the culprit of a stale
 * or misplaced write. */
static void guess_origin(off_t pos, uint8_t b)
{
	unsigned long first = nhistory > HISTORY ? nhistory - HISTORY : 0;

	if (b == 0) {
		fprintf(stderr, "fsx: the bad byte is zero: a hole or a lost write?\n");
		return;
	}
	for (unsigned long i = nhistory; i-- > first;) {
		const struct op *o = &history[i % HISTORY];

		if ((o->kind == OP_WRITE || o->kind == OP_MAPWRITE) && !o->fallback &&
		    pos >= o->off && pos < o->off + o->len && pat_byte(o->num, pos) == b) {
			fprintf(stderr,
				"fsx: the bad byte is what operation %lu (%s) wrote there\n",
				o->num, kinds[o->kind].name);
			return;
		}
	}
	fprintf(stderr, "fsx: 0x%02x is not what any of the last %d operations wrote there\n", b,
		HISTORY);
}

static void hex_row(const uint8_t *p, size_t from, size_t to, size_t len, const uint8_t *other)
{
	for (size_t i = from; i < to; i++) {
		if (i < len)
			fprintf(stderr, "%02x%c", p[i], p[i] != other[i] ? '*' : ' ');
		else
			fprintf(stderr, "   ");
	}
}

/* `got` (read from m at `off`) differs from what the model expects: report and exit. */
static void __attribute__((noreturn))
fail_data(const char *how, const struct model *m, off_t off, const uint8_t *got, size_t len)
{
	const uint8_t *exp = m->good + off;
	size_t first = 0, last = 0, nbad = 0;
	size_t row;

	for (size_t i = 0; i < len; i++) {
		if (exp[i] != got[i]) {
			if (!nbad)
				first = i;
			last = i;
			nbad++;
		}
	}
	fail_head("%s: %s: %zu bad byte(s) between 0x%jx and 0x%jx (model size 0x%jx)", how,
		  m->path, nbad, (intmax_t)(off + first), (intmax_t)(off + last),
		  (intmax_t)m->size);
	fprintf(stderr, "fsx: first bad byte at 0x%jx: expected 0x%02x, got 0x%02x\n",
		(intmax_t)(off + first), exp[first], got[first]);
	fprintf(stderr, "fsx: %-10s %-48s  %s\n", "offset", "expected", "got (* differs)");
	row = first & ~(size_t)15;
	row = row >= 16 ? row - 16 : 0;
	for (int r = 0; r < HEX_ROWS && row < len; r++, row += 16) {
		fprintf(stderr, "fsx: 0x%08jx ", (intmax_t)(off + row));
		hex_row(exp, row, row + 16, len, exp);
		fprintf(stderr, " ");
		hex_row(got, row, row + 16, len, exp);
		fprintf(stderr, "\n");
	}
	if (m == &file)
		guess_origin(off + first, got[first]);
	fail_end();
}

/* ---- helpers that check as they go ---------------------------------------------------------- */

static void fill_pattern(unsigned long num, off_t off, off_t len)
{
	for (off_t i = 0; i < len; i++)
		pattern[i] = pat_byte(num, off + i);
}

static void check_size(const struct model *m, const char *after)
{
	struct stat st;

	if (fstat(m->fd, &st) < 0)
		fail_sys("fstat", m);
	if (st.st_size != m->size) {
		fail_head("size of %s is 0x%jx after %s, the model says 0x%jx", m->path,
			  (intmax_t)st.st_size, after, (intmax_t)m->size);
		fail_end();
	}
}

/* pread exactly what the model says is there (fewer bytes at EOF) and compare. */
static void read_check(const struct model *m, off_t off, off_t len, const char *how)
{
	off_t want = off >= m->size ? 0 : (off + len > m->size ? m->size - off : len);
	ssize_t n = pread(m->fd, buf, len, off);

	if (n < 0)
		fail_sys("pread", m);
	if (n != want) {
		fail_head("%s of %s: pread of 0x%jx bytes at 0x%jx returned 0x%zx, expected 0x%jx "
			  "(model size 0x%jx)",
			  how, m->path, (intmax_t)len, (intmax_t)off, (size_t)n, (intmax_t)want,
			  (intmax_t)m->size);
		if (n > want && m == &file && off + n <= maxlen)
			fprintf(stderr, "fsx: the file seems longer than the model\n");
		fail_end();
	}
	if (memcmp(buf, m->good + off, n))
		fail_data(how, m, off, buf, n);
}

static void pwrite_all(const struct model *m, const void *p, off_t len, off_t off)
{
	ssize_t n = pwrite(m->fd, p, len, off);

	if (n < 0)
		fail_sys("pwrite", m);
	if (n != len) {
		fail_head("short pwrite on %s: 0x%zx of 0x%jx bytes at 0x%jx", m->path, (size_t)n,
			  (intmax_t)len, (intmax_t)off);
		fail_end();
	}
}

static void model_set_size(struct model *m, off_t size)
{
	if (size < m->size)
		memset(m->good + size, 0, m->size - size);
	m->size = size;
}

static void model_zero(struct model *m, off_t off, off_t len)
{
	if (off < m->size)
		memset(m->good + off, 0, (off + len > m->size ? m->size : off + len) - off);
}

static void full_check(const char *why)
{
	check_size(&file, why);
	read_check(&file, 0, file.size, why);
}

static void open_file(struct model *m, int flags)
{
	m->fd = open(m->path, O_RDWR | flags, 0644);
	if (m->fd < 0)
		fail_sys("open", m);
}

/* ---- the operations ------------------------------------------------------------------------- */

static void sigbus(int sig)
{
	(void)sig;
	if (in_mapping)
		siglongjmp(sigbus_jmp, 1);
	signal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

static uint8_t *map_file(off_t pg, off_t maplen, int prot)
{
	void *p = mmap(NULL, maplen, prot, MAP_SHARED, file.fd, pg);

	if (p == MAP_FAILED)
		fail_sys("mmap", &file);
	return p;
}

/* Reached through siglongjmp when touching a mapping raised SIGBUS (the file is shorter than
 * the model thinks, or the daemon failed a page read). */
static void __attribute__((noreturn)) map_fault(off_t pg, off_t maplen)
{
	in_mapping = 0;
	fail_head("SIGBUS touching the mapping of %s (0x%jx bytes at 0x%jx)", file.path,
		  (intmax_t)maplen, (intmax_t)pg);
	fail_end();
}

static void unmap_file(uint8_t *p, off_t maplen)
{
	in_mapping = 0;
	if (munmap(p, maplen) < 0)
		fail_sys("munmap", &file);
}

static void do_mapread(struct op *o)
{
	off_t pg = o->off & ~(off_t)(pagesize - 1);
	off_t maplen = o->off + o->len - pg;
	uint8_t *p = map_file(pg, maplen, PROT_READ);

	if (sigsetjmp(sigbus_jmp, 1))
		map_fault(pg, maplen);
	in_mapping = 1;
	memcpy(buf, p + (o->off - pg), o->len);
	unmap_file(p, maplen);
	if (memcmp(buf, file.good + o->off, o->len))
		fail_data("mapread", &file, o->off, buf, o->len);
}

static void do_mapwrite(struct op *o)
{
	off_t pg = o->off & ~(off_t)(pagesize - 1);
	off_t maplen = o->off + o->len - pg;
	uint8_t *p;

	if (o->off + o->len > file.size) {
		/* A mapping cannot extend the file: make room first, as programs do. */
		if (ftruncate(file.fd, o->off + o->len) < 0)
			fail_sys("ftruncate (to extend for mapwrite)", &file);
		model_set_size(&file, o->off + o->len);
	}
	fill_pattern(o->num, o->off, o->len);
	p = map_file(pg, maplen, PROT_READ | PROT_WRITE);
	if (sigsetjmp(sigbus_jmp, 1))
		map_fault(pg, maplen);
	in_mapping = 1;
	memcpy(p + (o->off - pg), pattern, o->len);
	memcpy(file.good + o->off, pattern, o->len);
	if (!o->sub && msync(p, maplen, MS_SYNC) < 0)
		fail_sys("msync", &file);
	unmap_file(p, maplen);
	read_check(&file, o->off, o->len,
		   o->sub ? "pread after mapwrite and munmap" : "pread after mapwrite and msync");
}

/* A read that bypasses the page cache: through FUSE, it asks the daemon, so it sees what the
 * backend holds, not what the kernel cached. */
static void do_dread(struct op *o)
{
	off_t want = o->off >= file.size
			     ? 0
			     : (o->off + o->len > file.size ? file.size - o->off : o->len);
	int fd = open(file.path, O_RDONLY | O_DIRECT);
	ssize_t n;

	if (fd < 0)
		fail_sys("open O_DIRECT", &file);
	n = pread(fd, dbuf, o->len, o->off);
	if (n < 0)
		fail_sys("pread O_DIRECT", &file);
	close(fd);
	if (n != want) {
		fail_head("O_DIRECT pread of 0x%jx bytes at 0x%jx returned 0x%zx, expected 0x%jx "
			  "(model size 0x%jx)",
			  (intmax_t)o->len, (intmax_t)o->off, (size_t)n, (intmax_t)want,
			  (intmax_t)file.size);
		fail_end();
	}
	if (memcmp(dbuf, file.good + o->off, n))
		fail_data("O_DIRECT read", &file, o->off, dbuf, n);
}

/* A write that bypasses the page cache, through a descriptor of its own: on return the data is
 * in the file (a later read of any kind sees it). */
static void do_dwrite(struct op *o)
{
	int fd = open(file.path, O_WRONLY | O_DIRECT);
	ssize_t n;

	if (fd < 0)
		fail_sys("open O_DIRECT for writing", &file);
	fill_pattern(o->num, o->off, o->len);
	memcpy(dbuf, pattern, o->len);
	n = pwrite(fd, dbuf, o->len, o->off);
	if (n < 0)
		fail_sys("pwrite O_DIRECT", &file);
	if (close(fd) < 0)
		fail_sys("close after pwrite O_DIRECT", &file);
	if (n != o->len) {
		fail_head("O_DIRECT pwrite of 0x%jx bytes at 0x%jx wrote 0x%zx", (intmax_t)o->len,
			  (intmax_t)o->off, (size_t)n);
		fail_end();
	}
	memcpy(file.good + o->off, pattern, o->len);
	if (o->off + o->len > file.size)
		file.size = o->off + o->len;
}

/* SEEK_DATA and SEEK_HOLE may report zeros as data (a file system need not keep holes), but a
 * byte the model says is not zero must never be inside a hole, and both stay within the size. */
static void do_seek(struct op *o)
{
	off_t from = o->off, data, hole;

	data = lseek(file.fd, from, SEEK_DATA);
	if (data < 0 && errno != ENXIO)
		fail_sys("lseek SEEK_DATA", &file);
	if (data < 0)
		data = file.size; /* no data from here: all the rest is a hole */
	if (data < from || data > file.size) {
		fail_head("lseek(0x%jx, SEEK_DATA) = 0x%jx, outside 0x%jx..size 0x%jx",
			  (intmax_t)from, (intmax_t)data, (intmax_t)from, (intmax_t)file.size);
		fail_end();
	}
	for (off_t i = from; i < data; i++) {
		if (file.good[i]) {
			fail_head("lseek(0x%jx, SEEK_DATA) = 0x%jx skips data at 0x%jx (0x%02x)",
				  (intmax_t)from, (intmax_t)data, (intmax_t)i, file.good[i]);
			fail_end();
		}
	}
	if (from >= file.size)
		return;
	hole = lseek(file.fd, from, SEEK_HOLE);
	if (hole < 0)
		fail_sys("lseek SEEK_HOLE", &file);
	if (hole < from || hole > file.size) {
		fail_head("lseek(0x%jx, SEEK_HOLE) = 0x%jx, outside 0x%jx..size 0x%jx",
			  (intmax_t)from, (intmax_t)hole, (intmax_t)from, (intmax_t)file.size);
		fail_end();
	}
	if (hole == from && file.good[from]) {
		fail_head("lseek(0x%jx, SEEK_HOLE) = 0x%jx, but there is data (0x%02x)",
			  (intmax_t)from, (intmax_t)hole, file.good[from]);
		fail_end();
	}
	o->off2 = hole;
}

static void do_fallocate(struct op *o)
{
	int mode = fa_modes[o->sub].mode;
	off_t end = o->off + o->len;

	if (fallocate(file.fd, mode, o->off, o->len) < 0)
		fail_sys("fallocate", &file);
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		model_zero(&file, o->off, o->len);
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > file.size)
		model_set_size(&file, end);
}

/* copy_file_range until `len` bytes moved; a short count is fine, no progress is not. */
static void copy_all(struct model *from, off_t off_in, struct model *to, off_t off_out, off_t len)
{
	loff_t in = off_in, out = off_out;

	while (len > 0) {
		ssize_t n = copy_file_range(from->fd, &in, to->fd, &out, len, 0);

		if (n < 0)
			fail_sys("copy_file_range", to);
		if (n == 0) {
			fail_head("copy_file_range from %s at 0x%jx to %s at 0x%jx copied nothing "
				  "with 0x%jx bytes left (source size per model 0x%jx)",
				  from->path, (intmax_t)in, to->path, (intmax_t)out, (intmax_t)len,
				  (intmax_t)from->size);
			fail_end();
		}
		len -= n;
	}
	memmove(to->good + off_out, from->good + off_in, out - off_out);
	if (out > to->size)
		to->size = out;
}

static void do_copy(struct op *o)
{
	switch (o->sub) {
	case CP_WITHIN:
		copy_all(&file, o->off, &file, o->off2, o->len);
		break;
	case CP_FROM_SCRATCH:
		copy_all(&scratch, o->off, &file, o->off2, o->len);
		break;
	case CP_TO_SCRATCH:
		copy_all(&file, o->off, &scratch, o->off2, o->len);
		read_check(&scratch, o->off2, o->len, "pread of the copy's destination");
		break;
	}
}

/* Bytes about to be overwritten, zeroed or cut off cannot be checked later: check them now
 * (most of the time, not always: a write into uncached pages takes another path). */
static void precheck(const struct op *o)
{
	const char *how = "pre-check of the bytes the operation overwrites";

	switch (o->kind) {
	case OP_WRITE:
	case OP_MAPWRITE:
	case OP_DWRITE:
		read_check(&file, o->off, o->len, how);
		break;
	case OP_TRUNCATE:
		if (o->off < file.size)
			read_check(&file, o->off, file.size - o->off, how);
		break;
	case OP_FALLOCATE:
		if (fa_modes[o->sub].mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
			read_check(&file, o->off, o->len, how);
		break;
	case OP_COPY:
		if (o->sub != CP_TO_SCRATCH)
			read_check(&file, o->off2, o->len, how);
		break;
	case OP_REOPEN:
		if (o->sub)
			read_check(&file, 0, file.size, how);
		break;
	default:
		break;
	}
}

static void do_op(struct op *o)
{
	if (o->precheck)
		precheck(o);
	switch (o->kind) {
	case OP_READ:
		read_check(&file, o->off, o->len, "read");
		break;
	case OP_WRITE:
		fill_pattern(o->num, o->off, o->len);
		pwrite_all(&file, pattern, o->len, o->off);
		memcpy(file.good + o->off, pattern, o->len);
		if (o->off + o->len > file.size)
			file.size = o->off + o->len;
		break;
	case OP_MAPREAD:
		do_mapread(o);
		break;
	case OP_MAPWRITE:
		do_mapwrite(o);
		break;
	case OP_DREAD:
		do_dread(o);
		break;
	case OP_DWRITE:
		do_dwrite(o);
		break;
	case OP_TRUNCATE:
		if ((o->sub ? truncate(file.path, o->off) : ftruncate(file.fd, o->off)) < 0)
			fail_sys(o->sub ? "truncate" : "ftruncate", &file);
		model_set_size(&file, o->off);
		break;
	case OP_FALLOCATE:
		do_fallocate(o);
		break;
	case OP_COPY:
		do_copy(o);
		break;
	case OP_SYNC:
		if ((o->sub ? fdatasync(file.fd) : fsync(file.fd)) < 0)
			fail_sys(o->sub ? "fdatasync" : "fsync", &file);
		break;
	case OP_REOPEN:
		if (close(file.fd) < 0)
			fail_sys("close", &file);
		open_file(&file, o->sub ? O_TRUNC : 0);
		if (o->sub)
			model_set_size(&file, 0);
		full_check("reopen");
		break;
	case OP_SEEK:
		do_seek(o);
		break;
	case OP_CHECK:
		full_check("check");
		break;
	case NKINDS:
		break;
	}
}

/* ---- choosing operations -------------------------------------------------------------------- */

/* A length in 1..max: mostly uniform, sometimes tiny, sometimes a multiple of ALIGN. */
static off_t pick_len(uint64_t r, unsigned int shape, off_t max)
{
	off_t len;

	if (max <= 0)
		return 0;
	switch (shape & 7) {
	case 0:
		len = 1 + (off_t)(r % 16);
		break;
	case 1:
		len = ALIGN * (1 + (off_t)(r % (uint64_t)(maxoplen / ALIGN + 1)));
		break;
	default:
		len = 1 + (off_t)(r % (uint64_t)maxoplen);
		break;
	}
	return len > max ? max : len;
}

/* An offset in 0..limit-1 (limit > 0), aligned to ALIGN for shape 1. */
static off_t pick_off(uint64_t r, unsigned int shape, off_t limit)
{
	off_t off = (off_t)(r % (uint64_t)limit);

	if ((shape & 7) == 1)
		off &= ~(off_t)(ALIGN - 1);
	return off;
}

static enum kind pick_kind(uint64_t r)
{
	unsigned int total = 0, k;

	for (k = 0; k < NKINDS; k++)
		total += kinds[k].weight;
	r %= total;
	for (k = 0; r >= kinds[k].weight; k++)
		r -= kinds[k].weight;
	return k;
}

/* Fill o from four random numbers, always four, so that the stream stays aligned with the
 * operation number whatever was disabled. Returns false for a kind that cannot be done now. */
static bool plan(struct op *o, const uint64_t r[4])
{
	unsigned int shape = (unsigned int)(r[3] >> 8), sub = (unsigned int)(r[0] >> 32);
	off_t size = file.size, len;

	o->off = o->len = o->off2 = 0;
	o->sub = 0;
	switch (o->kind) {
	case OP_READ:
		/* Mostly inside the file, one in sixteen at or past EOF. */
		if (size == 0 || (r[3] & 15) == 0)
			o->off = size + pick_off(r[1], shape, maxlen - size + 1);
		else
			o->off = pick_off(r[1], shape, size);
		o->len = pick_len(r[2], shape, maxoplen);
		return true;
	case OP_WRITE:
		o->off = pick_off(r[1], shape, maxlen);
		o->len = pick_len(r[2], shape, maxlen - o->off);
		return true;
	case OP_MAPREAD:
		if (size == 0)
			return false;
		o->off = pick_off(r[1], shape, size);
		o->len = pick_len(r[2], shape, size - o->off);
		return true;
	case OP_MAPWRITE:
		/* Extending needs ftruncate: stay inside the file when truncate is off. */
		len = kinds[OP_TRUNCATE].off ? size : maxlen;
		if (len == 0)
			return false;
		o->off = pick_off(r[1], shape, len);
		o->len = pick_len(r[2], shape, len - o->off);
		o->sub = (sub & 3) == 0; /* one in four without msync */
		return true;
	case OP_DREAD:
		if (size == 0 || (r[3] & 15) == 0)
			o->off = size + pick_off(r[1], shape, maxlen - size + 1);
		else
			o->off = pick_off(r[1], shape, size);
		o->len = pick_len(r[2], shape, maxoplen);
		if (dread_aligned) {
			o->off &= ~(off_t)(ALIGN - 1);
			o->len = (o->len + ALIGN - 1) & ~(off_t)(ALIGN - 1);
		}
		return true;
	case OP_DWRITE:
		o->off = pick_off(r[1], shape, maxlen);
		o->len = pick_len(r[2], shape,
				  maxoplen < maxlen - o->off ? maxoplen : maxlen - o->off);
		if (dwrite_aligned) {
			o->off &= ~(off_t)(ALIGN - 1);
			o->len = (o->len + ALIGN - 1) & ~(off_t)(ALIGN - 1);
			if (o->off + o->len > maxlen)
				return false;
		}
		return true;
	case OP_TRUNCATE:
		o->off = (off_t)(r[1] % (uint64_t)(maxlen + 1));
		if ((shape & 7) == 1)
			o->off &= ~(off_t)(ALIGN - 1);
		o->sub = sub & 1; /* half by path */
		return true;
	case OP_SEEK:
		o->off = size == 0 ? 0 : pick_off(r[1], shape, size + 1);
		return true;
	case OP_FALLOCATE:
		for (int i = 0; i < NFA; i++) {
			o->sub = (sub + i) % NFA;
			if (fa_ok[o->sub])
				break;
		}
		if (!fa_ok[o->sub])
			return false;
		o->off = pick_off(r[1], shape, maxlen);
		o->len = pick_len(r[2], shape, maxlen - o->off);
		return true;
	case OP_COPY:
		o->sub = sub % NCP;
		if (o->sub == CP_FROM_SCRATCH) {
			o->off = pick_off(r[1], shape, scratch.size);
			o->len = pick_len(r[2], shape, scratch.size - o->off);
			o->off2 = pick_off(r[3] >> 24, shape, maxlen - o->len + 1);
			return true;
		}
		if (size == 0)
			return false;
		o->off = pick_off(r[1], shape, size);
		o->len = pick_len(r[2], shape, size - o->off);
		if (o->sub == CP_TO_SCRATCH) {
			o->len = o->len > scratch.size ? scratch.size : o->len;
			o->off2 = pick_off(r[3] >> 24, shape, scratch.size - o->len + 1);
			return true;
		}
		/* Within the file: the ranges must not overlap. */
		o->off2 = pick_off(r[3] >> 24, shape, maxlen - o->len + 1);
		if (o->off2 < o->off + o->len && o->off < o->off2 + o->len) {
			if (o->off + 2 * o->len <= maxlen)
				o->off2 = o->off + o->len;
			else if (o->off >= o->len)
				o->off2 = o->off - o->len;
			else
				return false;
		}
		return true;
	case OP_SYNC:
		o->sub = sub & 1;
		return true;
	case OP_REOPEN:
		o->sub = (sub & 15) == 0; /* one in sixteen with O_TRUNC */
		return true;
	case OP_CHECK:
	case NKINDS:
		return true;
	}
	return true;
}

static void run_one(unsigned long num, enum kind forced)
{
	struct op *o = &history[nhistory % HISTORY];
	uint64_t r[4];

	for (int i = 0; i < 4; i++)
		r[i] = rng_next();
	memset(o, 0, sizeof(*o));
	o->num = num;
	o->kind = forced != NKINDS ? forced : pick_kind(r[0]);
	if (kinds[o->kind].off || !plan(o, r)) {
		o->kind = OP_READ;
		o->fallback = true;
		plan(o, r);
	}
	o->precheck = ((r[3] >> 16) & 3) != 0;
	o->size0 = o->size1 = file.size;
	cur = o;
	nhistory++;
	do_op(o);
	o->size1 = file.size;
	if (verbose)
		print_op(stdout, "", o);
	kinds[o->kind].done++;
	if (o->kind != OP_READ && o->kind != OP_MAPREAD && o->kind != OP_CHECK)
		check_size(&file, kinds[o->kind].name);
	cur = NULL;
}

/* ---- setup: what does this file system support? --------------------------------------------- */

static bool unsupported(int e)
{
	return e == EOPNOTSUPP || e == ENOTSUP || e == ENOSYS;
}

static void note(const char *what, int e)
{
	if (!quiet)
		printf("fsx: %s: %s (%s): disabled\n", what, strerror(e),
		       strerrorname_np(e) ? strerrorname_np(e) : "?");
}

/* Can the file be opened O_DIRECT, and must direct I/O be aligned? */
static void detect_direct(void)
{
	static uint8_t two_blocks[2 * ALIGN];
	int fd = open(file.path, O_RDONLY | O_DIRECT);

	if (fd < 0) {
		if (errno != EINVAL && !unsupported(errno))
			fail_sys("open O_DIRECT (detecting support)", &file);
		note("O_DIRECT", errno);
		kinds[OP_DREAD].off = kinds[OP_DWRITE].off = true;
		return;
	}
	/* Unaligned: a local file system refuses it, FUSE need not. */
	memset(two_blocks, 0x5a, sizeof(two_blocks));
	pwrite_all(&file, two_blocks, sizeof(two_blocks), 0);
	if (pread(fd, dbuf, 1, 1) < 0) {
		if (errno != EINVAL)
			fail_sys("pread O_DIRECT (detecting support)", &file);
		dread_aligned = true;
		if (!quiet)
			printf("fsx: O_DIRECT reads: unaligned ones fail (%s): aligned ones only\n",
			       strerrorname_np(errno));
	}
	close(fd);
	if (!kinds[OP_DWRITE].off) {
		fd = open(file.path, O_WRONLY | O_DIRECT);
		if (fd < 0) {
			if (errno != EINVAL && !unsupported(errno))
				fail_sys("open O_DIRECT for writing (detecting support)", &file);
			note("O_DIRECT writes", errno);
			kinds[OP_DWRITE].off = true;
		} else {
			/* Aligned ones must work wherever O_DIRECT opens: fsx then checks them. */
			memset(dbuf, 0x5a, 1);
			if (pwrite(fd, dbuf, 1, 1) < 0) {
				if (errno != EINVAL)
					fail_sys("pwrite O_DIRECT (detecting support)", &file);
				dwrite_aligned = true;
				if (!quiet)
					printf("fsx: O_DIRECT writes: unaligned ones fail (%s): "
					       "aligned ones only\n",
					       strerrorname_np(errno));
			}
			close(fd);
		}
	}
	if (ftruncate(file.fd, 0) < 0)
		fail_sys("ftruncate", &file);
}

static void detect(void)
{
	void *p;

	if (!kinds[OP_FALLOCATE].off) {
		bool any = false;

		for (int i = 0; i < NFA; i++) {
			char what[64];

			if (fallocate(file.fd, fa_modes[i].mode, 0, ALIGN) == 0) {
				fa_ok[i] = any = true;
				continue;
			}
			if (!unsupported(errno))
				fail_sys("fallocate (detecting support)", &file);
			snprintf(what, sizeof(what), "fallocate %s", fa_modes[i].name);
			note(what, errno);
		}
		kinds[OP_FALLOCATE].off = !any;
		if (ftruncate(file.fd, 0) < 0)
			fail_sys("ftruncate", &file);
	}
	if (!kinds[OP_MAPREAD].off || !kinds[OP_MAPWRITE].off) {
		p = mmap(NULL, pagesize, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd, 0);
		if (p == MAP_FAILED) {
			if (errno != ENODEV && !unsupported(errno))
				fail_sys("mmap (detecting support)", &file);
			note("mmap", errno);
			kinds[OP_MAPREAD].off = kinds[OP_MAPWRITE].off = true;
		} else {
			munmap(p, pagesize);
		}
	}
	if (!kinds[OP_DREAD].off || !kinds[OP_DWRITE].off)
		detect_direct();
	if (!kinds[OP_SEEK].off && lseek(file.fd, 0, SEEK_DATA) < 0 && errno != ENXIO) {
		if (errno != EINVAL && !unsupported(errno))
			fail_sys("lseek SEEK_DATA (detecting support)", &file);
		note("SEEK_DATA", errno);
		kinds[OP_SEEK].off = true;
	}
	if (!kinds[OP_COPY].off) {
		loff_t in = 0, out = 0;

		if (copy_file_range(scratch.fd, &in, file.fd, &out, 1, 0) < 0) {
			if (!unsupported(errno) && errno != EXDEV && errno != EINVAL)
				fail_sys("copy_file_range (detecting support)", &file);
			note("copy_file_range", errno);
			kinds[OP_COPY].off = true;
		}
		if (ftruncate(file.fd, 0) < 0)
			fail_sys("ftruncate", &file);
	}
	check_size(&file, "detection");
}

static void setup_scratch(void)
{
	char *p;

	if (asprintf(&p, "%s.fsxcopy", file.path) < 0) {
		perror("fsx");
		exit(1);
	}
	scratch.path = p;
	scratch.good = calloc(1, maxlen);
	if (!scratch.good) {
		perror("fsx");
		exit(1);
	}
	open_file(&scratch, O_CREAT | O_TRUNC);
	/* Its own pattern (operation 0's), a size that is not a multiple of a page. */
	scratch.size = maxlen - maxlen / 7;
	fill_pattern(0, 0, scratch.size);
	pwrite_all(&scratch, pattern, scratch.size, 0);
	memcpy(scratch.good, pattern, scratch.size);
}

/* ---- main ----------------------------------------------------------------------------------- */

static const char usage_text[] =
	"usage: fsx [options] FILE\n"
	"Random operations on FILE (created or truncated; FILE.fsxcopy is a scratch file),\n"
	"each checked against an in-memory model. Exit status 0: all good; 1: a failure (seed,\n"
	"last operations and first bad bytes on stderr, expected contents in FILE.fsxgood);\n"
	"2: usage.\n"
	"  -N ops      number of operations (default 10000)\n"
	"  -S seed     random seed (default 1); a seed replays the same operations anywhere\n"
	"  -l maxlen   maximum file length (default 256k)\n"
	"  -o maxoplen maximum length of one operation (default 64k)\n"
	"  -c n        read the whole file back every n operations (default 100; 0: never)\n"
	"  -q          quiet: only failures and the summary\n"
	"  -v          print every operation\n"
	"  -R          no mmap reads          -W  no mmap writes\n"
	"  -F          no fallocate           -C  no copy_file_range\n"
	"  -T          no truncate            -O  no close and reopen\n"
	"  -D          no O_DIRECT reads      -E  no SEEK_DATA/SEEK_HOLE\n"
	"  -X          no O_DIRECT writes\n"
	"  -Y          no fsync/fdatasync\n"
	"  -h          this help\n"
	"Numbers take a k, m or g suffix. What the file system lacks (fallocate modes,\n"
	"copy_file_range, mmap) is detected at start and disabled with a note.\n";

static void usage(FILE *out)
{
	fputs(usage_text, out);
}

static off_t parse_size(const char *s, char opt)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10, end++;
		break;
	case 'm':
	case 'M':
		v <<= 20, end++;
		break;
	case 'g':
	case 'G':
		v <<= 30, end++;
		break;
	}
	if (errno || end == s || *end || *s == '-' || v > (1ull << 40)) {
		fprintf(stderr, "fsx: -%c: bad number '%s'\n", opt, s);
		usage(stderr);
		exit(2);
	}
	return (off_t)v;
}

static uint64_t parse_seed(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "fsx: -S: bad seed '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	unsigned long num;
	int c;

	saved_argc = argc;
	saved_argv = argv;
	while ((c = getopt(argc, argv, "N:S:l:o:c:qvRWFCTOYDEXh")) != -1) {
		switch (c) {
		case 'N':
			nops = (unsigned long)parse_size(optarg, c);
			break;
		case 'S':
			seed = parse_seed(optarg);
			break;
		case 'l':
			maxlen = parse_size(optarg, c);
			break;
		case 'o':
			maxoplen = parse_size(optarg, c);
			break;
		case 'c':
			check_every = (unsigned long)parse_size(optarg, c);
			break;
		case 'q':
			quiet = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case '?':
			usage(stderr);
			return 2;
		default:
			for (int k = 0; k < NKINDS; k++)
				if (kinds[k].flag == c)
					kinds[k].off = true;
			break;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "fsx: expected one FILE\n");
		usage(stderr);
		return 2;
	}
	if (maxlen < 1 || maxoplen < 1) {
		fprintf(stderr, "fsx: -l and -o must be at least 1\n");
		return 2;
	}
	if (maxoplen > maxlen)
		maxoplen = maxlen;
	file.path = argv[optind];
	pagesize = sysconf(_SC_PAGESIZE);
	rng_state = seed;
	file.good = calloc(1, maxlen);
	buf = malloc(maxlen);
	pattern = malloc(maxlen);
	if (posix_memalign((void **)&dbuf, ALIGN, maxoplen + ALIGN))
		dbuf = NULL;
	if (!file.good || !buf || !pattern || !dbuf) {
		perror("fsx");
		return 1;
	}
	signal(SIGBUS, sigbus);
	open_file(&file, O_CREAT | O_TRUNC);
	setup_scratch();
	if (!quiet)
		printf("fsx: %s: seed %" PRIu64 ", %lu operations, maxlen 0x%jx, maxoplen 0x%jx\n",
		       file.path, seed, nops, (intmax_t)maxlen, (intmax_t)maxoplen);
	detect();
	for (num = 1; num <= nops; num++) {
		run_one(num, NKINDS);
		if (check_every && num % check_every == 0) {
			/* Not an operation of its own: it shares the number and draws nothing. */
			cur = &(struct op){
				.num = num, .kind = OP_CHECK, .size0 = file.size, .size1 = file.size
			};
			full_check("periodic check");
			kinds[OP_CHECK].done++;
			cur = NULL;
		}
	}
	cur = &(struct op){ .num = nops, .kind = OP_CHECK, .size0 = file.size, .size1 = file.size };
	if (close(file.fd) < 0)
		fail_sys("close", &file);
	open_file(&file, 0);
	full_check("final check after reopen");
	kinds[OP_CHECK].done++;
	cur = NULL;
	close(file.fd);
	close(scratch.fd);
	unlink(scratch.path);

	printf("fsx: %s: seed %" PRIu64 ": %lu operations passed:", file.path, seed, nops);
	for (int k = 0; k < NKINDS; k++)
		printf(" %s %lu", kinds[k].name, kinds[k].done);
	printf("; disabled:");
	c = 0;
	for (int k = 0; k < NKINDS; k++) {
		if (kinds[k].off) {
			printf(" %s", kinds[k].name);
			c++;
		}
	}
	for (int i = 0; i < NFA && !kinds[OP_FALLOCATE].off; i++) {
		if (!fa_ok[i]) {
			printf(" fallocate-%s", fa_modes[i].name);
			c++;
		}
	}
	if (dread_aligned && !kinds[OP_DREAD].off) {
		printf(" dread-unaligned");
		c++;
	}
	if (dwrite_aligned && !kinds[OP_DWRITE].off) {
		printf(" dwrite-unaligned");
		c++;
	}
	printf("%s\n", c ? "" : " none");
	return 0;
}
