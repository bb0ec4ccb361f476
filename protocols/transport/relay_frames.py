"""The relay's outer frames: their header, kinds and bounds (shared by the party side and the relay).

See :mod:`protocols.transport.relay` for what each kind means. This module
holds constants only.
"""

from __future__ import annotations

import struct

#: The name in the relay's certificate.
RELAY_NAME = "relay"
#: Outer frame header: kind (1 byte), a party's rank (2 bytes), payload length (4 bytes), little endian.
OUTER = struct.Struct("<BHI")
DATA, END, NOTICE, STALL = 1, 2, 3, 4
KINDS = {DATA: "data", END: "end", NOTICE: "notice", STALL: "stall"}
#: Seconds a source waits for a destination's full queue before the relay reports the destination
#: to every other party as not reading (a :data:`STALL` frame; issue 35).
REPORT_SECONDS = 1.0
#: Largest outer frame payload (bytes); a party splits its ciphertext into frames of at most this.
MAX_FRAME_BYTES = 256 << 10
#: Bytes the relay queues for one party before the sources wait.
QUEUE_BYTES = 16 << 20
#: Seconds a source waits for a full destination queue before the relay drops the destination.
STALL_SECONDS = 600.0
#: Ciphertext a party buffers from one peer, unread, before the pair's stream fails.
BUFFERED_BYTES = 512 << 20
#: Longest notice the relay sends (characters).
MAX_NOTICE_CHARS = 4096
#: A frame's payload as the relay holds it (read into a fresh buffer, never copied again).
Payload = bytes | bytearray | memoryview


__all__ = [
    "BUFFERED_BYTES",
    "DATA",
    "END",
    "KINDS",
    "MAX_FRAME_BYTES",
    "MAX_NOTICE_CHARS",
    "NOTICE",
    "OUTER",
    "QUEUE_BYTES",
    "RELAY_NAME",
    "REPORT_SECONDS",
    "STALL",
    "STALL_SECONDS",
    "Payload",
]
