"""Exception types shared by the engine.

Validation errors subclass :class:`ValueError` so that callers who already
catch ``ValueError`` for bad input keep working; protocol failures (a peer that
timed out, died or sent garbage) subclass :class:`RuntimeError`.
"""


class InputValidationError(ValueError):
    """An input was rejected before any party sent anything."""


class RingOverflowError(InputValidationError):
    """A value cannot be encoded in the fixed-point ring without wrapping around."""


class ProtocolError(RuntimeError):
    """A protocol run failed after it started (peer failure, malformed message)."""


class PeerTimeoutError(ProtocolError):
    """No message arrived from a peer within the receive timeout."""


class PeerFailureError(ProtocolError):
    """Another party of the same run failed; this party stopped waiting for it."""


class PeerDroppedError(PeerFailureError):
    """A peer the protocol tolerates losing (see ``Channel.tolerating``) closed its link or failed."""


class DropoutError(ProtocolError):
    """Too few providers of a dropout-tolerant secure sum remained; nothing about any input was revealed.

    Attributes
    ----------
    dropped : tuple of str
        The providers that dropped (named in the message too).
    """

    def __init__(self, message: str, dropped: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.dropped = tuple(dropped)


class WireFormatError(ProtocolError):
    """Bytes received from a peer do not form a valid message of the expected shape."""


class TripleReuseError(ProtocolError):
    """A Beaver triple or truncation pair was about to be used a second time."""
