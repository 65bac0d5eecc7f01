// SPDX-License-Identifier: GPL-2.0
//
// dc-sim: one datacenter run in ns-3. A Clos fabric of DcQueueDisc ports
// and per-flow ECMP (fabric.h), hosts with one TCP for every algorithm,
// a flow list (ns3/flows.py: Poisson arrivals, sizes from a CDF), one
// congestion control: hpcc (the module's core through include/hpcc_ffi.h,
// hpcc-tcp.h) or ns-3's own dctcp, cubic or bbr. Prints one JSON line:
// FCT slowdowns per size bucket, the queues arrivals saw, drops, probes.
//
//   dc-sim --algo=hpcc --flows=FILE [--topo=leaf-spine-32] [--out=FILE] ...
//   dc-sim --help
#include "fabric.h"
#include "hpcc-tcp.h"

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

extern "C" {
#include "hpcc_int.h"
}

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

using namespace ns3;
using namespace hpccsim;

namespace
{

// ---- the one TCP every algorithm runs -------------------------------------

struct TcpSettings
{
    uint32_t mss = 1448;
    uint32_t init_cwnd = 10;
    bool sack = true;
    uint32_t buf_bytes = 4 << 20;
    uint64_t rto_min_us = 5000;
    uint32_t delack_count = 2;
    uint64_t delack_timeout_us = 200;
    // TIME_WAIT (2 MSL): ns-3's 120 s MSL would hold every finished
    // connection's endpoint for the whole run, and each received packet
    // searches a host's endpoints one by one. No port is reused in a run.
    uint64_t time_wait_us = 2000;

    std::string Json() const
    {
        std::ostringstream o;
        o << "{\"mss\": " << mss << ", \"init_cwnd\": " << init_cwnd << ", \"sack\": " << (sack ? "true" : "false")
          << ", \"buf_bytes\": " << buf_bytes << ", \"rto_min_us\": " << rto_min_us
          << ", \"delack_count\": " << delack_count << ", \"delack_timeout_us\": " << delack_timeout_us
          << ", \"time_wait_us\": " << time_wait_us << ", \"timestamps\": false}";
        return o.str();
    }
};

// ---- topology ---------------------------------------------------------------

struct LinkSpec
{
    uint32_t a, b;
    uint64_t bps;
};

struct Topo
{
    std::string name;
    uint32_t hosts = 0;
    uint32_t switches = 0;
    uint64_t host_bps = 0;
    uint64_t delay_ns = 1000;
    std::vector<LinkSpec> links; // node ids: hosts first, then switches
};

Topo
LeafSpine32()
{
    Topo t{"leaf-spine-32", 32, 6, 100'000'000'000ULL, 1000, {}};
    const uint32_t tors = 4, per = 8, spines = 2;
    for (uint32_t h = 0; h < tors * per; h++)
    {
        t.links.push_back({h, t.hosts + h / per, 100'000'000'000ULL});
    }
    for (uint32_t r = 0; r < tors; r++)
    {
        for (uint32_t s = 0; s < spines; s++)
        {
            t.links.push_back({t.hosts + r, t.hosts + tors + s, 400'000'000'000ULL});
        }
    }
    return t;
}

// The HPCC paper's fat tree: 20 ToRs of 16 hosts at 100G; 10 pods of 2
// ToRs and 2 aggregation switches; 16 cores, each aggregation switch
// reaching 8 of them; switch links at 400G.
Topo
FatTree320()
{
    Topo t{"fat-tree-320", 320, 56, 100'000'000'000ULL, 1000, {}};
    const uint32_t tors = 20, per = 16, aggs = 20, cores = 16;
    const uint64_t g400 = 400'000'000'000ULL;
    uint32_t tor0 = t.hosts, agg0 = tor0 + tors, core0 = agg0 + aggs;
    for (uint32_t h = 0; h < tors * per; h++)
    {
        t.links.push_back({h, tor0 + h / per, 100'000'000'000ULL});
    }
    for (uint32_t r = 0; r < tors; r++)
    {
        uint32_t pod = r / 2;
        t.links.push_back({tor0 + r, agg0 + 2 * pod, g400});
        t.links.push_back({tor0 + r, agg0 + 2 * pod + 1, g400});
    }
    for (uint32_t a = 0; a < aggs; a++)
    {
        for (uint32_t k = 0; k < cores / 2; k++)
        {
            t.links.push_back({agg0 + a, core0 + (a % 2) * (cores / 2) + k, g400});
        }
    }
    return t;
}

uint8_t
SpeedCode(uint64_t bps)
{
    return bps >= 400'000'000'000ULL ? HPCC_INT_RATE_400G : HPCC_INT_RATE_100G;
}

// ---- flows ------------------------------------------------------------------

struct Flow
{
    uint32_t id, src, dst;
    uint64_t size;
    uint64_t start_ns;
    uint32_t incast = 0; // its incast's number (flows.py), 0: background
    // run time
    Ptr<Socket> sock;
    Ptr<TcpHpcc> cc;
    bool connected = false;
    bool started = false;
    uint64_t sent = 0;
    uint64_t first_write_ns = 0;
    uint64_t rx = 0;
    uint64_t done_ns = 0;
    uint32_t rtos = 0;       // entries into CA_LOSS: retransmission timeouts
    uint32_t recoveries = 0; // entries into CA_RECOVERY: fast retransmits
    struct hpcc_tuple tuple = {};
};

struct Run
{
    Topo topo;
    NodeContainer nodes;
    std::vector<Ipv4Address> host_addr;
    std::vector<Ptr<HpccHost>> hpcc_hosts;
    std::vector<std::vector<uint32_t>> adj;             // neighbour node ids
    std::vector<std::vector<uint32_t>> adj_if;          // local interface per neighbour
    std::vector<std::vector<Ipv4Address>> adj_addr;     // neighbour's address on the link
    std::vector<std::vector<int>> dist;                 // links from each host to every node
    std::vector<Ptr<DcQueueDisc>> downlinks;            // ToR ports towards hosts
    std::vector<std::pair<uint32_t, Ptr<DcQueueDisc>>> ports; // every switch port, by node
    std::vector<Ptr<QueueDisc>> host_qdiscs;            // hosts' egress (fq)
    std::vector<Flow> flows;
    std::map<std::pair<uint32_t, uint16_t>, uint32_t> by_sender; // (src addr, sport) -> flow
    std::string algo;
    uint32_t done = 0;
    uint64_t lead_ns = 1'000'000;
    uint64_t downlink_bytes_at_window = 0;
    std::chrono::steady_clock::time_point wall0;
    bool trace_ctl = false;
};

Run g;

uint64_t
NowNs()
{
    return static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
}

void Pump(Flow& f);

void
OnSend(uint32_t id, Ptr<Socket>, uint32_t)
{
    Pump(g.flows[id]);
}

void
Pump(Flow& f)
{
    if (!f.started || !f.connected)
    {
        return;
    }
    if (f.first_write_ns == 0)
    {
        f.first_write_ns = NowNs();
    }
    while (f.sent < f.size)
    {
        uint32_t room = f.sock->GetTxAvailable();
        if (room == 0)
        {
            return;
        }
        uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(room, f.size - f.sent));
        int r = f.sock->Send(Create<Packet>(n));
        if (r <= 0)
        {
            return;
        }
        f.sent += static_cast<uint32_t>(r);
    }
}

void
OnConnected(uint32_t id, Ptr<Socket>)
{
    Flow& f = g.flows[id];
    f.connected = true;
    if (f.cc)
    {
        f.cc->Established();
    }
    Pump(f);
}

void
OnConnectFailed(uint32_t id, Ptr<Socket>)
{
    std::cerr << "dc-sim: flow " << id << " failed to connect\n";
}

void
OnCongState(uint32_t id, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    Flow& f = g.flows[id];
    f.rtos += now == TcpSocketState::CA_LOSS;
    f.recoveries += now == TcpSocketState::CA_RECOVERY;
}

uint32_t g_watch = UINT32_MAX;

void
Watch(std::string what, uint32_t old_v, uint32_t new_v)
{
    std::cerr << "watch " << Simulator::Now().GetNanoSeconds() << " " << what << " " << old_v << " -> " << new_v << "\n";
}

void
WatchSeq(std::string what, SequenceNumber32 old_v, SequenceNumber32 new_v)
{
    std::cerr << "watch " << Simulator::Now().GetNanoSeconds() << " " << what << " " << old_v << " -> " << new_v << "\n";
}

void
WatchRto(Time old_v, Time new_v)
{
    std::cerr << "watch " << Simulator::Now().GetNanoSeconds() << " rto " << old_v << " -> " << new_v << "\n";
}

void
Open(uint32_t id)
{
    Flow& f = g.flows[id];
    Ptr<Node> n = g.nodes.Get(f.src);
    f.sock = Socket::CreateSocket(n, TcpSocketFactory::GetTypeId());
    f.sock->Bind();
    Address local;
    f.sock->GetSockName(local);
    uint16_t sport = InetSocketAddress::ConvertFrom(local).GetPort();
    g.by_sender[{g.host_addr[f.src].Get(), sport}] = id;
    f.tuple = V4Tuple(g.host_addr[f.src], g.host_addr[f.dst], sport, 100);
    if (g.algo == "hpcc")
    {
        f.cc = CreateObject<TcpHpcc>();
        f.cc->Attach(g.hpcc_hosts[f.src], f.tuple, id);
        DynamicCast<TcpSocketBase>(f.sock)->SetCongestionControlAlgorithm(f.cc);
    }
    f.sock->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, id));
    if (id == g_watch)
    {
        f.sock->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&Watch, std::string("cwnd")));
        f.sock->TraceConnectWithoutContext("BytesInFlight", MakeBoundCallback(&Watch, std::string("inflight")));
        f.sock->TraceConnectWithoutContext("HighestRxAck", MakeBoundCallback(&WatchSeq, std::string("ack")));
        f.sock->TraceConnectWithoutContext("NextTxSequence", MakeBoundCallback(&WatchSeq, std::string("nxt")));
        f.sock->TraceConnectWithoutContext("RTO", MakeCallback(&WatchRto));
    }
    f.sock->SetConnectCallback(MakeBoundCallback(&OnConnected, id), MakeBoundCallback(&OnConnectFailed, id));
    f.sock->SetSendCallback(MakeBoundCallback(&OnSend, id));
    f.sock->Connect(InetSocketAddress(g.host_addr[f.dst], 100));
}

void
Start(uint32_t id)
{
    Flow& f = g.flows[id];
    f.started = true;
    Pump(f);
}

void Finish(Flow& f);

void
OnRecv(Ptr<Socket> s)
{
    Address from;
    Ptr<Packet> p;
    while ((p = s->RecvFrom(from)) && p->GetSize() > 0)
    {
        auto a = InetSocketAddress::ConvertFrom(from);
        auto it = g.by_sender.find({a.GetIpv4().Get(), a.GetPort()});
        if (it == g.by_sender.end())
        {
            continue;
        }
        Flow& f = g.flows[it->second];
        f.rx += p->GetSize();
        if (f.rx >= f.size && f.done_ns == 0)
        {
            f.done_ns = NowNs();
            Finish(f);
            // The RPC is answered: the receiver closes too, so that both
            // ends release their endpoints.
            s->Close();
            return;
        }
    }
}

void
Finish(Flow& f)
{
    g.done++;
    if (f.cc)
    {
        g.hpcc_hosts[f.dst]->Unaccept(f.tuple);
    }
    f.sock->Close();
    if (g.done == g.flows.size())
    {
        Simulator::Stop();
    }
}

bool
OnAcceptRequest(Ptr<Socket>, const Address&)
{
    return true;
}

void
OnAccept(uint32_t host, Ptr<Socket> s, const Address& from)
{
    s->SetRecvCallback(MakeCallback(&OnRecv));
    if (g.algo != "hpcc")
    {
        return;
    }
    // The receiver answers probes of the connections it holds.
    auto a = InetSocketAddress::ConvertFrom(from);
    auto it = g.by_sender.find({a.GetIpv4().Get(), a.GetPort()});
    if (it != g.by_sender.end())
    {
        g.hpcc_hosts[host]->Accept(g.flows[it->second].tuple);
    }
}

void
Progress(uint64_t every_ns)
{
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - g.wall0).count();
    std::cerr << "dc-sim: " << g.algo << " t=" << std::fixed << std::setprecision(1)
              << Simulator::Now().GetMicroSeconds() / 1000.0 << " ms, wall " << std::setprecision(0) << wall
              << " s, flows done " << g.done << "/" << g.flows.size() << std::endl;
    Simulator::Schedule(NanoSeconds(every_ns), &Progress, every_ns);
}

void
SnapshotDownlinks()
{
    uint64_t b = 0;
    for (auto& q : g.downlinks)
    {
        b += q->TxBytes();
    }
    g.downlink_bytes_at_window = b;
}

// ---- the fabric -------------------------------------------------------------

class HashRoutingHelper : public Ipv4RoutingHelper
{
  public:
    HashRoutingHelper* Copy() const override { return new HashRoutingHelper(*this); }
    Ptr<Ipv4RoutingProtocol> Create(Ptr<Node> node) const override
    {
        auto r = CreateObject<HashRouting>();
        r->SetSeed(node->GetId() * 2654435761U);
        return r;
    }
};

// Links from `from` to every node (breadth first over the topology).
std::vector<int>
Distances(uint32_t from)
{
    std::vector<int> dist(g.adj.size(), -1);
    std::vector<uint32_t> q{from};
    dist[from] = 0;
    for (size_t i = 0; i < q.size(); i++)
    {
        for (uint32_t v : g.adj[q[i]])
        {
            if (dist[v] < 0)
            {
                dist[v] = dist[q[i]] + 1;
                q.push_back(v);
            }
        }
    }
    return dist;
}

void
Build(uint64_t mark_100g, uint64_t mark_400g, uint64_t buffer, const std::string& host_queue)
{
    const Topo& t = g.topo;
    uint32_t n = t.hosts + t.switches;
    g.nodes.Create(n);
    HashRoutingHelper routing;
    InternetStackHelper stack;
    stack.SetRoutingHelper(routing);
    stack.Install(g.nodes);
    g.adj.assign(n, {});
    g.adj_if.assign(n, {});
    g.adj_addr.assign(n, {});
    g.host_addr.assign(t.hosts, Ipv4Address());
    Ipv4AddressHelper addr("10.0.0.0", "255.255.255.252");
    const auto& cfg = Hpcc();
    for (const auto& l : t.links)
    {
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(l.bps)));
        p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(t.delay_ns)));
        // The device's own queue holds one packet: the queue disc, and so
        // ECN marking and INT, see the port's whole backlog.
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
        NetDeviceContainer d = p2p.Install(g.nodes.Get(l.a), g.nodes.Get(l.b));
        for (uint32_t side = 0; side < 2; side++)
        {
            uint32_t node = side ? l.b : l.a;
            bool sw = node >= t.hosts;
            TrafficControlHelper tch;
            if (!sw)
            {
                // A host's egress is Linux's fq: flows round-robin, so a
                // short flow does not wait behind a long one's bytes. It is
                // FqCoDel with CoDel off (a target of a second); dctcp marks
                // at fq's ce_threshold, K's sojourn at the host's rate.
                // ns-3 has no TCP small queues: without the mark a DCTCP
                // window larger than the path would queue here unseen.
                Time ce = mark_100g ? NanoSeconds(mark_100g * 8'000'000'000ULL / l.bps) : Time::Max();
                tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc",
                                     "MaxSize", QueueSizeValue(QueueSize(host_queue)),
                                     "Target", StringValue("1s"),
                                     "Interval", StringValue("2s"),
                                     "UseEcn", BooleanValue(true),
                                     "CeThreshold", TimeValue(ce));
                QueueDiscContainer qd = tch.Install(d.Get(side));
                g.host_qdiscs.push_back(qd.Get(0));
                continue;
            }
            uint64_t mark = l.bps >= 400'000'000'000ULL ? mark_400g : mark_100g;
            tch.SetRootQueueDisc("hpccsim::DcQueueDisc",
                                 "MaxSize",
                                 QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, static_cast<uint32_t>(buffer))),
                                 "MarkBytes",
                                 UintegerValue(mark));
            QueueDiscContainer qd = tch.Install(d.Get(side));
            auto q = DynamicCast<DcQueueDisc>(qd.Get(0));
            g.ports.emplace_back(node, q);
            q->SetDevice(DynamicCast<PointToPointNetDevice>(d.Get(side)), l.bps);
            q->SetInt(SpeedCode(l.bps), static_cast<uint16_t>(node), cfg.probe_dscp, cfg.response_dscp);
            uint32_t other = side ? l.a : l.b;
            if (other < t.hosts)
            {
                g.downlinks.push_back(q);
            }
        }
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        addr.NewNetwork();
        for (uint32_t side = 0; side < 2; side++)
        {
            uint32_t node = side ? l.b : l.a, other = side ? l.a : l.b;
            g.adj[node].push_back(other);
            g.adj_if[node].push_back(ifs.Get(side).second);
            g.adj_addr[node].push_back(ifs.GetAddress(1 - side));
            if (node < t.hosts)
            {
                g.host_addr[node] = ifs.GetAddress(side);
            }
        }
    }
    // Every shortest path to every host, as equal-cost next hops.
    for (uint32_t h = 0; h < t.hosts; h++)
    {
        g.dist.push_back(Distances(h));
        const std::vector<int>& dist = g.dist.back();
        for (uint32_t u = 0; u < n; u++)
        {
            if (u == h || dist[u] < 0)
            {
                continue;
            }
            std::vector<HashRouting::NextHop> hops;
            for (size_t k = 0; k < g.adj[u].size(); k++)
            {
                if (dist[g.adj[u][k]] == dist[u] - 1)
                {
                    hops.push_back({g.adj_if[u][k], g.adj_addr[u][k], nullptr});
                }
            }
            auto r = DynamicCast<HashRouting>(g.nodes.Get(u)->GetObject<Ipv4>()->GetRoutingProtocol());
            r->AddRoute(g.host_addr[h], hops);
        }
    }
}

// Links between two hosts.
uint32_t
Links(uint32_t a, uint32_t b)
{
    return static_cast<uint32_t>(g.dist[a][b]);
}

// ---- results ----------------------------------------------------------------

double
Quantile(std::vector<double> v, double q)
{
    if (v.empty())
    {
        return 0;
    }
    std::sort(v.begin(), v.end());
    size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
}

std::string
Num(double x)
{
    if (!std::isfinite(x))
    {
        return "null";
    }
    std::ostringstream o;
    o << std::setprecision(4) << x;
    return o.str();
}

} // namespace

int
main(int argc, char* argv[])
{
    std::string algo = "hpcc", flows_path, out_path, topo_name = "leaf-spine-32", profile = "module", knobs;
    std::string int_mode = "probe", workload = "?", flows_sha, ctl_trace, fct_out, run_name, host_queue = "1400p";
    double load = 0;
    uint32_t window_us = 0;
    uint64_t limit_us = 0, mark_100g = 300'000, mark_400g = 1'200'000, buffer = 2'000'000;
    TcpSettings tcp;
    uint32_t progress_us = 1000;
    // SFC (the SFC talk's simulation: trigger = ECN threshold = 100 KB,
    // drain target 10 KB; the emulator's suppression and bucket).
    bool sfc = false;
    DcQueueDisc::Sfc sfc_cfg;
    sfc_cfg.trigger_bytes = 100'000;
    sfc_cfg.target_bytes = 10'000;
    uint64_t sfc_suppress_us = 200;
    CommandLine cmd(__FILE__);
    cmd.AddValue("algo", "hpcc, dctcp, cubic or bbr", algo);
    cmd.AddValue("flows", "flow list (ns3/flows.py)", flows_path);
    cmd.AddValue("out", "append the run's JSON line here (else stdout)", out_path);
    cmd.AddValue("fct",
                 "write one line per flow: id src dst size start_ns fct_ns ideal_ns acks telemetry_acks rtos recoveries",
                 fct_out);
    cmd.AddValue("topo", "leaf-spine-32 or fat-tree-320", topo_name);
    cmd.AddValue("profile", "hpcc knob profile (module, datacenter, drafts)", profile);
    cmd.AddValue("knobs", "hpcc knob overrides NAME=VALUE,...", knobs);
    cmd.AddValue("int", "hpcc telemetry: probe (the module's probes) or ack (INT on every data segment, echoed by ACKs)", int_mode);
    cmd.AddValue("name", "label: the run's name (its per-flow file's)", run_name);
    cmd.AddValue("workload", "label: the flow list's workload", workload);
    cmd.AddValue("load", "label: the flow list's load", load);
    cmd.AddValue("window-us", "label: the flow list's arrival window", window_us);
    cmd.AddValue("flows-sha256", "label: the flow list's sha256", flows_sha);
    cmd.AddValue("limit-us", "stop here if flows are still running (0: 50 x the window + 100 ms)", limit_us);
    cmd.AddValue("mark-100g", "dctcp: K on 100G ports, bytes", mark_100g);
    cmd.AddValue("mark-400g", "dctcp: K on 400G ports, bytes", mark_400g);
    cmd.AddValue("buffer", "drop-tail buffer per switch port, bytes", buffer);
    cmd.AddValue("host-queue", "a host's egress fq limit (ns-3 queue size)", host_queue);
    cmd.AddValue("rto-min-us", "TCP minimum RTO", tcp.rto_min_us);
    cmd.AddValue("init-cwnd", "TCP initial window, segments (a diagnostic: every judged run uses 10)", tcp.init_cwnd);
    cmd.AddValue("time-wait-us", "TCP TIME_WAIT (2 MSL)", tcp.time_wait_us);
    cmd.AddValue("delack-count", "TCP: segments per delayed ACK", tcp.delack_count);
    cmd.AddValue("delack-timeout-us", "TCP: delayed-ACK timeout", tcp.delack_timeout_us);
    cmd.AddValue("ctl-trace", "hpcc: write every hook's hpcc_ctl record here", ctl_trace);
    cmd.AddValue("watch", "log one flow's TCP state changes (its id) to stderr", g_watch);
    cmd.AddValue("progress-us", "a progress line every this many us of simulated time", progress_us);
    cmd.AddValue("sfc", "hpcc: Source Flow Control at every switch port and in the hosts (0 or 1)", sfc);
    cmd.AddValue("sfc-trigger", "SFC: signal at this backlog, bytes", sfc_cfg.trigger_bytes);
    cmd.AddValue("sfc-target", "SFC: drain target of the pause, bytes", sfc_cfg.target_bytes);
    cmd.AddValue("sfc-suppress-us", "SFC: one signal per flow per this window", sfc_suppress_us);
    cmd.Parse(argc, argv);

    g.algo = algo;
    if (topo_name == "leaf-spine-32")
    {
        g.topo = LeafSpine32();
    }
    else if (topo_name == "fat-tree-320")
    {
        g.topo = FatTree320();
    }
    else
    {
        std::cerr << "dc-sim: unknown topology " << topo_name << "\n";
        return 2;
    }
    std::vector<std::pair<std::string, uint32_t>> set;
    {
        std::istringstream ks(knobs);
        std::string kv;
        while (std::getline(ks, kv, ','))
        {
            auto eq = kv.find('=');
            if (eq == std::string::npos)
            {
                std::cerr << "dc-sim: --knobs wants NAME=VALUE, got " << kv << "\n";
                return 2;
            }
            set.emplace_back(kv.substr(0, eq), static_cast<uint32_t>(std::stoul(kv.substr(eq + 1))));
        }
    }
    if (sfc)
    {
        if (algo != "hpcc")
        {
            std::cerr << "dc-sim: --sfc is hpcc's (the hosts' signal path is the module's)\n";
            return 2;
        }
        // The hosts take signals from every switch of the fabric: a
        // receiver's ToR signals a sender under another ToR across the
        // spine and the sender's ToR (the fat tree: 4 routers).
        auto has = [&](const std::string& n) {
            return std::any_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == n; });
        };
        if (!has("sfc_enable"))
        {
            set.emplace_back("sfc_enable", 1);
        }
        if (!has("sfc_max_hops"))
        {
            set.emplace_back("sfc_max_hops", topo_name == "fat-tree-320" ? 4 : 2);
        }
        sfc_cfg.suppress_ns = sfc_suppress_us * 1000;
    }
    // The probe DSCPs are the fabric's too, so the knobs load for every algorithm.
    if (!ConfigLoad(profile, set))
    {
        std::cerr << "dc-sim: the core refuses profile " << profile << " with --knobs=" << knobs << "\n";
        return 2;
    }
    bool dctcp = algo == "dctcp";
    std::string type = algo == "hpcc" ? "ns3::TcpNewReno"
                       : dctcp         ? "ns3::TcpDctcp"
                       : algo == "cubic" ? "ns3::TcpCubic"
                       : algo == "bbr"   ? "ns3::TcpBbr"
                                         : "";
    if (type.empty())
    {
        std::cerr << "dc-sim: unknown algorithm " << algo << "\n";
        return 2;
    }
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName(type)));
    // The ideal FCT is every run's: 1448-byte segments. With int=ack each
    // data segment also carries the 84-byte INT block, so its MSS leaves
    // room for it in the 1500-byte MTU (ns-3 would fragment otherwise).
    const uint32_t ideal_mss = tcp.mss;
    if (int_mode == "ack")
    {
        tcp.mss -= HPCC_PROBE_PAYLOAD_LEN;
    }
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(tcp.mss));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(tcp.init_cwnd));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(tcp.buf_bytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(tcp.buf_bytes));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(tcp.delack_count));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MicroSeconds(tcp.delack_timeout_us)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(tcp.sack));
    // ns-3 takes RTT samples from TCP timestamps when they are on, and its
    // timestamps count milliseconds: at a 10 us RTT every sample would be
    // 0. Without them it times segments in simulated nanoseconds.
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MicroSeconds(tcp.rto_min_us)));
    Config::SetDefault("ns3::TcpSocketBase::MaxSegLifetime", DoubleValue(tcp.time_wait_us / 2e6));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MicroSeconds(1)));
    Config::SetDefault("ns3::TcpSocketState::MaxPacingRate", DataRateValue(DataRate(g.topo.host_bps)));
    if (dctcp)
    {
        Config::SetDefault("ns3::TcpSocketBase::UseEcn", EnumValue(TcpSocketState::On));
    }
    Build(dctcp ? mark_100g : 0, dctcp ? mark_400g : 0, buffer, host_queue);
    if (int_mode != "probe" && int_mode != "ack")
    {
        std::cerr << "dc-sim: --int is probe or ack\n";
        return 2;
    }
    Hpcc().int_ack = int_mode == "ack";
    Fabric().int_ack = Hpcc().int_ack;
    if (sfc)
    {
        // Every switch port signals; a signal leaves the switch as any
        // packet it originates (its routes, TTL 255, no priority).
        std::map<uint32_t, uint16_t> port_no;
        for (auto& [node, q] : g.ports)
        {
            Ptr<Ipv4L3Protocol> ip = g.nodes.Get(node)->GetObject<Ipv4L3Protocol>();
            uint16_t udp = Hpcc().sfc_port;
            DcQueueDisc::Sfc c = sfc_cfg;
            c.switch_id = node;
            c.port_id = port_no[node]++;
            c.send = [ip, udp](Ipv4Address to, const uint8_t* payload, size_t len) {
                Ptr<Packet> p = Create<Packet>(payload, static_cast<uint32_t>(len));
                UdpHeader u;
                u.SetSourcePort(udp);
                u.SetDestinationPort(udp);
                p->AddHeader(u);
                Ipv4Header h;
                h.SetDestination(to);
                h.SetProtocol(17);
                Socket::SocketErrno err;
                Ptr<Ipv4Route> r = ip->GetRoutingProtocol()->RouteOutput(p, h, nullptr, err);
                if (!r)
                {
                    return;
                }
                SocketIpTtlTag ttl;
                ttl.SetTtl(255);
                p->AddPacketTag(ttl);
                ip->Send(p, r->GetSource(), to, 17, r);
            };
            q->SetSfc(c);
        }
    }
    if (algo == "hpcc")
    {
        for (uint32_t h = 0; h < g.topo.hosts; h++)
        {
            g.hpcc_hosts.push_back(HpccHost::Install(g.nodes.Get(h)));
        }
        if (!ctl_trace.empty())
        {
            Hpcc().ctl_trace = std::fopen(ctl_trace.c_str(), "w");
            std::fprintf(Hpcc().ctl_trace, "# dc-sim profile %s knobs %s\n", profile.c_str(), knobs.c_str());
            for (const auto& [k, v] : set)
            {
                std::fprintf(Hpcc().ctl_trace, "# knob %s=%u\n", k.c_str(), v);
            }
        }
    }
    // Receivers: one listening socket per host.
    for (uint32_t h = 0; h < g.topo.hosts; h++)
    {
        Ptr<Socket> l = Socket::CreateSocket(g.nodes.Get(h), TcpSocketFactory::GetTypeId());
        l->Bind(InetSocketAddress(Ipv4Address::GetAny(), 100));
        l->Listen();
        l->SetAcceptCallback(MakeCallback(&OnAcceptRequest), MakeBoundCallback(&OnAccept, h));
    }
    // The flows.
    std::ifstream in(flows_path);
    if (!in)
    {
        std::cerr << "dc-sim: cannot read --flows=" << flows_path << "\n";
        return 2;
    }
    std::string line;
    uint64_t last_start = 0;
    while (std::getline(in, line))
    {
        if (line.empty() || line[0] == '#')
        {
            continue;
        }
        std::istringstream ls(line);
        Flow f{};
        ls >> f.src >> f.dst >> f.size >> f.start_ns;
        if (ls && !(ls >> f.incast))
        {
            f.incast = 0;
            ls.clear();
        }
        if (!ls || f.src >= g.topo.hosts || f.dst >= g.topo.hosts || f.src == f.dst || f.size == 0)
        {
            std::cerr << "dc-sim: bad flow line: " << line << "\n";
            return 2;
        }
        f.id = static_cast<uint32_t>(g.flows.size());
        last_start = std::max(last_start, f.start_ns);
        g.flows.push_back(f);
    }
    for (auto& f : g.flows)
    {
        uint64_t open = f.start_ns > g.lead_ns ? f.start_ns - g.lead_ns : 0;
        Simulator::Schedule(NanoSeconds(open), &Open, f.id);
        Simulator::Schedule(NanoSeconds(f.start_ns), &Start, f.id);
    }
    uint64_t window_ns = window_us ? uint64_t(window_us) * 1000 : last_start;
    Simulator::Schedule(NanoSeconds(window_ns), &SnapshotDownlinks);
    if (limit_us == 0)
    {
        limit_us = window_ns / 1000 * 50 + 100'000;
    }
    Simulator::Schedule(MicroSeconds(progress_us), &Progress, uint64_t(progress_us) * 1000);
    Simulator::Stop(MicroSeconds(limit_us));
    g.wall0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - g.wall0).count();
    double sim_s = Simulator::Now().GetSeconds();

    // FCT slowdowns: (last byte at the receiver - first write + one-way
    // base delay) / (base RTT + the bytes with headers at the host's line
    // rate + one packet's store and forward on every later link). A flow
    // that did not complete is infinitely slow.
    const uint64_t hdr = 20 + 20 + 2; // IP, TCP, PPP
    const char* names[4] = {"<10KB", "10-100KB", "100KB-1MB", ">1MB"};
    std::vector<double> sd[4];
    uint32_t incomplete = 0;
    uint64_t rtos = 0, recoveries = 0;
    std::ofstream fct;
    if (!fct_out.empty())
    {
        fct.open(fct_out);
    }
    for (const auto& f : g.flows)
    {
        uint32_t links = Links(f.src, f.dst);
        uint64_t pkts = (f.size + ideal_mss - 1) / ideal_mss;
        uint64_t wire = f.size + pkts * hdr;
        uint64_t first = std::min<uint64_t>(f.size, ideal_mss) + hdr;
        double prop = double(links) * double(g.topo.delay_ns);
        // Later links: the fabric's (400G) and the last host link (100G).
        double sf = (links >= 2 ? double(first) * 8e9 / double(g.topo.host_bps) : 0) +
                    (links > 2 ? double(links - 2) * double(first) * 8e9 / 400e9 : 0);
        double ideal = 2 * prop + double(wire) * 8e9 / double(g.topo.host_bps) + sf;
        double fct_ns = std::numeric_limits<double>::infinity();
        if (f.done_ns != 0)
        {
            fct_ns = double(f.done_ns - f.first_write_ns) + prop;
        }
        else
        {
            incomplete++;
        }
        rtos += f.rtos;
        recoveries += f.recoveries;
        int b = f.size < 10'000 ? 0 : f.size < 100'000 ? 1 : f.size < 1'000'000 ? 2 : 3;
        sd[b].push_back(fct_ns / ideal);
        if (fct)
        {
            fct << f.id << ' ' << f.src << ' ' << f.dst << ' ' << f.size << ' ' << f.start_ns << ' '
                << (f.done_ns ? std::to_string(uint64_t(fct_ns)) : "inf") << ' ' << uint64_t(ideal) << ' ' << (f.cc ? f.cc->Acks() : 0) << ' '
                << (f.cc ? f.cc->TelemetryAcks() : 0) << ' ' << f.rtos << ' ' << f.recoveries << '\n';
        }
    }
    const auto& fs = Fabric();
    // Drops within the first base RTT of an incast (its earliest start
    // plus the longest base RTT among its flows), and all the others.
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> incasts; // start, end of the first RTT
    for (const auto& f : g.flows)
    {
        if (f.incast == 0)
        {
            continue;
        }
        uint64_t rtt = 2 * uint64_t(Links(f.src, f.dst)) * g.topo.delay_ns;
        auto [it, fresh] = incasts.try_emplace(f.incast, f.start_ns, f.start_ns + rtt);
        it->second.first = std::min(it->second.first, f.start_ns);
        it->second.second = std::max(it->second.second, it->second.first + rtt);
    }
    uint64_t drops_late = 0;
    for (uint64_t t : fs.drop_ns)
    {
        bool early = std::any_of(incasts.begin(), incasts.end(),
                                 [t](const auto& i) { return t >= i.second.first && t < i.second.second; });
        drops_late += !early;
    }
    uint64_t host_drops = 0;
    for (auto& q : g.host_qdiscs)
    {
        host_drops += q->GetStats().nTotalDroppedPackets;
    }
    const auto& ps = Probes();
    double window_s = double(window_ns) / 1e9;
    double util = window_s > 0 ? double(g.downlink_bytes_at_window) * 8 /
                                     (double(g.topo.hosts) * double(g.topo.host_bps) * window_s)
                               : 0;
    std::ostringstream o;
    o << "{\"run\": \"" << run_name << "\", \"topo\": \"" << g.topo.name << "\", \"workload\": \"" << workload << "\", \"load\": " << load
      << ", \"algo\": \"" << algo << "\", \"profile\": \"" << (algo == "hpcc" ? profile : "") << "\""
      << ", \"knobs\": \"" << (algo == "hpcc" ? knobs : "") << "\""
      << ", \"int\": \"" << (algo == "hpcc" ? int_mode : "") << "\", \"sfc\": " << (sfc ? 1 : 0)
      << ", \"flows\": " << g.flows.size() << ", \"flows_sha256\": \"" << flows_sha << "\""
      << ", \"tcp\": " << tcp.Json() << ", \"queues\": {\"buffer_bytes\": " << buffer
      << ", \"ecn_k_100g\": " << (dctcp ? mark_100g : 0) << ", \"ecn_k_400g\": " << (dctcp ? mark_400g : 0)
      << ", \"device_queue_pkts\": 1, \"host\": \"fq " << host_queue << (dctcp ? ", ce_threshold K" : "") << "\"}"
      << ", \"buckets\": {";
    for (int b = 0; b < 4; b++)
    {
        o << (b ? ", " : "") << "\"" << names[b] << "\": {\"n\": " << sd[b].size()
          << ", \"p50\": " << Num(Quantile(sd[b], 0.5)) << ", \"p95\": " << Num(Quantile(sd[b], 0.95))
          << ", \"p99\": " << Num(Quantile(sd[b], 0.99)) << "}";
    }
    o << "}, \"q_p99_bytes\": " << fs.BacklogQuantile(0.99) << ", \"q_p50_bytes\": " << fs.BacklogQuantile(0.5)
      << ", \"drops\": " << fs.drops << ", \"incasts\": " << incasts.size()
      << ", \"drops_after_first_rtt\": " << drops_late << ", \"host_drops\": " << host_drops << ", \"rtos\": " << rtos
      << ", \"recoveries\": " << recoveries << ", \"ecn_marks\": " << fs.marks << ", \"incomplete\": " << incomplete
      << ", \"probes_per_s_host\": " << Num(sim_s > 0 ? double(ps.probes_sent) / g.topo.hosts / sim_s : 0)
      << ", \"probe_wire_share\": " << Num(fs.bytes ? double(fs.probe_bytes) / double(fs.bytes) : 0)
      << ", \"probes\": {\"sent\": " << ps.probes_sent << ", \"held_share\": " << ps.probes_held_share
      << ", \"held_budget\": " << ps.probes_held_budget
      << ", \"over_response_budget\": " << ps.probes_over_response_budget << ", \"stamped\": " << fs.probes_stamped
      << ", \"full\": " << fs.probes_full << ", \"received\": " << ps.probes_received
      << ", \"no_flow\": " << ps.probes_no_flow << ", \"responses_sent\": " << ps.responses_sent
      << ", \"responses_accepted\": " << ps.responses_accepted << ", \"bad_nonce\": " << ps.responses_bad_nonce
      << ", \"late\": " << ps.responses_late << ", \"bad_int\": " << ps.responses_bad_int
      << ", \"too_many_hops\": " << ps.responses_too_many_hops << ", \"response_no_flow\": " << ps.responses_no_flow
      << ", \"malformed\": " << ps.malformed << ", \"int_blocks\": " << ps.int_blocks_sent
      << ", \"int_echoes\": " << ps.int_echoes_sent << "}"
      << ", \"sfc_stats\": {\"trigger_bytes\": " << (sfc ? sfc_cfg.trigger_bytes : 0)
      << ", \"target_bytes\": " << (sfc ? sfc_cfg.target_bytes : 0) << ", \"triggered\": " << fs.sfc_triggered
      << ", \"suppressed\": " << fs.sfc_suppressed << ", \"rate_limited\": " << fs.sfc_rate_limited
      << ", \"sent\": " << fs.sfc_sent << ", \"received\": " << ps.sfc_received
      << ", \"applied\": " << ps.sfc_applied << ", \"no_flow\": " << ps.sfc_no_flow << ", \"refused\": {";
    {
        bool first = true;
        for (const auto& [code, n] : ps.sfc_refused)
        {
            o << (first ? "" : ", ") << "\"" << code << "\": " << n;
            first = false;
        }
    }
    o << "}, \"pause_us_mean\": " << Num(ps.sfc_applied ? double(ps.sfc_pause_ns) / 1e3 / double(ps.sfc_applied) : 0)
      << ", \"held_pkts\": " << ps.sfc_held << ", \"window_cuts\": " << ps.sfc_window_cuts
      << ", \"wire_share\": " << Num(fs.bytes ? double(fs.sfc_bytes) / double(fs.bytes) : 0) << "}"
      << ", \"acks\": {\"all\": " << ps.acks << ", \"telemetry\": " << ps.hpcc_acks
      << ", \"fallback\": " << ps.fallback_acks << "}"
      << ", \"util\": " << Num(util) << ", \"window_s\": " << Num(window_s) << ", \"sim_s\": " << Num(sim_s)
      << ", \"wall_s\": " << Num(wall) << "}";
    if (out_path.empty())
    {
        std::cout << o.str() << std::endl;
    }
    else
    {
        std::ofstream out(out_path, std::ios::app);
        out << o.str() << "\n";
    }
    if (Hpcc().ctl_trace)
    {
        std::fclose(Hpcc().ctl_trace);
    }
    Simulator::Destroy();
    return 0;
}
