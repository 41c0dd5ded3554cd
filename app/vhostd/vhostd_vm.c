/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The workers: one process per VM, started, spoken to, restarted. Every
 * request to a worker is queued on that worker alone and answered when
 * it answers; a worker that dies fails only its own requests, and is
 * restarted with a bounded back-off, its devices re-created.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "vhostd.h"
#include "vhostd_sockdir.h"

/* Back-off between restarts: none for the first, then doubling to at most 5 s. */
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
/* A worker that ran this long is healthy again: the next restart is immediate. */
#define STABLE_MS 10000
/* EAL start-up of a worker; one that takes longer is killed (and restarted). */
#define READY_TIMEOUT_MS 30000

struct vhostd_vm *
vhostd_vm_find(const char *name)
{
	struct vhostd_vm *vm;

	TAILQ_FOREACH(vm, &vhostd.vms, next)
		if (strcmp(vm->name, name) == 0)
			return vm;
	return NULL;
}

struct vhostd_dev *
vhostd_dev_find(const char *name)
{
	struct vhostd_dev *d;

	TAILQ_FOREACH(d, &vhostd.devs, next)
		if (strcmp(d->cfg.name, name) == 0)
			return d;
	return NULL;
}

void
vhostd_config_of_devs(struct vhostd_config *c)
{
	struct vhostd_dev *d;

	vhostd_config_init(c);
	TAILQ_FOREACH(d, &vhostd.devs, next)
		if (strcmp(d->state, "adding") != 0)
			vhostd_config_append(c, &d->cfg);
}

static unsigned int
vm_devices(struct vhostd_vm *vm, char *list, size_t len)
{
	struct vhostd_dev *d;
	unsigned int n = 0;
	size_t off = 0;

	if (len > 0)
		list[0] = '\0';
	TAILQ_FOREACH(d, &vhostd.devs, next) {
		if (d->vm != vm)
			continue;
		if (off < len)
			off += (size_t)snprintf(list + off, len - off, "%s%s", n ? ", " : "",
						d->cfg.name);
		n++;
	}
	return n;
}

static void dev_free(struct vhostd_dev *d);
static void vm_chan_event(struct vhostd_watch *w, uint32_t events);

static int
vm_spawn(struct vhostd_vm *vm)
{
	char chan[16], metrics[16], timeout[16];
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
		VMLOG(vm, "cannot create the worker's channel: %s", strerror(errno));
		return -1;
	}
	snprintf(chan, sizeof(chan), "%d", sv[1]);
	snprintf(metrics, sizeof(metrics), "%u", vhostd.metrics_addr != NULL ? 1000u : 0u);
	snprintf(timeout, sizeof(timeout), "%u", vhostd.msg_timeout_ms);
	pid = fork();
	if (pid < 0) {
		VMLOG(vm, "cannot start a worker: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		char *argv[14];
		int argc = 0;
		sigset_t all;

		/* The worker takes its own signals; a terminal's ^C is the supervisor's. */
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setpgid(0, 0);
		/* Blocking, and kept across exec: the worker's end of the channel. */
		fcntl(sv[1], F_SETFL, 0);
		fcntl(sv[1], F_SETFD, 0);
		argv[argc++] = (char *)vhostd.worker_path;
		argv[argc++] = "--vm";
		argv[argc++] = vm->name;
		argv[argc++] = "--channel";
		argv[argc++] = chan;
		argv[argc++] = "--metrics-ms";
		argv[argc++] = metrics;
		argv[argc++] = "--msg-timeout";
		argv[argc++] = timeout;
		if (vhostd.worker_eal != NULL) {
			argv[argc++] = "--eal";
			argv[argc++] = (char *)vhostd.worker_eal;
		}
		argv[argc] = NULL;
		execv(vhostd.worker_path, argv);
		fprintf(stderr, "vhostd: vm %s: cannot run the worker %s: %s\n", vm->name,
			vhostd.worker_path, strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	vm->pid = pid;
	vm->chan.fd = sv[0];
	vm->chan.fn = vm_chan_event;
	vm->ready = false;
	vm->started_ms = vhostd_now_ms();
	vm->ready_by_ms = vm->started_ms + READY_TIMEOUT_MS;
	vm->restart_at_ms = 0;
	vm->leaked = -1;
	vm->fail_reason[0] = '\0';
	vhostd_buf_free(&vm->in);
	vhostd_buf_free(&vm->out);
	if (vhostd_watch_add(&vm->chan, EPOLLIN) < 0) {
		kill(pid, SIGKILL);
		return 0; /* reaped as any dead worker, and restarted */
	}
	VMLOG(vm, "worker %d started%s", (int)pid, vm->restarts ? " (restart)" : "");
	return 0;
}

static struct vhostd_vm *
vm_create(const char *name)
{
	struct vhostd_vm *vm = calloc(1, sizeof(*vm));

	if (vm == NULL)
		return NULL;
	snprintf(vm->name, sizeof(vm->name), "%s", name);
	vm->chan.fd = -1;
	vm->leaked = -1;
	TAILQ_INIT(&vm->sent);
	TAILQ_INIT(&vm->queued);
	if (vm_spawn(vm) < 0) {
		free(vm);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&vhostd.vms, vm, next);
	return vm;
}

static void
vm_free(struct vhostd_vm *vm)
{
	TAILQ_REMOVE(&vhostd.vms, vm, next);
	vhostd_buf_free(&vm->in);
	vhostd_buf_free(&vm->out);
	json_decref(vm->metrics);
	free(vm);
}

static void
vm_flush(struct vhostd_vm *vm)
{
	int r;

	if (vm->chan.fd < 0)
		return;
	r = vhostd_buf_flush(vm->chan.fd, &vm->out);
	if (r < 0) {
		/* The worker's end is gone: its exit (SIGCHLD) does the rest. */
		vhostd_buf_free(&vm->out);
		return;
	}
	vhostd_watch_mod(&vm->chan, EPOLLIN | (r == 0 ? EPOLLOUT : 0));
}

static void
wreq_send(struct vhostd_vm *vm, struct vhostd_wreq *r)
{
	vhostd_chan_queue(&vm->out, r->msg);
	TAILQ_INSERT_TAIL(&vm->sent, r, next);
	vm_flush(vm);
}

int
vhostd_vm_request(struct vhostd_vm *vm, const char *op, const char *dev,
		  struct vhostd_call *call,
		  void (*done)(struct vhostd_wreq *, json_t *, int, const char *))
{
	return vhostd_vm_request_args(vm, op, dev, NULL, call, done);
}

int
vhostd_vm_request_args(struct vhostd_vm *vm, const char *op, const char *dev, json_t *args,
		       struct vhostd_call *call,
		       void (*done)(struct vhostd_wreq *, json_t *, int, const char *))
{
	struct vhostd_wreq *r = calloc(1, sizeof(*r));
	struct vhostd_dev *d = dev != NULL ? vhostd_dev_find(dev) : NULL;

	if (r == NULL)
		return -ENOMEM;
	r->id = ++vhostd.next_wreq_id;
	r->done = done;
	r->call = call;
	snprintf(r->dev, sizeof(r->dev), "%s", dev != NULL ? dev : "");
	if (strcmp(op, "add") == 0 && d != NULL) {
		struct vhostd_devcfg cfg = d->cfg;

		/* The service's defaults for a socket of its own that names none. */
		if (!cfg.client && cfg.socket_group[0] == '\0' && vhostd.socket_group != NULL)
			snprintf(cfg.socket_group, sizeof(cfg.socket_group), "%s",
				 vhostd.socket_group);
		if (!cfg.client && !cfg.socket_mode_set && vhostd.socket_mode_set) {
			cfg.socket_mode_set = true;
			cfg.socket_mode = vhostd.socket_mode;
		}
		r->msg = vhostd_devcfg_to_json(&cfg);
	} else {
		r->msg = args != NULL ? json_deep_copy(args) : json_object();
		if (dev != NULL)
			json_object_set_new(r->msg, "name", json_string(dev));
	}
	json_object_set_new(r->msg, "id", json_integer((json_int_t)r->id));
	json_object_set_new(r->msg, "op", json_string(op));
	/* A worker told to exit takes nothing more: its successor will. */
	if (vm->ready && !vm->stopping)
		wreq_send(vm, r);
	else
		TAILQ_INSERT_TAIL(&vm->queued, r, next);
	return 0;
}

static void
wreq_finish(struct vhostd_wreq *r, json_t *result, int code, const char *message)
{
	if (r->done != NULL)
		r->done(r, result, code, message);
	json_decref(r->msg);
	free(r);
}

/* Every request of vm unanswered: answered with code and why. */
static void
vm_fail_requests(struct vhostd_vm *vm, struct vhostd_wreq_list *l, const char *why)
{
	struct vhostd_wreq *r;

	while ((r = TAILQ_FIRST(l)) != NULL) {
		TAILQ_REMOVE(l, r, next);
		wreq_finish(r, NULL, VHOSTD_RPC_UNAVAILABLE, why);
	}
}

/*
 * The requests of l a client waits for, answered with why; the service's
 * own (a restart's replays) stay for the next worker.
 */
static void
vm_fail_calls(struct vhostd_wreq_list *l, const char *why)
{
	struct vhostd_wreq *r, *n;

	for (r = TAILQ_FIRST(l); r != NULL; r = n) {
		n = TAILQ_NEXT(r, next);
		if (r->call == NULL)
			continue;
		TAILQ_REMOVE(l, r, next);
		wreq_finish(r, NULL, VHOSTD_RPC_UNAVAILABLE, why);
	}
}

static void
on_reply(struct vhostd_vm *vm, json_t *m)
{
	json_int_t id = json_integer_value(json_object_get(m, "id"));
	json_t *err = json_object_get(m, "error");
	struct vhostd_wreq *r;

	TAILQ_FOREACH(r, &vm->sent, next)
		if (r->id == (uint64_t)id)
			break;
	if (r == NULL) {
		VMLOG(vm, "answer to no request (id %lld): ignored", (long long)id);
		return;
	}
	TAILQ_REMOVE(&vm->sent, r, next);
	if (err != NULL) {
		json_t *code = json_object_get(err, "code");
		const char *msg = json_string_value(json_object_get(err, "message"));

		wreq_finish(r, NULL, json_is_integer(code) && json_integer_value(code) != 0 ?
				     (int)json_integer_value(code) : VHOSTD_RPC_INTERNAL_ERROR,
			    msg != NULL ? msg : "the worker failed");
	} else {
		wreq_finish(r, json_object_get(m, "result"), 0, NULL);
	}
}

static void replay_done(struct vhostd_wreq *r, json_t *result, int code, const char *msg);

static void
on_ready(struct vhostd_vm *vm)
{
	struct vhostd_dev *d;
	struct vhostd_wreq *r;

	vm->ready = true;
	/* A restarted worker: its devices first, before anything queued meanwhile. */
	if (vm->restarts > 0) {
		TAILQ_FOREACH(d, &vhostd.devs, next) {
			if (d->vm != vm || strcmp(d->state, "adding") == 0 ||
			    strcmp(d->state, "removing") == 0)
				continue;
			vm->replaying++;
			vhostd_vm_request(vm, "add", d->cfg.name, NULL, replay_done);
		}
	}
	while ((r = TAILQ_FIRST(&vm->queued)) != NULL) {
		TAILQ_REMOVE(&vm->queued, r, next);
		wreq_send(vm, r);
	}
}

static void
on_event(struct vhostd_vm *vm, json_t *m)
{
	const char *ev = json_string_value(json_object_get(m, "event"));
	struct vhostd_dev *d;

	if (strcmp(ev, "ready") == 0) {
		on_ready(vm);
	} else if (strcmp(ev, "state") == 0) {
		const char *name = json_string_value(json_object_get(m, "name"));
		const char *state = json_string_value(json_object_get(m, "state"));
		const char *reason = json_string_value(json_object_get(m, "reason"));

		d = name != NULL ? vhostd_dev_find(name) : NULL;
		/* A device of another VM is not this worker's to speak of. */
		if (d == NULL || d->vm != vm || state == NULL || strlen(state) >= sizeof(d->state) ||
		    strcmp(d->state, "adding") == 0 || strcmp(d->state, "removing") == 0)
			return;
		snprintf(d->state, sizeof(d->state), "%s", state);
		snprintf(d->reason, sizeof(d->reason), "%s", reason != NULL ? reason : "");
	} else if (strcmp(ev, "metrics") == 0) {
		json_decref(vm->metrics);
		vm->metrics = json_incref(json_object_get(m, "devices"));
	} else if (strcmp(ev, "failed") == 0) {
		const char *why = json_string_value(json_object_get(m, "reason"));

		snprintf(vm->fail_reason, sizeof(vm->fail_reason), "%s", why != NULL ? why : "");
	} else if (strcmp(ev, "exit") == 0) {
		json_t *l = json_object_get(m, "leaked");

		vm->leaked = json_is_integer(l) ? (long)json_integer_value(l) : -1;
	}
}

/* A message of vm's worker, read whole from its channel: an event or an answer. */
static void
vm_dispatch(struct vhostd_vm *vm, json_t *m)
{
	if (json_object_get(m, "event") != NULL)
		on_event(vm, m);
	else
		on_reply(vm, m);
}

static void
vm_chan_event(struct vhostd_watch *w, uint32_t events)
{
	struct vhostd_vm *vm = (struct vhostd_vm *)((char *)w - offsetof(struct vhostd_vm, chan));
	json_t *m;
	ssize_t r;
	int n;

	if (events & EPOLLOUT)
		vm_flush(vm);
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	r = vhostd_buf_read(w->fd, &vm->in, VHOSTD_CHAN_MAX_LINE);
	if (r == -EAGAIN)
		return;
	if (r == -E2BIG) {
		VMLOG(vm, "worker %d sent a line over %u bytes: killed", (int)vm->pid,
		      VHOSTD_CHAN_MAX_LINE);
		kill(vm->pid, SIGKILL);
	}
	if (r <= 0) {
		/* End of the channel: the worker is going; SIGCHLD tells why. */
		vhostd_watch_del(w);
		close(w->fd);
		w->fd = -1;
		return;
	}
	while ((n = vhostd_chan_next(&vm->in, &m)) != 0) {
		if (n < 0 || (json_object_get(m, "event") != NULL &&
			      !json_is_string(json_object_get(m, "event")))) {
			VMLOG(vm, "worker %d sent a malformed message: killed", (int)vm->pid);
			json_decref(m);
			kill(vm->pid, SIGKILL);
			return;
		}
		vm_dispatch(vm, m);
		json_decref(m);
	}
}

/*
 * vm's worker is dead and its channel about to be closed. What it wrote
 * before it died, its answers and its last message, the exit report (how
 * many device objects it left alive), races its death to the loop: its
 * SIGCHLD handled first, they are still in the channel, or half read
 * behind a large message. What the socket holds now is read, and no more
 * (a process the worker left behind may hold the channel and write on),
 * and handled as it would have been before the death: an answer answers
 * its request (failed as unanswered, the worker had created a device its
 * client was told it had not), an exit report counts. But 'ready': a dead
 * worker takes no request. The caller is reaping vm (vm->reaping, no
 * longer ready): what the answers do cannot free vm or send it anything.
 */
static void
vm_chan_drain(struct vhostd_vm *vm)
{
	int queued = 0;
	json_t *m;
	ssize_t r;
	int n;

	if (ioctl(vm->chan.fd, FIONREAD, &queued) < 0)
		return;
	while (queued > 0) {
		r = vhostd_buf_read(vm->chan.fd, &vm->in, VHOSTD_CHAN_MAX_LINE);
		if (r <= 0)
			return;
		queued -= (int)r;
		while ((n = vhostd_chan_next(&vm->in, &m)) != 0) {
			json_t *ev = json_object_get(m, "event");

			/* Malformed: the worker's own kill is moot, its pid may be another's. */
			if (n > 0 && (ev == NULL || (json_is_string(ev) &&
						     strcmp(json_string_value(ev), "ready") != 0)))
				vm_dispatch(vm, m);
			json_decref(m);
		}
	}
}

/* ---- devices ---- */

static void
dev_free(struct vhostd_dev *d)
{
	TAILQ_REMOVE(&vhostd.devs, d, next);
	free(d);
}

/* A VM without devices has no worker: it exits, and its VM is forgotten. */
static void
vm_release_if_empty(struct vhostd_vm *vm)
{
	/* The reap of its worker decides once every request is answered. */
	if (vm->reaping || vm_devices(vm, NULL, 0) > 0 || vm->stopping ||
	    !TAILQ_EMPTY(&vm->queued))
		return;
	if (vm->pid > 0) {
		vhostd_vm_request(vm, "exit", NULL, NULL, NULL);
		VMLOG(vm, "no device left: worker %d stops", (int)vm->pid);
		vm->stopping = true;
	} else {
		vm_free(vm);
	}
}

/* What an add's answer says of the socket file the worker created for d. */
static void
dev_socket_created(struct vhostd_dev *d, json_t *result)
{
	json_t *dev = json_object_get(result, "socket_dev");
	json_t *ino = json_object_get(result, "socket_ino");

	d->sock_known = !d->cfg.client && json_is_integer(dev) && json_is_integer(ino);
	if (!d->sock_known)
		return;
	d->sock_dev = (dev_t)json_integer_value(dev);
	d->sock_ino = (ino_t)json_integer_value(ino);
}

/*
 * d is removed, its worker maybe gone without removing its socket (killed,
 * or a restarted one that never re-created d): the file is removed here
 * if it is still the socket d's worker created (same device and inode,
 * never through a symlink). Anything else there is not ours: left alone.
 * The check and the removal are made in one directory, through its fd,
 * and only in a directory nobody but root or our user can change names
 * in: so the file checked is the file removed.
 */
static void
dev_socket_remove(struct vhostd_dev *d)
{
	const char *base;
	char why[640];
	int dfd;

	if (!d->sock_known)
		return;
	dfd = vhostd_sockdir_open(d->cfg.socket, &base, why, sizeof(why));
	if (dfd < 0) {
		if (dfd != -ENOENT)
			DEVLOG(d, "its socket %s left: %s", d->cfg.socket, why);
		return;
	}
	switch (vhostd_sock_remove_if_same(dfd, base, d->sock_dev, d->sock_ino)) {
	case VHOSTD_SOCK_OTHER:
		DEVLOG(d, "%s is no longer the socket its worker created: left alone",
		       d->cfg.socket);
		break;
	case VHOSTD_SOCK_FAILED:
		DEVLOG(d, "cannot remove its socket %s: %s", d->cfg.socket, strerror(errno));
		break;
	case VHOSTD_SOCK_REMOVED:
		DEVLOG(d, "its worker gone, its socket %s removed", d->cfg.socket);
		break;
	case VHOSTD_SOCK_NONE:
		break;
	}
	close(dfd);
}

/*
 * The service stops and vm's worker is down (killed, its restart not due
 * yet), or went without its teardown (killed, or a restarted one that
 * never re-created the devices): no worker is left to remove its devices'
 * sockets, so the service does, each only if still the file that worker
 * made. A worker that tore down removed its own: nothing is found.
 */
static void
vm_sockets_remove(struct vhostd_vm *vm)
{
	struct vhostd_dev *d;

	TAILQ_FOREACH(d, &vhostd.devs, next)
		if (d->vm == vm)
			dev_socket_remove(d);
}

static void
add_done(struct vhostd_wreq *r, json_t *result, int code, const char *msg)
{
	struct vhostd_dev *d = vhostd_dev_find(r->dev);
	struct vhostd_vm *vm = d != NULL ? d->vm : NULL;

	if (d == NULL)
		return;
	if (code != 0) {
		DEVLOG(d, "not added: %s", msg);
		if (r->call != NULL)
			vhostd_call_fail(r->call, code == VHOSTD_RPC_UNAVAILABLE ?
					 VHOSTD_RPC_UNAVAILABLE : code, "%s", msg);
		dev_free(d);
		vm_release_if_empty(vm);
	} else {
		const char *st = json_string_value(json_object_get(result, "state"));

		snprintf(d->state, sizeof(d->state), "%s", st != NULL ? st : "waiting");
		d->reason[0] = '\0';
		dev_socket_created(d, result);
		DEVLOG(d, "added on %s (%s), devargs %s", d->cfg.socket,
		       d->cfg.client ? "client" : "server", d->cfg.devargs);
		if (r->call != NULL)
			vhostd_call_reply(r->call, json_pack("{s:s, s:s, s:s, s:s, s:i}",
							     "name", d->cfg.name, "vm", d->cfg.vm,
							     "socket", d->cfg.socket, "state",
							     d->state, "worker_pid",
							     (int)vm->pid));
	}
	if (r->call == NULL && vhostd.startup_pending > 0) {
		vhostd.startup_pending--;
		vhostd_check_ready();
	}
}

static void
replay_done(struct vhostd_wreq *r, json_t *result, int code, const char *msg)
{
	struct vhostd_dev *d = vhostd_dev_find(r->dev);

	if (d != NULL && d->vm != NULL) {
		if (d->vm->replaying > 0)
			d->vm->replaying--;
		if (code != 0) {
			snprintf(d->state, sizeof(d->state), "failed");
			snprintf(d->reason, sizeof(d->reason), "not re-created after the worker's "
				 "restart: %s", msg);
			DEVLOG(d, "%s", d->reason);
		} else {
			snprintf(d->state, sizeof(d->state), "waiting");
			d->reason[0] = '\0';
			dev_socket_created(d, result);
			DEVLOG(d, "re-created by worker %d", (int)d->vm->pid);
		}
	}
}

void
vhostd_dev_add(const struct vhostd_devcfg *cfg, struct vhostd_call *call)
{
	struct vhostd_dev *d = calloc(1, sizeof(*d));
	struct vhostd_vm *vm;

	if (d == NULL) {
		if (call != NULL)
			vhostd_call_fail(call, VHOSTD_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	d->cfg = *cfg;
	snprintf(d->state, sizeof(d->state), "adding");
	vm = vhostd_vm_find(cfg->vm);
	if (vm == NULL)
		vm = vm_create(cfg->vm);
	if (vm == NULL) {
		free(d);
		if (call != NULL)
			vhostd_call_fail(call, VHOSTD_RPC_DEVICE_FAILED,
					 "vm '%s': cannot start its worker", cfg->vm);
		return;
	}
	d->vm = vm;
	/* Listed at once (state adding): a second add of the name or socket is refused. */
	TAILQ_INSERT_TAIL(&vhostd.devs, d, next);
	if (vhostd_vm_request(vm, "add", d->cfg.name, call, add_done) < 0) {
		dev_free(d);
		if (call != NULL)
			vhostd_call_fail(call, VHOSTD_RPC_INTERNAL_ERROR, "out of memory");
		vm_release_if_empty(vm);
	}
}

void
vhostd_reload_add(void)
{
	struct vhostd_config cur;
	struct vhostd_dev *d;
	char msg[400];
	size_t i;

	for (i = 0; i < vhostd.reload_next.n; i++) {
		const struct vhostd_devcfg *cfg = &vhostd.reload_next.dev[i];

		/*
		 * The reload's difference left out the devices being added: a
		 * client's device_add may be adding this very one. A second record
		 * of one name would never settle (the worker refuses the second
		 * add, and its answer finds the first record by name), so the
		 * reload's add is answered as any second add is: the device
		 * exists. The same device joins the client's add; another one
		 * (other socket, devargs) is left out, and the next SIGHUP sees it
		 * as changed.
		 */
		vhostd_config_init(&cur);
		TAILQ_FOREACH(d, &vhostd.devs, next)
			vhostd_config_append(&cur, &d->cfg);
		if (vhostd_config_check_new(&cur, cfg, msg, sizeof(msg)) < 0) {
			d = vhostd_dev_find(cfg->name);
			if (d != NULL && vhostd_devcfg_equal(&d->cfg, cfg))
				SLOG("SIGHUP: device %s is being added already (%s): left to that "
				     "add", cfg->name, d->state);
			else
				SLOG("SIGHUP: device %s not added: %s", cfg->name, msg);
		} else {
			vhostd_dev_add(cfg, NULL);
		}
		vhostd_config_free(&cur);
	}
	vhostd_config_free(&vhostd.reload_next);
}

/* SIGHUP: one of its removals answered; after the last, its additions. */
static void
reload_removed(void)
{
	if (vhostd.reload_removes == 0 || --vhostd.reload_removes > 0)
		return;
	vhostd_reload_add();
}

static void
remove_done(struct vhostd_wreq *r, json_t *result, int code, const char *msg)
{
	struct vhostd_dev *d = vhostd_dev_find(r->dev);
	struct vhostd_vm *vm;
	char was[16];

	if (d == NULL) {
		/*
		 * Removed by another request meanwhile (a client's and a reload's
		 * for one device): this one is answered all the same, and a
		 * reload's counts, or the reload never ends.
		 */
		if (r->call != NULL)
			vhostd_call_reply(r->call, json_pack("{s:s, s:s}", "name", r->dev,
							     "was", "gone"));
		else
			reload_removed();
		return;
	}
	vm = d->vm;
	/* The worker gone meanwhile took the device with it: removed all the same. */
	if (code != 0 && code != VHOSTD_RPC_UNAVAILABLE && code != VHOSTD_RPC_NOT_FOUND) {
		snprintf(d->state, sizeof(d->state), "failed");
		snprintf(d->reason, sizeof(d->reason), "remove failed: %s", msg);
		if (r->call != NULL)
			vhostd_call_fail(r->call, code, "%s", msg);
		else
			reload_removed();
		return;
	}
	snprintf(was, sizeof(was), "%s", result != NULL &&
		 json_is_string(json_object_get(result, "was")) ?
		 json_string_value(json_object_get(result, "was")) : "gone");
	/* Removed without its worker's word: the log says why (down, died, knew it not). */
	DEVLOG(d, "removed (was %s%s%s)", was, code != 0 ? ": " : "", code != 0 ? msg : "");
	dev_socket_remove(d);
	if (r->call != NULL)
		vhostd_call_reply(r->call, json_pack("{s:s, s:s, s:s}", "name", d->cfg.name,
						     "vm", d->cfg.vm, "was", was));
	dev_free(d);
	if (r->call == NULL)
		reload_removed();
	vm_release_if_empty(vm);
}

void
vhostd_dev_remove(struct vhostd_dev *d, struct vhostd_call *call)
{
	struct vhostd_vm *vm = d->vm;
	char was[sizeof(d->state)];
	int ret;

	if (vm->pid <= 0) {
		/* No worker (restarting): nothing holds the device. */
		struct vhostd_wreq r = { .call = call };

		snprintf(d->state, sizeof(d->state), "removing");
		snprintf(r.dev, sizeof(r.dev), "%s", d->cfg.name);
		remove_done(&r, NULL, VHOSTD_RPC_UNAVAILABLE, "its worker is down");
		return;
	}
	snprintf(was, sizeof(was), "%s", d->state);
	snprintf(d->state, sizeof(d->state), "removing");
	ret = vhostd_vm_request(vm, "remove", d->cfg.name, call, remove_done);
	if (ret == 0)
		return;
	/*
	 * No memory for the request: the worker still runs the device, so
	 * this call fails alone. Taken for a worker down, the device was
	 * dropped while its worker ran it, and the worker told to exit with
	 * what looked like its last device.
	 */
	snprintf(d->state, sizeof(d->state), "%s", was);
	DEVLOG(d, "not removed: no memory to queue the request: %s", strerror(-ret));
	if (call != NULL)
		vhostd_call_fail(call, VHOSTD_RPC_INTERNAL_ERROR,
				 "no memory to queue the request: %s", strerror(-ret));
	else
		reload_removed();
}

/* ---- exits, restarts ---- */

static void
describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

/*
 * The EAL runtime directory of vm's dead worker pid. A worker that tears
 * down removes its own (lm_app_eal_cleanup); one that was killed leaves it,
 * and every kill -9, crash or restart added one more to the runtime
 * directory. Its path is EAL's (22.11: /var/run/dpdk for root, else
 * $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk) and the worker's file prefix,
 * vhostd-<vm>-<pid> (vhostd_worker.c): only that directory, found in the
 * runtime directory through an fd, never through a symlink, and only if
 * it is a directory of ours. What EAL leaves in it (files, sockets) is
 * removed, never a directory in it (EAL makes none there).
 */
void
vhostd_runtime_dir_remove(const char *vm, pid_t pid)
{
	const char *base = "/var/run";
	char run[PATH_MAX], name[VHOSTD_NAME_MAX + 32];
	int rfd, dfd, n = 0;
	struct dirent *e;
	struct stat st;
	DIR *dir;

	if (getuid() != 0)
		base = getenv("XDG_RUNTIME_DIR") != NULL ? getenv("XDG_RUNTIME_DIR") : "/tmp";
	snprintf(run, sizeof(run), "%s/dpdk", base);
	snprintf(name, sizeof(name), "vhostd-%s-%d", vm, (int)pid);
	rfd = open(run, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return;
	dfd = openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_uid != geteuid()) {
		if (dfd >= 0)
			close(dfd);
		close(rfd);
		return;
	}
	dir = fdopendir(dfd);
	if (dir == NULL) {
		close(dfd);
		close(rfd);
		return;
	}
	while ((e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		/* unlinkat without AT_REMOVEDIR: a symlink goes, never what it names. */
		if (unlinkat(dfd, e->d_name, 0) == 0)
			n++;
	}
	closedir(dir);
	if (unlinkat(rfd, name, AT_REMOVEDIR) == 0)
		SLOG("vm %s: worker %d's EAL runtime directory %s/%s removed%s", vm, (int)pid, run,
		     name, n > 0 ? " (with what it held)" : "");
	else
		SLOG("vm %s: cannot remove worker %d's EAL runtime directory %s/%s: %s", vm,
		     (int)pid, run, name, strerror(errno));
	close(rfd);
}

void
vhostd_vm_reap(pid_t pid, int status)
{
	char why[512], devices[512];
	struct vhostd_dev *d;
	struct vhostd_vm *vm;
	bool was_ready;
	int64_t up;

	TAILQ_FOREACH(vm, &vhostd.vms, next)
		if (vm->pid == pid)
			break;
	if (vm == NULL)
		return;
	describe_status(status, vm->last_exit, sizeof(vm->last_exit));
	vhostd_runtime_dir_remove(vm->name, pid);
	was_ready = vm->ready;
	/*
	 * The answers its channel still holds first, then the requests left
	 * unanswered: the answers may remove the VM's last device (the VM
	 * stays until we look) or send it a request (queued for the next).
	 */
	vm->reaping = true;
	vm->ready = false;
	if (vm->chan.fd >= 0) {
		vm_chan_drain(vm);
		vhostd_watch_del(&vm->chan);
		close(vm->chan.fd);
		vm->chan.fd = -1;
	}
	vm->pid = 0;
	vm->replaying = 0;
	json_decref(vm->metrics);
	vm->metrics = NULL;
	vm_devices(vm, devices, sizeof(devices));
	if (vm->leaked >= 0)
		vhostd.leaked_total += vm->leaked;
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		/* Its report lost: a worker exits 3 only when it left device objects alive. */
		vhostd.leaked_uncounted++;
	snprintf(why, sizeof(why), "vm %s: its worker %d %s before answering", vm->name,
		 (int)pid, vm->last_exit);
	vm_fail_requests(vm, &vm->sent, why);
	if (!was_ready && !vm->stopping && !vhostd.shutting_down) {
		/*
		 * Never ready (its EAL refused its options, say): the clients waiting
		 * for it get their answer now instead of one restart after another.
		 */
		snprintf(why, sizeof(why), "vm %s: its worker %d %s before it was ready%s%s",
			 vm->name, (int)pid, vm->last_exit, vm->fail_reason[0] ? ": " : "",
			 vm->fail_reason);
		vm_fail_calls(&vm->queued, why);
	}
	vm->reaping = false;
	if (!vm->stopping && !vhostd.shutting_down && vm_devices(vm, NULL, 0) == 0 &&
	    TAILQ_EMPTY(&vm->queued)) {
		VMLOG(vm, "worker %d %s, no device left: not restarted", (int)pid, vm->last_exit);
		vm_free(vm);
		return;
	}
	if (vm->stopping || vhostd.shutting_down) {
		VMLOG(vm, "worker %d %s, %ld device objects left alive%s", (int)pid,
		      vm->last_exit, vm->leaked, vm->leaked < 0 ? " (unknown: it did not say)" :
		      "");
		if (!vhostd.shutting_down && !TAILQ_EMPTY(&vm->queued)) {
			/* A device_add came while it was stopping: a new worker for it. */
			vm->stopping = false;
			vm->restarts = 0;
			vm_spawn(vm);
			return;
		}
		vm_fail_requests(vm, &vm->queued, why);
		if (vhostd.shutting_down)
			vm_sockets_remove(vm);
		vm_free(vm);
		return;
	}
	up = vhostd_now_ms() - vm->started_ms;
	if (up >= STABLE_MS || vm->restarts == 0)
		vm->backoff_ms = 0;
	VMLOG(vm, "worker %d %s after %.1f s (devices: %s); restart %u in %lld ms",
	      (int)pid, vm->last_exit, up / 1000.0, devices[0] ? devices : "none",
	      vm->restarts + 1, (long long)vm->backoff_ms);
	TAILQ_FOREACH(d, &vhostd.devs, next) {
		if (d->vm != vm || strcmp(d->state, "adding") == 0)
			continue;
		snprintf(d->state, sizeof(d->state), "failed");
		snprintf(d->reason, sizeof(d->reason), "worker down (%s): restarting",
			 vm->last_exit);
	}
	vm->restart_at_ms = vhostd_now_ms() + vm->backoff_ms;
	vm->backoff_ms = vm->backoff_ms == 0 ? BACKOFF_FIRST_MS :
			 (vm->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
			  vm->backoff_ms * 2);
	vm->restarts++;
}

int64_t
vhostd_vm_timers(void)
{
	int64_t now = vhostd_now_ms(), next = -1;
	struct vhostd_vm *vm;

	TAILQ_FOREACH(vm, &vhostd.vms, next) {
		if (vm->pid == 0 && vm->restart_at_ms > 0) {
			if (now >= vm->restart_at_ms) {
				vm->restart_at_ms = 0;
				if (vm_spawn(vm) < 0)
					vm->restart_at_ms = now + BACKOFF_MAX_MS;
			} else if (next < 0 || vm->restart_at_ms < next) {
				next = vm->restart_at_ms;
			}
		}
		if (vm->pid > 0 && !vm->ready) {
			if (now >= vm->ready_by_ms) {
				VMLOG(vm, "worker %d not ready within %d ms: killed", (int)vm->pid,
				      READY_TIMEOUT_MS);
				kill(vm->pid, SIGKILL);
				vm->ready_by_ms = now + READY_TIMEOUT_MS;
			} else if (next < 0 || vm->ready_by_ms < next) {
				next = vm->ready_by_ms;
			}
		}
	}
	return next;
}

void
vhostd_vm_shutdown_all(void)
{
	struct vhostd_vm *vm, *tmp;

	for (vm = TAILQ_FIRST(&vhostd.vms); vm != NULL; vm = tmp) {
		tmp = TAILQ_NEXT(vm, next);
		if (vm->pid > 0) {
			/* An exit request, and SIGTERM for a worker busy in a probe. */
			if (!vm->stopping)
				vhostd_vm_request(vm, "exit", NULL, NULL, NULL);
			vm->stopping = true;
			kill(vm->pid, SIGTERM);
		} else {
			vm->stopping = true;
			vm_fail_requests(vm, &vm->queued, "the service is stopping");
			vm_sockets_remove(vm);
			vm_free(vm);
		}
	}
}

bool
vhostd_vm_all_gone(void)
{
	return TAILQ_EMPTY(&vhostd.vms);
}

void
vhostd_devs_free(void)
{
	struct vhostd_dev *d;

	while ((d = TAILQ_FIRST(&vhostd.devs)) != NULL)
		dev_free(d);
}
