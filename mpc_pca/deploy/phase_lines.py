"""A party process's phases and iterations, forwarded to its launcher as text lines.

``mpc-pca run`` with ``transport='processes'`` starts every party as a child process
(:func:`mpc_pca.deploy.launch_local`). Each child announces its phases and
the steps of its iterative phases on the ``mpc_pca.protocol`` logger
(:meth:`protocols.party.Party.phase`, :meth:`~protocols.party.Party.iteration`);
:func:`forward_phases` turns those records into lines on the child's stderr,
which the launcher reads while the children run
(:func:`protocols.runtime.launcher.launch`, ``on_line``), and :func:`relog`
logs them again in the parent, on the same logger with the same formats, so
the parent's progress report (:mod:`mpc_pca.cli.progress`) shows the
children's phases as it shows those of parties run as threads.

The lines are plain text, one record per line, tab-separated after
:data:`~protocols.runtime.launcher.FORWARD_PREFIX`::

    phase<TAB>LABEL
    iteration<TAB>LABEL<TAB>DONE<TAB>TOTAL

Nothing a child writes is unpickled or evaluated: a line that does not parse
is ignored, labels are cut to :data:`MAX_LABEL` characters, and the party is
named by the launcher (which child's stderr the line came from), never by the
line.
"""

from __future__ import annotations

import logging
from typing import TextIO

from protocols.party import ITERATION, PHASE_STARTED
from protocols.runtime.launcher import FORWARD_PREFIX

PROTOCOL_LOGGER = "mpc_pca.protocol"
#: Longest label forwarded (characters).
MAX_LABEL = 200


def _clean(label: object) -> str:
    """A label on one line, without the separator, at most :data:`MAX_LABEL` characters."""
    return " ".join(str(label).replace("\t", " ").split())[:MAX_LABEL]


def phase_line(record: logging.LogRecord) -> str | None:
    """The forwarded line of a phase start or an iteration record (``None`` for any other record).

    Examples
    --------
    >>> record = logging.LogRecord("mpc_pca.protocol", logging.INFO, "", 0, PHASE_STARTED, ("server", "Gram"), None)
    >>> phase_line(record)
    'mpc-pca-forward\\tphase\\tGram'
    """
    args = record.args if isinstance(record.args, tuple) else ()
    if record.msg == PHASE_STARTED and len(args) == 2:
        return f"{FORWARD_PREFIX}phase\t{_clean(args[1])}"
    if record.msg == ITERATION and len(args) == 4 and isinstance(args[2], int) and isinstance(args[3], int):
        return f"{FORWARD_PREFIX}iteration\t{_clean(args[1])}\t{int(args[2])}\t{int(args[3])}"
    return None


class _Forward(logging.Filter):
    """Writes the forwarded line of each phase record; passes on what the log would show."""

    def __init__(self, stream: TextIO, shown_level: int) -> None:
        super().__init__()
        self.stream = stream
        self.shown_level = shown_level

    def filter(self, record: logging.LogRecord) -> bool:
        line = phase_line(record)
        if line is not None:
            self.stream.write(line + "\n")
            self.stream.flush()
        return record.levelno >= self.shown_level


def forward_phases(stream: TextIO) -> logging.Filter:
    """In a party process: write every phase and iteration record to ``stream`` (its stderr) as a line.

    The logger is opened to DEBUG so that the iteration records reach the
    filter; the filter passes on only the records the log showed before.

    Returns
    -------
    logging.Filter
        The installed filter (``logging.getLogger(PROTOCOL_LOGGER).removeFilter`` removes it).
    """
    logger = logging.getLogger(PROTOCOL_LOGGER)
    forward = _Forward(stream, logger.getEffectiveLevel())
    logger.addFilter(forward)
    logger.setLevel(logging.DEBUG)
    return forward


def relog(party: str, line: str) -> bool:
    """In the launcher: log a child's forwarded line again, as ``party``'s record; ``False`` if it does not parse.

    Examples
    --------
    >>> relog("provider0", "phase\\tmean secure sum"), relog("provider0", "iteration\\tx\\ttwo\\t3")
    (True, False)
    """
    fields = line.split("\t")
    log = logging.getLogger(PROTOCOL_LOGGER)
    if fields[0] == "phase" and len(fields) == 2:
        log.info(PHASE_STARTED, party, _clean(fields[1]))
        return True
    if fields[0] == "iteration" and len(fields) == 4:
        try:
            done, total = int(fields[2]), int(fields[3])
        except ValueError:
            return False
        log.debug(ITERATION, party, _clean(fields[1]), done, total)
        return True
    return False


__all__ = ["MAX_LABEL", "forward_phases", "phase_line", "relog"]
