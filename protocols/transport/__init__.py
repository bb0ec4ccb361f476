"""Channels that carry messages between parties and meter what they carry."""

from protocols.transport.base import Channel, TrafficMeter
from protocols.transport.inprocess import InProcessNetwork

__all__ = ["Channel", "InProcessNetwork", "TrafficMeter"]
