// SPDX-License-Identifier: GPL-2.0
//
// hpcc for ns-3's TCP: the module's controller (rust/hpcc_core, through the
// C ABI of include/hpcc_ffi.h) driving an ns-3 TcpSocketBase, and the
// host's probe path. Glue only, as rust/tcp_hpcc/hpcc.rs is in the kernel:
// each hook reads what the connection shows into a struct hpcc_conn, asks
// the controller and applies its decision (cwnd, pacing rate, a probe).
//
// The kernel's jobs that ns-3 has no hook for are done here the way the
// module does them: probes are the bytes hpcc_build_probe writes, sent on
// the flow's 5-tuple with the probe DSCP; the receiver answers with
// hpcc_build_response; the sender checks the nonce (hpcc_nonces_*) and the
// INT stack (hpcc_admit_int) and hands the newest response to the next ACK.
#ifndef HPCC_NS3_HPCC_TCP_H
#define HPCC_NS3_HPCC_TCP_H

#include "ns3/internet-module.h"

#include "hpcc_ffi.h"

#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace hpccsim
{

class TcpHpcc;

// The simulation's knob set, one for every hpcc connection (the module's
// parameters are per host, and every host runs the same profile).
struct HpccConfig
{
    struct hpcc_knobs* knobs = nullptr;
    std::string profile;
    uint8_t probe_dscp = 0;
    uint8_t response_dscp = 0;
    uint32_t max_hops = 0;
    uint64_t rcv_count_ns = 0;
    FILE* ctl_trace = nullptr; // hpcc_ctl records for hpcc-replay --ctl
    // The drafts' RDMA-style variant instead of probes: every data segment
    // carries an INT block the switches stamp, and every ACK echoes the
    // newest one back (int=ack).
    bool int_ack = false;
    // SFC: hosts take switches' signals (the knob sfc_enable), on this
    // UDP port (sfc_port).
    bool sfc = false;
    uint16_t sfc_port = 0;
};
HpccConfig& Hpcc();
// Loads `profile` with NAME=VALUE overrides; false if the core refuses it.
bool ConfigLoad(const std::string& profile, const std::vector<std::pair<std::string, uint32_t>>& set);

// A flow's tuple as the core takes it: IPv4-mapped addresses, host-order ports.
struct hpcc_tuple V4Tuple(ns3::Ipv4Address src, ns3::Ipv4Address dst, uint16_t sport, uint16_t dport);

// What every host's probe path counted.
struct ProbeStats
{
    uint64_t probes_sent = 0;
    uint64_t probes_held_share = 0;  // due, held for the flow's share of the budget
    uint64_t probes_held_budget = 0; // due, held: the host's budget spent
    uint64_t probes_over_response_budget = 0; // received, not answered: the budget spent
    uint64_t probes_received = 0;
    uint64_t probes_no_flow = 0; // no connection to answer for
    uint64_t responses_sent = 0;
    uint64_t responses_received = 0;
    uint64_t responses_accepted = 0;
    uint64_t responses_bad_nonce = 0;
    uint64_t responses_late = 0;
    uint64_t responses_bad_int = 0;
    uint64_t responses_too_many_hops = 0;
    uint64_t responses_no_flow = 0;
    uint64_t malformed = 0; // the DSCP, but not exactly our format: passed to TCP
    uint64_t int_blocks_sent = 0;   // int=ack: data segments that carried an INT block
    uint64_t int_echoes_sent = 0;   // int=ack: ACKs that echoed one
    uint64_t acks = 0;
    uint64_t hpcc_acks = 0;     // decided by telemetry (note HpccAck)
    uint64_t fallback_acks = 0; // by the fallback law (note FallbackAck)
    // SFC signals at the senders.
    uint64_t sfc_received = 0;
    uint64_t sfc_applied = 0;
    uint64_t sfc_no_flow = 0;
    std::map<int, uint64_t> sfc_refused; // by enum hpcc_sfc_outcome code
    uint64_t sfc_pause_ns = 0;           // pauses applied, summed
    uint64_t sfc_window_cuts = 0;        // ACKs that cut the window (note SfcWindowCut)
    uint64_t sfc_held = 0;               // packets held by a pause
};
ProbeStats& Probes();

// A host's TCP protocol number, demultiplexed: probes and responses (the
// exact format, with their DSCPs) go to the probe path, everything else to
// ns-3's TcpL4Protocol untouched. It is what the module's netfilter hook is
// on a Linux host.
class HpccHost : public ns3::IpL4Protocol
{
  public:
    static ns3::TypeId GetTypeId();
    // Installs the demultiplexer in front of the node's TCP.
    static ns3::Ptr<HpccHost> Install(ns3::Ptr<ns3::Node> node);

    void Register(const struct hpcc_tuple& t, TcpHpcc* cc);
    void Unregister(const struct hpcc_tuple& t);
    // Sends one probe or response (the core's bytes, IPv4).
    void SendRaw(const uint8_t* bytes, size_t len);

    int GetProtocolNumber() const override { return 6; }
    enum RxStatus Receive(ns3::Ptr<ns3::Packet> p,
                          const ns3::Ipv4Header& header,
                          ns3::Ptr<ns3::Ipv4Interface> iface) override;
    enum RxStatus Receive(ns3::Ptr<ns3::Packet> p,
                          const ns3::Ipv6Header& header,
                          ns3::Ptr<ns3::Ipv6Interface> iface) override;
    void SetDownTarget(DownTargetCallback cb) override { m_tcp->SetDownTarget(cb); }
    void SetDownTarget6(DownTargetCallback6 cb) override { m_tcp->SetDownTarget6(cb); }
    DownTargetCallback GetDownTarget() const override { return m_tcp->GetDownTarget(); }
    DownTargetCallback6 GetDownTarget6() const override { return m_tcp->GetDownTarget6(); }

    // A switch's SFC signal (the UDP payload) that arrived with `ttl`.
    void OnSignal(const uint8_t* payload, size_t len, uint8_t ttl);
    // Holds what this host sends on tuple `t` until `until_ns` (the
    // module moves the socket's departure clock; sch_fq holds).
    void PauseUntil(const struct hpcc_tuple& t, uint64_t until_ns);
    // The host's probe budget (probe_budget), as the module's netns's.
    const struct hpcc_budget* Budget() const { return m_budget; }

  private:
    // int=ack and SFC: TCP's segments on their way down, and up.
    void SendDown(ns3::Ptr<ns3::Packet> p,
                  ns3::Ipv4Address src,
                  ns3::Ipv4Address dst,
                  uint8_t proto,
                  ns3::Ptr<ns3::Ipv4Route> route);
    bool TakeIntBlock(ns3::Ptr<ns3::Packet> p, const ns3::Ipv4Header& header);
    void OnProbe(const struct hpcc_packet& pkt, uint64_t now);
    void OnResponse(const struct hpcc_packet& pkt, uint64_t now);

    ns3::Ptr<ns3::Node> m_node;
    ns3::Ptr<ns3::IpL4Protocol> m_tcp;
    ns3::Ptr<ns3::Ipv4L3Protocol> m_ipv4;
    struct hpcc_rcvcount* m_rcv = nullptr;
    struct hpcc_budget* m_budget = nullptr;
    // The connections of this host, sender side, by their tuple.
    std::map<std::array<uint8_t, 36>, TcpHpcc*> m_flows;
    // Connections this host receives (to answer only those), by tuple.
    std::map<std::array<uint8_t, 36>, uint32_t> m_accepts;
    // int=ack: TCP's own way down, and the newest INT block each received
    // flow carried (to echo on its next ACK).
    DownTargetCallback m_down;
    struct Echo
    {
        bool fresh = false;
        uint32_t snd_nxt = 0;
        std::array<uint8_t, HPCC_FFI_INT_LEN> int_stack{};
    };
    std::map<std::array<uint8_t, 36>, Echo> m_echo;
    // SFC: the flows paused, their deadline and what waits for it.
    struct Held
    {
        ns3::Ptr<ns3::Packet> p;
        ns3::Ipv4Address src, dst;
        uint8_t proto;
        ns3::Ptr<ns3::Ipv4Route> route;
    };
    struct Pause
    {
        uint64_t until_ns = 0;
        std::vector<Held> held;
        bool scheduled = false;
    };
    std::map<std::array<uint8_t, 36>, Pause> m_paused;
    void Emit(ns3::Ptr<ns3::Packet> p, ns3::Ipv4Address src, ns3::Ipv4Address dst, uint8_t proto,
              ns3::Ptr<ns3::Ipv4Route> route);
    void Release(std::array<uint8_t, 36> key);
    ns3::Ptr<ns3::Socket> m_sfcSocket;
    void OnSignalSocket(ns3::Ptr<ns3::Socket> s);

  public:
    void Accept(const struct hpcc_tuple& t) { m_accepts[Key(t)]++; }
    void Unaccept(const struct hpcc_tuple& t);
    static std::array<uint8_t, 36> Key(const struct hpcc_tuple& t);
};

// The congestion control of one hpcc connection (sender side). A
// connection's application attaches it before connecting, with the host
// and the connection's tuple, and calls Established() when the handshake
// completes (Linux calls init then; ns-3 sets cwnd and ssthresh after its
// own Init).
class TcpHpcc : public ns3::TcpCongestionOps
{
  public:
    static ns3::TypeId GetTypeId();
    TcpHpcc();
    TcpHpcc(const TcpHpcc& o);
    ~TcpHpcc() override;

    void Attach(ns3::Ptr<HpccHost> host, const struct hpcc_tuple& t, uint64_t id);
    void Established();
    void Detach();
    // A response its nonce and INT stack passed (HpccHost).
    void Deliver(uint64_t rx_ns, uint32_t snd_nxt, const uint8_t* int_stack);
    // An SFC signal for this flow that passed the host's rules: the
    // window check, then the pause (HpccHost::PauseUntil) and the cell
    // for the next ACK. 0 or the refusal's code.
    int OnSignal(const struct hpcc_sfc_signal& s, uint64_t now);
    struct hpcc_nonces* Nonces() const { return m_nonces; }
    bool HasFlow() const { return m_flow != nullptr; }
    // ACKs this connection's controller decided, and how many by telemetry.
    uint64_t Acks() const { return m_acks; }
    uint64_t TelemetryAcks() const { return m_telemetry_acks; }

    std::string GetName() const override { return "hpcc"; }
    void Init(ns3::Ptr<ns3::TcpSocketState> tcb) override;
    uint32_t GetSsThresh(ns3::Ptr<const ns3::TcpSocketState> tcb, uint32_t bytesInFlight) override;
    void IncreaseWindow(ns3::Ptr<ns3::TcpSocketState>, uint32_t) override {}
    void PktsAcked(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t segmentsAcked, const ns3::Time& rtt) override;
    void CwndEvent(ns3::Ptr<ns3::TcpSocketState> tcb, const ns3::TcpSocketState::TcpCAEvent_t event) override;
    bool HasCongControl() const override { return true; }
    void CongControl(ns3::Ptr<ns3::TcpSocketState> tcb,
                     const ns3::TcpRateOps::TcpRateConnection& rc,
                     const ns3::TcpRateOps::TcpRateSample& rs) override;
    ns3::Ptr<ns3::TcpCongestionOps> Fork() override;

  private:
    struct hpcc_conn Conn(ns3::Ptr<const ns3::TcpSocketState> tcb, uint32_t prior_in_flight_bytes) const;
    uint16_t EnsureFlow(const struct hpcc_conn& c, bool on_ack);
    bool SendProbe(ns3::Ptr<const ns3::TcpSocketState> tcb, const struct hpcc_conn& c);
    // A due probe through the host's budget, then SendProbe: the trace flag.
    uint16_t Probe(ns3::Ptr<const ns3::TcpSocketState> tcb, const struct hpcc_conn& c);
    void ApplyPacing(ns3::Ptr<ns3::TcpSocketState> tcb, uint64_t bytes_per_s);
    void Trace(uint8_t hook,
               const struct hpcc_conn& c,
               uint16_t flags,
               const struct hpcc_rate_sample* rs,
               const struct hpcc_response* resp,
               const struct hpcc_sfc_state* sfc,
               uint32_t out_cwnd,
               uint32_t out_ssthresh,
               uint64_t out_pacing,
               uint8_t out_shift,
               uint16_t out_tso) const;

    ns3::Ptr<HpccHost> m_host;
    ns3::Ptr<ns3::TcpSocketState> m_tcb; // the socket's, from Init
    struct hpcc_tuple m_tuple = {};
    uint64_t m_id = 0;
    bool m_attached = false;
    bool m_established = false;
    struct hpcc_sock m_sock = {};
    struct hpcc_flow* m_flow = nullptr;
    struct hpcc_nonces* m_nonces = nullptr;
    struct hpcc_sfc_mail* m_sfc = nullptr;
    uint64_t m_acks = 0;
    uint64_t m_telemetry_acks = 0;
    uint32_t m_srtt_us = 0; // Linux's smoothed RTT (ns-3 keeps it in the socket, out of reach)
    bool m_mail = false;
    uint64_t m_mail_rx_ns = 0;
    uint32_t m_mail_snd_nxt = 0;
    std::array<uint8_t, HPCC_FFI_INT_LEN> m_mail_int{};
};

} // namespace hpccsim

#endif
