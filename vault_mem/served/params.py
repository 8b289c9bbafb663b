"""Validation of tool parameters. Bad input raises InvalidInput naming the parameter and
what it accepts; nothing is silently ignored (an unknown parameter name is an error too).

Coercion is as lenient as the MCP SDK's own (``"5"`` is 5, ``"true"`` is true) and no more
(``"ten"`` is not a number, ``5.5`` is not an integer, ``true`` is not a number).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.settings import Settings

_AGENT = re.compile(r"[A-Za-z0-9._-]{1,64}")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INTEGER = re.compile(r"\s*[+-]?\d{1,18}\s*")


# JSON schema of each kind of parameter; "strings" also takes one string, "object" a JSON string.
# Two forms are two single-type schemas under ``anyOf``, never ``type`` as a list: several model
# APIs and the MCP Inspector's --strict refuse a list there (docs/tools.md, "Schemas").
_SCHEMA_TYPES: dict[str, Any] = {
    "string": {"type": "string"}, "integer": {"type": "integer"}, "boolean": {"type": "boolean"},
    "number": {"type": "number"},
    "strings": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]},
    "object": {"anyOf": [{"type": "object"}, {"type": "string"}]},
}


@dataclass(frozen=True)
class Setting:
    """A parameter's default or bound that is a setting (``Setting("read_max_chars")``): read from
    the settings at hand, the serving index's for the published schema and for each call's check."""

    name: str


def _value(bound: Any, config: Settings) -> Any:
    return getattr(config, bound.name) if isinstance(bound, Setting) else bound


@dataclass(frozen=True)
class Param:
    """One tool parameter, declared once beside the function that reads it: the MCP input
    schema (``mcp_server/tools.py``: type, ``default``, ``minimum``, ``maximum``, ``enum``), the
    accepted names, defaults, ranges and choices of ``Args``, and the pinned contract
    (``tests/unit/test_tool_contracts.py``, which checks docs/tools.md against it) all come from here.
    The description says only what the schema cannot."""

    name: str
    kind: str  # a key of _SCHEMA_TYPES
    description: str
    required: bool = False
    default: Any = None  # what leaving it out means; None: nothing, or what the description says
    minimum: int | float | Setting | None = None
    maximum: int | float | Setting | None = None
    enum: tuple[str, ...] = ()  # the accepted values (case-insensitive)

    def resolved(self, config: Settings) -> Param:
        """This parameter with each ``Setting`` replaced by its value in ``config``."""
        if not any(isinstance(v, Setting) for v in (self.default, self.minimum, self.maximum)):
            return self
        return replace(self, default=_value(self.default, config), minimum=_value(self.minimum, config),
                       maximum=_value(self.maximum, config))

    def schema(self, config: Settings) -> dict[str, Any]:
        schema: dict[str, Any] = copy.deepcopy(_SCHEMA_TYPES[self.kind])
        if self.enum:
            schema["enum"] = list(self.enum)
        for key in ("default", "minimum", "maximum"):
            value = _value(getattr(self, key), config)
            if value is not None:
                schema[key] = value
        schema["description"] = self.description
        return schema


def text_param(name: str, description: str, required: bool = False, default: str | None = None) -> Param:
    return Param(name, "string", description, required, default)


def choice_param(name: str, description: str, enum: tuple[str, ...], default: str | None = None) -> Param:
    return Param(name, "string", description, default=default, enum=enum)


def int_param(name: str, description: str, default: int | Setting | None = None, minimum: int | None = None,
              maximum: int | Setting | None = None) -> Param:
    return Param(name, "integer", description, default=default, minimum=minimum, maximum=maximum)


def flag_param(name: str, description: str, default: bool | None = None) -> Param:
    return Param(name, "boolean", description, default=default)


def number_param(name: str, description: str, default: float | None = None, minimum: float | None = None,
                 maximum: float | None = None) -> Param:
    return Param(name, "number", description, default=default, minimum=minimum, maximum=maximum)


def strings_param(name: str, description: str) -> Param:
    return Param(name, "strings", description)


def mapping_param(name: str, description: str) -> Param:
    return Param(name, "object", description)


AGENT = text_param("agent", "Your stable agent name.", required=True)
REF = text_param("ref", "uid, permalink, path or title.", required=True)
OFFSET = int_param("offset", "Pass next_offset for more.", default=0, minimum=0)
IF_ETAG = text_param("if_etag", "The etag you read.")


class Args:
    """The arguments of one call, consumed parameter by parameter, then checked for leftovers;
    ``config`` bounds a string or a list whose tool names no other (``param_max_chars``,
    ``param_max_items``)."""

    def __init__(self, raw: Mapping[str, Any] | None, params: Sequence[Param], config: Settings) -> None:
        self.config = config
        allowed = tuple(p.name for p in params)
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise InvalidInput("arguments", "must be an object of parameter names to values")
        unknown = sorted(str(k) for k in raw if k not in allowed)
        if unknown:
            names = ", ".join(repr(u[:40]) for u in unknown[:5])
            raise InvalidInput(
                unknown[0][:40], f"unknown parameter {names}; accepted: {', '.join(allowed)}"
            )
        self.raw = dict(raw)
        self.params = {p.name: p.resolved(config) for p in params}

    def present(self, name: str) -> bool:
        return self.raw.get(name) is not None

    def text(self, name: str, default: str | None = None, *, required: bool = False,
            max_len: int | None = None, allow_empty: bool = True) -> str | None:
        """``max_len``: the ``param_max_chars`` setting when None."""
        value = self.raw.get(name)
        if value is None:
            if required:
                raise InvalidInput(name, "is required (a string)")
            return default
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InvalidInput(name, f"must be a string, got {_kind(value)}")
        if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
            raise InvalidInput(name, "must be a string, got a number beyond the 64-bit range")
        text = value if isinstance(value, str) else str(value)
        if max_len is None:
            max_len = self.config.param_max_chars
        if len(text) > max_len:
            raise InvalidInput(name, f"is {len(text):,} characters; at most {max_len:,} are accepted")
        if not allow_empty and not text.strip():
            raise InvalidInput(name, "must not be empty")
        return text

    def required_str(self, name: str, max_len: int | None = None, allow_empty: bool = False) -> str:
        value = self.text(name, required=True, max_len=max_len, allow_empty=allow_empty)
        assert value is not None
        return value

    def integer(self, name: str, accepted: str | None = None) -> int:
        """An integer within the parameter's minimum and maximum, its default when absent;
        ``accepted`` words the range where its bounds alone would not."""
        param = self.params[name]
        lo, hi = _whole(param.minimum), _whole(param.maximum)
        value = self.raw.get(name)
        if value is None:
            return int(param.default)
        what = accepted or _range_text(lo, hi)
        number: int
        if isinstance(value, bool):
            raise InvalidInput(name, f"must be an integer ({what}), got a boolean")
        whole_float = isinstance(value, float) and value.is_integer()
        digits = isinstance(value, str) and _INTEGER.fullmatch(value) is not None
        if isinstance(value, int):
            number = value
        elif whole_float or digits:
            number = int(value)
        else:
            raise InvalidInput(name, f"must be an integer ({what}), got {_show(value)}")
        if not INT64_MIN <= number <= INT64_MAX:  # also keeps str() of a 5,000-digit int out of messages
            raise InvalidInput(name, f"must be {what}, got a number beyond the 64-bit range")
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            raise InvalidInput(name, f"must be {what}, got {number}")
        return number

    def number(self, name: str) -> float:
        """A number from the parameter's minimum to its maximum, its default when absent."""
        param = self.params[name]
        lo, hi = float(_number(param.minimum) or 0), float(_number(param.maximum) or 0)
        value = self.raw.get(name)
        if value is None:
            return float(param.default)
        if isinstance(value, bool):
            raise InvalidInput(name, f"must be a number from {lo} to {hi}, got a boolean")
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int past float's range
            raise InvalidInput(name, f"must be a number from {lo} to {hi}, got {_show(value)}") from None
        if not lo <= number <= hi:
            raise InvalidInput(name, f"must be a number from {lo} to {hi}, got {number}")
        return number

    def flag(self, name: str) -> bool:
        value = self.raw.get(name)
        if value is None:
            return bool(self.params[name].default)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise InvalidInput(name, f"must be true or false, got {_show(value)}")

    def choice(self, name: str) -> str:
        """One of the parameter's ``enum`` (case-insensitive), its default when absent."""
        param = self.params[name]
        choices = param.enum
        value = self.text(name, param.default)
        assert value is not None
        folded = value.strip().lower()
        if folded not in choices:
            raise InvalidInput(name, f"must be one of {', '.join(choices)}; got {_show(value)}")
        return folded

    def str_list(self, name: str, *, max_items: int | None = None) -> list[str] | None:
        """An array of strings; a single string is a one-element array. ``max_items``: the
        ``param_max_items`` setting when None."""
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("["):
                try:
                    value = json.loads(stripped)
                except (ValueError, RecursionError):  # deep nesting ("[[[[...") overflows the decoder
                    value = [value]
            else:
                value = [value]
        if not isinstance(value, list | tuple):
            raise InvalidInput(name, f"must be an array of strings (or one string), got {_kind(value)}")
        if max_items is None:
            max_items = self.config.param_max_items
        if len(value) > max_items:
            raise InvalidInput(name, f"holds {len(value)} items; at most {max_items} are accepted")
        out: list[str] = []
        for item in value:
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise InvalidInput(name, f"must hold only strings, got {_kind(item)}")
            out.append(str(item))
        return out

    def mapping(self, name: str) -> dict[str, Any] | None:
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except (ValueError, RecursionError):  # deep nesting ("[[[[...") overflows the decoder
                raise InvalidInput(name, "must be an object (a mapping of keys to values)") from None
        if not isinstance(value, dict):
            raise InvalidInput(name, f"must be an object (a mapping of keys to values), got {_kind(value)}")
        return value

    def agent(self) -> str:
        value = self.raw.get("agent")
        if value is None or (isinstance(value, str) and not value.strip()):
            raise InvalidInput("agent", "is required: your stable agent name, 1-64 of letters, digits, '.', '_', '-'")
        if not isinstance(value, str):
            raise InvalidInput("agent", f"must be a string, got {_kind(value)}")
        if not _AGENT.fullmatch(value):
            suggestion = re.sub(r"[^A-Za-z0-9._-]+", "-", value.strip()).strip("-").lower()[:64] or "my-agent"
            raise InvalidInput(
                "agent",
                f"{_show(value)} is not a valid agent name: use 1-64 letters, digits, '.', '_' or '-' "
                f"(for example '{suggestion}')",
            )
        return value


def _number(bound: int | float | Setting | None) -> int | float | None:
    """A bound of a resolved parameter (``Args`` resolves each ``Setting`` first)."""
    if isinstance(bound, Setting):
        raise TypeError(f"the setting {bound.name} of a parameter was not resolved")
    return bound


def _whole(bound: int | float | Setting | None) -> int | None:
    number = _number(bound)
    return None if number is None else int(number)


def _range_text(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"from {lo} to {hi}"
    if lo is not None:
        return f"at least {lo}"
    if hi is not None:
        return f"at most {hi}"
    return "an integer"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def _show(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int of more than 4,300 digits has no str() in Python >= 3.11
        return "a number too large to show"
    return text if len(text) <= 60 else text[:57] + "..."
