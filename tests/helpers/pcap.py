"""TCP payload streams from a pcap file (tcpdump -w on Linux lo: Ethernet, IPv4/IPv6)."""

from __future__ import annotations

import struct
from collections import defaultdict

_MAGICS = {
    b"\xd4\xc3\xb2\xa1": "<",
    b"\xa1\xb2\xc3\xd4": ">",
    b"\x4d\x3c\xb2\xa1": "<",
    b"\xa1\xb2\x3c\x4d": ">",
}
_ETHERNET = 1


def tcp_streams(pcap: bytes) -> list[bytes]:
    """The payload of every TCP direction in the capture, in sequence order, retransmissions dropped.

    A value the parties send can straddle two segments, so searching the raw
    file (packet headers between segments) can miss it; these streams cannot.
    """
    if len(pcap) < 24 or pcap[:4] not in _MAGICS:
        raise ValueError("not a pcap file")
    endian = _MAGICS[pcap[:4]]
    (link_type,) = struct.unpack(endian + "I", pcap[20:24])
    if link_type != _ETHERNET:
        raise ValueError(f"link type {link_type} is not Ethernet")
    segments: dict[tuple[bytes, bytes, int, int], dict[int, bytes]] = defaultdict(dict)
    offset = 24
    while offset + 16 <= len(pcap):
        captured = struct.unpack(endian + "I", pcap[offset + 8 : offset + 12])[0]
        frame = pcap[offset + 16 : offset + 16 + captured]
        offset += 16 + captured
        ethertype = struct.unpack(">H", frame[12:14])[0]
        packet = frame[14:]
        if ethertype == 0x0800 and packet[9] == 6:  # IPv4, TCP
            header = (packet[0] & 0x0F) * 4
            total = struct.unpack(">H", packet[2:4])[0]
            src, dst, tcp = packet[12:16], packet[16:20], packet[header:total]
        elif ethertype == 0x86DD and packet[6] == 6:  # IPv6 without extension headers, TCP
            length = struct.unpack(">H", packet[4:6])[0]
            src, dst, tcp = packet[8:24], packet[24:40], packet[40 : 40 + length]
        else:
            continue
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        payload = tcp[(tcp[12] >> 4) * 4 :]
        if payload:
            segments[(src, dst, sport, dport)].setdefault(seq, payload)
    return [b"".join(part for _, part in sorted(flow.items())) for flow in segments.values()]
