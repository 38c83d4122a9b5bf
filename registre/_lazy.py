"""Lazy package faces: a package's public names, each imported from its module when first used.

A face lists its names in ``__all__`` (and imports them under ``TYPE_CHECKING`` for type
checkers) and builds its module ``__getattr__`` and ``__dir__`` with :func:`lazy_face`, so
``import registre.ledger`` or ``import registre.attest.verify`` costs only the package itself:
a name's module, and what that module imports, load when the name is first asked for. The
value is then stored on the package, so later lookups are plain attribute reads.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(
    package: str, names: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the face ``package``.

    ``names`` maps each module of the package (its name relative to the package, e.g.
    ``"merkle"``) to the public names the face takes from it. A name no module gives raises
    AttributeError, as for any module.
    """
    module_of = {name: module for module, listed in names.items() for name in listed}
    if len(module_of) != sum(len(listed) for listed in names.values()):
        raise ValueError(f"{package}: a name is listed under two modules")

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*module_of, *vars(importlib.import_module(package))})

    return __getattr__, __dir__
