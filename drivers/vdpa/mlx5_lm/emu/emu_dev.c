/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated device: creation and teardown (with the leak report), the
 * object table shared by every object family, the log sink and fault
 * injection.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_priv.h"

static atomic_ulong leaked_total;
/*
 * What is alive in the process, by kind, and the devices: a device its
 * driver never closes leaks nothing at emu_dev_destroy, only here.
 */
static atomic_ulong live_total[EMU_KIND_MAX];
static atomic_ulong live_devices;

static void
default_log(int level, const char *line)
{
	if (level <= 4)
		fprintf(stderr, "emu %s\n", line);
}

static _Atomic(emu_log_fn) log_fn = default_log;

void
emu_set_log(emu_log_fn fn)
{
	atomic_store(&log_fn, fn != NULL ? fn : default_log);
}

void
emu_log(const struct emu_dev *dev, int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%s: ", dev != NULL ? dev->name : "-");
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	atomic_load(&log_fn)(level, line);
}

static const char *const kind_names[EMU_KIND_MAX] = {
	[EMU_KIND_PD] = "PD",
	[EMU_KIND_TD] = "TRANSPORT_DOMAIN",
	[EMU_KIND_TIS] = "TIS",
	[EMU_KIND_RQT] = "RQT",
	[EMU_KIND_TIR] = "TIR",
	[EMU_KIND_FT] = "FLOW_TABLE",
	[EMU_KIND_FG] = "FLOW_GROUP",
	[EMU_KIND_FTE] = "FLOW_TABLE_ENTRY",
	[EMU_KIND_CQ] = "CQ",
	[EMU_KIND_QP] = "QP",
	[EMU_KIND_MKEY] = "MKEY",
	[EMU_KIND_UMEM] = "UMEM",
	[EMU_KIND_VIRTQ] = "VIRTIO_NET_Q",
	[EMU_KIND_VQ_COUNTERS] = "VIRTIO_Q_COUNTERS",
	[EMU_KIND_UAR] = "UAR",
	[EMU_KIND_ROOT_RULE] = "ROOT_FLOW_RULE",
};

const char *
emu_kind_name(enum emu_kind kind)
{
	return kind < EMU_KIND_MAX ? kind_names[kind] : "UNKNOWN";
}

/* ---- Object table -------------------------------------------------------- */
static unsigned int
bucket_of(enum emu_kind kind, uint32_t id)
{
	return ((id * 2654435761u) ^ ((uint32_t)kind * 40503u)) % EMU_HASH_BUCKETS;
}

struct emu_obj *
emu_obj_find(struct emu_dev *dev, enum emu_kind kind, uint32_t id)
{
	struct emu_obj *o;

	for (o = dev->hash[bucket_of(kind, id)]; o != NULL; o = o->hnext)
		if (o->kind == kind && o->id == id)
			return o;
	return NULL;
}

static enum emu_id_space
space_of(enum emu_kind kind)
{
	if (kind == EMU_KIND_VIRTQ || kind == EMU_KIND_VQ_COUNTERS)
		return EMU_IDS_GENERAL;
	return (enum emu_id_space)kind;
}

static bool
id_in_use(struct emu_dev *dev, enum emu_kind kind, uint32_t id)
{
	if (space_of(kind) == EMU_IDS_GENERAL)
		return emu_obj_find(dev, EMU_KIND_VIRTQ, id) != NULL ||
		       emu_obj_find(dev, EMU_KIND_VQ_COUNTERS, id) != NULL;
	return emu_obj_find(dev, kind, id) != NULL;
}

/*
 * Ids grow monotonically from the first and wrap, skipping live ones:
 * firmware reuses numbers eventually, but not immediately, so a stale id
 * in the driver shows up as BAD_RES rather than hitting a new object.
 */
static uint32_t
alloc_id(struct emu_dev *dev, enum emu_kind kind)
{
	enum emu_id_space s = space_of(kind);
	uint32_t first = kind == EMU_KIND_MKEY ? EMU_MKEY_FIRST_INDEX : 1;
	uint32_t max = s == EMU_IDS_GENERAL ? 0xfffffffeu : 0xffffffu;
	uint32_t id, tries;

	for (tries = 0; tries < 1u << 20; tries++) {
		id = dev->next_id[s];
		if (id < first || id > max)
			id = first;
		dev->next_id[s] = id + 1;
		if (!id_in_use(dev, kind, id))
			return id;
	}
	return 0;
}

struct emu_obj *
emu_obj_new(struct emu_dev *dev, enum emu_kind kind, size_t size)
{
	struct emu_obj *o;
	unsigned int b;
	uint32_t id;

	id = alloc_id(dev, kind);
	if (id == 0)
		return NULL;
	o = calloc(1, size);
	if (o == NULL)
		return NULL;
	o->kind = kind;
	o->id = id;
	b = bucket_of(kind, id);
	o->hnext = dev->hash[b];
	dev->hash[b] = o;
	o->next = &dev->all;
	o->prev = dev->all.prev;
	dev->all.prev->next = o;
	dev->all.prev = o;
	o->knext = &dev->of_kind[kind];
	o->kprev = dev->of_kind[kind].kprev;
	dev->of_kind[kind].kprev->knext = o;
	dev->of_kind[kind].kprev = o;
	dev->live[kind]++;
	atomic_fetch_add(&live_total[kind], 1);
	dev->obj_gen++;
	return o;
}

int
emu_obj_hold(struct emu_obj *obj, struct emu_obj *target)
{
	if (target == NULL)
		return 0;
	if (obj->nheld == obj->held_cap) {
		unsigned int cap = obj->held_cap ? obj->held_cap * 2 : 4;
		struct emu_obj **h = realloc(obj->held, cap * sizeof(*h));

		if (h == NULL)
			return -ENOMEM;
		obj->held = h;
		obj->held_cap = cap;
	}
	obj->held[obj->nheld++] = target;
	target->refs++;
	return 0;
}

void
emu_obj_release_all(struct emu_obj *obj)
{
	unsigned int i;

	for (i = 0; i < obj->nheld; i++)
		obj->held[i]->refs--;
	free(obj->held);
	obj->held = NULL;
	obj->nheld = 0;
	obj->held_cap = 0;
}

static void
obj_free_body(struct emu_obj *o)
{
	if (o->kind == EMU_KIND_MKEY) {
		struct emu_mkey *mk = (struct emu_mkey *)o;

		free(mk->klm);
		if (mk->mr_pin != NULL) {
			emu_umem_unpin(mk->mr_pin);
			free(mk->mr_pin);
		}
	}
	if (o->kind == EMU_KIND_UMEM)
		emu_umem_unpin((struct emu_umem *)o);
	free(o->held);
	free(o);
}

void
emu_obj_free(struct emu_dev *dev, struct emu_obj *obj)
{
	struct emu_obj **pp = &dev->hash[bucket_of(obj->kind, obj->id)];

	while (*pp != NULL && *pp != obj)
		pp = &(*pp)->hnext;
	if (*pp != NULL)
		*pp = obj->hnext;
	obj->prev->next = obj->next;
	obj->next->prev = obj->prev;
	obj->kprev->knext = obj->knext;
	obj->knext->kprev = obj->kprev;
	dev->live[obj->kind]--;
	atomic_fetch_sub(&live_total[obj->kind], 1);
	dev->obj_gen++;
	if (obj->kind == EMU_KIND_VIRTQ)
		emu_dp_vq_free(dev, (struct emu_virtq *)obj);
	emu_obj_release_all(obj);
	emu_event_drop_obj(dev, obj->kind, obj->id);
	obj_free_body(obj);
}

int
emu_obj_destroy(struct emu_dev *dev, struct emu_obj *obj, uint32_t *syndrome)
{
	/* An object another one still references cannot go (RES_BUSY). */
	if (obj->refs > 0) {
		*syndrome = EMU_SYND_OBJ_IN_USE;
		return PRM_STATUS_RES_BUSY;
	}
	emu_obj_free(dev, obj);
	return PRM_STATUS_OK;
}

/* ---- Faults ---------------------------------------------------------------- */
static int
fault_add(struct emu_dev *dev, uint16_t opcode, uint16_t obj_type, unsigned int nth,
	  uint8_t status, uint32_t syndrome)
{
	struct emu_fault *f, **pp;

	if (nth == 0 || status == 0)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	f->opcode = opcode;
	f->obj_type = obj_type;
	f->remaining = nth;
	f->status = status;
	f->syndrome = syndrome != 0 ? syndrome : EMU_SYND_INJECTED;
	for (pp = &dev->faults; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = f;
	return 0;
}

int
emu_fault_inject(struct emu_dev *dev, uint16_t opcode, uint16_t obj_type, unsigned int nth,
		 uint8_t status, uint32_t syndrome)
{
	int ret;

	pthread_mutex_lock(&dev->lock);
	ret = fault_add(dev, opcode, obj_type, nth, status, syndrome);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

/*
 * Count this command against every armed fault it matches; return the
 * status of one that fires (the fault is then disarmed), 0 otherwise.
 * dev->lock held.
 */
int
emu_fault_check(struct emu_dev *dev, uint16_t opcode, uint16_t obj_type, bool general,
		uint32_t *syndrome)
{
	struct emu_fault **pp = &dev->faults, *f;
	int status = 0;

	while ((f = *pp) != NULL) {
		if (f->opcode == opcode &&
		    (!general || f->obj_type == 0xffff || f->obj_type == obj_type) &&
		    --f->remaining == 0) {
			*pp = f->next;
			if (status == 0) {
				status = f->status;
				*syndrome = f->syndrome;
			}
			free(f);
			continue;
		}
		pp = &f->next;
	}
	return status;
}

/* MLX5_LM_EMU_FAULT="opcode:nth:status[:obj_type][;...]" */
static int
fault_env(struct emu_dev *dev, char *err, size_t errlen)
{
	const char *env = getenv("MLX5_LM_EMU_FAULT");
	char *copy, *tok, *save = NULL;
	int ret = 0;

	if (env == NULL || env[0] == '\0')
		return 0;
	copy = strdup(env);
	if (copy == NULL)
		return -ENOMEM;
	for (tok = strtok_r(copy, ";", &save); tok != NULL; tok = strtok_r(NULL, ";", &save)) {
		unsigned long v[4] = { 0, 0, 0, 0xffff };
		char *p = tok, *end;
		int n;

		for (n = 0; n < 4 && *p != '\0'; n++) {
			v[n] = strtoul(p, &end, 0);
			if (end == p || (*end != ':' && *end != '\0'))
				break;
			p = *end == ':' ? end + 1 : end;
		}
		if (n < 3 || *p != '\0' || v[0] > 0xffff || v[1] == 0 || v[2] == 0 ||
		    v[2] > 0xff || v[3] > 0xffff) {
			snprintf(err, errlen, "MLX5_LM_EMU_FAULT: bad entry \"%s\" (expected "
				 "opcode:nth:status[:obj_type], nth >= 1, status 1..255)", tok);
			ret = -EINVAL;
			break;
		}
		ret = fault_add(dev, (uint16_t)v[0], (uint16_t)v[3], (unsigned int)v[1],
				(uint8_t)v[2], 0);
		if (ret < 0)
			break;
	}
	free(copy);
	return ret;
}

/* ---- Device -------------------------------------------------------------- */
static void
faults_free(struct emu_dev *dev)
{
	struct emu_fault *f;

	while ((f = dev->faults) != NULL) {
		dev->faults = f->next;
		free(f);
	}
}

struct emu_dev *
emu_dev_create(const char *name, const char *profile, char *err, size_t errlen)
{
	struct emu_dev *dev;
	char dummy[8];
	unsigned int k;

	if (err == NULL) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	dev = calloc(1, sizeof(*dev));
	if (dev == NULL) {
		snprintf(err, errlen, "emu: out of memory");
		return NULL;
	}
	snprintf(dev->name, sizeof(dev->name), "%s", name != NULL ? name : "emu");
	if (emu_profile_load(profile != NULL ? profile : "cx6dx", &dev->prof, err, errlen) < 0)
		goto err_profile;
	/* The profile's umem parameters are the power-up values; firmware changes them later. */
	dev->umem_a[0] = dev->prof->caps.umem_1_buffer_param_a;
	dev->umem_b[0] = dev->prof->caps.umem_1_buffer_param_b;
	dev->umem_a[1] = dev->prof->caps.umem_2_buffer_param_a;
	dev->umem_b[1] = dev->prof->caps.umem_2_buffer_param_b;
	dev->umem_a[2] = dev->prof->caps.umem_3_buffer_param_a;
	dev->umem_b[2] = dev->prof->caps.umem_3_buffer_param_b;
	dev->uffd = emu_umem_uffd_open(dev);
	pthread_mutex_init(&dev->slot_lock, NULL);
	pthread_mutex_init(&dev->lock, NULL);
	dev->all.next = &dev->all;
	dev->all.prev = &dev->all;
	for (k = 0; k < EMU_KIND_MAX; k++)
		dev->of_kind[k].knext = dev->of_kind[k].kprev = &dev->of_kind[k];
	if (fault_env(dev, err, errlen) < 0)
		goto err_faults;
	if (emu_dp_init(dev) < 0) {
		snprintf(err, errlen, "emu: out of memory for the data path");
		goto err_faults;
	}
	emu_log(dev, 6, "created with profile %s (%u command slots)",
		dev->prof->name, dev->prof->cmd_slots);
	atomic_fetch_add(&live_devices, 1);
	return dev;
err_faults:
	faults_free(dev);
	if (dev->uffd >= 0)
		close(dev->uffd);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->slot_lock);
	emu_profile_free(dev->prof);
err_profile:
	free(dev);
	return NULL;
}

int
emu_dev_set_umem_params(struct emu_dev *dev, const uint32_t a[3], const uint32_t b[3])
{
	int i;

	if (dev == NULL || a == NULL || b == NULL)
		return -EINVAL;
	for (i = 0; i < 3; i++)
		if (a[i] > EMU_UMEM_PARAM_A_MAX || b[i] > EMU_UMEM_PARAM_B_MAX)
			return -EINVAL;
	/*
	 * Under the device lock, as every command runs: a CREATE sees all six
	 * old values or all six new ones, as with firmware that changes them
	 * between two commands.
	 */
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < 3; i++) {
		dev->umem_a[i] = a[i];
		dev->umem_b[i] = b[i];
	}
	pthread_mutex_unlock(&dev->lock);
	emu_log(dev, 6, "umem parameters now %u/%u, %u/%u, %u/%u (a/b of umem 1, 2, 3)",
		a[0], b[0], a[1], b[1], a[2], b[2]);
	return 0;
}

void
emu_dev_umem_params(struct emu_dev *dev, uint32_t a[3], uint32_t b[3])
{
	int i;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < 3; i++) {
		a[i] = dev->umem_a[i];
		b[i] = dev->umem_b[i];
	}
	pthread_mutex_unlock(&dev->lock);
}

static const char *
virtq_state_name(uint8_t s)
{
	static const char *const names[] = { "INIT", "RDY", "SUSPEND", "ERR" };

	return s < 4 ? names[s] : "?";
}

static void
leak_line(struct emu_dev *dev, struct emu_obj *o)
{
	const char *kind = emu_kind_name(o->kind);

	switch (o->kind) {
	case EMU_KIND_VIRTQ: {
		struct emu_virtq *vq = (struct emu_virtq *)o;

		emu_log(dev, 4, "leaked %s %u (queue_index %u, state %s)", kind, o->id,
			vq->queue_index, virtq_state_name(vq->state));
		break;
	}
	case EMU_KIND_MKEY:
		emu_log(dev, 4, "leaked %s 0x%x (len 0x%" PRIx64 ")", kind,
			((struct emu_mkey *)o)->key, ((struct emu_mkey *)o)->len);
		break;
	case EMU_KIND_UMEM:
		emu_log(dev, 4, "leaked %s %u (size %zu)", kind, o->id,
			((struct emu_umem *)o)->size);
		break;
	case EMU_KIND_QP:
		emu_log(dev, 4, "leaked %s %u (state %u)", kind, o->id,
			((struct emu_net_obj *)o)->state);
		break;
	default:
		emu_log(dev, 4, "leaked %s %u (%u references)", kind, o->id, o->refs);
		break;
	}
}

int
emu_dev_destroy(struct emu_dev *dev)
{
	struct emu_obj *o;
	struct emu_sub *s;
	int leaked = 0;

	if (dev == NULL)
		return 0;
	/* The data path thread goes first: nothing touches the objects after. */
	emu_dp_stop(dev);
	pthread_mutex_lock(&dev->lock);
	for (o = dev->all.next; o != &dev->all; o = o->next) {
		leak_line(dev, o);
		leaked++;
	}
	if (leaked > 0)
		emu_log(dev, 4, "%d objects left alive at device destruction", leaked);
	atomic_fetch_add(&leaked_total, (unsigned long)leaked);
	/* Teardown frees without reference checks: nothing survives. */
	while ((o = dev->all.next) != &dev->all) {
		o->prev->next = o->next;
		o->next->prev = o->prev;
		o->kprev->knext = o->knext;
		o->knext->kprev = o->kprev;
		if (o->kind == EMU_KIND_VIRTQ)
			emu_dp_vq_free(dev, (struct emu_virtq *)o);
		atomic_fetch_sub(&live_total[o->kind], 1);
		obj_free_body(o);
	}
	emu_dp_fini(dev);
	while ((s = dev->subs) != NULL) {
		dev->subs = s->next;
		free(s);
	}
	emu_event_dev_gone(dev);
	faults_free(dev);
	if (dev->uffd >= 0)
		close(dev->uffd);
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->slot_lock);
	emu_profile_free(dev->prof);
	free(dev);
	atomic_fetch_sub(&live_devices, 1);
	return leaked;
}

const char *
emu_dev_name(const struct emu_dev *dev)
{
	return dev->name;
}

unsigned int
emu_dev_live_objects(struct emu_dev *dev)
{
	unsigned int n = 0, k;

	pthread_mutex_lock(&dev->lock);
	for (k = 0; k < EMU_KIND_MAX; k++)
		n += dev->live[k];
	pthread_mutex_unlock(&dev->lock);
	return n;
}

unsigned long
emu_leaked_total(void)
{
	return atomic_load(&leaked_total);
}

unsigned long
emu_live_total(char *desc, size_t len)
{
	unsigned long n = atomic_load(&live_devices), total = n, v;
	size_t at = 0;
	unsigned int k;
	int w;

	if (desc != NULL && len != 0) {
		desc[0] = '\0';
		if (n != 0) {
			w = snprintf(desc, len, "%lu devices", n);
			at = w > 0 ? (size_t)w : 0;
		}
	}
	for (k = 0; k < EMU_KIND_MAX; k++) {
		v = atomic_load(&live_total[k]);
		total += v;
		if (v == 0 || desc == NULL || at >= len)
			continue;
		w = snprintf(desc + at, len - at, "%s%lu %s", at != 0 ? ", " : "", v,
			     emu_kind_name((enum emu_kind)k));
		at += w > 0 ? (size_t)w : 0;
	}
	return total;
}

unsigned long
emu_dev_cmd_count(struct emu_dev *dev, uint16_t opcode)
{
	if (opcode >= EMU_OPCODE_SLOTS)
		return 0;
	return atomic_load(&dev->cmd_count[opcode]);
}

unsigned long
emu_dev_log_misses(struct emu_dev *dev)
{
	return atomic_load(&dev->log_misses);
}
