/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Input of the bindgen run in Kbuild. The generated rust/tcp_hpcc/bindings_generated.rs
 * is a build output and never committed. Kbuild's allowlist keeps it to the
 * types and functions the module uses.
 */
#include <linux/kstrtox.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/skbuff.h>
#include <linux/timekeeping.h>
#include <net/net_namespace.h>
#include <net/tcp.h>

#include "hpcc_shim.h"

/* Macro-computed constants bindgen cannot see through, as enum constants. */
enum {
	HPCC_ICSK_CA_PRIV_SIZE = ICSK_CA_PRIV_SIZE,
};
