#!/usr/bin/python3
"""Behaviour-preserving respellings of Python scripts, for the assessment's
metamorphic test (src/assess/respell_tests.rs).

The static assessment should rate a script by what it does, not by how it is
spelled. This tool rewrites each input with `ast` and `ast.unparse`, one
transform at a time, so that the test can compare the assessment of every
script with the assessment of its respellings:

- identity: parse and unparse only (comments and layout go);
- rename: the script's own functions, classes and variables get neutral names;
- hoist: string and bytes literals become module-level constants;
- alias: `subprocess.run(...)` becomes `_a1 = subprocess.run` ... `_a1(...)`;
- wrapper: `subprocess.run(...)` becomes `_call(subprocess.run, ...)` through
  `def _call(fn, *args, **kwargs): return fn(*args, **kwargs)`;
- dispatch: `subprocess.run(...)` becomes `_ops1["k1"](...)` through a
  module-level dict of callables;
- getattr: `subprocess.run(...)` becomes `getattr(subprocess, "run")(...)`;
- mainwrap: module-level code moves into a function called where it stood,
  with `global` declarations for the names it binds;
- all: rename, then one of the call indirections (chosen per script), then
  mainwrap, then hoist.

Every rewrite is conservative: where it could change what the script does
(a name also read from a string, a module rebound, an attribute that may not
exist when an alias is taken early, a statement an import may depend on), it
is left out. Each output is compiled; those that do not compile are reported
and dropped. A transform that changes nothing writes no file (except
identity, the baseline), so that the test counts only real respellings.

Usage: assess_mutate.py --out DIR [--root ROOT] [--transforms a,b] PATH...
Outputs go to DIR/TRANSFORM/RELATIVE-PATH (relative to ROOT, by default the
inputs' common directory), with DIR/manifest.tsv listing what was done.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import importlib
import io
import os
import re
import sys
import types
import zlib
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, TypeVar

TRANSFORMS = [
    "identity",
    "rename",
    "hoist",
    "alias",
    "wrapper",
    "dispatch",
    "getattr",
    "mainwrap",
    "all",
]

# The call indirections "all" picks from, one per script.
INDIRECTIONS = ["alias", "wrapper", "dispatch", "getattr"]

# Standard modules whose import does something visible (prints, opens a
# browser): never imported to check that an attribute exists.
NOISY_MODULES = {"this", "antigravity", "__hello__", "__phello__", "idlelib", "turtledemo"}

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# ---------------------------------------------------------------------------
# What a script binds, reads and names
# ---------------------------------------------------------------------------


@dataclass
class Facts:
    """What one module binds and names, gathered in one pass."""

    # Every identifier the file uses anywhere (names, attributes, keywords,
    # words inside strings): fresh names avoid all of them.
    used: set[str] = field(default_factory=set)
    # Words that appear inside string literals (getattr/globals lookups).
    string_words: set[str] = field(default_factory=set)
    # The string literals themselves.
    strings: set[str] = field(default_factory=set)
    # Names bound by import statements, anywhere.
    imported: set[str] = field(default_factory=set)
    # Names bound other than by import (assignment, def, parameter, ...).
    bound: set[str] = field(default_factory=set)
    # Names bound directly in a class body (they are attributes).
    class_bound: set[str] = field(default_factory=set)
    # Keyword-argument names of calls.
    keywords: set[str] = field(default_factory=set)
    # Whether the file has `from x import *`.
    star_import: bool = False


def gather(tree: ast.Module) -> Facts:
    """Collect the facts the transforms check before rewriting."""
    f = Facts()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            f.used.add(node.id)
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                f.bound.add(node.id)
        elif isinstance(node, ast.Attribute):
            f.used.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            f.used.add(node.name)
            f.bound.add(node.name)
            if isinstance(node, ast.ClassDef):
                f.class_bound.update(class_body_names(node))
        elif isinstance(node, ast.arg):
            f.used.add(node.arg)
            f.bound.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            f.used.add(node.arg)
            f.keywords.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.name == "*":
                    f.star_import = True
                    continue
                name = a.asname or a.name.split(".")[0]
                f.imported.add(name)
                f.used.update(a.name.split("."))
                f.used.add(name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            f.used.add(node.name)
            f.bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            f.used.update(node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            f.used.add(node.name)
            f.bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            f.used.add(node.rest)
            f.bound.add(node.rest)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            f.strings.add(text)
            words = IDENT.findall(text)
            f.string_words.update(words)
            f.used.update(words)
    return f


def class_body_names(cls: ast.ClassDef) -> set[str]:
    """Names bound directly in a class body: attributes of the class."""
    out: set[str] = set()
    for stmt in cls.body:
        for n in walk_same_scope(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
    return out


def walk_same_scope(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk`, not entering nested functions, lambdas, classes or
    comprehensions (their bodies are other scopes), though a def or class
    statement itself, its decorators and defaults are yielded."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if n is not node and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(def_time_parts(n))
            continue
        if n is not node and isinstance(n, ast.ClassDef):
            stack.extend(n.decorator_list + n.bases + [k.value for k in n.keywords])
            continue
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            # The first iterable is evaluated in the enclosing scope, and a
            # walrus inside binds there; other parts are the comprehension's.
            stack.append(n.generators[0].iter)
            stack.extend(x.target for x in ast.walk(n) if isinstance(x, ast.NamedExpr))
            continue
        stack.extend(ast.iter_child_nodes(n))


def def_time_parts(fn: ast.AST) -> list[ast.AST]:
    """What a def or lambda evaluates when it is defined: decorators,
    defaults and annotations (not the body)."""
    parts: list[ast.AST] = []
    args = fn.args  # type: ignore[attr-defined]
    parts.extend(d for d in args.defaults + args.kw_defaults if d is not None)
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parts.extend(fn.decorator_list)
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None and a.annotation is not None:
                parts.append(a.annotation)
        if fn.returns is not None:
            parts.append(fn.returns)
    return parts


class Fresh:
    """Fresh identifiers that collide with nothing the file uses."""

    def __init__(self, used: Iterable[str]) -> None:
        self.used = set(used) | set(dir(builtins))
        self.counters: dict[str, int] = {}

    def make(self, prefix: str) -> str:
        """The next unused `prefix<N>`."""
        while True:
            n = self.counters.get(prefix, 0) + 1
            self.counters[prefix] = n
            name = f"{prefix}{n}"
            if name not in self.used:
                self.used.add(name)
                return name


def leading_block_end(body: list[ast.stmt]) -> int:
    """Index just past the module's docstring and its leading imports:
    where new module-level definitions may go without running before a
    `from __future__` import or before the modules they use."""
    i = 0
    if body and is_docstring(body[0]):
        i = 1
    while i < len(body) and isinstance(body[i], (ast.Import, ast.ImportFrom)):
        i += 1
    return i


StmtT = TypeVar("StmtT", bound=ast.stmt)


def located(stmt: StmtT) -> StmtT:
    """A new statement with a line number: unparsing looks its type comment
    up by line (cheaper than `ast.fix_missing_locations` over the tree)."""
    stmt.lineno = stmt.end_lineno = 1
    stmt.col_offset = stmt.end_col_offset = 0
    return stmt


def is_docstring(stmt: ast.stmt) -> bool:
    """Whether a statement is a string-literal expression (a docstring)."""
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


# ---------------------------------------------------------------------------
# rename
# ---------------------------------------------------------------------------


def renamable(facts: Facts) -> dict[str, str]:
    """The names `rename` may change, each with its new name."""
    if facts.star_import:
        # A star import binds names nothing in the file spells out: a
        # variable renamed could stop shadowing one, or start.
        return {}
    blocked = (
        facts.imported
        | facts.class_bound
        | facts.keywords
        | facts.string_words
        | set(dir(builtins))
        | {"self", "cls"}
    )
    fresh = Fresh(facts.used)
    mapping: dict[str, str] = {}
    for name in sorted(facts.bound):
        if name in blocked or (name.startswith("__") and name.endswith("__")):
            continue
        mapping[name] = fresh.make("v")
    return mapping


class Renamer(ast.NodeTransformer):
    """Renames every occurrence of the mapped names, in every scope (the
    mapping is global, so it is consistent across scopes)."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.m = mapping

    def _n(self, name: Optional[str]) -> Optional[str]:
        return self.m.get(name, name) if name else name

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.m.get(node.id, node.id)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self.m.get(node.name, node.name)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
    visit_ClassDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self.m.get(node.arg, node.arg)
        self.generic_visit(node)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        node.name = self._n(node.name)
        self.generic_visit(node)
        return node

    def visit_Global(self, node: ast.Global) -> ast.AST:
        node.names = [self.m.get(n, n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global  # type: ignore[assignment]

    def visit_MatchAs(self, node: ast.MatchAs) -> ast.AST:
        node.name = self._n(node.name)
        self.generic_visit(node)
        return node

    visit_MatchStar = visit_MatchAs  # type: ignore[assignment]

    def visit_MatchMapping(self, node: ast.MatchMapping) -> ast.AST:
        node.rest = self._n(node.rest)
        self.generic_visit(node)
        return node


def t_rename(tree: ast.Module, facts: Optional[Facts] = None) -> ast.Module:
    """Rename the script's own functions, classes and variables."""
    mapping = renamable(facts or gather(tree))
    if mapping:
        Renamer(mapping).visit(tree)
    return tree


# ---------------------------------------------------------------------------
# hoist
# ---------------------------------------------------------------------------


def skipped_constants(tree: ast.Module) -> set[int]:
    """Ids of the literals `hoist` must leave: docstrings, f-string parts,
    match patterns and annotations (where a name would mean something
    else, or the source text itself is kept)."""
    skip: set[int] = set()

    def mark(n: ast.AST) -> None:
        for x in ast.walk(n):
            skip.add(id(x))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.body and is_docstring(node.body[0]):
                mark(node.body[0])
        elif isinstance(node, ast.JoinedStr):
            mark(node)
        elif isinstance(node, ast.match_case):
            mark(node.pattern)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            mark(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
            mark(node.returns)
        elif isinstance(node, ast.AnnAssign):
            mark(node.annotation)
    return skip


class Hoister(ast.NodeTransformer):
    """Replaces string and bytes literals by module-level constants."""

    def __init__(self, skip: set[int], fresh: Fresh) -> None:
        self.skip = skip
        self.fresh = fresh
        self.consts: dict[tuple[type, object], str] = {}

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if id(node) in self.skip or not isinstance(node.value, (str, bytes)):
            return node
        key = (type(node.value), node.value)
        name = self.consts.get(key)
        if name is None:
            name = self.fresh.make("_S")
            self.consts[key] = name
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)


def t_hoist(tree: ast.Module, facts: Optional[Facts] = None) -> ast.Module:
    """Move string and bytes literals to constants after the imports."""
    h = Hoister(skipped_constants(tree), Fresh((facts or gather(tree)).used))
    tree = h.visit(tree)
    defs = [
        located(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Constant(value=v)))
        for (_, v), name in h.consts.items()
    ]
    at = leading_block_end(tree.body)
    tree.body[at:at] = defs
    return tree


# ---------------------------------------------------------------------------
# Call indirections: alias, wrapper, dispatch, getattr
# ---------------------------------------------------------------------------


@dataclass
class Target:
    """A call of an imported module's function (or of an imported function)."""

    call: ast.Call
    chain: list[str]  # root name, then attributes
    # The module-level import statement that binds the root, when it is
    # unconditional and the only binding (needed by alias and dispatch).
    stmt: Optional[ast.stmt]
    # Whether the function may be taken early, where the import stands.
    eager: bool


def attr_chain(node: ast.AST) -> Optional[list[str]]:
    """`a.b.c` as ["a", "b", "c"]; `None` for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def import_bindings(
    tree: ast.Module, nodes: list[ast.AST]
) -> dict[str, list[tuple[ast.stmt, str, bool]]]:
    """For each name an import binds: the statement, what it imports
    (`os`, `urllib.request`, `subprocess.run` for `from subprocess import
    run`) and whether the statement stands directly in the module body."""
    top = {id(s) for s in tree.body}
    out: dict[str, list[tuple[ast.stmt, str, bool]]] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                name = a.asname or a.name.split(".")[0]
                what = a.name if a.asname else a.name.split(".")[0]
                out.setdefault(name, []).append((node, what, id(node) in top))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                if a.name != "*":
                    name = a.asname or a.name
                    what = f"{node.module}.{a.name}"
                    out.setdefault(name, []).append((node, what, id(node) in top))
    return out


def submodules_imported(nodes: list[ast.AST]) -> set[str]:
    """Every dotted module an `import` statement names, with its parents."""
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def exists_early(dotted: str, imported: set[str]) -> bool:
    """Whether `dotted` (a module path then attributes) certainly exists
    once the script's imports have run: checked by importing standard
    modules here; a third-party module's direct attribute is trusted (the
    script fails at its import otherwise)."""
    parts = dotted.split(".")
    if parts[0] not in sys.stdlib_module_names:
        return len(parts) == 2
    found = stdlib_callable(dotted)
    # A submodule is an attribute only once something imported it: the
    # script itself must, not an earlier script this process read.
    return found is not None and all(m in imported for m in found)


@functools.lru_cache(maxsize=None)
def stdlib_callable(dotted: str) -> Optional[tuple[str, ...]]:
    """The submodules passed on the way when `dotted` names a callable of
    the standard library (`None` when it does not, or is not sure)."""
    parts = dotted.split(".")
    if parts[0] in NOISY_MODULES:
        return None
    try:
        obj: object = importlib.import_module(parts[0])
    except BaseException:  # noqa: BLE001 - any failure means "not sure"
        return None
    modules: list[str] = []
    for i, attr in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, attr)
        except BaseException:  # noqa: BLE001
            return None
        if isinstance(obj, types.ModuleType):
            modules.append(".".join(parts[: i + 1]))
    return tuple(modules) if callable(obj) else None


def find_targets(tree: ast.Module, facts: Facts) -> list[Target]:
    """The calls the indirections may rewrite, in source order."""
    # One walk, read by each helper (walking is most of the tool's time).
    nodes = list(ast.walk(tree))
    imports = import_bindings(tree, nodes)
    imported = submodules_imported(nodes)
    skip = {id(n) for n in mutated_attributes(nodes)}
    out: list[Target] = []
    for node in nodes:
        if not isinstance(node, ast.Call) or id(node.func) in skip:
            continue
        chain = attr_chain(node.func)
        if chain is None or chain[0] not in imports or chain[0] in facts.bound:
            continue
        if any(a.startswith("__") for a in chain[1:]):
            continue
        binds = imports[chain[0]]
        stmt, what, top = binds[0]
        if len(chain) == 1 and isinstance(stmt, ast.Import):
            continue  # `import os` then `os(...)`: not a function
        dotted = ".".join([what] + chain[1:])
        eager = (
            len(binds) == 1
            and top
            and node.lineno > (stmt.end_lineno or stmt.lineno)
            and not is_patched(dotted, chain[-1], facts)
            and exists_early(dotted, imported)
        )
        out.append(Target(node, chain, stmt if eager else None, eager))
    out.sort(key=lambda t: (t.call.lineno, t.call.col_offset))
    return out


def mutated_attributes(nodes: list[ast.AST]) -> list[ast.AST]:
    """Attribute chains the script assigns to or deletes (monkeypatching),
    and every read of the same chain."""
    attrs = [n for n in nodes if isinstance(n, ast.Attribute)]
    stored = {
        ".".join(attr_chain(n) or [])
        for n in attrs
        if isinstance(n.ctx, (ast.Store, ast.Del))
    }
    if not stored:
        return []
    return [n for n in attrs if ".".join(attr_chain(n) or []) in stored]


def is_patched(dotted: str, attr: str, facts: Facts) -> bool:
    """Whether a string may name the function for a patch
    (`mock.patch("subprocess.run")`, `setattr(os, "system", ...)`): an
    alias taken early would miss the patch."""
    return attr in facts.strings or any(dotted in s for s in facts.strings)


def chain_expr(chain: list[str]) -> ast.expr:
    """`["a", "b"]` as the expression `a.b`."""
    e: ast.expr = ast.Name(id=chain[0], ctx=ast.Load())
    for attr in chain[1:]:
        e = ast.Attribute(value=e, attr=attr, ctx=ast.Load())
    return e


def insert_after(tree: ast.Module, stmt: ast.stmt, new: list[ast.stmt]) -> None:
    """Insert statements right after a module-level statement."""
    i = next(i for i, s in enumerate(tree.body) if s is stmt)
    tree.body[i + 1 : i + 1] = new


def t_alias(tree: ast.Module, facts: Optional[Facts] = None) -> ast.Module:
    """Call module functions through module-level aliases."""
    facts = facts or gather(tree)
    fresh = Fresh(facts.used)
    names: dict[str, str] = {}
    per_stmt: dict[int, tuple[ast.stmt, list[ast.stmt]]] = {}
    for t in find_targets(tree, facts):
        if not t.eager or t.stmt is None:
            continue
        key = ".".join(t.chain)
        if key not in names:
            names[key] = fresh.make("_a")
            assign = located(
                ast.Assign(targets=[ast.Name(id=names[key], ctx=ast.Store())], value=chain_expr(t.chain))
            )
            per_stmt.setdefault(id(t.stmt), (t.stmt, []))[1].append(assign)
        t.call.func = ast.Name(id=names[key], ctx=ast.Load())
    for stmt, new in per_stmt.values():
        insert_after(tree, stmt, new)
    return tree


def t_dispatch(tree: ast.Module, facts: Optional[Facts] = None) -> ast.Module:
    """Call module functions through a module-level dict of callables."""
    facts = facts or gather(tree)
    fresh = Fresh(facts.used)
    keys: dict[str, tuple[str, str]] = {}
    tables: dict[int, tuple[ast.stmt, str, ast.Dict]] = {}
    for t in find_targets(tree, facts):
        if not t.eager or t.stmt is None:
            continue
        if id(t.stmt) not in tables:
            d = ast.Dict(keys=[], values=[])
            tables[id(t.stmt)] = (t.stmt, fresh.make("_ops"), d)
        stmt, table, d = tables[id(t.stmt)]
        key = ".".join(t.chain)
        if key not in keys:
            keys[key] = (table, f"k{len(keys) + 1}")
            d.keys.append(ast.Constant(value=keys[key][1]))
            d.values.append(chain_expr(t.chain))
        table, k = keys[key]
        t.call.func = ast.Subscript(
            value=ast.Name(id=table, ctx=ast.Load()), slice=ast.Constant(value=k), ctx=ast.Load()
        )
    for stmt, table, d in tables.values():
        assign = located(ast.Assign(targets=[ast.Name(id=table, ctx=ast.Store())], value=d))
        insert_after(tree, stmt, [assign])
    return tree


def t_wrapper(tree: ast.Module, facts: Optional[Facts] = None) -> ast.Module:
    """Call module functions through a generic pass-through helper."""
    facts = facts or gather(tree)
    helper = Fresh(facts.used).make("_call")
    changed = False
    for t in find_targets(tree, facts):
        if any(k.arg == "fn" for k in t.call.keywords):
            continue  # `fn=` would clash with the helper's own parameter
        t.call.args = [t.call.func] + t.call.args
        t.call.func = ast.Name(id=helper, ctx=ast.Load())
        changed = True
    if changed:
        src = f"def {helper}(fn, *args, **kwargs):\n    return fn(*args, **kwargs)\n"
        at = leading_block_end(tree.body)
        tree.body[at:at] = ast.parse(src).body
    return tree


def t_getattr(tree: ast.Module, facts: Optional[Facts] = None) -> ast.Module:
    """Spell `m.f(...)` as `getattr(m, "f")(...)`."""
    facts = facts or gather(tree)
    if "getattr" in facts.bound or "getattr" in facts.imported:
        return tree
    for t in find_targets(tree, facts):
        if len(t.chain) < 2:
            continue
        t.call.func = ast.Call(
            func=ast.Name(id="getattr", ctx=ast.Load()),
            args=[chain_expr(t.chain[:-1]), ast.Constant(value=t.chain[-1])],
            keywords=[],
        )
    return tree


# ---------------------------------------------------------------------------
# mainwrap
# ---------------------------------------------------------------------------

STAYS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

# Calls whose meaning changes inside a function (they see its locals, or
# exec's assignments land there rather than in the module).
FRAME_SENSITIVE = {"locals", "vars", "dir", "exec", "eval", "_getframe", "currentframe"}


def is_main_guard(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either way round)."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    parts = [stmt.test.left] + stmt.test.comparators
    names = any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts)
    main = any(isinstance(p, ast.Constant) and p.value == "__main__" for p in parts)
    return names and main


def names_bound_in(stmts: list[ast.stmt]) -> set[str]:
    """Names the statements bind in their own (module) scope."""
    out: set[str] = set()
    for s in stmts:
        for n in walk_same_scope(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                out.update(a.asname or a.name.split(".")[0] for a in n.names)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                out.add(n.name)
            elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
                out.add(n.name)
            elif isinstance(n, ast.MatchMapping) and n.rest:
                out.add(n.rest)
    return out


def definition_time_reads(stmt: ast.stmt) -> set[str]:
    """Names a staying def or class reads when it is defined."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parts: list[ast.AST] = def_time_parts(stmt)
    else:
        parts = [stmt]
    out: set[str] = set()
    for p in parts:
        for n in walk_same_scope(p) if p is stmt else ast.walk(p):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                out.add(n.id)
    if isinstance(stmt, ast.ClassDef):
        # Methods' defaults and decorators run with the class body.
        for n in ast.walk(stmt):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for p in def_time_parts(n):
                    out.update(
                        x.id for x in ast.walk(p) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load)
                    )
    return out


def movable_range(body: list[ast.stmt], end: int) -> int:
    """The first index from which the movable statements of `body[:end]`
    may run later, at `end`, without any staying statement between them
    seeing the difference: an import may depend on anything before it
    (`sys.path`), a def or class on the names it reads when defined."""
    start = leading_block_end(body)
    # Each statement's names, found once: the scan repeats per blocker.
    bound = [names_bound_in([s]) if i >= start and i < end else set() for i, s in enumerate(body)]
    while True:
        moved_names: set[str] = set()
        blocker = -1
        for i in range(start, end):
            s = body[i]
            if not isinstance(s, STAYS):
                moved_names |= bound[i]
                continue
            if not moved_names:
                continue
            own = bound[i]
            if isinstance(s, (ast.Import, ast.ImportFrom)) or own & moved_names:
                blocker = i
            elif definition_time_reads(s) & moved_names:
                blocker = i
        if blocker < 0:
            return start
        start = blocker + 1


def frame_sensitive(stmts: list[ast.stmt]) -> bool:
    """Whether moving the statements into a function could change them."""
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and n.id in FRAME_SENSITIVE:
                return True
            if isinstance(n, ast.Attribute) and n.attr in FRAME_SENSITIVE:
                return True
            if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
                return True
            if isinstance(n, (ast.Await, ast.Yield, ast.YieldFrom, ast.Return)):
                return True
    return False


class Unannotate(ast.NodeTransformer):
    """`x: T = v` as `x = v` (and `x: T` as nothing) outside defs and
    classes: a name declared `global` may not be annotated, and the
    annotation of a module-level name does nothing but fill
    `__annotations__`."""

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Optional[ast.AST]:
        if not isinstance(node.target, ast.Name):
            return node
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
    visit_ClassDef = visit_FunctionDef  # type: ignore[assignment]


def t_mainwrap(tree: ast.Module, facts: Optional[Facts] = None) -> ast.Module:
    """Move module-level code into a function called where it ended."""
    body = tree.body
    end = next((i for i, s in enumerate(body) if is_main_guard(s)), len(body))
    start = movable_range(body, end)
    idx = [
        i
        for i in range(start, end)
        if not isinstance(body[i], STAYS) and not isinstance(body[i], ast.Global)
    ]
    moved = [Unannotate().visit(body[i]) for i in idx]
    if not moved or frame_sensitive(moved):
        return tree
    fresh = Fresh((facts or gather(tree)).used)
    fn = fresh.make("_main")
    inner: list[ast.stmt] = []
    names = sorted(names_bound_in(moved))
    if names:
        inner.append(ast.Global(names=names))
    inner.extend(moved)
    func = located(ast.FunctionDef(
        name=fn,
        args=ast.arguments(
            posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
        ),
        body=inner,
        decorator_list=[],
        returns=None,
        type_comment=None,
    ))
    call = ast.Expr(value=ast.Call(func=ast.Name(id=fn, ctx=ast.Load()), args=[], keywords=[]))
    drop = set(idx) | {i for i in range(start, end) if isinstance(body[i], ast.Global)}
    last = idx[-1]
    new_body: list[ast.stmt] = []
    for i, s in enumerate(body):
        if i == last:
            new_body.extend([func, call])
        elif i not in drop:
            new_body.append(s)
    tree.body = new_body
    return tree


# ---------------------------------------------------------------------------
# Driving
# ---------------------------------------------------------------------------

Transform = Callable[[ast.Module, Optional[Facts]], ast.Module]

SINGLE: dict[str, Transform] = {
    "identity": lambda t, _: t,
    "rename": t_rename,
    "hoist": t_hoist,
    "alias": t_alias,
    "wrapper": t_wrapper,
    "dispatch": t_dispatch,
    "getattr": t_getattr,
    "mainwrap": t_mainwrap,
}


def indirection_for(rel: str) -> str:
    """The call indirection "all" uses for a script: fixed by its path, so
    that runs agree, and spread over the four."""
    return INDIRECTIONS[zlib.crc32(rel.encode()) % len(INDIRECTIONS)]


def apply(name: str, tree: ast.Module, rel: str, facts: Facts) -> ast.Module:
    """Apply one transform (or the "all" chain) to a tree of its own;
    `facts` are the tree's own (a fresh parse of the same source)."""
    if name != "all":
        return SINGLE[name](tree, facts)
    # Each step of the chain sees what the one before made.
    out = t_rename(tree, facts)
    out = SINGLE[indirection_for(rel)](out, None)
    out = t_mainwrap(out, None)
    return t_hoist(out, None)


def header(source: bytes) -> str:
    """The `# expect: LEVEL` first line, kept so a mutant reads like its
    original (unparsing drops comments)."""
    first = source.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")
    return first + "\n" if first.startswith("# expect:") else ""


@dataclass
class Outcome:
    """What became of one (script, transform)."""

    transform: str
    rel: str
    status: str  # written, unchanged, error


def mutate_file(path: Path, rel: str, out: Path, transforms: list[str]) -> list[Outcome]:
    """Write the respellings of one script; report what was done."""
    source = path.read_bytes()
    try:
        tree = ast.parse(source, filename=str(path))
        baseline = ast.unparse(tree)
        facts = gather(tree)
    except (SyntaxError, ValueError, RecursionError) as e:
        print(f"{rel}: not parsed ({type(e).__name__}): skipped", file=sys.stderr)
        return [Outcome(t, rel, "unparsed") for t in transforms]
    results = []
    for name in transforms:
        try:
            # A fresh parse is the cheapest copy (deepcopy took longer).
            own = tree if name == "identity" else ast.parse(source)
            text = ast.unparse(apply(name, own, rel, facts))
            compile(text, rel, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, TypeError) as e:
            print(f"{rel} [{name}]: dropped, does not compile: {e}", file=sys.stderr)
            results.append(Outcome(name, rel, "error"))
            continue
        if name != "identity" and text == baseline:
            results.append(Outcome(name, rel, "unchanged"))
            continue
        dest = out / name / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(header(source) + text + "\n", encoding="utf-8")
        results.append(Outcome(name, rel, "written"))
    return results


def inputs(paths: list[str]) -> list[Path]:
    """The .py files named, directories searched recursively, sorted."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(sorted(p.rglob("*.py")))
        else:
            found.append(p)
    return found


def mutate_all(
    files: list[Path], rels: list[str], out: Path, transforms: list[str], jobs: int
) -> list[Outcome]:
    """Every file's respellings, on `jobs` worker processes; what a worker
    that died left undone is done again here, one file at a time, so that a
    crash (a C stack overflowed by a hostile nesting) costs time, not the
    run."""
    outcomes: list[Outcome] = []
    done: set[str] = set()
    if jobs > 1 and len(files) > 1:
        try:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                n = len(files)
                for rel, result in zip(
                    rels, pool.map(mutate_file, files, rels, [out] * n, [transforms] * n, chunksize=16)
                ):
                    outcomes.extend(result)
                    done.add(rel)
        except BrokenProcessPool as e:
            print(f"a worker died ({e}); the rest is done here", file=sys.stderr)
    for f, rel in zip(files, rels):
        if rel not in done:
            outcomes.extend(mutate_file(f, rel, out, transforms))
    return outcomes


def main(argv: list[str]) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--root", help="inputs' paths are made relative to this")
    ap.add_argument("--transforms", default=",".join(TRANSFORMS))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args(argv)
    transforms = [t for t in args.transforms.split(",") if t]
    unknown = [t for t in transforms if t not in TRANSFORMS]
    if unknown:
        ap.error(f"unknown transforms: {', '.join(unknown)}")
    files = inputs(args.paths)
    root = Path(args.root) if args.root else Path(os.path.commonpath([str(f.parent) for f in files]))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sys.setrecursionlimit(10_000)
    rels = [str(f.relative_to(root)) if f.is_relative_to(root) else f.name for f in files]
    outcomes = mutate_all(files, rels, out, transforms, args.jobs)
    manifest = io.StringIO()
    for o in outcomes:
        manifest.write(f"{o.transform}\t{o.rel}\t{o.status}\n")
    (out / "manifest.tsv").write_text(manifest.getvalue(), encoding="utf-8")
    for t in transforms:
        counts: dict[str, int] = {}
        for o in outcomes:
            if o.transform == t:
                counts[o.status] = counts.get(o.status, 0) + 1
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        print(f"{t}: {summary}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
