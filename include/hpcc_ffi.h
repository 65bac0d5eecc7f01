/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The HPCC++ core behind a C ABI (rust/hpcc_ffi, libhpcc_ffi.a), for a
 * host other than the kernel, such as an ns-3 TCP. One function for each
 * entry point of the core that the kernel glue calls; every decision is
 * the core's. A host test (rust/hpcc_ffi/tests/c_abi.rs) checks every
 * struct here against the Rust layout, field by field, and drives every
 * function from C.
 *
 * Handles (struct hpcc_knobs, hpcc_flow, hpcc_nonces, hpcc_budget, hpcc_rcvcount) are allocated and
 * freed by the library; struct hpcc_sock is the caller's (zeroed, then
 * hpcc_sock_init). A null pointer makes a call a no-op returning 0, or
 * -EINVAL where the function returns an error.
 */
#ifndef _HPCC_FFI_H
#define _HPCC_FFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest probe or response, and a probe's INT area, bytes. */
#define HPCC_FFI_MAX_PACKET_LEN 144
#define HPCC_FFI_INT_LEN 68
/* struct hpcc_sock's size in 64-bit words. */
#define HPCC_FFI_SOCK_WORDS 6

struct hpcc_knobs;
struct hpcc_flow;
struct hpcc_rcvcount;
struct hpcc_budget;

/* What the connection shows at a hook (the tcp_sock fields, as TCP keeps
 * them; RTTs 0 or UINT32_MAX when unknown). */
struct hpcc_conn {
	uint64_t now_ns;		/* host clock */
	uint32_t mss;			/* bytes */
	uint32_t cwnd;			/* segments */
	uint32_t ssthresh;		/* segments */
	uint32_t srtt_us;
	uint32_t min_rtt_us;
	uint32_t packets_out;		/* segments */
	uint32_t in_flight;		/* segments */
	uint32_t snd_nxt;
	bool in_reduction;		/* CWR or Recovery */
	bool cwnd_limited;
	uint64_t max_pacing_rate;	/* bytes/s; UINT64_MAX: none */
};

/* The ACK's rate sample. */
struct hpcc_rate_sample {
	uint32_t delivered;		/* segments */
	uint64_t interval_us;		/* 0: invalid */
	uint32_t prior_in_flight;	/* segments */
	uint32_t acked_sacked;		/* segments */
	bool app_limited;
};

/* The flow's newest response, its nonce already checked. */
struct hpcc_response {
	uint64_t rx_ns;
	const uint8_t *int_stack;	/* int_len bytes: the INT stack it carried */
	size_t int_len;
	uint32_t snd_nxt;		/* the snd_nxt its probe was sent at */
};

/* The flow's SFC cell, as the signal path last wrote it. */
struct hpcc_sfc_state {
	uint32_t gen;
	uint32_t qlen;
	uint8_t speed;
	uint64_t gap_ns;
};

struct hpcc_init_decision {
	uint32_t cwnd;			/* segments */
	uint32_t ssthresh;		/* segments */
	uint8_t pacing_shift;
	uint64_t pacing_rate;		/* bytes/s */
};

/* One applied response (the tcp_hpcc:hpcc_sample tracepoint's record). */
struct hpcc_sample {
	uint8_t event;
	uint8_t hop;
	uint8_t n_hops;
	uint8_t inc_stage;
	uint32_t u_ppm;
	uint32_t sample_u_ppm;
	uint32_t qlen;
	uint32_t window;
	uint32_t wc;
	uint32_t cwnd;
	uint32_t inflight;
	uint32_t srtt_us;
	uint32_t base_rtt_us;
	uint64_t pacing_rate;
	uint64_t path_rate;
};

/* What an ACK decided. notes: bit 1 << n for each controller note n. */
struct hpcc_ack_decision {
	uint64_t pacing_rate;		/* bytes/s */
	uint32_t cwnd;			/* segments */
	uint16_t tso_segs;		/* 0: the route's limit */
	uint16_t notes;
	uint8_t pacing_shift;
	uint8_t probe;			/* send a probe now, then hpcc_flow_probe_sent */
	uint8_t take_pause;		/* take the flow's pending SFC pause */
	uint8_t has_trace;		/* trace holds an applied response */
	struct hpcc_sample trace;
};

/* A connection's controller state: the caller's, opaque. */
struct hpcc_sock {
	uint64_t priv[HPCC_FFI_SOCK_WORDS];
};

/* A flow, sender to receiver: IPv6 or IPv4-mapped addresses in network
 * order, ports in host order. */
struct hpcc_tuple {
	uint8_t saddr[16];
	uint8_t daddr[16];
	uint16_t sport;
	uint16_t dport;
};

/* A valid probe (kind 0) or response (kind 1). */
struct hpcc_packet {
	struct hpcc_tuple tuple;
	uint32_t nonce;
	uint32_t snd_nxt;
	uint8_t kind;
	uint8_t int_stack[HPCC_FFI_INT_LEN];
};

struct hpcc_knobs *hpcc_knobs_new(const char *profile);
int hpcc_knobs_set(struct hpcc_knobs *k, const char *name, uint32_t value);
int hpcc_knobs_get(const struct hpcc_knobs *k, const char *name, uint32_t *out);
int hpcc_knobs_validate(const struct hpcc_knobs *k);
void hpcc_knobs_free(struct hpcc_knobs *k);

void hpcc_sock_init(const struct hpcc_knobs *k, const struct hpcc_conn *c, int has_sent_data,
		    struct hpcc_sock *s, struct hpcc_init_decision *out);
int hpcc_sock_wants_flow_on_ack(const struct hpcc_sock *s, const struct hpcc_knobs *k,
				const struct hpcc_conn *c);
int hpcc_sock_wants_flow_on_tx_start(const struct hpcc_sock *s, const struct hpcc_knobs *k,
				     const struct hpcc_conn *c);
void hpcc_sock_flow_refused(struct hpcc_sock *s, uint64_t now_ns);
uint32_t hpcc_sock_ssthresh(struct hpcc_sock *s, const struct hpcc_knobs *k, const struct hpcc_conn *c);
uint32_t hpcc_sock_undo_cwnd(const struct hpcc_sock *s, uint32_t cwnd);
void hpcc_sock_on_ack(struct hpcc_sock *s, const struct hpcc_knobs *k, const struct hpcc_conn *c,
		      const struct hpcc_rate_sample *rs, struct hpcc_flow *f, const struct hpcc_response *r,
		      const struct hpcc_sfc_state *sfc, struct hpcc_ack_decision *out);

struct hpcc_flow *hpcc_flow_new(const struct hpcc_knobs *k, const struct hpcc_conn *c);
int hpcc_flow_probe_at_tx_start(const struct hpcc_flow *f, const struct hpcc_knobs *k,
				const struct hpcc_conn *c);
int hpcc_flow_probe_due(const struct hpcc_flow *f, const struct hpcc_knobs *k, const struct hpcc_conn *c);
uint16_t hpcc_flow_probe_spacing_us(const struct hpcc_flow *f, const struct hpcc_knobs *k,
				    const struct hpcc_conn *c);
uint32_t hpcc_flow_probe_sent(struct hpcc_flow *f, uint64_t now_ns);
uint64_t hpcc_flow_pacing_rate(const struct hpcc_flow *f, const struct hpcc_knobs *k, uint32_t srtt_us);
void hpcc_flow_free(struct hpcc_flow *f);

/* The host's probe budget (probe_budget): a due probe leaves only when
 * hpcc_flow_admit_probe says HPCC_FFI_ADMIT_SEND; a probe is answered only
 * when hpcc_budget_take_response says 1. */
#define HPCC_FFI_ADMIT_SEND 0
#define HPCC_FFI_ADMIT_WAIT 1
#define HPCC_FFI_ADMIT_OVER_BUDGET 2
struct hpcc_budget *hpcc_budget_new(void);
int hpcc_flow_admit_probe(struct hpcc_flow *f, const struct hpcc_knobs *k, const struct hpcc_budget *b,
			  const struct hpcc_conn *c);
void hpcc_flow_probe_held(struct hpcc_flow *f);
int hpcc_budget_take_response(const struct hpcc_budget *b, const struct hpcc_knobs *k, uint64_t now_ns);
void hpcc_budget_free(struct hpcc_budget *b);

struct hpcc_rcvcount *hpcc_rcvcount_new(void);
void hpcc_rcvcount_insert(const struct hpcc_rcvcount *r, uint64_t now_ns, uint64_t window_ns, uint16_t spacing_us,
			  uint32_t hash);
uint16_t hpcc_rcvcount_count_with(const struct hpcc_rcvcount *r, uint64_t now_ns, uint64_t window_ns,
				  uint16_t spacing_us, uint32_t hash);
void hpcc_rcvcount_free(struct hpcc_rcvcount *r);

/* hpcc_ack_decision.notes: bit 1 << HPCC_FFI_NOTE_x for each note. */
#define HPCC_FFI_NOTE_HPCC_ACK 0
#define HPCC_FFI_NOTE_FALLBACK_ACK 1
#define HPCC_FFI_NOTE_CAPPED_BY_REDUCTION 2
#define HPCC_FFI_NOTE_CAPPED_BY_DELIVERY 3
#define HPCC_FFI_NOTE_RESPONSE_BAD_INT 4
#define HPCC_FFI_NOTE_FIRST_TELEMETRY 5
#define HPCC_FFI_NOTE_SAMPLE_APPLIED 6
#define HPCC_FFI_NOTE_SAMPLE_RECORDED 7
#define HPCC_FFI_NOTE_SAMPLE_PATH_CHANGED 8
#define HPCC_FFI_NOTE_SAMPLE_STALE 9
#define HPCC_FFI_NOTE_SFC_WINDOW_CUT 10

/* The hooks and flags of a controller record (hpcc-replay --ctl reads
 * them as the tcp_hpcc:hpcc_ctl tracepoint prints them). */
#define HPCC_FFI_CTL_INIT 0
#define HPCC_FFI_CTL_ACK 1
#define HPCC_FFI_CTL_TX_START 2
#define HPCC_FFI_CTL_SSTHRESH 3
#define HPCC_FFI_CTL_IN_REDUCTION 0x0001
#define HPCC_FFI_CTL_CWND_LIMITED 0x0002
#define HPCC_FFI_CTL_HAS_RS 0x0004
#define HPCC_FFI_CTL_RS_APP_LIMITED 0x0008
#define HPCC_FFI_CTL_HAS_FLOW 0x0010
#define HPCC_FFI_CTL_FLOW_CREATED 0x0020
#define HPCC_FFI_CTL_FLOW_REFUSED 0x0040
#define HPCC_FFI_CTL_HAS_RESPONSE 0x0080
#define HPCC_FFI_CTL_PROBED 0x0100
#define HPCC_FFI_CTL_TAKE_PAUSE 0x0200
#define HPCC_FFI_CTL_HAS_SENT_DATA 0x0400
#define HPCC_FFI_CTL_PROBE_HELD 0x0800

/* hpcc_nonces_accept's verdicts, hpcc_admit_int's refusals. */
#define HPCC_FFI_NONCE_ACCEPTED 0
#define HPCC_FFI_NONCE_BAD 1
#define HPCC_FFI_NONCE_LATE 2
#define HPCC_FFI_INT_TOO_MANY_HOPS 1
#define HPCC_FFI_INT_BAD 2

struct hpcc_nonces;
struct hpcc_nonces *hpcc_nonces_new(void);
void hpcc_nonces_record(const struct hpcc_nonces *r, uint32_t slot, uint32_t nonce, uint32_t snd_nxt,
			uint64_t now_ns);
int hpcc_nonces_accept(const struct hpcc_nonces *r, uint32_t nonce, uint32_t snd_nxt, uint64_t now_ns);
void hpcc_nonces_free(struct hpcc_nonces *r);
int hpcc_admit_int(const uint8_t *int_stack, size_t int_len, uint32_t max_hops);

size_t hpcc_build_probe(uint8_t *out, const struct hpcc_tuple *t, uint8_t dscp, uint32_t nonce, uint32_t snd_nxt,
			uint16_t spacing_us);
uint16_t hpcc_packet_spacing_us(const struct hpcc_packet *p);
int hpcc_classify(const uint8_t *buf, size_t len, uint8_t probe_dscp, uint8_t response_dscp,
		  struct hpcc_packet *out);
size_t hpcc_build_response(uint8_t *out, const struct hpcc_packet *p, uint8_t dscp, uint16_t rcv_flows);

/* Source Flow Control: a signal's fields in host byte order (the payload's
 * layout is include/hpcc_sfc.h's); an IPv4 address in the first 4 bytes. */
#define HPCC_FFI_SFC_LEN 68
struct hpcc_sfc_signal {
	uint32_t pause_ns;
	uint32_t qlen;
	uint32_t switch_id;
	uint32_t seq;
	uint16_t port_id;
	uint16_t sport;
	uint16_t dport;
	uint8_t family;			/* 4 or 6 */
	uint8_t l4proto;
	uint8_t speed;
	uint8_t saddr[16];
	uint8_t daddr[16];
};

/* hpcc_sfc_accept and hpcc_sfc_check_flow return 0, or a refusal's code
 * of enum hpcc_sfc_outcome (include/hpcc_shim.h). */
struct hpcc_sfc_mail;
size_t hpcc_sfc_encode(const struct hpcc_sfc_signal *s, uint8_t *out);
int hpcc_sfc_accept(const struct hpcc_knobs *k, uint8_t ttl, const uint8_t *payload, size_t len,
		    struct hpcc_sfc_signal *out);
int hpcc_sfc_check_flow(const struct hpcc_knobs *k, const struct hpcc_sfc_signal *s, uint32_t snd_una,
			uint32_t snd_nxt, uint64_t *pause_ns);
struct hpcc_sfc_mail *hpcc_sfc_mail_new(void);
void hpcc_sfc_mail_put(const struct hpcc_sfc_mail *m, uint64_t now_ns, uint32_t qlen, uint8_t speed,
		       uint64_t deferred_until_ns);
void hpcc_sfc_mail_state(const struct hpcc_sfc_mail *m, struct hpcc_sfc_state *out);
uint64_t hpcc_sfc_mail_take_pause(const struct hpcc_sfc_mail *m);
void hpcc_sfc_mail_free(struct hpcc_sfc_mail *m);

#ifdef __cplusplus
}
#endif

#endif /* _HPCC_FFI_H */
