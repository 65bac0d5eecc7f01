// SPDX-License-Identifier: GPL-2.0
/*
 * The tcp_hpcc tracepoints (include/hpcc_trace.h). TRACE_EVENT() is a
 * macro family Rust cannot expand, so this file instantiates it and gives
 * Rust one plain function to fire it.
 */
#define CREATE_TRACE_POINTS
#include "hpcc_trace.h"

void hpcc_trace_sample(const struct sock *sk, const struct hpcc_trace_rec *r)
{
	trace_hpcc_sample(sk, r);
}

void hpcc_trace_sfc(const struct hpcc_sfc_trace_rec *r)
{
	trace_hpcc_sfc(r);
}

void hpcc_trace_ctl(const struct sock *sk, const struct hpcc_ctl_rec *r)
{
	trace_hpcc_ctl(sk, r);
}

bool hpcc_trace_ctl_enabled(void)
{
	return trace_hpcc_ctl_enabled();
}
