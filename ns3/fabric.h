// SPDX-License-Identifier: GPL-2.0
//
// The switches of the simulated fabric: an egress port (DcQueueDisc:
// drop-tail buffer, DCTCP's ECN marking, HPCC++ INT stamped into probes
// at dequeue) and per-flow ECMP (HashRouting: a 5-tuple hash over equal-cost
// next hops). Neither decides anything about congestion control: the port
// reports, the hosts' controllers (hpcc-tcp.h, ns-3's own TCPs) decide.
#ifndef HPCC_NS3_FABRIC_H
#define HPCC_NS3_FABRIC_H

#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

extern "C" {
#include "hpcc_probe.h"
}

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

namespace hpccsim
{

// What every switch port saw, for the run's summary.
struct FabricStats
{
    // Arrivals at switch egress ports by the backlog they found, in
    // kBucket-byte buckets (the last one holds everything above).
    static constexpr uint32_t kBucket = 1024;
    std::vector<uint64_t> arrivals_by_backlog = std::vector<uint64_t>(4097, 0);
    uint64_t drops = 0;
    uint64_t marks = 0;
    uint64_t probes_stamped = 0;
    uint64_t probes_full = 0; // arrived with HPCC_INT_MAX_HOPS records: left alone
    uint64_t probe_bytes = 0; // probe and response bytes sent by switch ports
    bool int_ack = false;     // int=ack: count the INT blocks, not whole packets
    uint64_t bytes = 0;       // all bytes sent by switch ports
    std::vector<uint64_t> drop_ns; // when each drop happened
    // SFC at the ports (as selftests/lib/bpf/int_switch.bpf.c counts it).
    uint64_t sfc_triggered = 0;    // data arrivals at or above the trigger
    uint64_t sfc_suppressed = 0;   // the flow was signalled within suppress_ns
    uint64_t sfc_rate_limited = 0; // the port's token bucket was empty
    uint64_t sfc_sent = 0;
    uint64_t sfc_bytes = 0;        // signal bytes sent by switch ports

    // The smallest backlog that `q` of the arrivals found or exceeded.
    uint64_t BacklogQuantile(double q) const;
};

FabricStats& Fabric();

// The probe's payload (include/hpcc_probe.h: its header, then the INT
// stack), carried right after the TCP header of a data segment (type probe,
// which the switches stamp) or of an ACK (type response, the echo).
class IntBlock : public ns3::Header
{
  public:
    static ns3::TypeId GetTypeId()
    {
        static ns3::TypeId tid =
            ns3::TypeId("hpccsim::IntBlock").SetParent<ns3::Header>().AddConstructor<IntBlock>();
        return tid;
    }
    ns3::TypeId GetInstanceTypeId() const override { return GetTypeId(); }
    uint32_t GetSerializedSize() const override { return HPCC_PROBE_PAYLOAD_LEN; }
    void Serialize(ns3::Buffer::Iterator i) const override { i.Write(b.data(), b.size()); }
    uint32_t Deserialize(ns3::Buffer::Iterator i) override
    {
        i.Read(b.data(), b.size());
        return HPCC_PROBE_PAYLOAD_LEN;
    }
    void Print(std::ostream& os) const override { os << "hpcc int block"; }

    void Fill(uint8_t type, uint32_t snd_nxt, const uint8_t* int_stack)
    {
        b.fill(0);
        put32(0, HPCC_PROBE_MAGIC);
        b[4] = HPCC_PROBE_VERSION;
        b[5] = type;
        b[6] = HPCC_PROBE_PAYLOAD_LEN >> 8;
        b[7] = HPCC_PROBE_PAYLOAD_LEN & 0xff;
        put32(12, snd_nxt);
        if (int_stack)
        {
            std::memcpy(b.data() + HPCC_PROBE_INT_OFF, int_stack, HPCC_INT_MAX_LEN);
        }
    }
    bool Ours(uint8_t type) const
    {
        return get32(0) == HPCC_PROBE_MAGIC && b[4] == HPCC_PROBE_VERSION && b[5] == type;
    }
    uint32_t SndNxt() const { return get32(12); }
    const uint8_t* Int() const { return b.data() + HPCC_PROBE_INT_OFF; }
    uint8_t* Int() { return b.data() + HPCC_PROBE_INT_OFF; }

  private:
    void put32(size_t o, uint32_t v)
    {
        for (int k = 0; k < 4; k++)
        {
            b[o + k] = static_cast<uint8_t>(v >> (24 - 8 * k));
        }
    }
    uint32_t get32(size_t o) const
    {
        return (uint32_t(b[o]) << 24) | (uint32_t(b[o + 1]) << 16) | (uint32_t(b[o + 2]) << 8) | b[o + 3];
    }
    std::array<uint8_t, HPCC_PROBE_PAYLOAD_LEN> b{};
};

// One switch egress port: FIFO, drop-tail at MaxSize bytes. With MarkBytes > 0,
// an ECN-capable packet that arrives to a backlog above MarkBytes is CE-
// marked (RED with an instantaneous queue, MinTh = MaxTh = K: the anchors'
// DCTCP switch). With a speed code (include/hpcc_int.h), an HPCC++ probe
// gets one INT record as it leaves: departure time, the port's txBytes up
// to and including it, and the port's whole backlog (queue disc and the
// device's one-packet queue), as selftests/lib/bpf/int_switch.bpf.c does.
class DcQueueDisc : public ns3::QueueDisc
{
  public:
    static ns3::TypeId GetTypeId();
    DcQueueDisc();

    // The port's device and its rate, to count the device's own queue and
    // to time the departure stamp.
    void SetDevice(ns3::Ptr<ns3::PointToPointNetDevice> dev, uint64_t bps);
    // Stamp probes (a speed code, the switch's 12-bit ID); the DSCPs of
    // probes and responses (the hosts' knobs), to stamp and to count them.
    void SetInt(uint8_t speed_code, uint16_t switch_id, uint8_t probe_dscp, uint8_t response_dscp);
    uint64_t TxBytes() const { return m_txBytes; }

    // Source Flow Control, as selftests/lib/bpf/int_switch.bpf.c: a data
    // segment that arrives (queued or dropped) to a backlog of at least
    // trigger_bytes signals its source to pause for the time the port
    // needs to drain to target_bytes, unless its flow was signalled within
    // suppress_ns or the port's token bucket (rate per second, burst) is
    // empty. `send` sends the signal's UDP payload (include/hpcc_sfc.h,
    // built by the core's hpcc_sfc_encode) from the switch to an address.
    struct Sfc
    {
        uint64_t trigger_bytes = 0; // 0: off
        uint64_t target_bytes = 0;
        uint64_t suppress_ns = 200000;
        uint32_t rate = 100000;
        uint32_t burst = 64;
        uint32_t switch_id = 0;
        uint16_t port_id = 0;
        std::function<void(ns3::Ipv4Address to, const uint8_t* payload, size_t len)> send;
    };
    void SetSfc(const Sfc& sfc);

  private:
    bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override;
    ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override;
    bool CheckConfig() override;
    void InitializeParams() override;
    void Stamp(ns3::Ptr<ns3::QueueDiscItem> item, uint32_t wire);
    // Writes this port's record into an INT stack; updates the TCP
    // checksum `csum` (RFC 1624) unless null. False if the stack is full.
    bool StampStack(uint8_t* stack, uint32_t wire, uint8_t* csum);
    uint64_t Backlog() const;
    void SignalSource(ns3::Ptr<ns3::QueueDiscItem> item, uint64_t backlog);

    uint32_t m_markBytes = 0;
    ns3::Ptr<ns3::PointToPointNetDevice> m_dev;
    uint64_t m_bps = 0;
    uint8_t m_speed = 0;
    uint16_t m_switchId = 0;
    uint8_t m_probeDscp = 0;
    uint8_t m_responseDscp = 0;
    uint64_t m_txBytes = 0;
    Sfc m_sfc;
    std::map<std::array<uint8_t, 13>, uint64_t> m_sfcLast; // flow -> last signal, ns
    uint64_t m_sfcTokens = 0;                               // in 10^-9 signals
    uint64_t m_sfcLastNs = 0;
};

// Static routes with a per-flow hash over equal-cost next hops: a packet's
// addresses, protocol and ports pick one of them, the same one for every
// packet of a flow (its probes and their responses included, as they carry
// the flow's 5-tuple). ns-3's global routing spreads per packet, at random.
class HashRouting : public ns3::Ipv4RoutingProtocol
{
  public:
    static ns3::TypeId GetTypeId();

    struct NextHop
    {
        uint32_t iface;
        ns3::Ipv4Address gateway;
        ns3::Ptr<ns3::Ipv4Route> route; // built by AddRoute
    };
    void AddRoute(ns3::Ipv4Address dst, std::vector<NextHop> hops);
    void SetSeed(uint32_t seed) { m_seed = seed; }

    ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet> p,
                                         const ns3::Ipv4Header& header,
                                         ns3::Ptr<ns3::NetDevice> oif,
                                         ns3::Socket::SocketErrno& err) override;
    bool RouteInput(ns3::Ptr<const ns3::Packet> p,
                    const ns3::Ipv4Header& header,
                    ns3::Ptr<const ns3::NetDevice> idev,
                    UnicastForwardCallback ucb,
                    MulticastForwardCallback mcb,
                    LocalDeliverCallback lcb,
                    ErrorCallback ecb) override;
    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
    void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { m_ipv4 = ipv4; }
    void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper>, ns3::Time::Unit) const override {}

  private:
    ns3::Ptr<ns3::Ipv4Route> Pick(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& h);

    ns3::Ptr<ns3::Ipv4> m_ipv4;
    std::map<uint32_t, std::vector<NextHop>> m_routes;
    uint32_t m_seed = 0;
};

} // namespace hpccsim

#endif
