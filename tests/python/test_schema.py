"""Schemas generated from type hints, and clear errors for unsupported ones."""

import dataclasses
from typing import List, Literal, Optional, TypedDict

import pytest

from zoo_keeper import function_schema


class Address(TypedDict):
    street: str
    zip: int


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


def test_primitives_optional_defaults_and_docstring():
    def book(city: str, nights: int, price: float, breakfast: bool = False, note: Optional[str] = None) -> str:
        """Book a hotel room.

        Args:
            city: Where to stay.
            nights (int): How many nights.
        """
        return ""

    name, description, schema = function_schema(book)
    assert name == "book"
    assert description == "Book a hotel room."
    assert schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Where to stay."},
            "nights": {"type": "integer", "description": "How many nights."},
            "price": {"type": "number"},
            "breakfast": {"type": "boolean"},
            "note": {"type": "string"},
        },
        "required": ["city", "nights", "price"],
    }


def test_lists_literals_typeddicts_and_dataclasses():
    def f(tags: List[str], unit: Literal["celsius", "fahrenheit"], address: Address, at: Point) -> None:
        """:param tags: labels"""

    _, _, schema = function_schema(f)
    props = schema["properties"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "description": "labels"}
    assert props["unit"] == {"enum": ["celsius", "fahrenheit"], "type": "string"}
    assert props["address"] == {
        "type": "object",
        "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}},
        "required": ["street", "zip"],
    }
    assert props["at"] == {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}
    assert schema["required"] == ["tags", "unit", "address", "at"]


def test_pep604_optional():
    def f(a: "int | None" = None, b: "list[int]" = []) -> None: ...  # noqa: B006

    _, _, schema = function_schema(f)
    assert schema["properties"] == {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "integer"}}}
    assert schema["required"] == []


def test_unsupported_hints_are_clear_errors():
    def f(data: bytes) -> None: ...

    with pytest.raises(TypeError, match=r"tool `f`, parameter `data`: unsupported type hint"):
        function_schema(f)

    def g(x) -> None: ...  # type: ignore[no-untyped-def]

    with pytest.raises(TypeError, match="parameter `x` needs a type hint"):
        function_schema(g)

    def h(*args: int) -> None: ...

    with pytest.raises(TypeError, match=r"\*args"):
        function_schema(h)
