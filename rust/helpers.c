// SPDX-License-Identifier: GPL-2.0
/*
 * Thin C shim of tcp_hpcc: only what Rust cannot express or call.
 *
 *  - THIS_MODULE and module_param_cb()/MODULE_PARM_DESC() are macros.
 *  - tcp_is_cwnd_limited() is a static inline.
 *
 * The parameters' storage, their validation (the set callback) and all
 * logic live in Rust (rust/params.rs); this file only registers them.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <net/tcp.h>

#include "hpcc_shim.h"

struct module *hpcc_this_module(void)
{
	return THIS_MODULE;
}

bool hpcc_tcp_is_cwnd_limited(const struct sock *sk)
{
	return tcp_is_cwnd_limited(sk);
}

/* Defined in Rust (rust/params.rs). */
extern const struct kernel_param_ops hpcc_param_ops;

#define HPCC_PARAM(name, desc)                                              \
	extern unsigned int hpcc_param_##name;                              \
	module_param_cb(name, &hpcc_param_ops, &hpcc_param_##name, 0644);   \
	MODULE_PARM_DESC(name, desc)

HPCC_PARAM(init_window_bytes,
	   "Initial window in bytes, about one BDP at line rate (1..2^31, default 65536)");
HPCC_PARAM(fallback_ai_segs,
	   "No-telemetry fallback: additive increase in segments per RTT (1..64, default 1)");
HPCC_PARAM(fallback_beta,
	   "No-telemetry fallback: multiplicative decrease factor in 1/1024 (512..1023, default 717)");
HPCC_PARAM(min_cwnd_segs,
	   "Lower bound of the congestion window in segments (2..max_cwnd_segs, default 2)");
HPCC_PARAM(max_cwnd_segs,
	   "Upper bound of the congestion window in segments (min_cwnd_segs..65535, default 65535)");
