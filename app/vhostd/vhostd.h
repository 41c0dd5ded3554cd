/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd, the supervisor: the control socket (vhostd_server.c), the
 * configuration, the methods (vhostd_methods.c), one worker process per
 * VM (vhostd_vm.c) and the metrics (vhostd_metrics.c). One thread, one
 * epoll loop, nothing that blocks: a worker that takes its time answers
 * later, and only its own VM's callers wait for it. The supervisor links
 * no DPDK: it never maps guest memory.
 */
#ifndef VHOSTD_H
#define VHOSTD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include <jansson.h>

#include "vhostd_chan.h"
#include "vhostd_config.h"
#include "vhostd_rpc.h"

#define VHOSTD_VERSION_API 1

/* Logs name the VM and the device, one line per event. */
#define SLOG(fmt, ...) fprintf(stderr, "vhostd: " fmt "\n", ##__VA_ARGS__)
#define VMLOG(vm, fmt, ...) fprintf(stderr, "vhostd: vm %s: " fmt "\n", (vm)->name, \
				    ##__VA_ARGS__)
#define DEVLOG(d, fmt, ...) fprintf(stderr, "vhostd: vm %s device %s: " fmt "\n", \
				    (d)->cfg.vm, (d)->cfg.name, ##__VA_ARGS__)

/* Something the epoll loop watches: fn runs with the events. */
struct vhostd_watch {
	int fd;
	void (*fn)(struct vhostd_watch *w, uint32_t events);
};

struct vhostd_vm;

struct vhostd_dev {
	TAILQ_ENTRY(vhostd_dev) next;
	struct vhostd_devcfg cfg;
	struct vhostd_vm *vm;
	/* adding | waiting | connected | running | stopped | failed | removing */
	char state[16];
	char reason[256];
	/* The socket file its worker created (a server's), as the worker reported it. */
	bool sock_known;
	dev_t sock_dev;
	ino_t sock_ino;
};

/* A request to a worker, waiting for its answer (or for the worker to be ready). */
struct vhostd_wreq {
	TAILQ_ENTRY(vhostd_wreq) next;
	uint64_t id;
	json_t *msg;
	/* result (borrowed) or code + message; code 0 on success. */
	void (*done)(struct vhostd_wreq *r, json_t *result, int code, const char *message);
	struct vhostd_call *call;  /* the client's, or NULL (the service's own) */
	char dev[VHOSTD_NAME_MAX + 1];
};

TAILQ_HEAD(vhostd_wreq_list, vhostd_wreq);

struct vhostd_vm {
	TAILQ_ENTRY(vhostd_vm) next;
	char name[VHOSTD_NAME_MAX + 1];
	pid_t pid;                     /* 0: no worker now */
	struct vhostd_watch chan;      /* fd -1 without a worker */
	struct vhostd_buf in, out;
	bool ready;                    /* the worker said so: requests go out */
	bool stopping;                 /* asked to exit: no device left, or shutdown */
	bool reaping;                  /* its dead worker's requests being failed: kept */
	unsigned int restarts;
	int64_t started_ms;
	int64_t ready_by_ms;           /* kill a worker not ready by then */
	int64_t restart_at_ms;         /* 0: no restart scheduled */
	int64_t backoff_ms;
	unsigned int replaying;        /* adds of a restart still unanswered */
	struct vhostd_wreq_list sent, queued;
	json_t *metrics;               /* the worker's last "metrics" event: devices */
	long leaked;                   /* its last exit's count, -1 unknown */
	char last_exit[96];
	char fail_reason[256];         /* its worker's "failed" event: why it could not start */
};

struct vhostd {
	/* options */
	const char *rpc_socket;
	const char *config_path;
	bool config_missing_ok;        /* --allow-missing-config */
	const char *metrics_addr;
	const char *worker_path;
	const char *worker_eal;
	/* --socket-group, --socket-mode: for the devices' sockets that name none */
	const char *socket_group;
	bool socket_mode_set;
	unsigned int socket_mode;
	gid_t rpc_gid;
	bool rpc_group;
	unsigned int msg_timeout_ms;
	unsigned int rpc_idle_ms;      /* control connections idle this long are closed; 0 never */
	/* state */
	int epfd;
	TAILQ_HEAD(, vhostd_dev) devs;
	TAILQ_HEAD(, vhostd_vm) vms;
	uint64_t next_wreq_id;
	bool shutting_down;
	bool ready;
	unsigned int startup_pending;  /* configured device_adds unanswered at start */
	unsigned int reload_removes;   /* SIGHUP: removes before its adds */
	struct vhostd_config reload_next;
	int64_t start_ms;
	long leaked_total;
	/* Workers that exited 3 (they leaked) with their count lost: how many, unknown. */
	unsigned int leaked_uncounted;
};

extern struct vhostd vhostd;

int64_t vhostd_now_ms(void);
int vhostd_watch_add(struct vhostd_watch *w, uint32_t events);
void vhostd_watch_mod(struct vhostd_watch *w, uint32_t events);
void vhostd_watch_del(struct vhostd_watch *w);

/* vhostd_vm.c */
struct vhostd_vm *vhostd_vm_find(const char *name);
struct vhostd_dev *vhostd_dev_find(const char *name);
/* The configuration as the devices stand (added ones only). */
void vhostd_config_of_devs(struct vhostd_config *c);
/*
 * Add (call answered when the worker has) or remove a device; call NULL:
 * the service's own (configuration replay, SIGHUP), logged only.
 */
void vhostd_dev_add(const struct vhostd_devcfg *cfg, struct vhostd_call *call);
void vhostd_dev_remove(struct vhostd_dev *d, struct vhostd_call *call);
/*
 * SIGHUP, once its removals are answered: its additions (reload_next),
 * each unless a device of its name or socket exists (a client's add).
 */
void vhostd_reload_add(void);
/* Send op about device d to its worker; done gets the answer. */
int vhostd_vm_request(struct vhostd_vm *vm, const char *op, const char *dev,
		      struct vhostd_call *call,
		      void (*done)(struct vhostd_wreq *, json_t *, int, const char *));
/* The same with the fields of args (an object, copied) in the worker's request. */
int vhostd_vm_request_args(struct vhostd_vm *vm, const char *op, const char *dev,
			   json_t *args, struct vhostd_call *call,
			   void (*done)(struct vhostd_wreq *, json_t *, int, const char *));
void vhostd_vm_reap(pid_t pid, int status);
/* The EAL runtime directory a dead worker of vm (pid, reaped) left, if any. */
void vhostd_runtime_dir_remove(const char *vm, pid_t pid);
/* Restarts due, readiness deadlines; the next deadline (ms, -1 none). */
int64_t vhostd_vm_timers(void);
void vhostd_vm_shutdown_all(void);
/* At exit, every worker gone: the devices' records. */
void vhostd_devs_free(void);
bool vhostd_vm_all_gone(void);
void vhostd_check_ready(void);

/* vhostd_server.c */
int vhostd_server_start(void);
void vhostd_server_stop(void);
int64_t vhostd_server_timers(void);

/* vhostd_methods.c */
extern const struct vhostd_method vhostd_methods[];
extern const size_t vhostd_nmethods;

/* vhostd_metrics.c */
int vhostd_metrics_start(const char *addr);
struct sockaddr_in;
/* --metrics ADDRESS checked (vhostd_metrics.c): 0, or -1 and why in msg. */
int vhostd_metrics_parse(const char *addr, struct sockaddr_in *sin, char *msg, size_t len);
void vhostd_metrics_stop(void);
int64_t vhostd_metrics_timers(void);

#endif /* VHOSTD_H */
