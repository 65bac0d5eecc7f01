// SPDX-License-Identifier: GPL-2.0
/*
 * Drives every function of include/hpcc_ffi.h from C, as a simulator's
 * TCP would: a flow's probe built, classified, answered with an INT hop
 * stamped as include/hpcc_int.h lays it out, the response applied by the
 * controller. Prints one line per result; tests/c_abi.rs compares them
 * with the core's own answers.
 */
#include <stdio.h>
#include <string.h>
#include <hpcc_ffi.h>

#define P(...) printf(__VA_ARGS__)

/* One INT hop (include/hpcc_int.h): rate code, ts, txBytes, qlen, big endian. */
static void put_hop(uint8_t *int_stack, int i, uint64_t rate, uint64_t ts, uint64_t txb, uint64_t qlen)
{
	uint64_t v = rate << 60 | (ts & 0xffffff) << 36 | (txb & 0xfffff) << 16 | (qlen & 0xffff);
	for (int b = 0; b < 8; b++)
		int_stack[4 + 8 * i + b] = (uint8_t)(v >> (56 - 8 * b));
}

int main(void)
{
	struct hpcc_knobs *k = hpcc_knobs_new("module");
	P("knobs %d %d %d %d\n", k != NULL, hpcc_knobs_new("nope") == NULL, hpcc_knobs_set(k, "nope", 1),
	  hpcc_knobs_validate(k));
	int rc = hpcc_knobs_set(k, "eta_ppm", 2000000);
	P("set %d %d\n", rc, hpcc_knobs_validate(k));
	hpcc_knobs_set(k, "eta_ppm", 950000);
	uint32_t got = 0;
	rc = hpcc_knobs_get(k, "eta_ppm", &got);
	P("get %d %u %d\n", rc, got, hpcc_knobs_get(k, "nope", &got));

	struct hpcc_conn c = { .now_ns = 1000000, .max_pacing_rate = UINT64_MAX, .mss = 1448, .cwnd = 10,
			       .ssthresh = UINT32_MAX, .srtt_us = 20, .min_rtt_us = 10 };
	struct hpcc_sock s;
	struct hpcc_init_decision id;
	memset(&s, 0, sizeof(s));
	hpcc_sock_init(k, &c, 0, &s, &id);
	P("init %u %u %u %llu\n", id.cwnd, id.ssthresh, id.pacing_shift, (unsigned long long)id.pacing_rate);
	c.cwnd = id.cwnd;
	c.ssthresh = id.ssthresh;
	c.packets_out = c.in_flight = 4;
	P("wants %d %d\n", hpcc_sock_wants_flow_on_ack(&s, k, &c), hpcc_sock_wants_flow_on_tx_start(&s, k, &c));
	struct hpcc_flow *f = hpcc_flow_new(k, &c);
	P("flow %d %d %d\n", f != NULL, hpcc_flow_probe_at_tx_start(f, k, &c), hpcc_flow_probe_due(f, k, &c));

	/* The probe, from 10.0.1.1:40000 to 10.0.2.1:5201. */
	struct hpcc_tuple t = { .saddr = { [10] = 0xff, [11] = 0xff, 10, 0, 1, 1 },
				.daddr = { [10] = 0xff, [11] = 0xff, 10, 0, 2, 1 }, .sport = 40000, .dport = 5201 };
	uint8_t pkt[HPCC_FFI_MAX_PACKET_LEN], resp[HPCC_FFI_MAX_PACKET_LEN];
	uint16_t spacing = hpcc_flow_probe_spacing_us(f, k, &c);
	uint32_t slot = hpcc_flow_probe_sent(f, c.now_ns);
	size_t n = hpcc_build_probe(pkt, &t, 11, 0xabcd0000u + slot, 777, spacing);
	struct hpcc_packet p;
	rc = hpcc_classify(pkt, n, 11, 15, &p);
	P("probe %zu %d %u %u\n", n, rc, spacing, hpcc_packet_spacing_us(&p));
	P("classified %u %u %u %u %u\n", p.kind, p.nonce, p.snd_nxt, p.tuple.sport, p.tuple.dport);

	/* A 100G switch stamps it (rate code 8), then the receiver answers. */
	p.int_stack[0] = 1 << 4;	/* nHop 1, pathID 0 (nHop in the top 4 bits) */
	put_hop(p.int_stack, 0, 8, 500000, 1000, 10);
	struct hpcc_rcvcount *cnt = hpcc_rcvcount_new();
	hpcc_rcvcount_insert(cnt, c.now_ns, 100000000, hpcc_packet_spacing_us(&p), 0x1234);
	uint16_t flows = hpcc_rcvcount_count_with(cnt, c.now_ns, 100000000, hpcc_packet_spacing_us(&p), 0x1234);
	size_t m = hpcc_build_response(resp, &p, 15, flows);
	struct hpcc_packet r;
	rc = hpcc_classify(resp, m, 11, 15, &r);
	P("response %zu %d %u %u\n", m, rc, r.kind, flows);

	/* The sender's checks: the response answers the probe once; its
	 * stack is admitted at 1 hop, not above max_hops 0. */
	struct hpcc_nonces *nc = hpcc_nonces_new();
	hpcc_nonces_record(nc, slot, 0xabcd0000u + slot, 777, c.now_ns);
	int v1 = hpcc_nonces_accept(nc, r.nonce, r.snd_nxt, c.now_ns + 10000);
	int v2 = hpcc_nonces_accept(nc, r.nonce, r.snd_nxt, c.now_ns + 20000);
	hpcc_nonces_record(nc, slot + 1, 5, 6, c.now_ns);
	int v3 = hpcc_nonces_accept(nc, 5, 6, c.now_ns + 2000000000ull);
	P("nonces %d %d %d %d %d %d\n", v1, v2, hpcc_nonces_accept(NULL, 1, 1, 1) == HPCC_FFI_NONCE_BAD,
	  hpcc_admit_int(r.int_stack, sizeof(r.int_stack), 1), hpcc_admit_int(r.int_stack, sizeof(r.int_stack), 0), v3);
	hpcc_nonces_free(nc);

	/* Two responses, 20 us apart, each applied on an ACK. */
	struct hpcc_rate_sample rs = { .interval_us = 20, .delivered = 8, .prior_in_flight = 4, .acked_sacked = 2 };
	struct hpcc_sfc_state sfc = { 0 };
	struct hpcc_ack_decision d;
	for (int i = 0; i < 2; i++) {
		c.now_ns += 20000;
		put_hop(r.int_stack, 0, 8, 500000 + 10000 * (uint64_t)(i + 1), 1000 + 60000 * (uint64_t)(i + 1), 10);
		struct hpcc_response a = { .rx_ns = c.now_ns, .int_stack = r.int_stack, .int_len = sizeof(r.int_stack),
					   .snd_nxt = r.snd_nxt };
		hpcc_sock_on_ack(&s, k, &c, &rs, f, &a, &sfc, &d);
		P("ack %u %llu %u %u %u %u %u %u %u %u\n", d.cwnd, (unsigned long long)d.pacing_rate, d.pacing_shift,
		  d.tso_segs, d.probe, d.take_pause, d.notes, d.has_trace, d.trace.event, d.trace.window);
		c.cwnd = d.cwnd;
	}
	hpcc_sock_on_ack(&s, k, &c, NULL, NULL, NULL, NULL, &d);
	P("fallback %u %u\n", d.cwnd, d.notes);
	P("pacing %llu\n", (unsigned long long)hpcc_flow_pacing_rate(f, k, 20));
	uint32_t ss = hpcc_sock_ssthresh(&s, k, &c);
	P("ssthresh %u undo %u\n", ss, hpcc_sock_undo_cwnd(&s, 1));
	hpcc_sock_flow_refused(&s, c.now_ns);
	P("after refused %d\n", hpcc_sock_wants_flow_on_ack(&s, k, &c));
	P("nulls %d %zu %d\n", hpcc_knobs_validate(NULL), hpcc_build_probe(NULL, &t, 11, 1, 1, 0),
	  hpcc_classify(NULL, 0, 11, 15, &p));

	/* SFC: a switch's signal, refused while SFC is off, then from two
	 * routers away (TTL 253) until sfc_max_hops is 2; the flow's window
	 * check and clamped pause; the flow's cell as the next ACK reads it. */
	struct hpcc_sfc_signal sg = { .pause_ns = 50000, .qlen = 120000, .switch_id = 7, .seq = 1000, .port_id = 3,
				      .sport = 40000, .dport = 5201, .family = 4, .l4proto = 6, .speed = 8,
				      .saddr = { 10, 0, 1, 1 }, .daddr = { 10, 0, 2, 1 } };
	uint8_t pay[HPCC_FFI_SFC_LEN];
	size_t sn = hpcc_sfc_encode(&sg, pay);
	struct hpcc_sfc_signal sig = { 0 };
	int a0 = hpcc_sfc_accept(k, 255, pay, sn, &sig);
	hpcc_knobs_set(k, "sfc_enable", 1);
	int a1 = hpcc_sfc_accept(k, 253, pay, sn, &sig);
	hpcc_knobs_set(k, "sfc_max_hops", 2);
	int a2 = hpcc_sfc_accept(k, 253, pay, sn, &sig);
	uint64_t pause = 0, pause2 = 0;
	int w1 = hpcc_sfc_check_flow(k, &sig, 500, 2000, &pause);
	int w2 = hpcc_sfc_check_flow(k, &sig, 1001, 2000, &pause2);
	P("sfc %zu %d %d %d %d %d %llu %u %u %u %u\n", sn, a0, a1, a2, w1, w2, (unsigned long long)pause, sig.qlen,
	  sig.sport, sig.saddr[3], sig.daddr[2]);
	struct hpcc_sfc_mail *mail = hpcc_sfc_mail_new();
	hpcc_sfc_mail_put(mail, 1000, 120000, 8, 0);
	hpcc_sfc_mail_put(mail, 1500, 60000, 8, 9000);
	struct hpcc_sfc_state st;
	hpcc_sfc_mail_state(mail, &st);
	uint64_t p1 = hpcc_sfc_mail_take_pause(mail), p2 = hpcc_sfc_mail_take_pause(mail);
	P("mail %u %u %u %llu %llu %llu\n", st.gen, st.qlen, st.speed, (unsigned long long)st.gap_ns,
	  (unsigned long long)p1, (unsigned long long)p2);
	hpcc_sfc_mail_free(mail);

	/* The probe budget: 1,000 probes a second for one flow at a 20 us
	 * RTT, which wants 50,000: its first probe is admitted, its next waits
	 * for its 1 ms share. */
	hpcc_knobs_set(k, "probe_budget", 1000);
	struct hpcc_budget *b = hpcc_budget_new();
	struct hpcc_flow *f2 = hpcc_flow_new(k, &c);
	struct hpcc_conn c1 = c, c2 = c;
	c1.now_ns += 1000;
	c2.now_ns += 1000000;
	int b0 = hpcc_flow_admit_probe(f2, k, b, &c);
	hpcc_flow_probe_sent(f2, c.now_ns);
	int b1 = hpcc_flow_admit_probe(f2, k, b, &c1);
	int b2 = hpcc_flow_admit_probe(f2, k, b, &c2);
	P("budget %d %d %d %d %d\n", b0, b1, b2, hpcc_budget_take_response(b, k, c.now_ns),
	  hpcc_flow_admit_probe(f2, k, NULL, &c));
	hpcc_flow_free(f2);
	hpcc_budget_free(b);
	hpcc_rcvcount_free(cnt);
	hpcc_flow_free(f);
	hpcc_knobs_free(k);
	return 0;
}
