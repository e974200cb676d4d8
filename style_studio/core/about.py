"""What a setting is, described once: ``About`` makes its command-line option, its jobs-file key, the window's
control (its label, kind, range and step, its place in the form) and tooltip, and the check of its value.

``Settings`` (``settings.py``) and ``VideoOptions`` (``jobs/job.py``) carry one ``About`` per field, in the
field's metadata; ``check_fields`` checks a dict of values against them.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class _AlwaysKeyed:
    def __repr__(self) -> str:
        return "ALWAYS_KEYED"


#: ``About.earlier`` of a setting that has been in every job key.
ALWAYS_KEYED: Any = _AlwaysKeyed()


@dataclass(frozen=True)
class About:
    """What a setting is, described once: the command line's option, the jobs file's key, the window's tooltip
    and range, and validation are all made from it.

    Attributes:
        help: what it does, in a phrase (the option's help text).
        low, high: its range, where it has one: ``check`` enforces it, the window's field takes it.
        choices: the values it takes, where they are few.
        metavar: how the command line shows its value.
        flag: the command line's option when not ``--name-with-dashes``; "" for none.
        inverted: a true/false setting whose flag turns it off (``--nondeterministic``).
        tip: what the window's tooltip says (default: ``help``), for a person rather than a script.
        zero: what 0 means when it is allowed outside ``[low, high]`` ("automatic").
        above: ``low`` itself is not allowed (a step size > 0).
        unit: how a value is counted in messages ("pixels", "seconds").
        live: a run under way takes a change of it at its next iteration (the window's sliders move the picture).
        plans: a change of it changes the run's plan (its scales, memory and time), which is then made again.
        earlier: for a setting added after job keys were first made, the value every picture had before it; a job
            key leaves the setting out at that value, so that a job keyed before keeps its key (``ALWAYS_KEYED``:
            keyed whatever its value).

    The window's form is made from the rest (``ui/settings_form``):

        label: the control's label ("": the settings form has no control for it; another part of the window, or
            none, edits it).
        group: the form's group it is in (``settings.FORM_GROUPS``).
        everyday: shown at first; the others wait under *More settings*.
        choice_labels: the window's words for ``choices`` (or ``offers``), in their order.
        offers: the values the window offers for a setting whose values are not a closed list (a device); it shows
            any other value it is given too.
        step, decimals: a number's step and decimals, as shown.
        percent: a share shown as a percentage (0.5: 50 %).
        slider: a weight's slider range, where the check's range is open: a logarithmic slider over it, with the
            number beside it (the style layers': a linear one, in ``step``s).
        control: a control of its own kind, made by the form's owner ("layers", "layer", "weights"), where the
            field's type and the above do not say it.
    """

    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    flag: str | None = None
    inverted: bool = False
    tip: str | None = None
    zero: str | None = None
    above: bool = False
    unit: str = ""
    live: bool = False
    plans: bool = True
    earlier: object = ALWAYS_KEYED
    label: str = ""
    group: str = ""
    everyday: bool = False
    choice_labels: tuple[str, ...] = ()
    offers: tuple[str, ...] = ()
    step: float = 1.0
    decimals: int = 2
    percent: bool = False
    slider: tuple[float, float] | None = None
    control: str = ""

    @property
    def tooltip(self) -> str:
        return self.tip or self.help[:1].upper() + self.help[1:] + "."

    def check(self, name: str, value: object, kind: type, optional: bool = False) -> str | None:
        """Why ``value`` cannot be setting ``name`` of type ``kind`` (int or float), said for the user; None: it can.

        Any value of any type gives a message, never an exception: settings come from files.
        """
        if value is None and optional:
            return None
        whole = kind is int
        fits = is_int(value) if whole else is_number(value)
        number: Any = value if fits else math.nan  # an int stays one: 10**400 compares, never overflows
        if fits and self.zero is not None and number == 0:
            return None
        if fits and self.low is not None and (number <= self.low if self.above else number < self.low):
            fits = False
        if fits and self.high is not None and number > self.high:
            fits = False
        if fits:
            return None
        what = "a whole number" if whole else "a number"
        if self.unit:
            what += f" of {self.unit}"
        if self.low is not None and self.high is not None and self.above:
            span = f"above {bound_text(self.low)} and at most {bound_text(self.high)}"
        elif self.low is not None and self.high is not None:
            span = f"from {bound_text(self.low)} to {bound_text(self.high)}"
        elif self.low is not None:
            span = f"{'>' if self.above else '>='} {bound_text(self.low)}"
        else:
            span = ""
        text = f"{what} {span}".strip()
        if self.zero is not None and (self.low is None or self.low > 0):  # 0 outside the range, allowed apart
            text = f"0 ({self.zero}) or {text}"
        if optional:
            text += " or null"
        return f"{name} must be {text}, got {shown(value)}"


def about(help: str, **kwargs: Any) -> dict[str, About]:
    """A dataclass field's metadata holding its ``About``: ``field(default=..., metadata=about("...", low=0))``."""
    return {"about": About(help, **kwargs)}


def bound_text(value: float) -> str:
    """A bound as people write it: 100000, 0.05, 9223372036854775807."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def described(kind: type) -> dict[str, About]:
    """Each field of a settings-like dataclass (``Settings``, ``VideoOptions``) -> its ``About``."""
    return {f.name: f.metadata["about"] for f in dataclasses.fields(kind)}


def keyed_when_set(kind: type) -> dict[str, object]:
    """The fields of ``kind`` added after job keys were first made, with the value each had before
    (``About.earlier``): a job key leaves them out at that value."""
    return {name: about.earlier for name, about in described(kind).items() if about.earlier is not ALWAYS_KEYED}


def check_fields(kind: type, values: Mapping[str, Any]) -> list[str]:
    """Every field of ``kind`` whose value in ``values`` is outside what its ``About`` allows: a number out of its
    range, a choice not among its choices, a true/false setting that is neither."""
    problems = []
    for f in dataclasses.fields(kind):
        about = f.metadata["about"]
        number = _number_kind(f.type)
        if str(f.type) == "bool" and f.name in values and not isinstance(values[f.name], bool):
            problems.append(f"{f.name} must be true or false, got {shown(values[f.name])}")
        elif number is not None and f.name in values:
            problem = about.check(f.name, values[f.name], number[0], optional=number[1])
            if problem is not None:
                problems.append(problem)
        elif about.choices and f.name in values and values[f.name] not in about.choices:
            problems.append(f"{f.name} must be one of {', '.join(about.choices)}, got {shown(values[f.name])}")
    return problems


def _number_kind(annotation: object) -> tuple[type, bool] | None:
    """(int or float, whether None is allowed) for a field annotated as a number; None for any other."""
    text = str(annotation).replace(" ", "")
    for name, kind in (("int", int), ("float", float)):
        if text == name:
            return kind, False
        if text in (f"{name}|None", f"None|{name}"):
            return kind, True
    return None


def is_number(value: object) -> bool:
    """A finite real number: an int or a float, or numpy's (``np.int64``, ``np.float32``), never a bool."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # a JSON integer too large for a float (10**400)
        return False


def shown(value: object) -> str:
    """A value or a name for an error message, cut short: a hostile file may hold a 400-digit number, a 2 MB key
    or a list nested 50,000 deep, and none of them may stop the message being said."""
    try:
        text = _SHORT.repr(value)
    except (ValueError, RecursionError):  # an integer of over 4300 digits; an object whose repr recurses
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


#: ``repr`` with nesting and lengths bounded (``reprlib``): the standard library's answer to a value too large to say.
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 3, 40, 40, 40


def is_int(value: object) -> bool:
    """A whole number: an int, or numpy's (``np.int64``), never a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
