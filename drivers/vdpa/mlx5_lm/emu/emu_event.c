/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Event channels (what a DevX event channel is to rdma-core): an eventfd
 * in semaphore mode that counts pending events, a queue of events and
 * subscriptions by object. The firmware side posts OBJECT_CHANGE when a
 * virtq moves to ERR, and (with the data path) completions on CQs. Each
 * event is the EQE the device writes (PRM eqe), handed whole to the
 * reader as the kernel hands it (Linux devx.c deliver_event).
 *
 * The list is unbounded, as the kernel's (an event is lost only when the
 * kernel cannot allocate it: is_overflow_err, one EOVERFLOW at the next
 * read). A test bounds it and holds the reader back (emu_evch_hold) to
 * make that happen at the moment it chooses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "emu_priv.h"

struct emu_evch *
emu_evch_create(struct emu_dev *dev)
{
	struct emu_evch *ch;

	ch = calloc(1, sizeof(*ch));
	if (ch == NULL)
		return NULL;
	/* Semaphore mode: the fd stays readable while any event is queued. */
	ch->fd = eventfd(0, EFD_NONBLOCK | EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->fd < 0)
		goto err_fd;
	pthread_mutex_init(&ch->lock, NULL);
	ch->dev = dev;
	pthread_mutex_lock(&dev->lock);
	ch->next = dev->evchs;
	dev->evchs = ch;
	pthread_mutex_unlock(&dev->lock);
	return ch;
err_fd:
	free(ch);
	return NULL;
}

/* Remove the subscriptions matching a predicate. dev->lock held. */
static void
subs_drop(struct emu_dev *dev, const struct emu_evch *ch, int kind, uint32_t id)
{
	struct emu_sub **pp = &dev->subs, *s;

	while ((s = *pp) != NULL) {
		if ((ch != NULL && s->ch == ch) ||
		    (ch == NULL && (int)s->kind == kind && s->id == id)) {
			*pp = s->next;
			free(s);
			continue;
		}
		pp = &s->next;
	}
}

void
emu_evch_destroy(struct emu_evch *ch)
{
	struct emu_dev *dev;
	struct emu_ev_node *n;

	if (ch == NULL)
		return;
	dev = ch->dev;
	if (dev != NULL) {
		struct emu_evch **pp;

		pthread_mutex_lock(&dev->lock);
		subs_drop(dev, ch, -1, 0);
		for (pp = &dev->evchs; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == ch) {
				*pp = ch->next;
				break;
			}
		}
		pthread_mutex_unlock(&dev->lock);
	}
	while ((n = ch->head) != NULL) {
		ch->head = n->next;
		free(n);
	}
	close(ch->fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
}

int
emu_evch_fd(const struct emu_evch *ch)
{
	return ch->fd;
}

/* The object kind a create command makes. */
static int
kind_of_create(uint16_t opcode, uint16_t obj_type)
{
	switch (opcode) {
	case PRM_CMD_CREATE_GENERAL_OBJECT:
		if (obj_type == PRM_OBJ_VIRTIO_NET_Q)
			return EMU_KIND_VIRTQ;
		if (obj_type == PRM_OBJ_VIRTIO_Q_COUNTERS)
			return EMU_KIND_VQ_COUNTERS;
		return -1;
	case PRM_CMD_CREATE_CQ:
		return EMU_KIND_CQ;
	case PRM_CMD_CREATE_QP:
		return EMU_KIND_QP;
	case PRM_CMD_CREATE_MKEY:
		return EMU_KIND_MKEY;
	case PRM_CMD_CREATE_RQT:
		return EMU_KIND_RQT;
	case PRM_CMD_CREATE_TIR:
		return EMU_KIND_TIR;
	case PRM_CMD_CREATE_TIS:
		return EMU_KIND_TIS;
	default:
		return -1;
	}
}

/* Subscription numbers: never reused, so a queued event names its own. */
static _Atomic uint64_t sub_seq;

int
emu_evch_subscribe(struct emu_evch *ch, uint16_t create_opcode, uint16_t obj_type,
		   uint32_t id, uint16_t type, uint64_t cookie)
{
	struct emu_dev *dev = ch->dev;
	struct emu_sub *s;
	int kind = kind_of_create(create_opcode, obj_type);

	if (dev == NULL)
		return -ENODEV;
	if (kind < 0)
		return -EINVAL;
	if (kind == EMU_KIND_MKEY)
		id >>= 8;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->ch = ch;
	s->kind = (enum emu_kind)kind;
	s->id = id;
	s->type = type;
	s->cookie = cookie;
	s->seq = atomic_fetch_add(&sub_seq, 1) + 1;
	pthread_mutex_lock(&dev->lock);
	if (emu_obj_find(dev, s->kind, id) == NULL) {
		pthread_mutex_unlock(&dev->lock);
		free(s);
		return -ENOENT;
	}
	s->next = dev->subs;
	dev->subs = s;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

int
emu_evch_read(struct emu_evch *ch, struct emu_event *ev)
{
	struct emu_ev_node *n;
	uint64_t one;

	pthread_mutex_lock(&ch->lock);
	if (ch->held) {
		pthread_mutex_unlock(&ch->lock);
		return 0;
	}
	/* devx_async_event_read: the overflow first, once, before any event. */
	if (ch->overflow) {
		ch->overflow = false;
		pthread_mutex_unlock(&ch->lock);
		return -EOVERFLOW;
	}
	n = ch->head;
	if (n != NULL) {
		ch->head = n->next;
		if (ch->head == NULL)
			ch->tail = NULL;
		ch->n--;
		/* Consume this event's count (semaphore mode: exactly 1). */
		if (read(ch->fd, &one, sizeof(one)) != sizeof(one))
			one = 0;
	}
	pthread_mutex_unlock(&ch->lock);
	if (n == NULL)
		return 0;
	*ev = n->ev;
	free(n);
	return 1;
}

/*
 * The EQE of an event: type at byte 1 and, for the events the device
 * raises on its own, the object in the data where the PRM puts it
 * (Linux include/linux/mlx5/device.h mlx5_eqe_comp, mlx5_eqe_cq_err,
 * mlx5_eqe_qp_srq; what devx.c devx_get_obj_id_from_event reads back).
 */
static void
build_eqe(uint8_t *eqe, uint32_t id, uint16_t type, const uint8_t *data)
{
	void *d = PRM_ADDR(eqe, eqe, event_data);

	memset(eqe, 0, PRM_SIZE(eqe));
	PRM_SET(eqe, eqe, event_type, type);
	if (data != NULL)
		memcpy(d, data, PRM_SIZE(eqe_comp));
	switch (type) {
	case PRM_EVENT_COMPLETION:
		PRM_SET(eqe_comp, d, cqn, id);
		break;
	case PRM_EVENT_CQ_ERROR:
		PRM_SET(eqe_cq_err, d, cqn, id);
		break;
	case PRM_EVENT_WQ_CATAS_ERROR:
		PRM_SET(eqe_qp_srq, d, type, PRM_EVENT_QUEUE_TYPE_QP);
		PRM_SET(eqe_qp_srq, d, qp_srq_n, id);
		break;
	default:
		break;
	}
}

void
emu_event_post(struct emu_dev *dev, enum emu_kind kind, uint32_t id, uint16_t type,
	       const uint8_t *data)
{
	struct emu_sub *s;
	uint64_t one = 1;

	_Static_assert(sizeof(((struct emu_event *)0)->eqe) == PRM_SIZE(eqe), "a whole EQE");
	for (s = dev->subs; s != NULL; s = s->next) {
		struct emu_evch *ch = s->ch;
		struct emu_ev_node *n;

		if (s->kind != kind || s->id != id || s->type != type)
			continue;
		pthread_mutex_lock(&ch->lock);
		n = ch->depth != 0 && ch->n >= ch->depth ? NULL : calloc(1, sizeof(*n));
		if (n == NULL) {
			/* Lost, and the reader is told so once (devx.c is_overflow_err). */
			ch->overflow = true;
			ch->dropped++;
			pthread_mutex_unlock(&ch->lock);
			emu_log(dev, 4, "event channel overflow: event 0x%x of %s 0x%x dropped "
				"(%u queued), the next read fails with EOVERFLOW", type,
				emu_kind_name(kind), id, ch->n);
			continue;
		}
		n->ev.cookie = s->cookie;
		n->ev.sub = s->seq;
		n->ev.type = type;
		n->ev.obj_id = id;
		build_eqe(n->ev.eqe, id, type, data);
		if (ch->tail != NULL)
			ch->tail->next = n;
		else
			ch->head = n;
		ch->tail = n;
		ch->n++;
		if (ch->held)
			ch->unsignalled++;
		else if (write(ch->fd, &one, sizeof(one)) != sizeof(one))
			emu_log(dev, 3, "event channel eventfd write failed");
		pthread_mutex_unlock(&ch->lock);
	}
}

int
emu_event_inject(struct emu_dev *dev, uint16_t create_opcode, uint16_t obj_type, uint32_t id,
		 uint16_t type)
{
	uint8_t data[PRM_SIZE(eqe_comp)];
	int kind = kind_of_create(create_opcode, obj_type);

	if (kind < 0)
		return -EINVAL;
	memset(data, 0, sizeof(data));
	PRM_SET(affiliated_event_header, data, obj_type, obj_type);
	PRM_SET(affiliated_event_header, data, obj_id, id);
	pthread_mutex_lock(&dev->lock);
	if (emu_obj_find(dev, (enum emu_kind)kind, id) == NULL) {
		pthread_mutex_unlock(&dev->lock);
		return -ENOENT;
	}
	emu_event_post(dev, (enum emu_kind)kind, id, type, data);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

void
emu_evch_hold(struct emu_dev *dev, unsigned int depth)
{
	struct emu_evch *ch;

	pthread_mutex_lock(&dev->lock);
	for (ch = dev->evchs; ch != NULL; ch = ch->next) {
		pthread_mutex_lock(&ch->lock);
		ch->held = true;
		ch->depth = depth;
		pthread_mutex_unlock(&ch->lock);
	}
	pthread_mutex_unlock(&dev->lock);
}

void
emu_evch_release(struct emu_dev *dev)
{
	struct emu_evch *ch;

	pthread_mutex_lock(&dev->lock);
	for (ch = dev->evchs; ch != NULL; ch = ch->next) {
		/*
		 * What was queued meanwhile, counted at once. An overflow needs a
		 * full list (depth >= 1), so the fd is readable when it is due.
		 */
		uint64_t cnt;

		pthread_mutex_lock(&ch->lock);
		cnt = ch->unsignalled;
		ch->held = false;
		ch->depth = 0;
		ch->unsignalled = 0;
		if (cnt != 0 && write(ch->fd, &cnt, sizeof(cnt)) != sizeof(cnt))
			emu_log(dev, 3, "event channel eventfd write failed");
		pthread_mutex_unlock(&ch->lock);
	}
	pthread_mutex_unlock(&dev->lock);
}

unsigned long
emu_evch_overflows(struct emu_dev *dev)
{
	struct emu_evch *ch;
	unsigned long n = 0;

	pthread_mutex_lock(&dev->lock);
	for (ch = dev->evchs; ch != NULL; ch = ch->next) {
		pthread_mutex_lock(&ch->lock);
		n += ch->dropped;
		pthread_mutex_unlock(&ch->lock);
	}
	pthread_mutex_unlock(&dev->lock);
	return n;
}

void
emu_event_drop_obj(struct emu_dev *dev, enum emu_kind kind, uint32_t id)
{
	subs_drop(dev, NULL, (int)kind, id);
}

void
emu_event_dev_gone(struct emu_dev *dev)
{
	struct emu_evch *ch;

	for (ch = dev->evchs; ch != NULL; ch = ch->next)
		ch->dev = NULL;
	dev->evchs = NULL;
}
