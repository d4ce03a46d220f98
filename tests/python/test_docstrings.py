"""Every public name of `zoo_keeper` (its `__all__`), and every public method
and property of its public classes, has a docstring: the package's
reference is what `help(zoo_keeper.Agent)` and editors show, so an
undocumented item is a hole in it (the Python side of "every public item
documented", beside rustdoc, Doxygen and TSDoc)."""

from __future__ import annotations

import dataclasses
import inspect

import zoo_keeper

# Plain values in `__all__`, which cannot carry a docstring of their own:
# what each is, is said in the module that defines it.
VALUES = {"TRACE": int, "__version__": str}


def own_doc(obj: object) -> str | None:
    """The docstring `obj` itself has: a class's own (never one inherited
    from a base, nor the signature a dataclass writes when it has none)."""
    if isinstance(obj, type):
        doc = obj.__dict__.get("__doc__")
        if dataclasses.is_dataclass(obj) and doc and doc.startswith(obj.__name__ + "("):
            return None
    else:
        doc = getattr(obj, "__doc__", None)
    return doc.strip() if doc else None


def is_ours(cls: type) -> bool:
    """A class of this package (Python or its native module)."""
    module = getattr(cls, "__module__", "") or ""
    return module == "zoo_keeper" or module.startswith(("zoo_keeper.", "_native"))


def public_classes() -> dict[str, type]:
    """The classes `__all__` exposes, and the class of each public instance
    (such as `EndChat`), by the name they are reached as."""
    classes = {}
    for name in zoo_keeper.__all__:
        if name in VALUES:
            continue
        obj = getattr(zoo_keeper, name)
        cls = obj if isinstance(obj, type) else type(obj)
        if is_ours(cls):
            classes[name] = cls
    return classes


def public_members(cls: type):
    """(name, attribute) for every public method and property of `cls`,
    its own and those inherited from this package's other classes."""
    seen = set()
    for klass in cls.__mro__:
        if not is_ours(klass):
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(attr, (staticmethod, classmethod)):
                attr = attr.__func__
            if callable(attr) or inspect.isdatadescriptor(attr):
                yield name, attr


def test_every_public_name_has_a_docstring():
    missing = []
    for name in zoo_keeper.__all__:
        obj = getattr(zoo_keeper, name)
        if name in VALUES:
            assert type(obj) is VALUES[name], f"{name} is a {type(obj).__name__}, not a plain value"
            continue
        # An instance (EndChat) is documented by its class.
        documented = obj if isinstance(obj, type) or callable(obj) else type(obj)
        if not own_doc(documented):
            missing.append(name)
    assert not missing, f"public names without a docstring: {missing}"


def test_every_public_method_and_property_has_a_docstring():
    missing = [
        f"{name}.{member}"
        for name, cls in public_classes().items()
        for member, attr in public_members(cls)
        if not own_doc(attr)
    ]
    assert not missing, f"public methods and properties without a docstring: {missing}"


def test_the_check_sees_what_it_should():
    # The check would pass vacuously if it found nothing to look at: it
    # walks the classes users call most, with their members.
    classes = public_classes()
    members = {name: {m for m, _ in public_members(cls)} for name, cls in classes.items()}
    assert {"chat", "stream", "register_tool", "history", "state", "close"} <= members["Agent"]
    assert {"from_json"} <= members["Response"]
    assert {"call_id", "cancelled", "progress"} <= members["ToolContext"]
    assert "ZooError" in classes and "EndChat" in classes
    # And it tells a missing docstring from an inherited or generated one.

    @dataclasses.dataclass
    class Bare:
        x: int

    class Child(Exception):
        pass

    assert own_doc(Bare) is None
    assert own_doc(Child) is None
    assert own_doc(zoo_keeper.Agent.chat)
