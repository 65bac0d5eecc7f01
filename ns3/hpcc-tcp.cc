// SPDX-License-Identifier: GPL-2.0
#include "hpcc-tcp.h"

#include "fabric.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <random>

using namespace ns3;

namespace hpccsim
{

HpccConfig&
Hpcc()
{
    static HpccConfig c;
    return c;
}

ProbeStats&
Probes()
{
    static ProbeStats s;
    return s;
}

static uint32_t
Knob(const char* name)
{
    uint32_t v = 0;
    if (hpcc_knobs_get(Hpcc().knobs, name, &v) != 0)
    {
        NS_FATAL_ERROR("hpcc_knobs_get " << name);
    }
    return v;
}

bool
ConfigLoad(const std::string& profile, const std::vector<std::pair<std::string, uint32_t>>& set)
{
    auto& c = Hpcc();
    c.knobs = hpcc_knobs_new(profile.c_str());
    if (!c.knobs)
    {
        return false;
    }
    for (const auto& [name, v] : set)
    {
        if (hpcc_knobs_set(c.knobs, name.c_str(), v) != 0)
        {
            return false;
        }
    }
    if (hpcc_knobs_validate(c.knobs) != 0)
    {
        return false;
    }
    c.profile = profile;
    c.probe_dscp = static_cast<uint8_t>(Knob("probe_dscp"));
    c.response_dscp = static_cast<uint8_t>(Knob("response_dscp"));
    c.max_hops = Knob("max_hops");
    c.rcv_count_ns = uint64_t(Knob("rcv_count_us")) * 1000;
    c.sfc = Knob("sfc_enable") == 1;
    c.sfc_port = static_cast<uint16_t>(Knob("sfc_port"));
    return true;
}

static uint64_t
NowNs()
{
    return static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
}

// The probe nonces: random, as the module's get_random_u32(), from one
// seeded generator so that runs repeat.
static uint32_t
Nonce()
{
    static std::mt19937 gen(0x48504343);
    return gen();
}

// ---- the host: probe path -------------------------------------------------

NS_OBJECT_ENSURE_REGISTERED(HpccHost);

TypeId
HpccHost::GetTypeId()
{
    static TypeId tid = TypeId("hpccsim::HpccHost").SetParent<IpL4Protocol>();
    return tid;
}

Ptr<HpccHost>
HpccHost::Install(Ptr<Node> node)
{
    auto host = CreateObject<HpccHost>();
    host->m_node = node;
    host->m_ipv4 = node->GetObject<Ipv4L3Protocol>();
    host->m_tcp = host->m_ipv4->GetProtocol(6);
    NS_ABORT_MSG_IF(!host->m_tcp, "HpccHost: the node has no TCP");
    host->m_rcv = hpcc_rcvcount_new();
    host->m_budget = hpcc_budget_new();
    host->m_ipv4->Insert(host);
    if (Hpcc().int_ack || Hpcc().sfc)
    {
        auto tcp = DynamicCast<TcpL4Protocol>(host->m_tcp);
        host->m_down = tcp->GetDownTarget();
        tcp->SetDownTarget(MakeCallback(&HpccHost::SendDown, PeekPointer(host)));
    }
    if (Hpcc().sfc)
    {
        // Signals are UDP datagrams to sfc_port; the module takes them in
        // its netfilter hook, ns-3 hands them to this socket with their TTL.
        host->m_sfcSocket = Socket::CreateSocket(node, UdpSocketFactory::GetTypeId());
        host->m_sfcSocket->Bind(InetSocketAddress(Ipv4Address::GetAny(), Hpcc().sfc_port));
        host->m_sfcSocket->SetIpRecvTtl(true);
        host->m_sfcSocket->SetRecvCallback(MakeCallback(&HpccHost::OnSignalSocket, PeekPointer(host)));
    }
    return host;
}

void
HpccHost::OnSignalSocket(Ptr<Socket> s)
{
    Ptr<Packet> p;
    while ((p = s->Recv()))
    {
        SocketIpTtlTag ttl;
        uint8_t t = p->RemovePacketTag(ttl) ? ttl.GetTtl() : 0;
        std::array<uint8_t, HPCC_FFI_SFC_LEN + 1> b{};
        uint32_t n = p->CopyData(b.data(), b.size());
        OnSignal(b.data(), n, t);
    }
}

void
HpccHost::OnSignal(const uint8_t* payload, size_t len, uint8_t ttl)
{
    auto& st = Probes();
    st.sfc_received++;
    struct hpcc_sfc_signal sig;
    int rc = hpcc_sfc_accept(Hpcc().knobs, ttl, payload, len, &sig);
    if (rc == 0 && sig.family == 4)
    {
        // The data packet's source is this host: the flow's local end.
        struct hpcc_tuple t = V4Tuple(Ipv4Address::Deserialize(sig.saddr), Ipv4Address::Deserialize(sig.daddr),
                                      sig.sport, sig.dport);
        auto it = m_flows.find(Key(t));
        if (it == m_flows.end())
        {
            st.sfc_no_flow++;
            return;
        }
        rc = it->second->OnSignal(sig, NowNs());
    }
    if (rc != 0)
    {
        st.sfc_refused[rc]++;
    }
}

void
HpccHost::PauseUntil(const struct hpcc_tuple& t, uint64_t until_ns)
{
    auto& ps = m_paused[Key(t)];
    ps.until_ns = std::max(ps.until_ns, until_ns);
}

void
HpccHost::Emit(Ptr<Packet> p, Ipv4Address src, Ipv4Address dst, uint8_t proto, Ptr<Ipv4Route> route)
{
    if (!m_paused.empty() && proto == 6)
    {
        TcpHeader th;
        if (p->PeekHeader(th) != 0)
        {
            auto k = Key(V4Tuple(src, dst, th.GetSourcePort(), th.GetDestinationPort()));
            auto it = m_paused.find(k);
            if (it != m_paused.end())
            {
                Pause& ps = it->second;
                uint64_t now = NowNs();
                if (now < ps.until_ns || !ps.held.empty())
                {
                    // Behind the deadline, and behind what waits already.
                    ps.held.push_back({p, src, dst, proto, route});
                    Probes().sfc_held++;
                    if (!ps.scheduled)
                    {
                        ps.scheduled = true;
                        Simulator::Schedule(NanoSeconds(ps.until_ns > now ? ps.until_ns - now : 0),
                                            &HpccHost::Release, this, k);
                    }
                    return;
                }
                m_paused.erase(it);
            }
        }
    }
    m_down(p, src, dst, proto, route);
}

void
HpccHost::Release(std::array<uint8_t, 36> key)
{
    auto it = m_paused.find(key);
    if (it == m_paused.end())
    {
        return;
    }
    Pause& ps = it->second;
    uint64_t now = NowNs();
    if (now < ps.until_ns)
    {
        // A later signal moved the deadline.
        Simulator::Schedule(NanoSeconds(ps.until_ns - now), &HpccHost::Release, this, key);
        return;
    }
    std::vector<Held> held;
    held.swap(ps.held);
    m_paused.erase(it);
    for (auto& h : held)
    {
        m_down(h.p, h.src, h.dst, h.proto, h.route);
    }
}

std::array<uint8_t, 36>
HpccHost::Key(const struct hpcc_tuple& t)
{
    std::array<uint8_t, 36> k{};
    std::memcpy(k.data(), t.saddr, 16);
    std::memcpy(k.data() + 16, t.daddr, 16);
    k[32] = static_cast<uint8_t>(t.sport >> 8);
    k[33] = static_cast<uint8_t>(t.sport);
    k[34] = static_cast<uint8_t>(t.dport >> 8);
    k[35] = static_cast<uint8_t>(t.dport);
    return k;
}

void
HpccHost::Register(const struct hpcc_tuple& t, TcpHpcc* cc)
{
    m_flows[Key(t)] = cc;
}

void
HpccHost::Unregister(const struct hpcc_tuple& t)
{
    m_flows.erase(Key(t));
}

void
HpccHost::Unaccept(const struct hpcc_tuple& t)
{
    auto it = m_accepts.find(Key(t));
    if (it != m_accepts.end() && --it->second == 0)
    {
        m_accepts.erase(it);
    }
}

void
HpccHost::SendRaw(const uint8_t* bytes, size_t len)
{
    if (len < 20)
    {
        return;
    }
    // The core's IPv4 header, as ns-3 carries it beside the packet.
    Ptr<Packet> hp = Create<Packet>(bytes, 20);
    Ipv4Header h;
    hp->RemoveHeader(h);
    Ptr<Packet> p = Create<Packet>(bytes + 20, static_cast<uint32_t>(len - 20));
    Socket::SocketErrno err;
    Ptr<Ipv4Route> r = m_ipv4->GetRoutingProtocol()->RouteOutput(p, h, nullptr, err);
    if (!r)
    {
        return;
    }
    m_ipv4->SendWithHeader(p, h, r);
}

IpL4Protocol::RxStatus
HpccHost::Receive(Ptr<Packet> p, const Ipv4Header& header, Ptr<Ipv4Interface> iface)
{
    const auto& cfg = Hpcc();
    uint8_t dscp = header.GetTos() >> 2;
    if (cfg.int_ack && (dscp == cfg.probe_dscp || dscp == cfg.response_dscp) && TakeIntBlock(p, header))
    {
        return m_tcp->Receive(p, header, iface);
    }
    if (cfg.knobs && (dscp == cfg.probe_dscp || dscp == cfg.response_dscp) &&
        p->GetSize() + 20 <= HPCC_FFI_MAX_PACKET_LEN)
    {
        std::array<uint8_t, HPCC_FFI_MAX_PACKET_LEN> buf{};
        Ptr<Packet> whole = p->Copy();
        whole->AddHeader(header);
        uint32_t n = whole->CopyData(buf.data(), buf.size());
        struct hpcc_packet pkt;
        if (hpcc_classify(buf.data(), n, cfg.probe_dscp, cfg.response_dscp, &pkt) == 1)
        {
            if (pkt.kind == 0)
            {
                OnProbe(pkt, NowNs());
            }
            else
            {
                OnResponse(pkt, NowNs());
            }
            return RX_OK;
        }
        Probes().malformed++;
    }
    return m_tcp->Receive(p, header, iface);
}

IpL4Protocol::RxStatus
HpccHost::Receive(Ptr<Packet> p, const Ipv6Header& header, Ptr<Ipv6Interface> iface)
{
    return m_tcp->Receive(p, header, iface);
}

struct hpcc_tuple
V4Tuple(Ipv4Address src, Ipv4Address dst, uint16_t sport, uint16_t dport)
{
    struct hpcc_tuple t;
    std::memset(&t, 0, sizeof t);
    t.saddr[10] = t.saddr[11] = t.daddr[10] = t.daddr[11] = 0xff;
    src.Serialize(t.saddr + 12);
    dst.Serialize(t.daddr + 12);
    t.sport = sport;
    t.dport = dport;
    return t;
}

void
HpccHost::SendDown(Ptr<Packet> p, Ipv4Address src, Ipv4Address dst, uint8_t proto, Ptr<Ipv4Route> route)
{
    TcpHeader th;
    if (Hpcc().int_ack && proto == 6 && p->PeekHeader(th) != 0)
    {
        struct hpcc_tuple t = V4Tuple(src, dst, th.GetSourcePort(), th.GetDestinationPort());
        uint32_t payload = p->GetSize() - th.GetSerializedSize();
        struct hpcc_tuple r = V4Tuple(dst, src, th.GetDestinationPort(), th.GetSourcePort());
        auto echo = m_echo.find(Key(r));
        IntBlock b;
        uint8_t dscp = 0;
        if (payload > 0 && m_flows.count(Key(t)))
        {
            // A data segment of ours: an empty INT stack for the switches,
            // and the snd_nxt it leaves at (as a probe carries it).
            b.Fill(HPCC_PROBE_TYPE_PROBE, (th.GetSequenceNumber() + payload).GetValue(), nullptr);
            dscp = Hpcc().probe_dscp;
            Probes().int_blocks_sent++;
        }
        else if (echo != m_echo.end() && echo->second.fresh)
        {
            // An ACK of a flow we receive: the newest INT its data carried.
            b.Fill(HPCC_PROBE_TYPE_RESPONSE, echo->second.snd_nxt, echo->second.int_stack.data());
            echo->second.fresh = false;
            dscp = Hpcc().response_dscp;
            Probes().int_echoes_sent++;
        }
        if (dscp)
        {
            p->RemoveHeader(th);
            p->AddHeader(b);
            p->AddHeader(th);
            SocketIpTosTag tos;
            p->RemovePacketTag(tos);
            tos.SetTos(static_cast<uint8_t>(dscp << 2));
            p->AddPacketTag(tos);
        }
    }
    Emit(p, src, dst, proto, route);
}

bool
HpccHost::TakeIntBlock(Ptr<Packet> p, const Ipv4Header& header)
{
    TcpHeader th;
    if (p->PeekHeader(th) == 0 || p->GetSize() < th.GetSerializedSize() + HPCC_PROBE_PAYLOAD_LEN)
    {
        return false;
    }
    p->RemoveHeader(th);
    IntBlock b;
    p->PeekHeader(b);
    struct hpcc_tuple t = V4Tuple(header.GetSource(), header.GetDestination(), th.GetSourcePort(), th.GetDestinationPort());
    bool data = b.Ours(HPCC_PROBE_TYPE_PROBE) && m_accepts.count(Key(t));
    struct hpcc_tuple k = V4Tuple(header.GetDestination(), header.GetSource(), th.GetDestinationPort(), th.GetSourcePort());
    auto flow = m_flows.find(Key(k));
    bool ack = b.Ours(HPCC_PROBE_TYPE_RESPONSE) && flow != m_flows.end();
    if (!data && !ack)
    {
        p->AddHeader(th);
        return false;
    }
    auto& st = Probes();
    if (data)
    {
        auto& e = m_echo[Key(t)];
        e.fresh = true;
        e.snd_nxt = b.SndNxt();
        std::memcpy(e.int_stack.data(), b.Int(), e.int_stack.size());
    }
    else
    {
        st.responses_received++;
        switch (hpcc_admit_int(b.Int(), HPCC_INT_MAX_LEN, Hpcc().max_hops))
        {
        case 0:
            st.responses_accepted++;
            flow->second->Deliver(static_cast<uint64_t>(Simulator::Now().GetNanoSeconds()), b.SndNxt(), b.Int());
            break;
        case HPCC_FFI_INT_TOO_MANY_HOPS:
            st.responses_too_many_hops++;
            break;
        default:
            st.responses_bad_int++;
            break;
        }
    }
    // TCP gets the segment as it was sent.
    p->RemoveHeader(b);
    p->AddHeader(th);
    return true;
}

// FNV-1a of the tuple: the key of the receiver's flow count (the module
// uses a keyed hash; here nobody forges tuples).
static uint32_t
TupleHash(const struct hpcc_tuple& t)
{
    auto k = HpccHost::Key(t);
    uint32_t h = 2166136261U;
    for (uint8_t b : k)
    {
        h = (h ^ b) * 16777619U;
    }
    return h;
}

void
HpccHost::OnProbe(const struct hpcc_packet& pkt, uint64_t now)
{
    auto& st = Probes();
    st.probes_received++;
    if (!hpcc_budget_take_response(m_budget, Hpcc().knobs, now))
    {
        st.probes_over_response_budget++;
        return;
    }
    // Only a connection this host holds is answered (the module looks up
    // the established socket).
    if (m_accepts.find(Key(pkt.tuple)) == m_accepts.end())
    {
        st.probes_no_flow++;
        return;
    }
    uint64_t w = Hpcc().rcv_count_ns;
    uint32_t hash = w ? TupleHash(pkt.tuple) : 0;
    uint16_t flows = w ? hpcc_rcvcount_count_with(m_rcv, now, w, hpcc_packet_spacing_us(&pkt), hash) : 0;
    std::array<uint8_t, HPCC_FFI_MAX_PACKET_LEN> out{};
    size_t len = hpcc_build_response(out.data(), &pkt, Hpcc().response_dscp, flows);
    if (len == 0)
    {
        return;
    }
    SendRaw(out.data(), len);
    st.responses_sent++;
    if (w)
    {
        hpcc_rcvcount_insert(m_rcv, now, w, hpcc_packet_spacing_us(&pkt), hash);
    }
}

void
HpccHost::OnResponse(const struct hpcc_packet& pkt, uint64_t now)
{
    auto& st = Probes();
    st.responses_received++;
    switch (hpcc_admit_int(pkt.int_stack, sizeof(pkt.int_stack), Hpcc().max_hops))
    {
    case 0:
        break;
    case HPCC_FFI_INT_TOO_MANY_HOPS:
        st.responses_too_many_hops++;
        return;
    default:
        st.responses_bad_int++;
        return;
    }
    // The flow as its sender knows it: the response's tuple reversed.
    struct hpcc_tuple k;
    std::memcpy(k.saddr, pkt.tuple.daddr, 16);
    std::memcpy(k.daddr, pkt.tuple.saddr, 16);
    k.sport = pkt.tuple.dport;
    k.dport = pkt.tuple.sport;
    auto it = m_flows.find(Key(k));
    if (it == m_flows.end() || !it->second->Nonces())
    {
        st.responses_no_flow++;
        return;
    }
    switch (hpcc_nonces_accept(it->second->Nonces(), pkt.nonce, pkt.snd_nxt, now))
    {
    case HPCC_FFI_NONCE_ACCEPTED:
        st.responses_accepted++;
        it->second->Deliver(now, pkt.snd_nxt, pkt.int_stack);
        break;
    case HPCC_FFI_NONCE_LATE:
        st.responses_late++;
        break;
    default:
        st.responses_bad_nonce++;
        break;
    }
}

// ---- the connection: congestion control -----------------------------------

NS_OBJECT_ENSURE_REGISTERED(TcpHpcc);

TypeId
TcpHpcc::GetTypeId()
{
    static TypeId tid =
        TypeId("hpccsim::TcpHpcc").SetParent<TcpCongestionOps>().AddConstructor<TcpHpcc>();
    return tid;
}

TcpHpcc::TcpHpcc() = default;

// A listening socket's fork: no flow, no host (a receiver sends no data).
TcpHpcc::TcpHpcc(const TcpHpcc& o)
    : TcpCongestionOps(o)
{
}

TcpHpcc::~TcpHpcc()
{
    Detach();
}

Ptr<TcpCongestionOps>
TcpHpcc::Fork()
{
    return CopyObject<TcpHpcc>(this);
}

void
TcpHpcc::Attach(Ptr<HpccHost> host, const struct hpcc_tuple& t, uint64_t id)
{
    m_host = host;
    m_tuple = t;
    m_id = id;
    m_attached = true;
    host->Register(t, this);
    if (Hpcc().sfc && !m_sfc)
    {
        m_sfc = hpcc_sfc_mail_new();
    }
}

int
TcpHpcc::OnSignal(const struct hpcc_sfc_signal& s, uint64_t now)
{
    if (!m_tcb || !m_sfc)
    {
        return 0;
    }
    uint64_t pause = 0;
    int rc = hpcc_sfc_check_flow(Hpcc().knobs, &s, m_tcb->m_lastAckedSeq.GetValue(),
                                 m_tcb->m_highTxMark.Get().GetValue(), &pause);
    if (rc != 0)
    {
        return rc;
    }
    // ns-3 has no socket owned by a process: the pause applies at once,
    // as the module's does when no process holds the socket.
    m_host->PauseUntil(m_tuple, now + pause);
    hpcc_sfc_mail_put(m_sfc, now, s.qlen, s.speed, 0);
    Probes().sfc_applied++;
    Probes().sfc_pause_ns += pause;
    return 0;
}

void
TcpHpcc::Detach()
{
    if (m_attached)
    {
        m_host->Unregister(m_tuple);
        m_attached = false;
    }
    if (m_flow)
    {
        hpcc_flow_free(m_flow);
        m_flow = nullptr;
    }
    if (m_nonces)
    {
        hpcc_nonces_free(m_nonces);
        m_nonces = nullptr;
    }
    if (m_sfc)
    {
        hpcc_sfc_mail_free(m_sfc);
        m_sfc = nullptr;
    }
}

void
TcpHpcc::Init(Ptr<TcpSocketState> tcb)
{
    // Pace at the rate the controller sets (the module's request_pacing).
    m_tcb = tcb;
    tcb->m_pacing = true;
    tcb->m_paceInitialWindow = true;
}

struct hpcc_conn
TcpHpcc::Conn(Ptr<const TcpSocketState> tcb, uint32_t prior_in_flight_bytes) const
{
    uint32_t mss = std::max<uint32_t>(tcb->m_segmentSize, 1);
    struct hpcc_conn c = {};
    c.now_ns = NowNs();
    c.mss = mss;
    c.cwnd = tcb->m_cWnd.Get() / mss;
    // Linux's "infinite" ssthresh, TCP_INFINITE_SSTHRESH.
    c.ssthresh = tcb->m_ssThresh.Get() == UINT32_MAX ? 0x7fffffff : tcb->m_ssThresh.Get() / mss;
    c.srtt_us = m_srtt_us;
    c.min_rtt_us = tcb->m_minRtt == Time::Max()
                       ? UINT32_MAX
                       : static_cast<uint32_t>(std::min<int64_t>(tcb->m_minRtt.GetMicroSeconds(), UINT32_MAX - 1));
    uint32_t in_flight = (tcb->m_bytesInFlight.Get() + mss - 1) / mss;
    c.packets_out = in_flight;
    c.in_flight = in_flight;
    c.snd_nxt = tcb->m_highTxMark.Get().GetValue();
    c.in_reduction =
        tcb->m_congState == TcpSocketState::CA_CWR || tcb->m_congState == TcpSocketState::CA_RECOVERY;
    // ns-3 keeps no is_cwnd_limited: the window was full before this ACK.
    c.cwnd_limited = prior_in_flight_bytes + mss > tcb->m_cWnd.Get();
    c.max_pacing_rate = UINT64_MAX;
    return c;
}

void
TcpHpcc::ApplyPacing(Ptr<TcpSocketState> tcb, uint64_t bytes_per_s)
{
    uint64_t bps = bytes_per_s > UINT64_MAX / 8 ? UINT64_MAX : bytes_per_s * 8;
    uint64_t max = tcb->m_maxPacingRate.GetBitRate();
    tcb->m_pacingRate = DataRate(std::max<uint64_t>(std::min(bps, max), 1));
}

void
TcpHpcc::Established()
{
    Ptr<TcpSocketState> tcb = m_tcb;
    if (m_established || !tcb)
    {
        return;
    }
    m_established = true;
    struct hpcc_conn c = Conn(tcb, 0);
    struct hpcc_init_decision d;
    hpcc_sock_init(Hpcc().knobs, &c, 0, &m_sock, &d);
    Trace(HPCC_FFI_CTL_INIT, c, 0, nullptr, nullptr, nullptr, d.cwnd, d.ssthresh, d.pacing_rate, d.pacing_shift, 0);
    tcb->m_cWnd = d.cwnd * c.mss;
    tcb->m_ssThresh = d.ssthresh >= 0x7fffffff / c.mss ? UINT32_MAX : d.ssthresh * c.mss;
    ApplyPacing(tcb, d.pacing_rate);
}

uint16_t
TcpHpcc::EnsureFlow(const struct hpcc_conn& c, bool on_ack)
{
    uint16_t flags = 0;
    auto* k = Hpcc().knobs;
    if (!m_flow && m_attached &&
        (on_ack ? hpcc_sock_wants_flow_on_ack(&m_sock, k, &c) : hpcc_sock_wants_flow_on_tx_start(&m_sock, k, &c)))
    {
        m_flow = hpcc_flow_new(k, &c);
        m_nonces = m_flow ? hpcc_nonces_new() : nullptr;
        if (m_flow && m_nonces)
        {
            flags = HPCC_FFI_CTL_FLOW_CREATED;
        }
        else
        {
            hpcc_flow_free(m_flow);
            m_flow = nullptr;
            hpcc_sock_flow_refused(&m_sock, c.now_ns);
            flags = HPCC_FFI_CTL_FLOW_REFUSED;
        }
    }
    if (m_flow)
    {
        flags |= HPCC_FFI_CTL_HAS_FLOW;
    }
    return flags;
}

uint16_t
TcpHpcc::Probe(Ptr<const TcpSocketState> tcb, const struct hpcc_conn& c)
{
    if (!m_flow || !m_attached)
    {
        return 0;
    }
    switch (hpcc_flow_admit_probe(m_flow, Hpcc().knobs, m_host->Budget(), &c))
    {
    case HPCC_FFI_ADMIT_SEND:
        return SendProbe(tcb, c) ? HPCC_FFI_CTL_PROBED : 0;
    case HPCC_FFI_ADMIT_WAIT:
        Probes().probes_held_share++;
        return HPCC_FFI_CTL_PROBE_HELD;
    default:
        Probes().probes_held_budget++;
        return HPCC_FFI_CTL_PROBE_HELD;
    }
}

bool
TcpHpcc::SendProbe(Ptr<const TcpSocketState> tcb, const struct hpcc_conn& c)
{
    uint64_t now = c.now_ns;
    if (!m_flow || !m_attached)
    {
        return false;
    }
    uint32_t nonce = Nonce();
    uint32_t snd_nxt = tcb->m_highTxMark.Get().GetValue();
    uint16_t spacing = hpcc_flow_probe_spacing_us(m_flow, Hpcc().knobs, &c);
    uint32_t slot = hpcc_flow_probe_sent(m_flow, now);
    hpcc_nonces_record(m_nonces, slot, nonce, snd_nxt, now);
    std::array<uint8_t, HPCC_FFI_MAX_PACKET_LEN> b{};
    size_t len = hpcc_build_probe(b.data(), &m_tuple, Hpcc().probe_dscp, nonce, snd_nxt, spacing);
    m_host->SendRaw(b.data(), len);
    Probes().probes_sent++;
    return true;
}

void
TcpHpcc::Deliver(uint64_t rx_ns, uint32_t snd_nxt, const uint8_t* int_stack)
{
    m_mail = true;
    m_mail_rx_ns = rx_ns;
    m_mail_snd_nxt = snd_nxt;
    std::memcpy(m_mail_int.data(), int_stack, m_mail_int.size());
}

uint32_t
TcpHpcc::GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t)
{
    struct hpcc_conn c = Conn(tcb, tcb->m_bytesInFlight.Get());
    uint32_t s = hpcc_sock_ssthresh(&m_sock, Hpcc().knobs, &c);
    Trace(HPCC_FFI_CTL_SSTHRESH, c, 0, nullptr, nullptr, nullptr, 0, s, 0, 0, 0);
    return s >= 0x7fffffff / c.mss ? UINT32_MAX : s * c.mss;
}

void
TcpHpcc::PktsAcked(Ptr<TcpSocketState>, uint32_t, const Time& rtt)
{
    if (rtt.IsZero() || rtt.IsNegative())
    {
        return;
    }
    // Linux's tcp_rtt_estimator for srtt: srtt += (m - srtt) / 8.
    uint32_t m = static_cast<uint32_t>(std::max<int64_t>(rtt.GetMicroSeconds(), 1));
    if (m_srtt_us == 0)
    {
        m_srtt_us = m;
    }
    else
    {
        int64_t d = int64_t(m) - int64_t(m_srtt_us);
        m_srtt_us = static_cast<uint32_t>(std::max<int64_t>(int64_t(m_srtt_us) + d / 8, 1));
    }
}

void
TcpHpcc::CwndEvent(Ptr<TcpSocketState> tcb, const TcpSocketState::TcpCAEvent_t event)
{
    if (event != TcpSocketState::CA_EVENT_TX_START || !m_established)
    {
        return;
    }
    struct hpcc_conn c = Conn(tcb, tcb->m_bytesInFlight.Get());
    uint16_t flags = EnsureFlow(c, false);
    if (m_flow && !Hpcc().int_ack && hpcc_flow_probe_at_tx_start(m_flow, Hpcc().knobs, &c))
    {
        flags |= Probe(tcb, c);
    }
    Trace(HPCC_FFI_CTL_TX_START, c, flags, nullptr, nullptr, nullptr, 0, 0, 0, 0, 0);
}

void
TcpHpcc::CongControl(Ptr<TcpSocketState> tcb,
                     const TcpRateOps::TcpRateConnection&,
                     const TcpRateOps::TcpRateSample& rs)
{
    if (!m_established)
    {
        return;
    }
    uint32_t mss = std::max<uint32_t>(tcb->m_segmentSize, 1);
    struct hpcc_conn c = Conn(tcb, rs.m_priorInFlight);
    // The rate sample in segments, as Linux counts it (ns-3 counts bytes).
    struct hpcc_rate_sample r = {};
    bool valid = rs.IsValid() && rs.m_delivered >= 0 && rs.m_interval.IsStrictlyPositive();
    r.delivered = valid ? static_cast<uint32_t>(rs.m_delivered) / mss : 0;
    r.interval_us = valid ? static_cast<uint64_t>(rs.m_interval.GetMicroSeconds()) : 0;
    r.prior_in_flight = (rs.m_priorInFlight + mss - 1) / mss;
    r.acked_sacked = (rs.m_ackedSacked + mss - 1) / mss;
    r.app_limited = rs.m_isAppLimited;
    uint16_t flags = EnsureFlow(c, true) | HPCC_FFI_CTL_HAS_RS;
    if (r.app_limited)
    {
        flags |= HPCC_FFI_CTL_RS_APP_LIMITED;
    }
    struct hpcc_response resp = {};
    struct hpcc_sfc_state sfc = {};
    bool took = false;
    if (m_flow && m_mail)
    {
        resp.rx_ns = m_mail_rx_ns;
        resp.int_stack = m_mail_int.data();
        resp.int_len = m_mail_int.size();
        resp.snd_nxt = m_mail_snd_nxt;
        m_mail = false;
        took = true;
        flags |= HPCC_FFI_CTL_HAS_RESPONSE;
    }
    if (m_flow && m_sfc)
    {
        hpcc_sfc_mail_state(m_sfc, &sfc);
    }
    struct hpcc_ack_decision d;
    hpcc_sock_on_ack(&m_sock, Hpcc().knobs, &c, &r, m_flow, took ? &resp : nullptr, m_flow ? &sfc : nullptr, &d);
    if (d.take_pause)
    {
        flags |= HPCC_FFI_CTL_TAKE_PAUSE;
        uint64_t until = hpcc_sfc_mail_take_pause(m_sfc);
        if (until != 0)
        {
            m_host->PauseUntil(m_tuple, until);
        }
    }
    Probes().sfc_window_cuts += (d.notes >> HPCC_FFI_NOTE_SFC_WINDOW_CUT) & 1;
    if (m_flow && d.probe && !Hpcc().int_ack)
    {
        flags |= Probe(tcb, c);
    }
    Trace(HPCC_FFI_CTL_ACK, c, flags, &r, took ? &resp : nullptr, m_flow ? &sfc : nullptr, d.cwnd, 0, d.pacing_rate,
          d.pacing_shift, d.tso_segs);
    auto& st = Probes();
    st.acks++;
    st.hpcc_acks += (d.notes >> HPCC_FFI_NOTE_HPCC_ACK) & 1;
    m_acks++;
    m_telemetry_acks += (d.notes >> HPCC_FFI_NOTE_HPCC_ACK) & 1;
    st.fallback_acks += (d.notes >> HPCC_FFI_NOTE_FALLBACK_ACK) & 1;
    tcb->m_cWnd = std::max<uint32_t>(d.cwnd, 1) * mss;
    ApplyPacing(tcb, d.pacing_rate);
}

void
TcpHpcc::Trace(uint8_t hook,
               const struct hpcc_conn& c,
               uint16_t flags,
               const struct hpcc_rate_sample* rs,
               const struct hpcc_response* resp,
               const struct hpcc_sfc_state* sfc,
               uint32_t out_cwnd,
               uint32_t out_ssthresh,
               uint64_t out_pacing,
               uint8_t out_shift,
               uint16_t out_tso) const
{
    FILE* f = Hpcc().ctl_trace;
    if (!f || !m_attached)
    {
        return;
    }
    if (c.in_reduction)
    {
        flags |= HPCC_FFI_CTL_IN_REDUCTION;
    }
    if (c.cwnd_limited)
    {
        flags |= HPCC_FFI_CTL_CWND_LIMITED;
    }
    char hex[2 * HPCC_FFI_INT_LEN + 1] = "";
    if (resp)
    {
        for (size_t i = 0; i < resp->int_len && i < HPCC_FFI_INT_LEN; i++)
        {
            std::snprintf(hex + 2 * i, 3, "%02x", resp->int_stack[i]);
        }
    }
    auto ip = [](const uint8_t* a, uint16_t port) {
        char s[32];
        std::snprintf(s, sizeof s, "%u.%u.%u.%u:%u", a[12], a[13], a[14], a[15], port);
        return std::string(s);
    };
    std::fprintf(f,
                 "hpcc_ctl: sk=%" PRIu64 " src=%s dst=%s hook=%u flags=%#x now=%" PRIu64
                 " mss=%u cwnd=%u ssthresh=%u srtt=%u min_rtt=%u packets_out=%u in_flight=%u snd_nxt=%u"
                 " rs_delivered=%u rs_interval=%" PRIu64 " rs_prior_in_flight=%u rs_acked_sacked=%u"
                 " resp_rx=%" PRIu64 " resp_snd_nxt=%u int=%s sfc_gen=%u sfc_qlen=%u sfc_speed=%u sfc_gap=%" PRIu64
                 " out_cwnd=%u out_ssthresh=%u out_pacing=%" PRIu64 " out_pacing_shift=%u out_tso_segs=%u\n",
                 m_id,
                 ip(m_tuple.saddr, m_tuple.sport).c_str(),
                 ip(m_tuple.daddr, m_tuple.dport).c_str(),
                 hook,
                 flags,
                 c.now_ns,
                 c.mss,
                 c.cwnd,
                 c.ssthresh,
                 c.srtt_us,
                 c.min_rtt_us,
                 c.packets_out,
                 c.in_flight,
                 c.snd_nxt,
                 rs ? rs->delivered : 0,
                 rs ? rs->interval_us : 0,
                 rs ? rs->prior_in_flight : 0,
                 rs ? rs->acked_sacked : 0,
                 resp ? resp->rx_ns : 0,
                 resp ? resp->snd_nxt : 0,
                 hex,
                 sfc ? sfc->gen : 0,
                 sfc ? sfc->qlen : 0,
                 sfc ? sfc->speed : 0,
                 sfc ? sfc->gap_ns : 0,
                 out_cwnd,
                 out_ssthresh,
                 out_pacing,
                 out_shift,
                 out_tso);
}

} // namespace hpccsim
