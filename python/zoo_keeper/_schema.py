"""JSON schemas from Python type hints, and arguments back into Python values.

Supported hints: int, float, bool, str, Optional[X] / X | None, list[X],
Literal[...], TypedDict and dataclass parameters (nested too). A parameter
with a default is optional. Anything else is a TypeError naming the parameter.
A parameter annotated `ToolContext` is not the model's to fill: it is left
out of the schema and receives the call's context.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._tool_context import ToolContext

_PRIMITIVES = {int: "integer", float: "number", bool: "boolean", str: "string"}


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__annotations__") and hasattr(tp, "__total__")


def _union_args(tp: Any) -> Tuple[Any, ...]:
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        return typing.get_args(tp)
    if sys.version_info >= (3, 10):
        import types

        if isinstance(tp, types.UnionType):
            return tp.__args__
    return ()


def _strip_optional(tp: Any) -> Tuple[Any, bool]:
    """(the hint without None, whether None was allowed)."""
    args = _union_args(tp)
    if args and type(None) in args:
        rest = tuple(a for a in args if a is not type(None))
        if len(rest) == 1:
            return rest[0], True
        return typing.Union[rest], True  # type: ignore[return-value]
    return tp, False


def schema_for(tp: Any, where: str) -> Dict[str, Any]:
    """The JSON schema of one type hint; `where` names it in errors."""
    tp, _ = _strip_optional(tp)
    if tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[tp]}
    if tp is Any:
        return {}
    origin = typing.get_origin(tp)
    if origin in (list, List):
        (item,) = typing.get_args(tp) or (Any,)
        return {"type": "array", "items": schema_for(item, f"{where}[]")}
    if origin is typing.Literal:
        values = list(typing.get_args(tp))
        kinds = {_PRIMITIVES.get(type(v)) for v in values}
        schema: Dict[str, Any] = {"enum": values}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if _is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        required = sorted(getattr(tp, "__required_keys__", set(hints)))
        return {
            "type": "object",
            "properties": {k: schema_for(v, f"{where}.{k}") for k, v in hints.items()},
            "required": [k for k in hints if k in required],
        }
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp)
        props, required = {}, []
        for field in dataclasses.fields(tp):
            props[field.name] = schema_for(hints[field.name], f"{where}.{field.name}")
            no_default = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING  # type: ignore[misc]
            if no_default and not _strip_optional(hints[field.name])[1]:
                required.append(field.name)
        return {"type": "object", "properties": props, "required": required}
    raise TypeError(
        f"{where}: unsupported type hint {tp!r}; use int, float, bool, str, Optional[...], "
        "list[...], Literal[...], a TypedDict or a dataclass, or register the tool with an explicit schema"
    )


def _docstring(fn: Callable[..., Any]) -> Tuple[str, Dict[str, str]]:
    """(description, per-parameter descriptions) from a Google- or
    Sphinx-style docstring."""
    doc = inspect.getdoc(fn) or ""
    params: Dict[str, str] = {}
    for match in re.finditer(r"^\s*:param\s+(\w+):\s*(.+)$", doc, re.M):
        params[match.group(1)] = match.group(2).strip()
    section = re.search(r"^(Args|Arguments|Parameters):\s*\n((?:[ \t]+.+\n?)+)", doc, re.M)
    if section:
        for match in re.finditer(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.+)$", section.group(2), re.M):
            params.setdefault(match.group(1), match.group(2).strip())
    summary = re.split(r"\n\s*\n|^(?:Args|Arguments|Parameters|Returns|Raises):", doc, maxsplit=1, flags=re.M)[0]
    summary = re.sub(r"^\s*:param.*$", "", summary, flags=re.M)
    return " ".join(summary.split()), params


def context_parameter(fn: Callable[..., Any]) -> Optional[str]:
    """The name of `fn`'s parameter annotated `ToolContext`, if it has one
    (hints that cannot be resolved count as none)."""
    try:
        hints = typing.get_type_hints(fn)
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError, NameError):
        return None
    for name in parameters:
        if _strip_optional(hints.get(name))[0] is ToolContext:
            return name
    return None


def function_schema(fn: Callable[..., Any]) -> Tuple[str, str, Dict[str, Any]]:
    """(name, description, parameters schema) of a tool function; a
    `ToolContext` parameter is left out."""
    name = fn.__name__
    description, param_docs = _docstring(fn)
    hints = typing.get_type_hints(fn)
    props: Dict[str, Any] = {}
    required: List[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool `{name}`: *args and **kwargs cannot be described to the model")
        if _strip_optional(hints.get(param.name))[0] is ToolContext:
            continue
        if param.name not in hints:
            raise TypeError(f"tool `{name}`: parameter `{param.name}` needs a type hint")
        schema = schema_for(hints[param.name], f"tool `{name}`, parameter `{param.name}`")
        if param.name in param_docs:
            schema["description"] = param_docs[param.name]
        props[param.name] = schema
        optional = param.default is not param.empty or _strip_optional(hints[param.name])[1]
        if not optional:
            required.append(param.name)
    return name, description, {"type": "object", "properties": props, "required": required}


def convert_arguments(fn: Callable[..., Any], arguments: Dict[str, Any]) -> Dict[str, Any]:
    """The model's JSON arguments as the values the function's hints ask
    for (dataclass parameters become instances)."""
    hints = typing.get_type_hints(fn)
    return {key: _convert(hints.get(key, Any), value) for key, value in arguments.items()}


def _convert(tp: Any, value: Any) -> Any:
    tp, _ = _strip_optional(tp)
    if value is None:
        return None
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) and isinstance(value, dict):
        hints = typing.get_type_hints(tp)
        return tp(**{k: _convert(hints.get(k, Any), v) for k, v in value.items()})
    if typing.get_origin(tp) in (list, List) and isinstance(value, list):
        (item,) = typing.get_args(tp) or (Any,)
        return [_convert(item, v) for v in value]
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value
