"""Which part of a run to analyse: the :class:`Slice`, checked once where it is made.

The options that shape an analysis (the key node that cuts iterations, the range of iterations to
aggregate, whether a slice that selects nothing may fall back to the whole run, the iteration the
timeline draws) travel as this one value from the edge (:mod:`tcreport.api`, or the CLI through
it) to :func:`tcreport.analysis.iterations.select`, the way HTA's ``trace_filter`` does, instead of
as keyword arguments repeated through every layer.

Every message about them is an :class:`~tcreport.errors.OptionText`: it names options as the
Python API spells them (``iter_start``), and the CLI re-spells it with its flags (``--iter-start``).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

from tcreport.errors import OptionError, OptionText
from tcreport.model import IterationInfo, IterationMethod


@dataclass(frozen=True)
class Slice:
    """The part of a run to analyse.

    ``key_node``: an op or range name that runs once per iteration (DLProf's key node); without
    one, ``ProfilerStep#N`` ranges or a repeating outermost range cut the run. ``iter_start`` /
    ``iter_stop``: the iterations to aggregate (0-based, inclusive). ``allow_empty``: a key node
    that never occurs, or an ``iter_start`` past the only iteration of a run that cannot be split,
    aggregates the whole run instead of being refused. ``timeline_iter``: the iteration the HTML
    timeline draws, if it has GPU activity (else the median aggregated one, and the report says so).
    """

    key_node: str | None = None
    iter_start: int | None = None
    iter_stop: int | None = None
    allow_empty: bool = False
    timeline_iter: int | None = None

    def __post_init__(self) -> None:
        self._check_types()
        for name in ("iter_start", "iter_stop", "timeline_iter"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise OptionError(
                    OptionText.of(
                        f"{{{name}}} {{value}} is negative; iterations count from 0", value=value
                    )
                )
        if (
            self.iter_start is not None
            and self.iter_stop is not None
            and self.iter_stop < self.iter_start
        ):
            raise OptionError(
                OptionText.of(
                    "{iter_stop} {stop} is before {iter_start} {start}",
                    stop=self.iter_stop,
                    start=self.iter_start,
                )
            )

    def _check_types(self) -> None:
        """Each option of the type it must have, refused in the API's words before any trace is
        read: a Python caller can pass ``"1"``, ``1.5``, ``nan``, ``True`` or ``key_node=5``, which
        would otherwise fail deep inside the analysis (or, for ``True``, be taken as 1). An
        integer of another kind (``numpy.int64``) is taken as the int it is."""
        for name in ("iter_start", "iter_stop", "timeline_iter"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise OptionError(
                    OptionText.of(
                        f"{{{name}}} must be a whole number (an iteration, counted from 0), "
                        "not {value}",
                        value=f"{value!r} ({type(value).__name__})",
                    )
                )
            object.__setattr__(self, name, int(value))
        if self.key_node is not None and not isinstance(self.key_node, str):
            raise OptionError(
                OptionText.of(
                    "{key_node} must be an op or range name (a string), not {value}",
                    value=f"{self.key_node!r} ({type(self.key_node).__name__})",
                )
            )
        if not isinstance(self.allow_empty, bool):
            raise OptionError(
                OptionText.of(
                    "{allow_empty} must be True or False, not {value}",
                    value=f"{self.allow_empty!r} ({type(self.allow_empty).__name__})",
                )
            )

    def every_iteration(self) -> Slice:
        """The same cut with no range: every iteration, numbered as this slice numbers them
        (per-iteration rows, a notebook's launches)."""
        return dataclasses.replace(self, iter_start=None, iter_stop=None, allow_empty=True)


#: The whole run, split wherever tcreport finds iteration markers.
WHOLE = Slice()


def method_text(info: IterationInfo) -> str | None:
    """How the iterations were found, in the report's words (``key node 'train_step'``)."""
    m = info.method
    if m is IterationMethod.KEY_NODE or m is IterationMethod.REPEATING_RANGE:
        return f"{m.value} {info.key_node!r}"
    if m is IterationMethod.TF_WINDOW:
        return f"{m.value} over {info.step_source}"
    return None if m is None else m.value


def past_last(iter_start: int, total: int, info: IterationInfo) -> OptionText:
    """The one message for an ``iter_start`` past the run's last iteration."""
    how = method_text(info) or "as reported"
    return OptionText.of(
        "{iter_start} {n} is past the last iteration: the run has {total} (0 to {last}, {how})",
        n=iter_start,
        total=total,
        last=total - 1,
        how=how,
    )


def ineffective(
    slc: Slice, info: IterationInfo, key_node_found: bool, candidates: Sequence[str]
) -> OptionText | None:
    """Why the slice would silently do nothing, or ``None``.

    An unknown key node aggregates the whole run, and an ``iter_start`` past the only iteration of
    a run that could not be split aggregates that one: both look like a successful slice. The
    message lists what would work (the iterations, the key nodes that could split the run)."""
    names = ", ".join(repr(c) for c in candidates) or "none found"
    if slc.key_node is not None and not key_node_found:
        return OptionText.of(
            "{key_node} {name} never occurs in this trace, so nothing would be sliced; key nodes "
            "that repeat once per iteration here: {names} ({allow_empty} to aggregate the whole "
            "run anyway)",
            name=repr(slc.key_node),
            names=names,
        )
    total = info.total or 1
    if slc.iter_start is not None and slc.iter_start > total - 1:
        past = past_last(slc.iter_start, total, info)
        return OptionText(
            past.template
            + "; key nodes that could split it: {names} ({allow_empty} to aggregate anyway)",
            (*past.values, ("names", names)),
        )
    return None
