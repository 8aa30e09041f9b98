/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uring.c - requests through FUSE over io_uring (Linux >= 6.14, where the fuse module's
 * enable_uring is on), in place of read() and writev() on /dev/fuse.
 *
 * Why: most of a request's round trip through /dev/fuse is the kernel waking a daemon thread,
 * which the scheduler puts on an idle CPU, and then the caller, on another: on a VM whose idle
 * CPUs halt, a cold stat through the mount took 28 µs (two requests), 10 µs with both on one
 * CPU. The kernel keeps a queue of requests per CPU and hands each to a thread of the daemon
 * pinned to the CPU the caller runs on, so neither wake-up crosses CPUs.
 *
 * The kernel's queues: one per possible CPU, each with ring entries the daemon registers (a
 * 288-byte header buffer and a payload buffer as large as the largest request); an entry
 * comes back as a completion of its io_uring command with a request in it, and goes back with
 * the reply (COMMIT_AND_FETCH), ready for the next. The kernel uses the queues once every one
 * has an entry, and until then holds requests back, so everything that can fail (the rings,
 * their buffers, the threads) is made before the INIT reply asks for them (ff_uring_prepare()).
 * FORGETs, INTERRUPTs and notifications still go through /dev/fuse (loop.c's threads).
 *
 * A request is handed to libfuse as /dev/fuse would have given it: the in-header and the
 * operation's header are put just before the payload, which stays where the kernel wrote it.
 * The reply libfuse writes (fuse_session_custom_io(), devio.c) is put into the entry the
 * request came on and committed.
 *
 * Threads: each queue has one, pinned to its CPU, which serves a request and then, in the same
 * system call, commits the reply and waits for the next. A request that takes long (a slow
 * server, a FIFO's open, a long fsync) would hold up every other request of its CPU, so, as in
 * loop.c, a supervisor that finds a queue's threads all busy, one of them for FF_GROW_USEC or
 * more, with requests waiting, wakes or starts another thread for that queue (up to ENTRIES).
 * Extra threads then rest; they never end before the session does, since the kernel cancels
 * the io_uring commands a thread submitted when it exits. For the same reason only a queue's
 * own threads submit to its ring: a reply made elsewhere (a lock granted by lock.c's thread)
 * is handed to the queue through an eventfd the ring polls.
 *
 * Locking: a queue's `lock` guards its ring's submission side and completion head, its thread
 * counts and its threads' busy_since, and is a leaf. `sup.lock` guards the supervisor's fields
 * and is taken before a queue's.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fedfuse/file.h"
#include "fedfuse/log.h"
#include "fedfuse/loop.h"
#include "fedfuse/uring.h"

/* The kernel's interface (include/uapi/linux/fuse.h, protocol 7.42), which Debian 12's headers
 * predate. */
#define URING_HEADER_IN_OUT 128
#define URING_OP_IN_OUT 128
struct uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id; /* the request's unique */
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};
struct uring_req_header {
	char in_out[URING_HEADER_IN_OUT]; /* fuse_in_header, then fuse_out_header */
	char op_in[URING_OP_IN_OUT];	  /* the operation's own header (its first argument) */
	struct uring_ent_in_out ent;
};
struct uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};
enum { CMD_REGISTER = 1, CMD_COMMIT_AND_FETCH = 2 };
G_STATIC_ASSERT(sizeof(struct uring_req_header) == 288);
G_STATIC_ASSERT(sizeof(struct uring_cmd_req) == 24);

#define ENTRIES 16		   /* ring entries per queue */
#define PAYLOAD (FF_MAX_IO + 4096) /* >= the largest request the kernel may send */
#define BEFORE 4096 /* room before the payload: the header buffer, then the headers libfuse needs */
#define EVENTFD_TAG UINT64_MAX

struct ring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
	char *sqes;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len, sqes_len;
	unsigned to_submit; /* SQEs written, not yet submitted */
};

struct queue;

struct entry {
	struct queue *q;
	unsigned idx;
	char *mem; /* BEFORE + PAYLOAD bytes: the header buffer at the start */
	struct uring_req_header *hdr;
	char *payload;
	struct iovec iov[2];
	_Atomic uint64_t unique; /* the request it holds, until answered; 0: none */
	struct entry *next_commit;
	bool used; /* has held a request: else a failed completion is its registration's */
};

struct qthread {
	struct queue *q;
	pthread_t thread;
	gint64 busy_since; /* serving a request since; 0: not */
	bool started;
};

struct queue {
	unsigned qid;
	struct ring r;
	int efd;
	pthread_mutex_t lock;
	pthread_cond_t turn; /* threads with nothing to do wait here */
	bool polling;	     /* a thread waits in io_uring_enter() */
	unsigned idle;	     /* threads waiting on `turn` */
	unsigned wakeups;    /* of those, told to take a turn */
	unsigned nthreads;
	struct qthread threads[ENTRIES];
	struct entry *commits; /* answered by other threads: to commit */
	struct entry ents[ENTRIES];
	guint64 requests; /* atomic */
};

static struct {
	struct fuse_session *se;
	int devfd;
	unsigned nqueues;
	struct queue *queues;
	_Atomic bool active, stop;
	_Atomic int refused; /* the kernel refused the rings' entries: its errno */
	/* the supervisor */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t tick;
	_Atomic bool quiet;
	int poll_usec; /* see look_a_while() */
} u = { .lock = PTHREAD_MUTEX_INITIALIZER, .poll_usec = FF_URING_POLL_USEC };

static __thread struct queue *my_queue;
static __thread struct entry *my_entry;

static int enter(struct ring *r, unsigned submit, unsigned wait)
{
	long n = syscall(__NR_io_uring_enter, r->fd, submit, wait,
			 wait ? IORING_ENTER_GETEVENTS : 0, NULL, 0);

	return n < 0 ? -errno : (int)n;
}

static int ring_init(struct ring *r, unsigned entries)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 };
	char *sq, *cq;

	r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -errno;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		r->sq_len = r->cq_len = MAX(r->sq_len, r->cq_len);
	sq = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		  IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		return -errno;
	r->sq_map = sq;
	cq = sq;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		cq = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			  IORING_OFF_CQ_RING);
		if (cq == MAP_FAILED)
			return -errno;
		r->cq_map = cq;
	}
	r->sqes_len = p.sq_entries * 128;
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		       IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED) {
		r->sqes = NULL;
		return -errno;
	}
	r->sq_tail = (void *)(sq + p.sq_off.tail);
	r->sq_mask = (void *)(sq + p.sq_off.ring_mask);
	r->sq_array = (void *)(sq + p.sq_off.array);
	r->cq_head = (void *)(cq + p.cq_off.head);
	r->cq_tail = (void *)(cq + p.cq_off.tail);
	r->cq_mask = (void *)(cq + p.cq_off.ring_mask);
	r->cqes = (void *)(cq + p.cq_off.cqes);
	return 0;
}

static void ring_free(struct ring *r)
{
	if (r->sqes)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_map)
		munmap(r->cq_map, r->cq_len);
	if (r->sq_map)
		munmap(r->sq_map, r->sq_len);
	if (r->fd >= 0)
		close(r->fd);
}

/* The next SQE, zeroed, counted to be submitted. Under the queue's lock. */
static struct io_uring_sqe *sqe_get(struct ring *r)
{
	unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = (void *)(r->sqes + (size_t)idx * 128);

	memset(sqe, 0, 128);
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	r->to_submit++;
	return sqe;
}

/* Register `e`, or send its reply and take the next request. Under the queue's lock. */
static void entry_cmd(struct entry *e, unsigned op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = sqe_get(&e->q->r);
	struct uring_cmd_req *c = (void *)sqe->cmd;

	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = u.devfd;
	sqe->cmd_op = op;
	sqe->addr = (uintptr_t)e->iov;
	sqe->len = 2;
	sqe->user_data = e->idx;
	c->qid = (uint16_t)e->q->qid;
	c->commit_id = commit_id;
}

/* Listen to the queue's eventfd (multishot). Under the queue's lock. */
static void eventfd_arm(struct queue *q)
{
	struct io_uring_sqe *sqe = sqe_get(&q->r);

	sqe->opcode = IORING_OP_POLL_ADD;
	sqe->fd = q->efd;
	sqe->poll32_events = POLLIN;
	sqe->len = IORING_POLL_ADD_MULTI;
	sqe->user_data = EVENTFD_TAG;
}

static void wake(struct queue *q)
{
	uint64_t one = 1;

	if (write(q->efd, &one, sizeof(one)) < 0)
		ff_log_once(LOG_WARNING, "uring-wake", 60, "cannot wake an io_uring queue: %s",
			    g_strerror(errno));
}

/* Replies answered elsewhere, to commit. Under the queue's lock. */
static void take_commits(struct queue *q)
{
	uint64_t v;

	if (read(q->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		ff_log_once(LOG_WARNING, "uring-efd", 60, "io_uring queue %u: %s", q->qid,
			    g_strerror(errno));
	while (q->commits) {
		struct entry *e = q->commits;

		q->commits = e->next_commit;
		entry_cmd(e, CMD_COMMIT_AND_FETCH, e->hdr->ent.commit_id);
	}
}

/* The kernel refused to register an entry (EOPNOTSUPP: the fuse module's enable_uring was
 * switched off between the INIT reply and the registration): it then sends every request
 * through /dev/fuse, and so do the answers. */
static void refused(int err)
{
	int none = 0;

	if (!atomic_compare_exchange_strong(&u.refused, &none, err))
		return;
	ff_warn("the kernel refused FUSE over io_uring (%s%s); requests come through /dev/fuse",
		g_strerror(err),
		err == EOPNOTSUPP ? ": the fuse module's enable_uring is off" : "");
}

/* The next request that came on the ring, or NULL; handles what else came. Under the lock. */
static struct entry *next_request(struct queue *q)
{
	unsigned head = *q->r.cq_head, tail = __atomic_load_n(q->r.cq_tail, __ATOMIC_ACQUIRE);

	for (; head != tail; head++) {
		const struct io_uring_cqe *cqe = &q->r.cqes[head & *q->r.cq_mask];
		uint64_t tag = cqe->user_data;
		int res = cqe->res;
		bool more = cqe->flags & IORING_CQE_F_MORE;

		__atomic_store_n(q->r.cq_head, head + 1, __ATOMIC_RELEASE);
		if (tag == EVENTFD_TAG) {
			take_commits(q);
			if (!more) /* ended (an overflow): listen again, even when stopping */
				eventfd_arm(q);
		} else if (res < 0) {
			/* ENOTCONN: the connection ends (unmounted); else the entry is lost */
			if (res != -ENOTCONN && res != -ECANCELED && tag < ENTRIES &&
			    !q->ents[tag].used)
				refused(-res);
			else if (res != -ENOTCONN && res != -ECANCELED)
				ff_log_once(LOG_WARNING, "uring-cqe", 60,
					    "io_uring queue %u lost an entry: %s", q->qid,
					    g_strerror(-res));
		} else if (tag < ENTRIES) {
			q->ents[tag].used = true;
			return &q->ents[tag];
		}
	}
	return NULL;
}

static bool requests_waiting(struct queue *q)
{
	return *q->r.cq_head != __atomic_load_n(q->r.cq_tail, __ATOMIC_ACQUIRE);
}

/* Submit `*submit` SQEs and look for the next request for up to u.poll_usec before sleeping
 * in io_uring_enter(): a program that asks one thing at a time (ls -l's getxattr per file,
 * fio's 4 KiB reads) asks again within microseconds, and then finds this thread awake on its
 * CPU rather than asleep on a CPU that halted; and its CPU, not idle, is not one the scheduler
 * moves it away from. Each look is a system call: the kernel puts a request into the ring in
 * this thread's task work, which runs when it enters the kernel. */
static int look_a_while(struct queue *q, unsigned *submit)
{
	gint64 until;
	int n;

	if (u.poll_usec <= 0)
		return 0;
	n = enter(&q->r, *submit, 0);
	if (n < 0)
		return n;
	*submit -= MIN((unsigned)n, *submit);
	until = g_get_monotonic_time() + u.poll_usec;
	while (!requests_waiting(q) && g_get_monotonic_time() < until && !atomic_load(&u.stop))
		if ((n = enter(&q->r, 0, 0)) < 0 && n != -EINTR)
			return n;
	return 0;
}

/* Hand `e`'s request to libfuse, laid out as /dev/fuse gives it: headers, then the payload. */
static void serve(struct entry *e)
{
	const struct fuse_in_header *ih = (const void *)e->hdr->in_out;
	uint32_t plsz = MIN(e->hdr->ent.payload_sz, (uint32_t)PAYLOAD);
	size_t oplen = 0;
	struct fuse_in_header *start;
	struct fuse_buf buf = { 0 };

	if (ih->len >= sizeof(*ih) + plsz)
		oplen = MIN(ih->len - sizeof(*ih) - plsz, (size_t)URING_OP_IN_OUT);
	start = (void *)(e->payload - oplen - sizeof(*ih));
	memcpy(start + 1, e->hdr->op_in, oplen);
	memcpy(start, ih, sizeof(*ih));
	start->len = (uint32_t)(sizeof(*ih) + oplen + plsz);
	atomic_store_explicit(&e->unique, ih->unique, memory_order_release);
	buf.mem = start;
	buf.size = start->len;
	my_entry = e;
	fuse_session_process_buf(u.se, &buf);
	my_entry = NULL;
}

/* Submit the SQEs written so far, without waiting; what does not go stays counted for the
 * next time. Under the queue's lock. */
static void submit_now(struct queue *q)
{
	unsigned submit = q->r.to_submit;
	int n;

	if (submit == 0)
		return;
	q->r.to_submit = 0;
	n = enter(&q->r, submit, 0);
	q->r.to_submit += n < 0 ? submit : submit - MIN((unsigned)n, submit);
}

static void wake_supervisor(void)
{
	if (atomic_load(&u.quiet)) {
		pthread_mutex_lock(&u.lock);
		atomic_store(&u.quiet, false);
		pthread_cond_signal(&u.tick);
		pthread_mutex_unlock(&u.lock);
	}
}

static void *queue_thread(void *arg)
{
	struct qthread *t = arg;
	struct queue *q = t->q;

	my_queue = q;
	pthread_mutex_lock(&q->lock);
	while (!atomic_load(&u.stop)) {
		struct entry *e = next_request(q);
		int n;

		if (e) {
			/* Replies this thread committed since it last entered go first: the
			 * request it takes now may keep it for seconds (a slow server), and
			 * the threads added then look for requests, not for replies. */
			submit_now(q);
			/* Others may take the ring meanwhile; one that rests is told to. */
			if (q->idle > q->wakeups && requests_waiting(q)) {
				q->wakeups++;
				pthread_cond_signal(&q->turn);
			}
			t->busy_since = g_get_monotonic_time();
			pthread_mutex_unlock(&q->lock);
			/* Counted before looking whether the supervisor sleeps: it looks at the
			 * count after saying it sleeps (supervise()), so one of them sees the
			 * other. */
			__atomic_add_fetch(&q->requests, 1, __ATOMIC_SEQ_CST);
			wake_supervisor();
			serve(e);
			pthread_mutex_lock(&q->lock);
			t->busy_since = 0;
			continue;
		}
		if (!q->polling) { /* commit what is answered, and wait for the next */
			unsigned submit = q->r.to_submit;

			q->polling = true;
			q->r.to_submit = 0;
			pthread_mutex_unlock(&q->lock);
			n = look_a_while(q, &submit);
			if (n >= 0 && !requests_waiting(q))
				n = enter(&q->r, submit, 1);
			pthread_mutex_lock(&q->lock);
			q->polling = false;
			if (n < 0) /* nothing went: again next time */
				q->r.to_submit += submit;
			else if ((unsigned)n < submit)
				q->r.to_submit += submit - (unsigned)n;
			if (n < 0 && n != -EINTR && n != -EAGAIN && n != -EBUSY) {
				ff_log_once(LOG_ERR, "uring-enter", 60, "io_uring queue %u: %s",
					    q->qid, g_strerror(-n));
				break;
			}
			continue;
		}
		if (q->r.to_submit > 0) { /* another waits for requests: submit these now */
			submit_now(q);
			continue;
		}
		q->idle++;
		while (!q->wakeups && !atomic_load(&u.stop))
			pthread_cond_wait(&q->turn, &q->lock);
		if (q->wakeups)
			q->wakeups--;
		q->idle--;
	}
	if (q->r.to_submit > 0) /* replies made before the stop still go */
		enter(&q->r, q->r.to_submit, 0);
	q->r.to_submit = 0;
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* A thread more for `q`: a resting one, else a new one. Under the queue's lock. */
static void add_thread(struct queue *q)
{
	struct qthread *t;
	cpu_set_t cpu;

	if (q->idle > q->wakeups) {
		q->wakeups++;
		pthread_cond_signal(&q->turn);
		return;
	}
	if (q->nthreads == ENTRIES)
		return;
	t = &q->threads[q->nthreads];
	t->q = q;
	t->started = ff_start_thread(&t->thread, queue_thread, t) == 0;
	if (!t->started)
		return;
	CPU_ZERO(&cpu);
	CPU_SET(q->qid, &cpu);
	pthread_setaffinity_np(t->thread, sizeof(cpu), &cpu); /* where it may: else anywhere */
	q->nthreads++;
}

/* Whether `q` needs another thread to take its requests: none waits for them, one has been
 * busy for FF_GROW_USEC, and requests wait (threads resting on `turn` do not look at the ring).
 * Under the queue's lock. Sets *busy when any of its threads serves a request. */
static bool held_up(struct queue *q, gint64 now, bool *busy)
{
	gint64 oldest = 0;

	for (unsigned i = 0; i < q->nthreads; i++) {
		gint64 b = q->threads[i].busy_since;

		if (b && (!oldest || b < oldest))
			oldest = b;
	}
	if (oldest)
		*busy = true;
	return oldest && now - oldest >= FF_GROW_USEC && !q->polling && !q->wakeups &&
	       (requests_waiting(q) || q->commits);
}

/* Requests taken from every ring so far. */
static guint64 requests_taken(void)
{
	guint64 n = 0;

	for (unsigned i = 0; i < u.nqueues; i++)
		n += __atomic_load_n(&u.queues[i].requests, __ATOMIC_SEQ_CST);
	return n;
}

static void *supervise(void *arg)
{
	guint64 seen = 0;
	gint64 last_request = g_get_monotonic_time();

	(void)arg;
	pthread_mutex_lock(&u.lock);
	while (!atomic_load(&u.stop)) {
		gint64 now = g_get_monotonic_time();
		guint64 requests = 0;
		bool busy = false, held = false;

		for (unsigned i = 0; i < u.nqueues; i++) {
			struct queue *q = &u.queues[i];

			requests += __atomic_load_n(&q->requests, __ATOMIC_RELAXED);
			pthread_mutex_lock(&q->lock);
			if (held_up(q, now, &busy)) {
				add_thread(q);
				held = true;
			}
			pthread_mutex_unlock(&q->lock);
		}
		if (requests != seen) {
			seen = requests;
			last_request = now;
		}
		if (!busy && now - last_request >= FF_QUIET_USEC) { /* until the next request */
			atomic_store(&u.quiet, true);
			/* A request taken meanwhile (its thread may have looked before `quiet`
			 * was set, and may now be held up with others waiting behind it). */
			if (requests_taken() != seen) {
				atomic_store(&u.quiet, false);
				continue;
			}
			while (atomic_load(&u.quiet) && !atomic_load(&u.stop))
				pthread_cond_wait(&u.tick, &u.lock);
			continue;
		}
		ff_tick_wait(&u.tick, &u.lock, held || busy);
	}
	pthread_mutex_unlock(&u.lock);
	return NULL;
}

/* The kernel's number of queues: its possible CPUs (/sys/devices/system/cpu/possible, a list
 * such as "0-3" or "0,2-5"). 0 when unknown. */
static unsigned possible_cpus(void)
{
	char text[256], *p, *end;
	unsigned n = 0;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");

	if (!f)
		return 0;
	p = fgets(text, sizeof(text), f);
	fclose(f);
	while (p && *p && *p != '\n') {
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			return 0;
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p || b < a)
				return 0;
		}
		n += (unsigned)(b - a + 1);
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

static int queue_init(struct queue *q, unsigned qid)
{
	int rc;

	q->qid = qid;
	q->r.fd = -1;
	q->efd = -1;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->turn, NULL);
	rc = ring_init(&q->r, 4 * ENTRIES);
	if (rc < 0)
		return rc;
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->efd < 0)
		return -errno;
	for (unsigned i = 0; i < ENTRIES; i++) {
		struct entry *e = &q->ents[i];

		e->q = q;
		e->idx = i;
		e->mem = mmap(NULL, BEFORE + PAYLOAD, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (e->mem == MAP_FAILED) {
			e->mem = NULL;
			return -errno;
		}
		e->hdr = (void *)e->mem;
		e->payload = e->mem + BEFORE;
		e->iov[0] = (struct iovec){ e->hdr, sizeof(*e->hdr) };
		e->iov[1] = (struct iovec){ e->payload, PAYLOAD };
	}
	return 0;
}

static void queue_free(struct queue *q)
{
	for (unsigned i = 0; i < ENTRIES; i++)
		if (q->ents[i].mem)
			munmap(q->ents[i].mem, BEFORE + PAYLOAD);
	if (q->efd >= 0)
		close(q->efd);
	ring_free(&q->r);
	pthread_cond_destroy(&q->turn);
	pthread_mutex_destroy(&q->lock);
}

static void free_queues(void)
{
	for (unsigned i = 0; i < u.nqueues; i++)
		queue_free(&u.queues[i]);
	g_free(u.queues);
	u.queues = NULL;
	u.nqueues = 0;
}

int ff_uring_prepare(struct fuse_session *se, int devfd)
{
	unsigned n = possible_cpus();
	int rc = 0;

	if (n == 0)
		return -ENOENT;
	u.se = se;
	u.devfd = devfd;
	u.queues = g_new0(struct queue, n);
	u.nqueues = n;
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = queue_init(&u.queues[i], i);
	if (rc < 0)
		free_queues();
	return rc;
}

void ff_uring_start(bool answered)
{
	if (!u.queues)
		return;
	if (!answered) { /* the INIT reply did not reach the kernel */
		free_queues();
		return;
	}
	for (unsigned i = 0; i < u.nqueues; i++) {
		struct queue *q = &u.queues[i];

		pthread_mutex_lock(&q->lock);
		eventfd_arm(q);
		for (unsigned j = 0; j < ENTRIES; j++)
			entry_cmd(&q->ents[j], CMD_REGISTER, 0);
		add_thread(q);
		pthread_mutex_unlock(&q->lock);
	}
	ff_tick_init(&u.tick);
	u.thread_started = ff_start_thread(&u.thread, supervise, NULL) == 0;
	atomic_store(&u.active, true);
	ff_info("requests come through io_uring: %u queues of %d entries", u.nqueues, ENTRIES);
}

void ff_uring_set_poll(int usec)
{
	u.poll_usec = usec;
}

bool ff_uring_active(void)
{
	return atomic_load_explicit(&u.active, memory_order_relaxed) &&
	       !atomic_load_explicit(&u.refused, memory_order_relaxed);
}

void *ff_uring_buffer(size_t size)
{
	return my_entry && size <= PAYLOAD ? my_entry->payload : NULL;
}

/* The entry holding request `unique`: this thread's, else any (a reply made elsewhere). */
static struct entry *entry_of(uint64_t unique)
{
	if (my_entry && atomic_load_explicit(&my_entry->unique, memory_order_acquire) == unique)
		return my_entry;
	for (unsigned i = 0; i < u.nqueues; i++)
		for (unsigned j = 0; j < ENTRIES; j++) {
			struct entry *e = &u.queues[i].ents[j];

			if (atomic_load_explicit(&e->unique, memory_order_acquire) == unique)
				return e;
		}
	return NULL;
}

bool ff_uring_answer(const struct iovec *iov, int count, ssize_t *len)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	struct entry *e;
	size_t pos = 0;
	struct queue *q;

	if (!ff_uring_active() || count < 1 || iov[0].iov_len < sizeof(*out) || out->unique == 0)
		return false;
	e = entry_of(out->unique);
	if (!e)
		return false; /* a request that came through /dev/fuse */
	for (int i = 1; i < count; i++) {
		size_t n = MIN(iov[i].iov_len, (size_t)PAYLOAD - pos);

		if (e->payload + pos != iov[i].iov_base)
			memmove(e->payload + pos, iov[i].iov_base, n);
		pos += n;
	}
	memcpy(e->hdr->in_out, out, sizeof(*out));
	e->hdr->ent.payload_sz = (uint32_t)pos;
	atomic_store_explicit(&e->unique, 0, memory_order_release);
	*len = (ssize_t)(sizeof(*out) + pos);
	q = e->q;
	pthread_mutex_lock(&q->lock);
	if (my_queue == q) {
		entry_cmd(e, CMD_COMMIT_AND_FETCH, e->hdr->ent.commit_id);
	} else {
		e->next_commit = q->commits;
		q->commits = e;
		wake(q);
	}
	pthread_mutex_unlock(&q->lock);
	return true;
}

void ff_uring_describe(GString *out)
{
	guint64 requests = 0;
	unsigned threads = 0;

	if (!atomic_load(&u.active))
		return;
	if (atomic_load(&u.refused)) {
		g_string_append_printf(out, "io_uring refused (%s): requests through /dev/fuse\n",
				       g_strerror(atomic_load(&u.refused)));
		return;
	}
	for (unsigned i = 0; i < u.nqueues; i++) {
		requests += __atomic_load_n(&u.queues[i].requests, __ATOMIC_RELAXED);
		pthread_mutex_lock(&u.queues[i].lock);
		threads += u.queues[i].nthreads;
		pthread_mutex_unlock(&u.queues[i].lock);
	}
	g_string_append_printf(out,
			       "io_uring queues=%u threads=%u requests=%" G_GUINT64_FORMAT "\n",
			       u.nqueues, threads, requests);
}

void ff_uring_stop(void)
{
	if (!atomic_load(&u.active))
		return;
	atomic_store(&u.stop, true);
	pthread_mutex_lock(&u.lock);
	pthread_cond_broadcast(&u.tick);
	pthread_mutex_unlock(&u.lock);
	if (u.thread_started)
		pthread_join(u.thread, NULL);
	for (unsigned i = 0; i < u.nqueues; i++) {
		struct queue *q = &u.queues[i];

		/* Each thread is told before it is waited for: one that polls wakes at the
		 * eventfd, ones waiting for a turn at `turn`; one that was serving a request, or
		 * on its way to poll when the previous was told, sees `stop` then. */
		for (unsigned j = 0; j < q->nthreads; j++) {
			if (q->threads[j].started) {
				pthread_mutex_lock(&q->lock);
				pthread_cond_broadcast(&q->turn);
				pthread_mutex_unlock(&q->lock);
				wake(q);
				pthread_join(q->threads[j].thread, NULL);
			}
		}
	}
	atomic_store(&u.active, false);
	pthread_cond_destroy(&u.tick);
	free_queues();
}
