/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket: a unix stream socket (mode 0600, 0660 with a
 * group), peers checked with SO_PEERCRED, JSON-RPC requests decoded by
 * vhostd_rpc.c and dispatched to vhostd_methods.c. Connections are
 * bounded in number, in what they may send at once, in how long half a
 * request may wait and in how long they may sit idle: a client that
 * misbehaves is answered and dropped, nothing else waits for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "lm_app.h"
#include "vhostd.h"
#include "vhostd_sockdir.h"

#define MAX_CONNS 128
/* Half a request may wait this long for the rest; then the connection is dropped. */
#define PARTIAL_TIMEOUT_MS 5000
/* Requests of one connection answered out of order at most this many at once. */
#define MAX_PENDING 16
/* A client that does not read its replies: dropped past this. */
#define MAX_OUT (16u << 20)
/* Connections dropped or refused, of one kind: one line, then at most one more per this. */
#define CONN_LOG_INTERVAL_MS 5000

struct conn {
	struct vhostd_watch w;
	TAILQ_ENTRY(conn) next;
	struct vhostd_buf in, out;
	struct vhostd_rpc_scan scan;  /* how far in's head request has been looked at */
	unsigned int pending;     /* calls not answered yet */
	bool closing;             /* no more reads; close once out is written */
	bool dead;                /* fd closed; freed when pending reaches 0 */
	bool in_process;          /* process() runs: replies answered meanwhile wait for it */
	int64_t partial_since;    /* bytes of an incomplete request waiting since */
	int64_t active_ms;        /* the last byte read or written, or call answered */
	int uid, pid;
};

static struct vhostd_watch listener = { .fd = -1 };
/*
 * The control socket file bound (lstat right after bind): at stop it is
 * removed only if its path still names that file, not one that took the
 * path since (another service's socket, the operator's file).
 */
static dev_t listener_dev;
static ino_t listener_ino;
static bool listener_known;
static TAILQ_HEAD(, conn) conns = TAILQ_HEAD_INITIALIZER(conns);
static unsigned int nconns;
/* Spare fd: with the fd table full, accept-and-close still answers a client. */
static int spare_fd = -1;
/*
 * What a client can make happen to its connections at will, by the hundred
 * (left idle, half a request, replies never read, a peer not allowed, a
 * connection refused with the fd table full): a line each floods the log
 * and buries what the operator looks for. Of each kind the first of an
 * interval is logged, the others only counted, and told in one line at the
 * interval's end (or when the service stops).
 */
enum conn_log_kind {
	CLOG_IDLE, CLOG_STALLED, CLOG_UNREAD, CLOG_REFUSED, CLOG_NOFD, CLOG_KINDS
};

static struct conn_log {
	const char *who;           /* the count's subject */
	const char *done;          /* what was done to them */
	int64_t until;             /* the interval's end */
	unsigned int more;         /* events in it, not logged */
	int last_pid, last_uid;
} conn_logs[CLOG_KINDS] = {
	[CLOG_IDLE] = { .who = "control clients idle", .done = "closed" },
	[CLOG_STALLED] = { .who = "control clients that sent half a request and stalled",
			   .done = "dropped" },
	[CLOG_UNREAD] = { .who = "control clients that do not read their replies",
			  .done = "dropped" },
	[CLOG_REFUSED] = { .who = "control socket peers not root, the service's user or a "
			   "member of its group", .done = "refused" },
	[CLOG_NOFD] = { .who = "control clients refused for want of a file descriptor",
			.done = "refused" },
};

/* An event of kind k, client pid and uid: its line (fmt) if the first of an interval. */
static void __attribute__((format(printf, 4, 5)))
conn_log(enum conn_log_kind k, int pid, int uid, const char *fmt, ...)
{
	struct conn_log *l = &conn_logs[k];
	int64_t now = vhostd_now_ms();
	char line[512];
	va_list ap;

	if (now < l->until) {
		l->more++;
		l->last_pid = pid;
		l->last_uid = uid;
		return;
	}
	l->until = now + CONN_LOG_INTERVAL_MS;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	SLOG("%s", line);
}

/*
 * The events counted and not logged, a line per kind: at the interval's
 * end, or at once (force); the next deadline of such a line (-1 none).
 */
static int64_t
conn_logs_flush(int64_t now, bool force)
{
	int64_t next = -1;
	int k;

	for (k = 0; k < CLOG_KINDS; k++) {
		struct conn_log *l = &conn_logs[k];

		if (l->more == 0)
			continue;
		if (!force && now < l->until) {
			if (next < 0 || l->until < next)
				next = l->until;
			continue;
		}
		SLOG("%s: %u more %s in the last %d s (the last pid %d uid %d)", l->who,
		     l->more, l->done, CONN_LOG_INTERVAL_MS / 1000, l->last_pid, l->last_uid);
		l->more = 0;
		l->until = now + CONN_LOG_INTERVAL_MS;
	}
	return next;
}

static void
conn_close(struct conn *c)
{
	if (c->dead)
		return;
	vhostd_watch_del(&c->w);
	close(c->w.fd);
	c->w.fd = -1;
	c->dead = true;
	TAILQ_REMOVE(&conns, c, next);
	nconns--;
	vhostd_buf_free(&c->in);
	vhostd_buf_free(&c->out);
	if (c->pending == 0 && !c->in_process)
		free(c);
}

static void
conn_update(struct conn *c)
{
	uint32_t ev = 0;

	if (!c->closing && c->pending < MAX_PENDING)
		ev |= EPOLLIN;
	if (c->out.len > c->out.off)
		ev |= EPOLLOUT;
	vhostd_watch_mod(&c->w, ev);
}

static void
conn_flush(struct conn *c)
{
	size_t waiting = c->out.len - c->out.off;
	int r = vhostd_buf_flush(c->w.fd, &c->out);

	/* A client reading a long answer slowly is not idle. */
	if (r > 0 || (r == 0 && c->out.len - c->out.off < waiting))
		c->active_ms = vhostd_now_ms();

	if (r < 0 || (r == 1 && c->closing && c->pending == 0)) {
		conn_close(c);
		return;
	}
	conn_update(c);
}

static void
conn_send(struct conn *c, json_t *reply)
{
	size_t len;
	char *line = vhostd_rpc_dump(reply, &len);

	if (line == NULL)
		return;
	if (c->out.len - c->out.off + len > MAX_OUT) {
		conn_log(CLOG_UNREAD, c->pid, c->uid, "control client pid %d does not read its "
			 "replies: dropped", c->pid);
		free(line);
		conn_close(c);
		return;
	}
	vhostd_buf_append(&c->out, line, len);
	free(line);
}

static void process(struct conn *c, unsigned int held);

/*
 * Hold c across what may close it (a reply past MAX_OUT, process()): a
 * close frees a connection nobody holds, and a hold counts as a call in
 * flight. conn_unhold() lets go: true when c is gone (closed meanwhile;
 * freed here when nothing else holds it).
 */
static void
conn_hold(struct conn *c)
{
	c->pending++;
}

static bool
conn_unhold(struct conn *c)
{
	if (--c->pending == 0 && c->dead && !c->in_process) {
		free(c);
		return true;
	}
	return c->dead;
}

static void
call_done(struct vhostd_call *call, json_t *reply)
{
	struct conn *c = call->conn;

	/* The call held c (process() counted it in flight): it lets go now. */
	if (conn_unhold(c))
		return;
	c->active_ms = vhostd_now_ms();
	if (reply != NULL) {
		/* conn_send closes a client that does not read. */
		conn_hold(c);
		conn_send(c, reply);
		if (conn_unhold(c))
			return;
	}
	/* Answered inside process(): it goes on and flushes. */
	if (c->in_process)
		return;
	/* Requests held back while MAX_PENDING were in flight. */
	if (!c->closing) {
		conn_hold(c);
		process(c, 1);
		if (conn_unhold(c))
			return;
	}
	conn_flush(c);
}

/*
 * Decode and dispatch what c sent, while it may have more calls in flight.
 * held: counts the caller added to c->pending to keep c while it runs,
 * which are not calls (counted as such, a reply's call_done dispatched
 * nothing, and the client's pipelined requests piled up unread until they
 * looked like one request too large).
 */
static void
process(struct conn *c, unsigned int held)
{
	c->in_process = true;
	while (!c->dead && !c->closing && c->pending - held < MAX_PENDING) {
		struct vhostd_rpc_req req;
		struct vhostd_call *call;
		json_t *reply;
		size_t used;
		bool fatal;
		enum vhostd_rpc_status st = vhostd_rpc_decode_next(&c->scan,
								   c->in.data + c->in.off,
								   c->in.len - c->in.off, &used,
								   &req, &reply, &fatal);

		c->in.off += used;
		if (st == VHOSTD_RPC_NEED_MORE) {
			if (c->in.len > c->in.off) {
				if (c->partial_since == 0)
					c->partial_since = vhostd_now_ms();
			} else {
				c->partial_since = 0;
			}
			break;
		}
		c->partial_since = 0;
		if (st == VHOSTD_RPC_BAD) {
			conn_send(c, reply);
			json_decref(reply);
			if (fatal)
				c->closing = true;
			continue;
		}
		call = vhostd_call_new(req.id, req.method, &vhostd, call_done, c);
		if (call == NULL) {
			/*
			 * Out of memory: that call fails alone, answered as doc/vhostd.md
			 * says (a notification gets no reply); the requests after it go on.
			 * An answer that cannot be made either ends the connection, which
			 * tells the client more than a reply that never comes.
			 */
			if (req.id != NULL) {
				reply = vhostd_rpc_error(req.id, VHOSTD_RPC_INTERNAL_ERROR,
							 "no memory to queue the request");
				if (reply != NULL)
					conn_send(c, reply);
				else
					c->closing = true;
				json_decref(reply);
			}
			vhostd_rpc_req_free(&req);
			continue;
		}
		c->pending++;
		vhostd_rpc_dispatch(vhostd_methods, vhostd_nmethods, call, req.params);
		vhostd_rpc_req_free(&req);
	}
	c->in_process = false;
	if (c->dead) {
		if (c->pending == 0)
			free(c);
		return;
	}
	vhostd_buf_compact(&c->in);
}

static void
conn_event(struct vhostd_watch *w, uint32_t events)
{
	struct conn *c = (struct conn *)w;
	ssize_t r;

	if (events & EPOLLOUT) {
		conn_flush(c);
		if (c->dead)
			return;
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || c->closing)
		return;
	/*
	 * At the limit of calls in flight, what is buffered may be whole
	 * requests waiting for their turn: reading on would pile up a client's
	 * pipelined requests until they looked like one too large.
	 */
	if (c->pending >= MAX_PENDING) {
		conn_update(c);
		return;
	}
	r = vhostd_buf_read(w->fd, &c->in, VHOSTD_RPC_MAX_REQUEST + 4096);
	if (r == -EAGAIN)
		return;
	if (r == 0 || (r < 0 && r != -E2BIG)) {
		/* The client left: its calls still in flight are answered to nobody. */
		conn_close(c);
		return;
	}
	c->active_ms = vhostd_now_ms();
	conn_hold(c);
	process(c, 1);
	if (conn_unhold(c))
		return;
	if (r == -E2BIG && c->in.len - c->in.off >= VHOSTD_RPC_MAX_REQUEST) {
		json_t *e = vhostd_rpc_error(NULL, VHOSTD_RPC_TOO_LARGE,
					     "request too large: over %u bytes",
					     VHOSTD_RPC_MAX_REQUEST);

		conn_hold(c);
		conn_send(c, e);
		json_decref(e);
		c->closing = true;
		if (conn_unhold(c))
			return;
	}
	conn_flush(c);
}

/* root, the service's own user, or a member of the configured group. */
static bool
peer_allowed(const struct ucred *cr)
{
	struct passwd *pw;
	struct group *gr;
	char **m;

	if (cr->uid == 0 || cr->uid == getuid())
		return true;
	if (!vhostd.rpc_group)
		return false;
	if (cr->gid == vhostd.rpc_gid)
		return true;
	gr = getgrgid(vhostd.rpc_gid);
	pw = getpwuid(cr->uid);
	if (gr == NULL || pw == NULL)
		return false;
	for (m = gr->gr_mem; *m != NULL; m++)
		if (strcmp(*m, pw->pw_name) == 0)
			return true;
	return false;
}

/* A connection refused at once, with a reply that says why. */
static void
refuse(int fd, int code, const char *why)
{
	json_t *e = vhostd_rpc_error(NULL, code, "%s", why);
	size_t len;
	char *line = vhostd_rpc_dump(e, &len);

	/* Best effort: the client may be gone already. */
	if (line != NULL)
		(void)!send(fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	free(line);
	json_decref(e);
	close(fd);
}

static void
listener_event(struct vhostd_watch *w, uint32_t events)
{
	int i;

	/* A bounded batch per wake-up: the loop serves everything else in between. */
	for (i = 0; i < 64; i++) {
		/* -1s for a peer whose SO_PEERCRED fails: its refusal's line says so. */
		struct ucred cr = { .pid = -1, .uid = (uid_t)-1, .gid = (gid_t)-1 };
		socklen_t cl = sizeof(cr);
		struct conn *c;
		int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				/* No fd left: take one back, tell this client, carry on. */
				if (spare_fd >= 0) {
					close(spare_fd);
					fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC);
					if (fd >= 0) {
						(void)getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr,
								 &cl);
						refuse(fd, VHOSTD_RPC_TOO_MANY,
						       "too many open files in the service: retry");
					}
					spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
				}
				/* A client that connects in a loop makes one each time. */
				conn_log(CLOG_NOFD, (int)cr.pid, (int)cr.uid, "control socket: "
					 "out of file descriptors: pid %d uid %d refused",
					 (int)cr.pid, (int)cr.uid);
			}
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || !peer_allowed(&cr)) {
			conn_log(CLOG_REFUSED, (int)cr.pid, (int)cr.uid, "control socket: pid %d "
				 "uid %d refused: not root, the service's user or a member of its "
				 "group", (int)cr.pid, (int)cr.uid);
			refuse(fd, VHOSTD_RPC_INVALID_REQUEST, "permission denied");
			continue;
		}
		if (nconns >= MAX_CONNS || vhostd.shutting_down) {
			refuse(fd, VHOSTD_RPC_TOO_MANY, vhostd.shutting_down ?
			       "the service is stopping" :
			       "too many control connections: retry later");
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->w.fd = fd;
		c->w.fn = conn_event;
		c->uid = (int)cr.uid;
		c->pid = (int)cr.pid;
		c->active_ms = vhostd_now_ms();
		if (vhostd_watch_add(&c->w, EPOLLIN) < 0) {
			close(fd);
			free(c);
			continue;
		}
		TAILQ_INSERT_TAIL(&conns, c, next);
		nconns++;
	}
}

int
vhostd_server_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = vhostd.rpc_socket;
	struct stat st;
	char msg[512];
	mode_t old;
	int fd, r;

	r = lm_app_sock_check(path, msg, sizeof(msg));
	if (r < 0) {
		SLOG("RPC socket: %s", msg);
		return -1;
	}
	if (r > 0)
		SLOG("RPC socket: %s", msg);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		SLOG("RPC socket: %s", strerror(errno));
		return -1;
	}
	/* Created 0600 (0660 with a group) from the start: no window with wider access. */
	old = umask(vhostd.rpc_group ? 0117 : 0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || (vhostd.rpc_group && chown(path, (uid_t)-1, vhostd.rpc_gid) < 0) ||
	    listen(fd, 256) < 0) {
		SLOG("RPC socket %s: %s", path, strerror(errno));
		if (r == 0)
			unlink(path);
		close(fd);
		return -1;
	}
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		listener_dev = st.st_dev;
		listener_ino = st.st_ino;
		listener_known = true;
	}
	listener.fd = fd;
	listener.fn = listener_event;
	spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (vhostd_watch_add(&listener, EPOLLIN) < 0) {
		unlink(path);
		close(fd);
		listener.fd = -1;
		return -1;
	}
	return 0;
}

/* The control socket's file, if its path still names the one bound (see listener_dev). */
static void
stop_remove_socket(void)
{
	const char *path = vhostd.rpc_socket;

	if (!listener_known) {
		SLOG("RPC socket %s: not removed (what was bound is unknown)", path);
		return;
	}
	switch (vhostd_sock_remove_if_same(AT_FDCWD, path, listener_dev, listener_ino)) {
	case VHOSTD_SOCK_OTHER:
		SLOG("RPC socket %s is no longer the socket the service created: left alone",
		     path);
		break;
	case VHOSTD_SOCK_FAILED:
		SLOG("RPC socket %s: cannot remove it: %s", path, strerror(errno));
		break;
	case VHOSTD_SOCK_REMOVED:
	case VHOSTD_SOCK_NONE:
		break;
	}
}

void
vhostd_server_stop(void)
{
	struct conn *c;

	if (listener.fd >= 0) {
		vhostd_watch_del(&listener);
		close(listener.fd);
		listener.fd = -1;
		stop_remove_socket();
	}
	while ((c = TAILQ_FIRST(&conns)) != NULL)
		conn_close(c);
	conn_logs_flush(vhostd_now_ms(), true);
	if (spare_fd >= 0)
		close(spare_fd);
	spare_fd = -1;
}

/* Whether fd has bytes waiting to be read. */
static bool
has_input(int fd)
{
	int n = 0;

	return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/*
 * Connections whose half request waited too long, or that did nothing for
 * --rpc-idle-timeout, are dropped: MAX_CONNS silent clients would lock
 * every other one out for as long as they kept their connections.
 */
int64_t
vhostd_server_timers(void)
{
	int64_t now = vhostd_now_ms(), next = -1, idle = vhostd.rpc_idle_ms, logs;
	struct conn *c, *tmp;

	for (c = TAILQ_FIRST(&conns); c != NULL; c = tmp) {
		tmp = TAILQ_NEXT(c, next);
		/* A call in flight is the service's delay, not the client's idleness. */
		if (idle > 0 && c->pending == 0) {
			/*
			 * Bytes that came and are not read yet (the loop takes one
			 * event a pass, the timers first): the client is not idle.
			 */
			if (now - c->active_ms >= idle && !c->dead && has_input(c->w.fd))
				c->active_ms = now;
			if (now - c->active_ms >= idle) {
				conn_log(CLOG_IDLE, c->pid, c->uid, "control client pid %d idle for "
					 "%u ms: closed", c->pid, vhostd.rpc_idle_ms);
				conn_close(c);
				continue;
			}
			if (next < 0 || c->active_ms + idle < next)
				next = c->active_ms + idle;
		}
		if (c->partial_since == 0)
			continue;
		if (now - c->partial_since >= PARTIAL_TIMEOUT_MS) {
			conn_log(CLOG_STALLED, c->pid, c->uid, "control client pid %d sent half "
				 "a request and stalled %d ms: dropped", c->pid, PARTIAL_TIMEOUT_MS);
			conn_close(c);
			continue;
		}
		if (next < 0 || c->partial_since + PARTIAL_TIMEOUT_MS < next)
			next = c->partial_since + PARTIAL_TIMEOUT_MS;
	}
	/*
	 * Events counted and not logged (these closes included): their line is
	 * due at their interval's end, the loop wakes for it.
	 */
	logs = conn_logs_flush(now, false);
	if (logs >= 0 && (next < 0 || logs < next))
		next = logs;
	return next;
}
