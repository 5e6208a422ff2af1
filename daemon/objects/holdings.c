/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * holdings.c - what a session holds, let go of the same way whichever transport the client
 * came through: at a kill its waits leave their ports at once; at its end its threads stop
 * counting against concurrency before its registrations go (rule L3) and its handles close
 * (rule 9).  Above ports and registrations, below every transport.
 */
#include "config.h"

#include "common/list.h"
#include "daemon/objects/holdings.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/session.h"

void holdings_detach_waits(struct session *s)
{
        struct sn_list *pos, *tmp;

        sn_list_foreach_safe(pos, tmp, &s->waits)
                wait_detach(sn_list_entry(pos, struct wait, conn_link));
}

void holdings_release(struct session *s, uint32_t status)
{
        /* A dead session's own waits need no answer. */
        if (s->dead)
                while (!sn_list_empty(&s->waits))
                        wait_free(sn_list_first(&s->waits, struct wait, conn_link));
        /* Its threads no longer run anywhere: others' waiters may proceed. */
        while (!sn_list_empty(&s->runners)) {
                struct runner *r = sn_list_first(&s->runners, struct runner, conn_link);
                struct port *p = r->port;

                runner_free(r);
                if (p->nwaiters)
                        port_dispatch(p);
        }
        /* Rule L3: its registrations go, on shared ports too, without REMOVE packets; a port
         * with a linger time keeps them, without an owner, for a successor to take over. */
        while (!sn_list_empty(&s->regs)) {
                struct reg *g = sn_list_first(&s->regs, struct reg, conn_link);

                if (g->port->name && g->port->linger_ms)
                        reg_orphan(g);
                else
                        reg_free(g);
        }
        while (!sn_list_empty(&s->handles))
                port_close_handle(sn_list_first(&s->handles, struct handle, conn_link), status);
        while (!sn_list_empty(&s->waits))
                wait_free(sn_list_first(&s->waits, struct wait, conn_link));
}
