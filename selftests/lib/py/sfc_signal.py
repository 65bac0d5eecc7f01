#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""SFC signals (include/hpcc_sfc.h) on the wire, for the selftests.

  sfc_signal.py capture SECS [--port P] [--family 4|6] [--ready FILE]
        receive every UDP datagram to port P (default: the header's
        default) for SECS seconds on a raw socket and print one JSON line
        per signal: arrival time (the kernel's, as CLOCK_MONOTONIC), IP source, TTL / hop limit, checksums
        and the decoded header fields; --ready: create FILE once listening
  sfc_signal.py blast DST PORT SECS [--mbit R] [--size N] [--flows K]
        send UDP datagrams of N bytes to DST:PORT at R Mbit/s for SECS
        seconds from K sockets (K source ports), payload = flow index,
        sequence number and a fixed pattern; prints {"sent", "secs"}
  sfc_signal.py frames DEV PORT SECS (--in | --out)
        capture the UDP datagrams to PORT on DEV (AF_PACKET) for SECS
        seconds and print, per datagram, the first 8 payload bytes (blast's
        flow and sequence number) and then its IP header without TTL and
        header checksum (IPv4) or hop limit (IPv6), its UDP header and
        payload, as hex: one line per frame, for comparing what left the
        sender with what reached the receiver
  sfc_signal.py inject --to A --dport P [--case SRC,TTL,SPORT,SEQ,VARIANT ...]
                [--count N] [--pause-us U] [--qlen B]
        for each case, send N signals (IPv4) from source address SRC (raw
        socket, any source) with TTL to the host --to, naming the
        connection --to:SPORT -> peer 10.0.2.1:P and sequence number SEQ;
        variants: good, truncated (40-byte payload), badversion, udp
        (l4proto UDP with a sequence number); without --case, one case
        from --src --ttl --sport --seq --variant
  sfc_signal.py sink PORT SECS
        a TCP server that reads and discards one connection until it
        closes, at most SECS seconds
  sfc_signal.py pause DST PORT [--after S] [--secs S] [--pause-us U]
                [--src A] [--dev DEV] [--storm S [--rate R]]
        one TCP connection writing as fast as it can for SECS seconds
        (default 3); AFTER seconds in (default 1.5) one signal for it is
        sent to its own address (a raw socket, source --src, TTL 255: it
        arrives at once, through loopback)
        with its last byte sent (the ISN from its SYN plus TCP_INFO's
        bytes_sent less bytes_retrans) as the sequence number and a pause of U us (5000);
        prints {"sport", "seq", "t_inject_ns" (CLOCK_MONOTONIC, just
        before the send), "retrans" (TCP_INFO total_retrans before the
        signal, 100 ms after it and at the end), "unacked", "bytes",
        "signals"}; --storm S [--rate R]: from then on for S seconds, R
        signals per second (batches of 64 with the newest sequence
        number), "t_storm_end_ns", and TCP_INFO's snd_cwnd 100 ms into
        the storm and at its end ("cwnd_cut", "cwnd_end").
        How the signal travels (--inject): "frame" (default) as an
        Ethernet frame from port --inject-dev of netns --inject-ns, as a
        switch sends it, to this host's --rx-dev, optionally inside an
        IPIP or GRE tunnel (--encap, --outer-src, --outer-dst); "raw" to
        this host's own address through loopback; "udp" from a UDP socket
        bound to the local address --src with IP_TTL 255. --ttl,
        --udp-csum good|bad|zero, --udp-len, an IPv6 --src (to --to6),
        --repeat N (the same signal N times) forge the rest.
  sfc_signal.py spray --inject-ns NS --inject-dev DEV --local A --sports F-L
        one signal per UDP source port F..L naming A:port -> --peer, as
        frames from a switch's port
  sfc_signal.py nfqueue SECS [--queue N]
        accept every packet of NFQUEUE N for SECS seconds (the verdicts
        reinject them from this process, bottom halves on)
  sfc_signal.py scope-hold --inject-ns NS --inject-dev DEV --local A
                --sport P --from-ns NS2
        sfc_scope 1: a local UDP socket on port P is paused; datagrams of
        the same 5-tuple forwarded from NS2 are not held, the socket's are
  sfc_signal.py tcpsend DST PORT SECS [--dev DEV]
        one TCP connection writing as fast as it can for SECS seconds;
        prints {"sport", "isn"} once connected and {"sport", "isn",
        "bytes"} at the end (the ISN from its SYN, captured on DEV,
        default eth0)

The header's layout is read from include/hpcc_sfc.h (#define
HPCC_SFC_OFF_*), so this file has no copy of it.
"""
import argparse
import ctypes
import json
import os
import re
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hpcc_wire import checksum as csum  # noqa: E402  (RFC 1071, complemented)

ROOT = os.environ.get("HPCC_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")


def header():
    text = open(os.path.join(ROOT, "include", "hpcc_sfc.h")).read()
    return {n: int(v, 0) for n, v in re.findall(r"#define HPCC_SFC_(\w+)\s+(0x[0-9a-fA-F]+|\d+)", text)}


H = header()
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # SCM_TIMESTAMPNS has the same value


def decode(p):
    """The fields of a signal's UDP payload, or None if it is not one."""
    if len(p) < H["LEN"] or struct.unpack_from("!I", p, 0)[0] != H["MAGIC"]:
        return None
    fam = p[H["OFF_FAMILY"]]
    alen = 4 if fam == 4 else 16
    af = socket.AF_INET if fam == 4 else socket.AF_INET6
    u16 = lambda o: struct.unpack_from("!H", p, o)[0]
    u32 = lambda o: struct.unpack_from("!I", p, o)[0]
    return {
        "len": len(p), "version": p[H["OFF_VERSION"]], "family": fam,
        "l4proto": p[H["OFF_L4PROTO"]], "speed": p[H["OFF_SPEED"]], "len_field": u16(H["OFF_LEN"]),
        "pause_ns": u32(H["OFF_PAUSE"]), "qlen": u32(H["OFF_QLEN"]), "switch_id": u32(H["OFF_SWITCH"]),
        "port_id": u16(H["OFF_PORT"]), "sport": u16(H["OFF_SPORT"]), "dport": u16(H["OFF_DPORT"]),
        "reserved2": u16(H["OFF_DPORT"] + 2), "seq": u32(H["OFF_SEQ"]),
        "saddr": socket.inet_ntop(af, p[H["OFF_SADDR"]:H["OFF_SADDR"] + alen]),
        "daddr": socket.inet_ntop(af, p[H["OFF_DADDR"]:H["OFF_DADDR"] + alen]),
        "addr_pad_zero": fam == 6 or not any(p[H["OFF_SADDR"] + 4:H["OFF_SADDR"] + 16] +
                                             p[H["OFF_DADDR"] + 4:H["OFF_DADDR"] + 16]),
    }


def capture(a):
    port = a.port or H["PORT_DEFAULT"]
    if a.family == 4:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    else:
        s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_UDP)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVHOPLIMIT, 1)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    # Arrival times from the kernel (CLOCK_REALTIME), mapped to
    # CLOCK_MONOTONIC (the switch's clock): this process may read late.
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    mono_off = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    s.settimeout(0.2)
    if a.ready:
        open(a.ready, "w").close()
    end = time.monotonic() + a.secs
    n = 0
    while time.monotonic() < end:
        try:
            data, anc, _, src = s.recvmsg(4096, 256)
        except socket.timeout:
            continue
        t = next((sec * 10**9 + ns - mono_off for lvl, typ, d in anc
                  if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS
                  for sec, ns in [struct.unpack("qq", d[:16])]),
                 time.clock_gettime_ns(time.CLOCK_MONOTONIC))
        if a.family == 4:
            ihl = (data[0] & 15) * 4
            ttl, ip_ok, udp = data[8], csum(data[:ihl]) == 0, data[ihl:]
            ph = data[12:20] + struct.pack("!BBH", 0, 17, len(udp))
            udp_ok = struct.unpack_from("!H", udp, 6)[0] != 0 and csum(ph + udp) == 0
        else:
            ttl = next((struct.unpack("i", d)[0] for lvl, typ, d in anc
                        if lvl == socket.IPPROTO_IPV6 and typ == socket.IPV6_HOPLIMIT), None)
            ip_ok, udp = None, data
            udp_ok = None  # verified below with the pseudo-header
        if len(udp) < 8 or struct.unpack_from("!H", udp, 2)[0] != port:
            continue
        sig = decode(udp[8:])
        if sig is None:
            continue
        if a.family == 6:
            dst = next((d[:16] for lvl, typ, d in anc if lvl == socket.IPPROTO_IPV6 and typ == socket.IPV6_PKTINFO), None)
            ph = socket.inet_pton(socket.AF_INET6, src[0]) + (dst or bytes(16)) + struct.pack("!II", len(udp), 17)
            udp_ok = dst is not None and csum(ph + udp) == 0
        sig.update({"t_ns": t, "src": src[0], "ttl": ttl, "ip_csum_ok": ip_ok, "udp_csum_ok": udp_ok,
                    "udp_sport": struct.unpack_from("!H", udp, 0)[0], "udp_len": struct.unpack_from("!H", udp, 4)[0]})
        print(json.dumps(sig), flush=True)
        n += 1
    return 0


def blast(a):
    fam = socket.AF_INET6 if ":" in a.dst else socket.AF_INET
    socks = [socket.socket(fam, socket.SOCK_DGRAM) for _ in range(a.flows)]
    gap = a.size * 8 / (a.mbit * 1e6)
    pat = bytes(range(256)) * (a.size // 256 + 1)
    t0 = time.monotonic()
    nxt, seq = t0, 0
    while time.monotonic() - t0 < a.secs:
        f = seq % a.flows
        msg = struct.pack("!II", f, seq) + pat[:a.size - 8]
        try:
            socks[f].sendto(msg, (a.dst, a.port))
        except OSError:
            pass
        seq += 1
        nxt += gap
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
    print(json.dumps({"sent": seq, "secs": round(time.monotonic() - t0, 3)}))
    return 0


def frames(a):
    ETH_P_ALL = 3
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((a.dev, ETH_P_ALL))  # python converts to network order
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    s.settimeout(0.2)
    want = socket.PACKET_OUTGOING if a.out else socket.PACKET_HOST
    end = time.monotonic() + a.secs
    while time.monotonic() < end:
        try:
            f, addr = s.recvfrom(65536)
        except socket.timeout:
            continue
        if addr[2] != want:
            continue
        eth = struct.unpack_from("!H", f, 12)[0]
        ip = f[14:]
        if eth == 0x0800 and ip[9] == 17:
            ihl = (ip[0] & 15) * 4
            hdr, l4 = ip[:8] + ip[9:10] + ip[12:ihl], ip[ihl:]
        elif eth == 0x86DD and ip[6] == 17:
            hdr, l4 = ip[:7] + ip[8:40], ip[40:]
        else:
            continue
        if len(l4) >= 16 and struct.unpack_from("!H", l4, 2)[0] == a.port:
            print(l4[8:16].hex(), (hdr + l4).hex(), flush=True)
    return 0


def sink(a):
    ls = socket.socket(socket.AF_INET6 if ":" in a.bind else socket.AF_INET)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.bind, a.port))
    ls.listen(16)
    ls.settimeout(a.secs)
    end = time.monotonic() + a.secs
    try:
        c, _ = ls.accept()
    except socket.timeout:
        return 1
    c.settimeout(0.5)
    while time.monotonic() < end:
        try:
            if not c.recv(1 << 16):
                return 0
        except socket.timeout:
            continue
    return 1


def connect_isn(dst, port, dev):
    """A connection to DST:PORT and its ISN, from its SYN captured on DEV."""
    ETH_P_ALL = 3
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    cap.bind((dev, ETH_P_ALL))
    cap.settimeout(0.2)
    c = socket.create_connection((dst, port), timeout=10)
    sport = c.getsockname()[1]
    isn, end = None, time.monotonic() + 5
    while isn is None and time.monotonic() < end:
        try:
            f, addr = cap.recvfrom(65536)
        except socket.timeout:
            continue
        if addr[2] != socket.PACKET_OUTGOING or struct.unpack_from("!H", f, 12)[0] != 0x0800 or f[23] != 6:
            continue
        tcp = f[14 + (f[14] & 15) * 4:]
        if struct.unpack_from("!H", tcp, 0)[0] == sport and tcp[13] & 0x02:
            isn = struct.unpack_from("!I", tcp, 4)[0]
    cap.close()
    return c, sport, isn


# struct tcp_info (include/uapi/linux/tcp.h): the fields read here.
TI_UNACKED, TI_SND_CWND, TI_TOTAL_RETRANS, TI_BYTES_SENT, TI_BYTES_RETRANS = 24, 80, 100, 200, 208


def tcp_info(c):
    b = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
    return {"unacked": struct.unpack_from("I", b, TI_UNACKED)[0],
            "cwnd": struct.unpack_from("I", b, TI_SND_CWND)[0],
            "retrans": struct.unpack_from("I", b, TI_TOTAL_RETRANS)[0],
            "bytes_sent": struct.unpack_from("Q", b, TI_BYTES_SENT)[0],
            "bytes_retrans": struct.unpack_from("Q", b, TI_BYTES_RETRANS)[0]}


def tcpsend(a):
    c, sport, isn = connect_isn(a.dst, a.port, a.dev)
    print(json.dumps({"sport": sport, "isn": isn}), flush=True)
    n, buf = 0, b"x" * 65536
    end = time.monotonic() + a.secs
    c.settimeout(1)
    while time.monotonic() < end:
        try:
            n += c.send(buf)
        except socket.timeout:
            pass
    c.close()
    print(json.dumps({"sport": sport, "isn": isn, "bytes": n}))
    return 0 if isn is not None else 1


def injector(a, local):
    """How pause() sends a signal packet: a raw socket to this host's own
    address (it arrives through loopback), a UDP socket from a local
    address with IP_TTL 255 (an unprivileged process), or a frame from a
    switch's (or container's) port (--inject-ns, --inject-dev) to --rx-dev,
    optionally in an IPIP or GRE tunnel."""
    if a.inject == "raw":
        raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        raw.connect((local, 0))
        return raw.send
    if a.inject == "udp":
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 255)
        u.bind((a.src, H["PORT_DEFAULT"]))
        u.connect((local, H["PORT_DEFAULT"]))
        return lambda pkt: u.send(pkt[28:])  # the payload; the kernel builds the rest
    f = FrameSender(a.inject_ns, a.inject_dev, local_mac(a.rx_dev))
    if a.encap == "none":
        return f.send
    return lambda pkt: f.send(encap(pkt, a.encap, a.outer_src, a.outer_dst))


def injector_many(send):
    """send_many(pkt, n): n copies of pkt the way injector()'s SEND sends
    one, in one sendmmsg(2) call where it can (a frame without a
    tunnel)."""
    if isinstance(getattr(send, "__self__", None), FrameSender):
        return send.__self__.send_many

    def many(pkt, n):
        for _ in range(n):
            send(pkt)
    return many


def pause(a):
    c, sport, isn = connect_isn(a.dst, a.port, a.dev)
    local = c.getsockname()[0]
    send = injector(a, local)
    send_many = injector_many(send)
    buf = b"x" * 65536
    c.settimeout(0.05)
    t0 = time.monotonic()
    n, out = 0, {"sport": sport}
    storm_end, signals = None, 0

    def signal():
        # The last byte sent (snd_nxt - 1): still in flight when the
        # signal arrives half an RTT later (snd_una would be acked by
        # then).
        ti = tcp_info(c)
        seq = (isn + ti["bytes_sent"] - ti["bytes_retrans"]) & 0xffffffff
        pay = encode(4, 6, 12, a.pause_us * 1000, 50000, 0x101, 1, sport, a.port, seq, local, a.dst)
        if ":" in a.src:
            return ipv6_udp(a.src, a.to6, a.ttl, H["PORT_DEFAULT"], pay, udp_csum=a.udp_csum,
                            udp_len=a.udp_len), seq, ti
        return ipv4_udp(a.src, local, a.ttl, H["PORT_DEFAULT"], pay, udp_csum=a.udp_csum, udp_len=a.udp_len), seq, ti

    while time.monotonic() - t0 < a.secs:
        if "seq" not in out and time.monotonic() - t0 >= a.after:
            pkt, seq, ti = signal()
            out.update(seq=seq, unacked=ti["unacked"], retrans=[ti["retrans"]])
            out["t_inject_ns"] = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            for _ in range(a.repeat):
                send(pkt)
            signals = a.repeat
            if a.storm:
                # It ends with the send window at the latest: on a slow
                # guest the first signal leaves late, and a storm that
                # outlived the window would never be counted as ended.
                window_end = out["t_inject_ns"] + int((a.secs - (time.monotonic() - t0)) * 1e9)
                storm_end = min(out["t_inject_ns"] + int(a.storm * 1e9), window_end)
                c.settimeout(0)
        # --storm: signals at --rate until the storm ends, each batch of 64
        # with the then newest sequence number, a write between batches;
        # send() on a bound or connected socket, not sendto(): parsing the
        # address per packet kept the storm under 98,000 per second in
        # virtual time.
        while storm_end and signals < a.rate * (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - out["t_inject_ns"]) / 1e9:
            send_many(signal()[0], 64)
            signals += 64
            # cwnd once the first signal's cut has applied (100 ms in) and
            # as the storm ends: signals alone cut once per episode.
            if "cwnd_cut" not in out and time.clock_gettime_ns(time.CLOCK_MONOTONIC) >= out["t_inject_ns"] + 100_000_000:
                out["cwnd_cut"] = tcp_info(c)["cwnd"]
            if time.clock_gettime_ns(time.CLOCK_MONOTONIC) >= storm_end:
                out.update(t_storm_end_ns=time.clock_gettime_ns(time.CLOCK_MONOTONIC), signals=signals,
                           cwnd_end=tcp_info(c)["cwnd"])
                storm_end = None
                c.settimeout(0.05)
            break
        if len(out.get("retrans", [])) == 1 and time.clock_gettime_ns(time.CLOCK_MONOTONIC) > out["t_inject_ns"] + 100_000_000:
            out["retrans"].append(tcp_info(c)["retrans"])
        try:
            n += c.send(buf)
        except (socket.timeout, BlockingIOError):
            pass
    out.setdefault("retrans", [None]).append(tcp_info(c)["retrans"])
    c.close()
    out["bytes"] = n
    out.setdefault("signals", signals)
    print(json.dumps(out))
    return 0 if "seq" in out and not storm_end else 1


def encode(fam, proto, speed, pause_ns, qlen, switch_id, port_id, sport, dport, seq, saddr, daddr):
    """A signal's UDP payload (layout from include/hpcc_sfc.h)."""
    p = bytearray(H["LEN"])
    struct.pack_into("!I", p, 0, H["MAGIC"])
    p[H["OFF_VERSION"]], p[H["OFF_FAMILY"]], p[H["OFF_L4PROTO"]], p[H["OFF_SPEED"]] = H["VERSION"], fam, proto, speed
    struct.pack_into("!H", p, H["OFF_LEN"], H["LEN"])
    struct.pack_into("!III", p, H["OFF_PAUSE"], pause_ns, qlen, switch_id)
    struct.pack_into("!HHH", p, H["OFF_PORT"], port_id, sport, dport)
    struct.pack_into("!I", p, H["OFF_SEQ"], seq)
    af = socket.AF_INET if fam == 4 else socket.AF_INET6
    p[H["OFF_SADDR"]:H["OFF_SADDR"] + (4 if fam == 4 else 16)] = socket.inet_pton(af, saddr)
    p[H["OFF_DADDR"]:H["OFF_DADDR"] + (4 if fam == 4 else 16)] = socket.inet_pton(af, daddr)
    return bytes(p)


def udp_datagram(src, dst, port, pay, udp_csum="good", udp_len=None):
    """UDP header and payload from and to PORT, with its checksum over the
    pseudo-header of SRC and DST (either family): "good", "bad" (one bit
    off) or "zero" (none); UDP_LEN overrides the length field."""
    fam = socket.AF_INET6 if ":" in src else socket.AF_INET
    n = 8 + len(pay)
    udp = bytearray(struct.pack("!HHHH", port, port, n if udp_len is None else udp_len, 0) + pay)
    if fam == socket.AF_INET:
        ph = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 17, n)
    else:
        ph = socket.inet_pton(fam, src) + socket.inet_pton(fam, dst) + struct.pack("!IxxxB", n, 17)
    c = csum(ph + bytes(udp)) or 0xffff
    c = {"good": c, "bad": c ^ 1, "zero": 0}[udp_csum]
    struct.pack_into("!H", udp, 6, c)
    return bytes(udp)


def ipv4_udp(src, dst, ttl, port, pay, **kw):
    """An IPv4 UDP datagram to and from PORT with a valid UDP checksum
    (udp_datagram's options), for a raw socket."""
    udp = udp_datagram(src, dst, port, pay, **kw)
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, ttl, 17, 0,
                               socket.inet_aton(src), socket.inet_aton(dst)))
    struct.pack_into("!H", ip, 10, csum(bytes(ip)))
    return bytes(ip) + udp


def ipv6_udp(src, dst, hlim, port, pay, **kw):
    """The same over IPv6 (no extension header)."""
    udp = udp_datagram(src, dst, port, pay, **kw)
    return (struct.pack("!IHBB", 6 << 28, len(udp), 17, hlim) + socket.inet_pton(socket.AF_INET6, src)
            + socket.inet_pton(socket.AF_INET6, dst) + udp)


def encap(inner, how, outer_src, outer_dst):
    """INNER (an IPv4 packet) in an IPIP or GRE packet from OUTER_SRC to OUTER_DST."""
    if how == "ipip":
        proto, body = 4, inner
    else:
        proto, body = 47, struct.pack("!HH", 0, 0x0800) + inner
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0, 0x4000, 64, proto, 0,
                               socket.inet_aton(outer_src), socket.inet_aton(outer_dst)))
    struct.pack_into("!H", ip, 10, csum(bytes(ip)))
    return bytes(ip) + body


def in_netns(name, make):
    """MAKE() run inside network namespace NAME (/run/netns/NAME): the
    socket it returns stays there."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    CLONE_NEWNET = 0x40000000
    here = os.open("/proc/self/ns/net", os.O_RDONLY)
    there = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        if libc.setns(there, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + name)
        try:
            return make()
        finally:
            libc.setns(here, CLONE_NEWNET)
    finally:
        os.close(here)
        os.close(there)


class FrameSender:
    """Sends IP packets as Ethernet frames on DEV of network namespace NS
    (AF_PACKET, bypassing DEV's qdisc and tc hooks), to the MAC DMAC: a
    packet that arrives on the receiving device as if a switch's port had
    sent it."""

    def __init__(self, ns, dev, dmac):
        PACKET_QDISC_BYPASS = 20

        def make():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((dev, 0))
            s.setsockopt(263, PACKET_QDISC_BYPASS, 1)  # SOL_PACKET
            return s
        self.s = in_netns(ns, make) if ns else make()
        smac = self.s.getsockname()[4]
        self.hdr = bytes.fromhex(dmac.replace(":", "")) + smac
        self._n = 0  # the batch size send_many's messages are built for

    def frame(self, pkt):
        et = 0x86DD if pkt[0] >> 4 == 6 else 0x0800
        return self.hdr + struct.pack("!H", et) + pkt

    def send(self, pkt):
        self.s.send(self.frame(pkt))

    def send_many(self, pkt, n):
        """Sends PKT N times: one sendmmsg(2) call for all of them where
        libc has it (a storm's rate in virtual time is the guest's
        instructions per signal: a Python call and a syscall per copy
        kept it under 85,000 a second), else one send each."""
        f = self.frame(pkt)
        if _sendmmsg is None or len(f) > 2048:
            for _ in range(n):
                self.s.send(f)
            return
        # The messages are built once per batch size and all point at one
        # buffer: a batch costs a copy of the frame and the call.
        if self._n != n:
            self._buf = ctypes.create_string_buffer(2048)
            self._iov = _Iovec(ctypes.cast(self._buf, ctypes.c_void_p), 0)
            self._msgs = (_Mmsghdr * n)()
            for m in self._msgs:
                m.msg_hdr.msg_iov = ctypes.pointer(self._iov)
                m.msg_hdr.msg_iovlen = 1
            self._n = n
        ctypes.memmove(self._buf, f, len(f))
        self._iov.iov_len = len(f)
        done = 0
        while done < n:
            k = _sendmmsg(self.s.fileno(), ctypes.byref(self._msgs, done * ctypes.sizeof(_Mmsghdr)), n - done, 0)
            if k <= 0:
                raise OSError(ctypes.get_errno(), "sendmmsg")
            done += k


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("msg_name", ctypes.c_void_p), ("msg_namelen", ctypes.c_uint32),
                ("msg_iov", ctypes.POINTER(_Iovec)), ("msg_iovlen", ctypes.c_size_t),
                ("msg_control", ctypes.c_void_p), ("msg_controllen", ctypes.c_size_t),
                ("msg_flags", ctypes.c_int)]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("msg_hdr", _Msghdr), ("msg_len", ctypes.c_uint)]


def _libc_sendmmsg():
    try:
        f = ctypes.CDLL(None, use_errno=True).sendmmsg
    except (OSError, AttributeError):
        return None
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int]
    f.restype = ctypes.c_int
    return f


_sendmmsg = _libc_sendmmsg()


def local_mac(dev):
    with open("/sys/class/net/%s/address" % dev) as f:
        return f.read().strip()


def inject(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    out = []
    # One case per --case SRC,TTL,SPORT,SEQ,VARIANT (default: the options).
    for case in a.case or ["%s,%d,%d,%d,%s" % (a.src, a.ttl, a.sport, a.seq, a.variant)]:
        src, ttl, sport, seq, variant = case.split(",")
        proto = 17 if variant == "udp" else 6
        pay = encode(4, proto, 12, a.pause_us * 1000, a.qlen, 0x101, 1, int(sport), a.dport, int(seq), a.to, a.peer)
        if variant == "truncated":
            pay = pay[:40]
        elif variant == "badversion":
            pay = pay[:H["OFF_VERSION"]] + b"\x02" + pay[H["OFF_VERSION"] + 1:]
        pkt = ipv4_udp(src, a.to, int(ttl), a.port, pay)
        for _ in range(a.count):
            s.sendto(pkt, (a.to, 0))
            time.sleep(a.gap)
        out.append(variant)
    print(json.dumps({"sent_each": a.count, "cases": out}))
    return 0


def nfqueue(a):
    """Accepts every packet of NFQUEUE --queue for SECS seconds from this
    process (raw netfilter netlink): the verdict reinjects the packet into
    the remaining hooks in this process's context, bottom halves on.
    Prints {"verdicts"}."""
    NETLINK_NETFILTER, NFNL_SUBSYS_QUEUE = 12, 3
    MSG_PACKET, MSG_VERDICT, MSG_CONFIG = 0, 1, 2
    NLM_F_REQUEST = 1
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    s.bind((0, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)

    def attr(t, body):
        return struct.pack("=HH", 4 + len(body), t) + body + b"\0" * (-len(body) % 4)

    def msg(mtype, family, body, seq=0):
        payload = struct.pack("=BBH", family, 0, socket.htons(a.queue)) + body
        return struct.pack("=IHHII", 16 + len(payload), (NFNL_SUBSYS_QUEUE << 8) | mtype, NLM_F_REQUEST, seq, 0) + payload

    # Bind the queue (NFQA_CFG_CMD, NFQNL_CFG_CMD_BIND) and ask for the
    # metadata only (NFQA_CFG_PARAMS, NFQNL_COPY_META).
    s.send(msg(MSG_CONFIG, 0, attr(1, struct.pack("!BxH", 1, 0))))
    s.send(msg(MSG_CONFIG, 0, attr(2, struct.pack("!IB", 0, 1))))
    s.settimeout(0.2)
    end, n = time.monotonic() + a.secs, 0
    while time.monotonic() < end:
        try:
            data = s.recv(1 << 20)
        except socket.timeout:
            continue
        except OSError as e:
            if e.errno == 105:  # ENOBUFS: the kernel dropped queue messages; go on
                continue
            raise
        off = 0
        while off + 16 <= len(data):
            ln, typ = struct.unpack_from("=IH", data, off)
            if ln < 16:
                break
            if typ == (NFNL_SUBSYS_QUEUE << 8) | MSG_PACKET:
                fam = data[off + 16]
                p = off + 20
                while p + 4 <= off + ln:
                    alen, atyp = struct.unpack_from("=HH", data, p)
                    if alen < 4:
                        break
                    if atyp & 0x7fff == 1:  # NFQA_PACKET_HDR: packet_id first
                        pid = struct.unpack_from("!I", data, p + 4)[0]
                        s.send(msg(MSG_VERDICT, fam, attr(2, struct.pack("!II", 1, pid))))  # NF_ACCEPT
                        n += 1
                    p += (alen + 3) & ~3
            off += (ln + 3) & ~3
    print(json.dumps({"verdicts": n}))
    return 0


def hpcc_stat():
    """This netns's /proc/net/hpcc_stat as a dict."""
    with open("/proc/net/hpcc_stat") as f:
        return {k: int(v) for k, v in (line.split() for line in f)}


def spray(a):
    """Signals naming UDP flows LOCAL:SPORT -> PEER:DPORT for each SPORT of
    --sports FIRST-LAST, as frames from a switch's port (--inject-ns,
    --inject-dev) to --rx-dev; prints {"sent"}."""
    f = FrameSender(a.inject_ns, a.inject_dev, local_mac(a.rx_dev))
    first, last = (int(x) for x in a.sports.split("-"))
    for sp in range(first, last + 1):
        pay = encode(4, 17, 12, a.pause_us * 1000, 50000, 0x101, 1, sp, a.dport, 0, a.local, a.peer)
        f.send(ipv4_udp(a.src, a.local, 255, H["PORT_DEFAULT"], pay))
    print(json.dumps({"sent": last - first + 1}))
    return 0


def scope_hold(a):
    """sfc_scope 1 holds only what this netns's sockets send: a UDP socket
    here bound to --sport gets a pause (a signal from a switch's port, as
    spray), then --fwd datagrams with the same 5-tuple come from the
    netns --from-ns (forwarded through this host) and --local datagrams
    from the socket; prints the held counters' growth for each, and the
    signal's outcome."""
    held = ("sfc_egress_held", "sfc_egress_no_edt_qdisc")
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", a.sport))
    u.connect((a.peer, a.dport))
    fwd = in_netns(a.from_ns, lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW))
    f = FrameSender(a.inject_ns, a.inject_dev, local_mac(a.rx_dev))
    pay = encode(4, 17, 12, a.pause_us * 1000, 50000, 0x101, 1, a.sport, a.dport, 0, a.local, a.peer)
    c0 = hpcc_stat()
    f.send(ipv4_udp(a.src, a.local, 255, H["PORT_DEFAULT"], pay))
    time.sleep(0.02)
    c1 = hpcc_stat()
    dgram = ipv4_udp(a.local, a.peer, 64, a.sport, b"f" * 100)
    dgram = dgram[:22] + struct.pack("!H", a.dport) + dgram[24:]  # to the peer's port
    for _ in range(a.fwd):
        fwd.sendto(dgram, (a.peer, 0))
    time.sleep(0.02)
    c2 = hpcc_stat()
    for _ in range(a.local_n):
        u.send(b"l" * 100)
    time.sleep(0.02)
    c3 = hpcc_stat()
    d = lambda x, y: sum(y[k] - x[k] for k in held)  # noqa: E731
    print(json.dumps({"applied_egress": c1["sfc_applied_egress"] - c0["sfc_applied_egress"],
                      "fwd_held": d(c1, c2), "local_held": d(c2, c3), "t_ms": (time.monotonic())}))
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("secs", type=float)
    c.add_argument("--port", type=int, default=0)
    c.add_argument("--family", type=int, default=4, choices=(4, 6))
    c.add_argument("--ready", help="create this file once the socket is open")
    b = sub.add_parser("blast")
    b.add_argument("dst")
    b.add_argument("port", type=int)
    b.add_argument("secs", type=float)
    b.add_argument("--mbit", type=float, default=20)
    b.add_argument("--size", type=int, default=1000)
    b.add_argument("--flows", type=int, default=1)
    f = sub.add_parser("frames")
    f.add_argument("dev")
    f.add_argument("port", type=int)
    f.add_argument("secs", type=float)
    g = f.add_mutually_exclusive_group(required=True)
    g.add_argument("--in", dest="inp", action="store_true")
    g.add_argument("--out", action="store_true")
    j = sub.add_parser("inject")
    j.add_argument("--src", default="10.255.0.1")
    j.add_argument("--case", action="append")
    j.add_argument("--to", required=True)
    j.add_argument("--peer", default="10.0.2.1")
    j.add_argument("--sport", type=int, default=1)
    j.add_argument("--dport", type=int, required=True)
    j.add_argument("--seq", type=int, default=0)
    j.add_argument("--ttl", type=int, default=255)
    j.add_argument("--count", type=int, default=10)
    j.add_argument("--gap", type=float, default=0.01)
    j.add_argument("--pause-us", type=int, default=5000)
    j.add_argument("--qlen", type=int, default=50000)
    j.add_argument("--port", type=int, default=H["PORT_DEFAULT"])
    j.add_argument("--variant", default="good", choices=("good", "truncated", "badversion", "udp"))
    k = sub.add_parser("sink")
    k.add_argument("port", type=int)
    k.add_argument("secs", type=float)
    k.add_argument("--bind", default="0.0.0.0")
    q = sub.add_parser("pause")
    q.add_argument("dst")
    q.add_argument("port", type=int)
    q.add_argument("--after", type=float, default=1.5)
    q.add_argument("--secs", type=float, default=3.0)
    q.add_argument("--pause-us", type=int, default=5000)
    q.add_argument("--src", default="10.255.0.1")
    q.add_argument("--dev", default="eth0")
    q.add_argument("--storm", type=float, default=0, help="seconds of signals at --rate from the first")
    q.add_argument("--rate", type=float, default=100_000)
    q.add_argument("--inject", default="frame", choices=("frame", "raw", "udp"))
    q.add_argument("--inject-ns", help="the netns of the sending port (frame)")
    q.add_argument("--inject-dev", default="eth0", help="the sending port (frame)")
    q.add_argument("--rx-dev", default="eth0", help="the device here that receives the frame")
    q.add_argument("--encap", default="none", choices=("none", "ipip", "gre"))
    q.add_argument("--outer-src")
    q.add_argument("--outer-dst")
    q.add_argument("--ttl", type=int, default=255)
    q.add_argument("--to6", help="this host's IPv6 address, for an IPv6 --src")
    q.add_argument("--udp-csum", default="good", choices=("good", "bad", "zero"))
    q.add_argument("--udp-len", type=int)
    q.add_argument("--repeat", type=int, default=1, help="send the first signal this many times")
    t = sub.add_parser("tcpsend")
    t.add_argument("dst")
    t.add_argument("port", type=int)
    t.add_argument("secs", type=float)
    t.add_argument("--dev", default="eth0")
    nq = sub.add_parser("nfqueue")
    nq.add_argument("secs", type=float)
    nq.add_argument("--queue", type=int, default=0)
    for name in ("spray", "scope-hold"):
        r = sub.add_parser(name)
        r.add_argument("--inject-ns", required=True)
        r.add_argument("--inject-dev", required=True)
        r.add_argument("--rx-dev", default="eth0")
        r.add_argument("--src", default="10.255.0.1")
        r.add_argument("--local", required=True, help="this host's address")
        r.add_argument("--peer", default="10.0.2.1")
        r.add_argument("--dport", type=int, default=9)
        r.add_argument("--pause-us", type=int, default=5000)
    r.add_argument("--sport", type=int, required=True)
    r.add_argument("--from-ns", required=True)
    r.add_argument("--fwd", type=int, default=20)
    r.add_argument("--local-n", type=int, default=5)
    sub.choices["spray"].add_argument("--sports", required=True, help="FIRST-LAST")
    a = p.parse_args()
    return {"capture": capture, "blast": blast, "frames": frames, "sink": sink, "tcpsend": tcpsend, "pause": pause,
            "inject": inject, "spray": spray, "scope-hold": scope_hold, "nfqueue": nfqueue}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
