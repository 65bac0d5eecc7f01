// SPDX-License-Identifier: GPL-2.0
#include "fabric.h"

#include "ns3/point-to-point-module.h"

extern "C" {
#include "hpcc_int.h"
}
#include "hpcc_ffi.h"

#include <algorithm>

using namespace ns3;

namespace hpccsim
{

FabricStats&
Fabric()
{
    static FabricStats s;
    return s;
}

uint64_t
FabricStats::BacklogQuantile(double q) const
{
    uint64_t total = 0;
    for (auto n : arrivals_by_backlog)
    {
        total += n;
    }
    if (total == 0)
    {
        return 0;
    }
    uint64_t want = static_cast<uint64_t>(q * static_cast<double>(total));
    uint64_t seen = 0;
    for (size_t i = 0; i < arrivals_by_backlog.size(); i++)
    {
        seen += arrivals_by_backlog[i];
        if (seen > want)
        {
            return i * kBucket;
        }
    }
    return (arrivals_by_backlog.size() - 1) * kBucket;
}

NS_OBJECT_ENSURE_REGISTERED(DcQueueDisc);

TypeId
DcQueueDisc::GetTypeId()
{
    static TypeId tid =
        TypeId("hpccsim::DcQueueDisc")
            .SetParent<QueueDisc>()
            .AddConstructor<DcQueueDisc>()
            .AddAttribute("MaxSize",
                          "drop-tail buffer",
                          QueueSizeValue(QueueSize("2MB")),
                          MakeQueueSizeAccessor(&QueueDisc::SetMaxSize, &QueueDisc::GetMaxSize),
                          MakeQueueSizeChecker())
            .AddAttribute("MarkBytes",
                          "CE-mark ECN-capable arrivals above this backlog (0: never)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&DcQueueDisc::m_markBytes),
                          MakeUintegerChecker<uint32_t>());
    return tid;
}

DcQueueDisc::DcQueueDisc()
    : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE, QueueSizeUnit::BYTES)
{
}

void
DcQueueDisc::SetDevice(Ptr<PointToPointNetDevice> dev, uint64_t bps)
{
    m_dev = dev;
    m_bps = bps;
}

void
DcQueueDisc::SetInt(uint8_t speed_code, uint16_t switch_id, uint8_t probe_dscp, uint8_t response_dscp)
{
    m_responseDscp = response_dscp;
    m_speed = speed_code;
    m_switchId = switch_id & HPCC_INT_PATHID_MASK;
    m_probeDscp = probe_dscp;
}

uint64_t
DcQueueDisc::Backlog() const
{
    uint64_t b = GetNBytes();
    if (m_dev)
    {
        b += m_dev->GetQueue()->GetNBytes();
    }
    return b;
}

void
DcQueueDisc::SetSfc(const Sfc& sfc)
{
    m_sfc = sfc;
    m_sfcTokens = uint64_t(sfc.burst) * 1000000000ULL;
}

void
DcQueueDisc::SignalSource(Ptr<QueueDiscItem> item, uint64_t backlog)
{
    auto ip = DynamicCast<Ipv4QueueDiscItem>(item);
    if (!ip || !m_sfc.send || m_bps == 0)
    {
        return;
    }
    const Ipv4Header& h = ip->GetHeader();
    uint8_t dscp = h.GetTos() >> 2;
    TcpHeader th;
    Ptr<Packet> p = item->GetPacket();
    // TCP data only: a segment with payload (with int=ack, more than its
    // INT block), never a probe, a response or an ACK's INT echo.
    if (h.GetProtocol() != 6 || dscp == m_responseDscp || p->PeekHeader(th) == 0)
    {
        return;
    }
    uint32_t payload = p->GetSize() - th.GetSerializedSize();
    bool int_block = dscp == m_probeDscp && Fabric().int_ack;
    if (payload <= (int_block ? HPCC_PROBE_PAYLOAD_LEN : 0) ||
        (dscp == m_probeDscp && !Fabric().int_ack && p->GetSize() == HPCC_PROBE_TCP_HDR_LEN + HPCC_PROBE_PAYLOAD_LEN))
    {
        return;
    }
    auto& st = Fabric();
    st.sfc_triggered++;
    std::array<uint8_t, 13> k{};
    h.GetSource().Serialize(k.data());
    h.GetDestination().Serialize(k.data() + 4);
    uint16_t sp = th.GetSourcePort(), dp = th.GetDestinationPort();
    k[8] = static_cast<uint8_t>(sp >> 8);
    k[9] = static_cast<uint8_t>(sp);
    k[10] = static_cast<uint8_t>(dp >> 8);
    k[11] = static_cast<uint8_t>(dp);
    k[12] = 6;
    uint64_t now = Simulator::Now().GetNanoSeconds();
    auto last = m_sfcLast.find(k);
    if (last != m_sfcLast.end() && now - last->second < m_sfc.suppress_ns)
    {
        st.sfc_suppressed++;
        return;
    }
    uint64_t cap = uint64_t(m_sfc.burst) * 1000000000ULL;
    uint64_t add = now - m_sfcLastNs;
    m_sfcLastNs = now;
    add = add > 0xffffffffULL ? cap : add * m_sfc.rate;
    m_sfcTokens = std::min(cap, m_sfcTokens + add);
    if (m_sfcTokens < 1000000000ULL)
    {
        st.sfc_rate_limited++;
        return;
    }
    m_sfcTokens -= 1000000000ULL;
    m_sfcLast[k] = now;
    uint64_t ahead = backlog > m_sfc.target_bytes ? backlog - m_sfc.target_bytes : 0;
    uint64_t pause = ahead * 8000000000ULL / m_bps;
    struct hpcc_sfc_signal sig = {};
    sig.pause_ns = static_cast<uint32_t>(std::min<uint64_t>(pause ? pause : 1, 0xffffffffULL));
    sig.qlen = static_cast<uint32_t>(std::min<uint64_t>(backlog, 0xffffffffULL));
    sig.switch_id = m_sfc.switch_id;
    sig.seq = th.GetSequenceNumber().GetValue();
    sig.port_id = m_sfc.port_id;
    sig.sport = sp;
    sig.dport = dp;
    sig.family = 4;
    sig.l4proto = 6;
    sig.speed = m_speed;
    h.GetSource().Serialize(sig.saddr);
    h.GetDestination().Serialize(sig.daddr);
    std::array<uint8_t, HPCC_FFI_SFC_LEN> b{};
    size_t n = hpcc_sfc_encode(&sig, b.data());
    if (n)
    {
        st.sfc_sent++;
        st.sfc_bytes += n + 8 + 20 + 2; // UDP, IPv4, point-to-point
        m_sfc.send(h.GetSource(), b.data(), n);
    }
}

bool
DcQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
    uint64_t backlog = Backlog();
    auto& st = Fabric();
    st.arrivals_by_backlog[std::min<uint64_t>(backlog / FabricStats::kBucket, st.arrivals_by_backlog.size() - 1)]++;
    // SFC after the queue decision: a dropped segment signals too.
    bool drop = GetCurrentSize() + item > GetMaxSize();
    if (m_sfc.trigger_bytes != 0 && backlog >= m_sfc.trigger_bytes)
    {
        SignalSource(item, backlog);
    }
    if (drop)
    {
        st.drops++;
        st.drop_ns.push_back(Simulator::Now().GetNanoSeconds());
        DropBeforeEnqueue(item, "buffer full");
        return false;
    }
    if (m_markBytes != 0 && backlog > m_markBytes && item->Mark())
    {
        st.marks++;
    }
    return GetInternalQueue(0)->Enqueue(item);
}

// RFC 1624: HC' = ~(~HC + ~m + m'), over the 16-bit words that changed.
static void
CsumReplace(uint8_t* csum, const uint8_t* old_bytes, const uint8_t* new_bytes, size_t len)
{
    uint32_t sum = static_cast<uint16_t>(~((csum[0] << 8) | csum[1]));
    for (size_t i = 0; i + 1 < len; i += 2)
    {
        sum += static_cast<uint16_t>(~((old_bytes[i] << 8) | old_bytes[i + 1]));
        sum += static_cast<uint16_t>((new_bytes[i] << 8) | new_bytes[i + 1]);
    }
    while (sum >> 16)
    {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    uint16_t c = static_cast<uint16_t>(~sum);
    csum[0] = static_cast<uint8_t>(c >> 8);
    csum[1] = static_cast<uint8_t>(c);
}

bool
DcQueueDisc::StampStack(uint8_t* stack, uint32_t wire, uint8_t* csum)
{
    uint32_t word = (stack[0] << 8) | stack[1];
    uint32_t nhop = word >> HPCC_INT_NHOP_POS;
    int sh = hpcc_int_unit_shift(m_speed);
    if (nhop >= HPCC_INT_MAX_HOPS || sh < 0)
    {
        Fabric().probes_full += nhop >= HPCC_INT_MAX_HOPS;
        return false;
    }
    // Departure: the last bit out, at the port's rate, behind the device's
    // own queue.
    uint64_t dev_bytes = m_dev ? m_dev->GetQueue()->GetNBytes() : 0;
    uint64_t now = Simulator::Now().GetNanoSeconds();
    uint64_t dep = now + (m_bps ? (dev_bytes + wire) * 8ULL * 1000000000ULL / m_bps : 0);
    uint64_t q = std::min<uint64_t>(Backlog() >> sh, HPCC_INT_QLEN_MASK);
    uint8_t* rec = stack + HPCC_INT_HDR_LEN + HPCC_INT_HOP_LEN * nhop;
    std::array<uint8_t, HPCC_INT_HOP_LEN> old_rec;
    std::copy(rec, rec + HPCC_INT_HOP_LEN, old_rec.begin());
    std::array<uint8_t, 4> old_hdr;
    std::copy(stack, stack + 4, old_hdr.begin());
    hpcc_int_hop_pack(reinterpret_cast<struct hpcc_int_hop*>(rec),
                      m_speed,
                      static_cast<uint32_t>(dep >> HPCC_INT_TS_UNIT_SHIFT),
                      static_cast<uint32_t>(m_txBytes >> sh),
                      static_cast<uint32_t>(q));
    uint32_t path = (word & HPCC_INT_PATHID_MASK) ^ m_switchId;
    stack[0] = static_cast<uint8_t>(((nhop + 1) << 4) | (path >> 8));
    stack[1] = static_cast<uint8_t>(path);
    if (csum)
    {
        CsumReplace(csum, old_rec.data(), rec, HPCC_INT_HOP_LEN);
        CsumReplace(csum, old_hdr.data(), stack, 4);
    }
    Fabric().probes_stamped++;
    return true;
}

void
DcQueueDisc::Stamp(Ptr<QueueDiscItem> item, uint32_t wire)
{
    auto ip = DynamicCast<Ipv4QueueDiscItem>(item);
    if (!ip)
    {
        return;
    }
    const Ipv4Header& h = ip->GetHeader();
    Ptr<Packet> p = item->GetPacket();
    if (h.GetProtocol() != 6 || (h.GetTos() >> 2) != m_probeDscp || p->GetSize() < 20 + HPCC_PROBE_PAYLOAD_LEN)
    {
        return;
    }
    constexpr uint32_t len = HPCC_PROBE_TCP_HDR_LEN + HPCC_PROBE_PAYLOAD_LEN;
    if (p->GetSize() == len)
    {
        // A probe: the probe payload right after a 20-byte TCP header,
        // whose checksum stays the valid one plus one (include/hpcc_probe.h).
        std::array<uint8_t, len> b{};
        p->CopyData(b.data(), len);
        const uint8_t* ph = b.data() + HPCC_PROBE_TCP_HDR_LEN;
        uint32_t magic = (uint32_t(ph[0]) << 24) | (ph[1] << 16) | (ph[2] << 8) | ph[3];
        if ((b[12] >> 4) * 4u != HPCC_PROBE_TCP_HDR_LEN || magic != HPCC_PROBE_MAGIC ||
            ph[4] != HPCC_PROBE_VERSION || ph[5] != HPCC_PROBE_TYPE_PROBE)
        {
            return;
        }
        if (StampStack(b.data() + HPCC_PROBE_TCP_HDR_LEN + HPCC_PROBE_INT_OFF, wire, b.data() + 16))
        {
            p->RemoveAtEnd(len);
            p->AddAtEnd(Create<Packet>(b.data(), len));
        }
        return;
    }
    // int=ack: a data segment with the block after its TCP header (ns-3
    // computes no TCP checksums, so there is none to update).
    TcpHeader th;
    IntBlock blk;
    p->RemoveHeader(th);
    p->RemoveHeader(blk);
    if (blk.Ours(HPCC_PROBE_TYPE_PROBE))
    {
        StampStack(blk.Int(), wire, nullptr);
    }
    p->AddHeader(blk);
    p->AddHeader(th);
}

Ptr<QueueDiscItem>
DcQueueDisc::DoDequeue()
{
    Ptr<QueueDiscItem> item = GetInternalQueue(0)->Dequeue();
    if (!item)
    {
        return nullptr;
    }
    // On the wire: IP packet plus the point-to-point header.
    uint32_t wire = item->GetSize() + 2;
    m_txBytes += wire;
    if (m_speed != 0)
    {
        Stamp(item, wire);
    }
    auto ip = DynamicCast<Ipv4QueueDiscItem>(item);
    uint8_t dscp = ip ? ip->GetHeader().GetTos() >> 2 : 0;
    Fabric().bytes += wire;
    if (dscp != 0 && (dscp == m_probeDscp || dscp == m_responseDscp))
    {
        // A probe or response whole; with int=ack, the block a data
        // segment or an ACK carries (an ACK with one is a probe's size).
        Fabric().probe_bytes += Fabric().int_ack ? HPCC_PROBE_PAYLOAD_LEN : wire;
    }
    return item;
}

bool
DcQueueDisc::CheckConfig()
{
    if (GetNInternalQueues() == 0)
    {
        AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
            "MaxSize",
            QueueSizeValue(GetMaxSize())));
    }
    return GetNInternalQueues() == 1 && GetNQueueDiscClasses() == 0;
}

void
DcQueueDisc::InitializeParams()
{
}

NS_OBJECT_ENSURE_REGISTERED(HashRouting);

TypeId
HashRouting::GetTypeId()
{
    static TypeId tid = TypeId("hpccsim::HashRouting").SetParent<Ipv4RoutingProtocol>();
    return tid;
}

void
HashRouting::AddRoute(Ipv4Address dst, std::vector<NextHop> hops)
{
    // One route object per next hop, built once: forwarding only reads it.
    for (auto& h : hops)
    {
        h.route = Create<Ipv4Route>();
        h.route->SetDestination(dst);
        h.route->SetGateway(h.gateway);
        h.route->SetOutputDevice(m_ipv4->GetNetDevice(h.iface));
        h.route->SetSource(m_ipv4->GetAddress(h.iface, 0).GetLocal());
    }
    m_routes[dst.Get()] = std::move(hops);
}

static uint32_t
Mix(uint32_t h, uint32_t v)
{
    h ^= v;
    h *= 0x85ebca6bU;
    h ^= h >> 13;
    h *= 0xc2b2ae35U;
    h ^= h >> 16;
    return h;
}

Ptr<Ipv4Route>
HashRouting::Pick(Ptr<const Packet> p, const Ipv4Header& h)
{
    auto it = m_routes.find(h.GetDestination().Get());
    if (it == m_routes.end() || it->second.empty())
    {
        return nullptr;
    }
    const auto& hops = it->second;
    size_t i = 0;
    if (hops.size() > 1)
    {
        uint32_t ports = 0;
        if (p && (h.GetProtocol() == 6 || h.GetProtocol() == 17) && p->GetSize() >= 4)
        {
            uint8_t b[4];
            p->CopyData(b, 4);
            ports = (uint32_t(b[0]) << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
        }
        uint32_t x = Mix(m_seed, h.GetSource().Get());
        x = Mix(x, h.GetDestination().Get());
        x = Mix(x, h.GetProtocol());
        x = Mix(x, ports);
        i = x % hops.size();
    }
    return hops[i].route;
}

Ptr<Ipv4Route>
HashRouting::RouteOutput(Ptr<Packet> p, const Ipv4Header& header, Ptr<NetDevice>, Socket::SocketErrno& err)
{
    auto r = Pick(p, header);
    err = r ? Socket::ERROR_NOTERROR : Socket::ERROR_NOROUTETOHOST;
    return r;
}

bool
HashRouting::RouteInput(Ptr<const Packet> p,
                        const Ipv4Header& header,
                        Ptr<const NetDevice> idev,
                        UnicastForwardCallback ucb,
                        MulticastForwardCallback,
                        LocalDeliverCallback lcb,
                        ErrorCallback ecb)
{
    uint32_t iif = m_ipv4->GetInterfaceForDevice(idev);
    if (m_ipv4->IsDestinationAddress(header.GetDestination(), iif))
    {
        lcb(p, header, iif);
        return true;
    }
    auto r = Pick(p, header);
    if (!r)
    {
        ecb(p, header, Socket::ERROR_NOROUTETOHOST);
        return false;
    }
    ucb(r, p, header);
    return true;
}

} // namespace hpccsim
