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

#include <array>
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
    uint64_t bytes = 0;       // all bytes sent by switch ports

    // The smallest backlog that `q` of the arrivals found or exceeded.
    uint64_t BacklogQuantile(double q) const;
};

FabricStats& Fabric();

// One egress port: FIFO, drop-tail at MaxSize bytes. With MarkBytes > 0,
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
    void SetSwitchPort(bool on) { m_switchPort = on; }
    uint64_t TxBytes() const { return m_txBytes; }

  private:
    bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override;
    ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override;
    bool CheckConfig() override;
    void InitializeParams() override;
    void Stamp(ns3::Ptr<ns3::QueueDiscItem> item, uint32_t wire);
    uint64_t Backlog() const;

    uint32_t m_markBytes = 0;
    ns3::Ptr<ns3::PointToPointNetDevice> m_dev;
    uint64_t m_bps = 0;
    uint8_t m_speed = 0;
    uint16_t m_switchId = 0;
    uint8_t m_probeDscp = 0;
    uint8_t m_responseDscp = 0;
    bool m_switchPort = false;
    uint64_t m_txBytes = 0;
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
