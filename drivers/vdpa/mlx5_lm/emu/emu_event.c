/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Event channels (what a DevX event channel is to rdma-core): an eventfd
 * in semaphore mode that counts pending events, a queue of events and
 * subscriptions by object. The firmware side posts OBJECT_CHANGE when a
 * virtq moves to ERR, and (with the data path) completions on CQs.
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
	n = ch->head;
	if (n != NULL) {
		ch->head = n->next;
		if (ch->head == NULL)
			ch->tail = NULL;
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

void
emu_event_post(struct emu_dev *dev, enum emu_kind kind, uint32_t id, uint16_t type,
	       const uint8_t data[32])
{
	struct emu_sub *s;
	uint64_t one = 1;

	for (s = dev->subs; s != NULL; s = s->next) {
		struct emu_ev_node *n;

		if (s->kind != kind || s->id != id || s->type != type)
			continue;
		n = calloc(1, sizeof(*n));
		if (n == NULL) {
			emu_log(dev, 3, "event 0x%x for %s %u lost: out of memory", type,
				emu_kind_name(kind), id);
			continue;
		}
		n->ev.cookie = s->cookie;
		n->ev.type = type;
		n->ev.obj_id = id;
		if (data != NULL)
			memcpy(n->ev.data, data, sizeof(n->ev.data));
		pthread_mutex_lock(&s->ch->lock);
		if (s->ch->tail != NULL)
			s->ch->tail->next = n;
		else
			s->ch->head = n;
		s->ch->tail = n;
		if (write(s->ch->fd, &one, sizeof(one)) != sizeof(one))
			emu_log(dev, 3, "event channel eventfd write failed");
		pthread_mutex_unlock(&s->ch->lock);
	}
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
