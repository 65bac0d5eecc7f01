/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declarations of the thin C shim (rust/helpers.c): only what Rust cannot
 * call directly, i.e. macros and static inline functions of the kernel.
 */
#ifndef _HPCC_SHIM_H
#define _HPCC_SHIM_H

#include <linux/types.h>

struct module;
struct sock;
struct kernel_param_ops;

/* THIS_MODULE, which is a macro. */
struct module *hpcc_this_module(void);

/* tcp_is_cwnd_limited(), a static inline in <net/tcp.h>. */
bool hpcc_tcp_is_cwnd_limited(const struct sock *sk);

#endif /* _HPCC_SHIM_H */
