"""specs/errors.md draws the whole tree of error classes; this test holds it to the code.

Every subclass of :class:`registre.errors.RegistreError` in every importable module of
``registre`` must stand in the map under its parent, and every class the map names must
exist there. After adding or moving an error class, write the map again::

    python -m tests.test_error_map > specs/errors.md
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import registre
from registre.errors import RegistreError

PAGE = Path(__file__).resolve().parents[1] / "specs" / "errors.md"

INTRO = """# Errors: the whole tree

Every error registre raises on purpose is a subclass of `RegistreError`
(`registre.errors`), in one of four families that callers treat differently:
`MalformedError` (input that cannot be read as what it claims to be; exit code 2),
`VerificationError` (well-formed input whose check failed; exit code 1), `RefusedError` (a
well-formed request the rules refuse; exit code 2) and `UnavailableError` (something the
request needs is out of reach; nothing changed; exit code 3). Each refusal has its own class,
defined beside the check that raises it; each class has exactly one import path, given here.

This page is generated from the code (`python -m tests.test_error_map > specs/errors.md`) and
`tests/test_error_map.py` fails when the two differ. A class with two error parents is drawn
under the first, and names the other (`also: ...`).
"""


def _load_everything() -> set[str]:
    """Import every module of registre; the names of those that need a missing extra."""
    missing = set()
    for info in pkgutil.walk_packages(registre.__path__, "registre."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional extra (an agent framework) that is not installed
            missing.add(info.name)
    return missing


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("registre."):
            found.append(sub)
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


def _parents(cls: type) -> list[type]:
    return [base for base in cls.__bases__ if issubclass(base, RegistreError)]


def render_map() -> str:
    _load_everything()
    lines = [INTRO, "```"]

    def draw(cls: type, depth: int) -> None:
        parents = _parents(cls)
        also = f"  (also: {', '.join(p.__qualname__ for p in parents[1:])})" if parents[1:] else ""
        lines.append(f"{'    ' * depth}{cls.__qualname__}  [{cls.__module__}]{also}")
        for sub in _subclasses(cls):
            if _parents(sub)[0] is cls:
                draw(sub, depth + 1)

    draw(RegistreError, 0)
    lines.append("```")
    return "\n".join(lines) + "\n"


def test_the_error_map_draws_every_error_class_under_its_parent() -> None:
    expected = render_map()
    missing = _load_everything()
    page = "".join(
        line
        for line in PAGE.read_text("utf-8").splitlines(keepends=True)
        if not any(f"  [{name}]" in line for name in missing)
    )
    assert page == expected, (
        "specs/errors.md differs from the error classes: "
        "python -m tests.test_error_map > specs/errors.md"
    )


def test_every_error_class_has_one_address() -> None:
    """Each class is reachable where it is defined; no module re-exports it by name."""
    _load_everything()
    seen: dict[str, str] = {}
    for info in pkgutil.walk_packages(registre.__path__, "registre."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, RegistreError):
                address = f"{value.__module__}.{value.__qualname__}"
                faces = address.startswith(info.name + ".")  # a package face over its modules
                assert value.__module__ == info.name or faces, f"{info.name} re-exports {address}"
                if value.__module__ == info.name:
                    assert address not in seen, address
                    seen[address] = info.name
    assert "registre.errors.RegistreError" in seen


def test_the_map_names_a_class_only_once() -> None:
    names = [
        line.split("[")[0].strip() + line.split("[")[1].split("]")[0]
        for line in PAGE.read_text("utf-8").splitlines()
        if "  [registre" in line
    ]
    assert len(names) == len(set(names)) > 200


if __name__ == "__main__":
    print(render_map(), end="")
