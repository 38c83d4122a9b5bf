"""Package faces: one public path per name, lazy loading, and no re-export shims.

A face (a package's ``__init__`` built with :func:`registre._lazy.lazy_face`) lists its names
in ``__all__``, imports them under ``TYPE_CHECKING`` for type checkers, and loads each one's
module only when the name is used. Every other module defines what its ``__all__`` lists.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import registre

ROOT = Path(registre.__file__).parent

# Packages still being rewritten elsewhere keep their faces for now (issue 27).
NOT_YET = ("registre.context", "registre.bench.real", "registre.adapters")


def _modules() -> list[str]:
    names = ["registre"]
    for info in pkgutil.walk_packages([str(ROOT)], "registre."):
        names.append(info.name)
    return sorted(names)


def _path(module: str) -> Path:
    parts = module.split(".")[1:]
    folder = ROOT.joinpath(*parts)
    return folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")


def _faces() -> list[str]:
    return [
        name
        for name in _modules()
        if _path(name).name == "__init__.py" and "lazy_face" in _path(name).read_text("utf-8")
    ]


FACES = _faces()


def test_the_faces_are_found() -> None:
    for face in (
        "registre.attest.tree",
        "registre.attest.verify",
        "registre.ledger",
        "registre.lifecycle",
    ):
        assert face in FACES


def _type_checking_names(tree: ast.Module) -> dict[str, str]:
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for sub in node.body:
                assert isinstance(sub, ast.ImportFrom) and sub.module, ast.unparse(sub)
                for alias in sub.names:
                    assert alias.asname is None, ast.unparse(sub)
                    names[alias.name] = sub.module
    return names


@pytest.mark.parametrize("face", FACES)
def test_a_face_gives_every_name_from_its_one_defining_module(face: str) -> None:
    module = importlib.import_module(face)
    checked = _type_checking_names(ast.parse(_path(face).read_text("utf-8")))
    assert sorted(checked) == sorted(module.__all__), "TYPE_CHECKING imports differ from __all__"
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        value = getattr(module, name)
        defining = importlib.import_module(checked[name])
        assert defining.__name__.startswith(face + ".")
        assert getattr(defining, name) is value
        assert name in vars(defining) and name in dir(module)
        origin = getattr(value, "__module__", None)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert origin == defining.__name__, f"{face}.{name} is re-exported from {origin}"


@pytest.mark.parametrize("face", FACES)
def test_no_face_name_is_also_a_submodule(face: str) -> None:
    """Importing a submodule sets it on its package, which would hide the face's name."""
    submodules = {info.name for info in pkgutil.iter_modules([str(_path(face).parent)])}
    assert not submodules & set(importlib.import_module(face).__all__)


@pytest.mark.parametrize("face", FACES)
def test_a_face_refuses_a_name_it_does_not_list(face: str) -> None:
    module = importlib.import_module(face)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                assert node.value is not None
                return [ast.literal_eval(e) for e in node.value.elts]  # type: ignore[attr-defined]
    return None


MODULES = [
    name
    for name in _modules()
    if name not in FACES and not name.startswith(NOT_YET) and _path(name).name != "__main__.py"
]


@pytest.mark.parametrize("module", MODULES)
def test_no_module_re_exports_another_module_s_names(module: str) -> None:
    """Every name a module's ``__all__`` lists is defined there: no re-export shims."""
    tree = ast.parse(_path(module).read_text("utf-8"))
    listed = _all(tree)
    if listed is None:
        return
    assert not set(listed) - _defined(tree), f"{module} re-exports {set(listed) - _defined(tree)}"


@pytest.mark.parametrize(
    "package",
    [
        "registre.attest.bundles",
        "registre.attest.canonical_json",
        "registre.attest.entries",
        "registre.attest.notes",
        "registre.attest.projection_digest",
        "registre.attest.tree",
        "registre.attest.verify",
    ],
)
def test_every_attest_subpackage_has_a_face(package: str) -> None:
    assert package in FACES
    assert isinstance(importlib.import_module(package), ModuleType)


# What the command line still takes from a ledger module: a name the face does not carry,
# because in the face it would be ambiguous (registre.importers has FORMATS too).
CLI_LEDGER_SUBMODULE_NAMES = {"registre.ledger.exchange.transcript": {"FORMATS"}}


def test_the_command_line_imports_the_ledger_through_its_face() -> None:
    for path in sorted((ROOT / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "registre.ledger."
            ):
                allowed = CLI_LEDGER_SUBMODULE_NAMES.get(node.module or "", set())
                names = {alias.name for alias in node.names}
                assert names <= allowed, f"{path.name}: from {node.module} import {names}"
            if isinstance(node, ast.Import):
                assert not [a for a in node.names if a.name.startswith("registre.ledger.")]
