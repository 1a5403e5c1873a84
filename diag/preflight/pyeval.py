"""Evaluate vLLM's own conditions and small config functions over the pre-flight's predicted facts.

vLLM decides its defaults and rejects configurations in plain Python (``if cache_config.enable_prefix_caching:
... assert vllm_config.scheduler_config.enable_chunked_prefill, "..."``). Rather than re-typing those
conditions, the pre-flight takes their source text (from the failure-site catalog, or from the
per-version defaults that ``scripts/extract_vllm_defaults.py`` pulls out of each release) and
evaluates it here over a namespace that mirrors vLLM's objects (``Obj``: attribute access on nested
dicts) filled with predicted values.

* ``eval_expr(text_or_node, env)`` -- one expression;
* ``run_block(text_or_nodes, env)`` -- a function body of assignments, ``if``/``elif``, ``assert``,
  ``raise``, ``return`` and logger calls (skipped); returns a ``BlockResult`` (the failure it hits,
  the return value, the assignments made, which live on in ``env``).

Anything it cannot evaluate -- a name or attribute the namespace does not hold, a call outside the
small whitelist below -- raises ``NotModelled`` with the dotted name, so the caller can say
"not modelled" instead of guessing. Nothing is ever ``exec``'d or ``eval``'d.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


class NotModelled(Exception):
    """The expression needs something the namespace does not model (``.name`` says what)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class Obj:
    """Attribute access over a dict (nested dicts become ``Obj`` too); a missing key is ``NotModelled``."""

    __slots__ = ("_d", "_path")

    def __init__(self, d: dict[str, Any] | None = None, path: str = ""):
        # the dict itself (not a copy): assignments through nested Obj land in the caller's dicts
        object.__setattr__(self, "_d", d if d is not None else {})
        object.__setattr__(self, "_path", path)

    def __getattr__(self, name: str) -> Any:
        d = object.__getattribute__(self, "_d")
        if name in d:
            v = d[name]
            return Obj(v, f"{self._path}.{name}") if isinstance(v, dict) else v
        raise NotModelled(f"{object.__getattribute__(self, '_path')}.{name}".lstrip("."))

    def __setattr__(self, name: str, value: Any) -> None:
        self._d[name] = value

    def has(self, name: str) -> bool:
        return name in self._d

    def to_dict(self) -> dict[str, Any]:
        return dict(self._d)

    def __repr__(self) -> str:
        return f"Obj({self._path or '<root>'}: {sorted(self._d)})"


_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
        ast.BitOr: operator.or_, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
        ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
        ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(x: int, y: int) -> int:
    return _cdiv(x, y) * y


def _getattr(obj: Any, name: str, *default: Any) -> Any:
    if isinstance(obj, Obj):
        if obj.has(name):
            return getattr(obj, name)
        if default:
            return default[0]
        raise NotModelled(f"{obj._path}.{name}".lstrip("."))
    raise NotModelled(f"getattr({type(obj).__name__}, {name!r})")


def _hasattr(obj: Any, name: str) -> bool:
    if isinstance(obj, Obj):
        return obj.has(name)
    raise NotModelled(f"hasattr({type(obj).__name__}, {name!r})")


FUNCTIONS: dict[str, Any] = {
    "len": len, "min": min, "max": max, "abs": abs, "int": int, "str": str, "bool": bool, "float": float,
    "any": any, "all": all, "sorted": sorted, "set": set, "list": list, "tuple": tuple, "sum": sum,
    "getattr": _getattr, "hasattr": _hasattr, "cdiv": _cdiv, "round_up": _round_up, "enumerate": enumerate,
    "zip": zip, "range": range,
}
# methods callable on plain values
_METHODS = {
    str: {"startswith", "endswith", "lower", "upper", "replace", "split", "join", "format", "strip", "removeprefix"},
    dict: {"get", "keys", "values", "items"},
    list: {"index", "count"}, tuple: {"index", "count"},
}


def _bind(target: ast.expr, value: Any, scope: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        for t, v in zip(target.elts, value):
            _bind(t, v, scope)
    else:
        raise NotModelled(ast.unparse(target))


@lru_cache(maxsize=512)
def _parse_expr(text: str) -> ast.expr:
    return ast.parse(text.strip(), mode="eval").body


@lru_cache(maxsize=128)
def _parse_block(text: str) -> list[ast.stmt]:
    import textwrap

    return ast.parse(textwrap.dedent(text)).body


def eval_expr(expr: str | ast.expr, env: dict[str, Any]) -> Any:
    node = _parse_expr(expr) if isinstance(expr, str) else expr
    return _Eval(env).visit(node)


class _Eval:
    def __init__(self, env: dict[str, Any]):
        self.env = env

    def visit(self, node: ast.AST) -> Any:
        m = getattr(self, "v_" + type(node).__name__, None)
        if m is None:
            raise NotModelled(f"<{type(node).__name__} expression>")
        return m(node)

    def v_Constant(self, n: ast.Constant) -> Any:
        return n.value

    def v_Name(self, n: ast.Name) -> Any:
        if n.id in self.env:
            v = self.env[n.id]
            return Obj(v, n.id) if isinstance(v, dict) else v
        if n.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[n.id]
        raise NotModelled(n.id)

    def v_Attribute(self, n: ast.Attribute) -> Any:
        if n.attr.startswith("_"):  # no dunder / private access, ever
            raise NotModelled(ast.unparse(n))
        base = self.visit(n.value)
        if isinstance(base, Obj):
            return Obj.__getattr__(base, n.attr)  # the namespace's keys only, never Obj's own attributes
        raise NotModelled(f"{ast.unparse(n)}")

    def v_Subscript(self, n: ast.Subscript) -> Any:
        base = self.visit(n.value)
        key = self.visit(n.slice)
        try:
            return base[key]
        except (KeyError, IndexError, TypeError):
            raise NotModelled(ast.unparse(n)) from None

    def v_Slice(self, n: ast.Slice) -> Any:
        return slice(*(self.visit(x) if x is not None else None for x in (n.lower, n.upper, n.step)))

    def v_BoolOp(self, n: ast.BoolOp) -> Any:
        if isinstance(n.op, ast.And):
            v: Any = True
            for x in n.values:
                v = self.visit(x)
                if not v:
                    return v
            return v
        v = False
        for x in n.values:
            v = self.visit(x)
            if v:
                return v
        return v

    def v_UnaryOp(self, n: ast.UnaryOp) -> Any:
        v = self.visit(n.operand)
        if isinstance(n.op, ast.Not):
            return not v
        if isinstance(n.op, ast.USub):
            return -v
        if isinstance(n.op, ast.UAdd):
            return +v
        raise NotModelled(ast.unparse(n))

    def v_BinOp(self, n: ast.BinOp) -> Any:
        op = _BIN.get(type(n.op))
        if op is None:
            raise NotModelled(ast.unparse(n))
        try:
            return op(self.visit(n.left), self.visit(n.right))
        except (TypeError, ZeroDivisionError):
            raise NotModelled(ast.unparse(n)) from None

    def v_Compare(self, n: ast.Compare) -> Any:
        left = self.visit(n.left)
        for op, comp in zip(n.ops, n.comparators):
            right = self.visit(comp)
            try:
                ok = _CMP[type(op)](left, right)
            except TypeError:
                raise NotModelled(ast.unparse(n)) from None
            if not ok:
                return False
            left = right
        return True

    def v_NamedExpr(self, n: ast.NamedExpr) -> Any:
        value = self.visit(n.value)
        self.env[n.target.id] = value
        return value

    def v_IfExp(self, n: ast.IfExp) -> Any:
        return self.visit(n.body) if self.visit(n.test) else self.visit(n.orelse)

    def v_Tuple(self, n: ast.Tuple) -> Any:
        return tuple(self.visit(x) for x in n.elts)

    def v_List(self, n: ast.List) -> Any:
        return [self.visit(x) for x in n.elts]

    def v_Set(self, n: ast.Set) -> Any:
        return {self.visit(x) for x in n.elts}

    def v_Dict(self, n: ast.Dict) -> Any:
        return {self.visit(k): self.visit(v) for k, v in zip(n.keys, n.values) if k is not None}

    def _comprehension(self, n: ast.GeneratorExp | ast.ListComp | ast.SetComp) -> list[Any]:
        """``expr for name in iterable if cond`` (one or more ``for``), in a child scope."""
        out: list[Any] = []

        def walk(i: int, scope: dict[str, Any]) -> None:
            if i == len(n.generators):
                out.append(_Eval(scope).visit(n.elt))
                return
            gen = n.generators[i]
            for item in _Eval(scope).visit(gen.iter):
                inner = dict(scope)
                _bind(gen.target, item, inner)
                if all(_Eval(inner).visit(c) for c in gen.ifs):
                    walk(i + 1, inner)

        walk(0, dict(self.env))
        return out

    def v_GeneratorExp(self, n: ast.GeneratorExp) -> Any:
        return iter(self._comprehension(n))

    def v_ListComp(self, n: ast.ListComp) -> Any:
        return self._comprehension(n)

    def v_SetComp(self, n: ast.SetComp) -> Any:
        return set(self._comprehension(n))

    def v_JoinedStr(self, n: ast.JoinedStr) -> Any:
        return "".join(str(self.visit(v)) for v in n.values)

    def v_FormattedValue(self, n: ast.FormattedValue) -> Any:
        v = self.visit(n.value)
        if n.conversion == ord("r"):
            v = repr(v)
        elif n.conversion == ord("s"):
            v = str(v)
        spec = self.visit(n.format_spec) if n.format_spec is not None else ""
        try:
            return format(v, spec)
        except (TypeError, ValueError):
            return str(v)

    def v_Call(self, n: ast.Call) -> Any:
        args = [self.visit(a) for a in n.args]
        kwargs = {k.arg: self.visit(k.value) for k in n.keywords if k.arg}
        if isinstance(n.func, ast.Name):
            fn = self.env.get(n.func.id)
            if callable(fn) and not isinstance(fn, Obj):
                return fn(*args, **kwargs)
            if n.func.id in FUNCTIONS:
                return FUNCTIONS[n.func.id](*args, **kwargs)
            raise NotModelled(f"{n.func.id}()")
        if isinstance(n.func, ast.Attribute):
            if n.func.attr.startswith("_"):
                raise NotModelled(ast.unparse(n.func))
            base = self.visit(n.func.value)
            if isinstance(base, Obj):
                fn = Obj.__getattr__(base, n.func.attr)
                if callable(fn):
                    return fn(*args, **kwargs)
                raise NotModelled(f"{ast.unparse(n.func)}()")
            allowed = next((names for t, names in _METHODS.items() if isinstance(base, t)), set())
            if n.func.attr in allowed:
                return getattr(base, n.func.attr)(*args, **kwargs)
        raise NotModelled(f"{ast.unparse(n.func)}()")


# ------------------------------------------------------------------------------------------------
# Statement blocks
# ------------------------------------------------------------------------------------------------


@dataclass
class Failure:
    exc_type: str
    message: str
    condition: str  # the failing assert's test, or the tests that led to the raise
    line: int = 0


@dataclass
class BlockResult:
    failure: Failure | None = None
    returned: Any = None
    assigned: dict[str, Any] = field(default_factory=dict)  # dotted target -> value


class _Return(Exception):
    def __init__(self, value: Any):
        self.value = value


class _Stop(Exception):
    def __init__(self, failure: Failure):
        self.failure = failure


def run_block(block: str | list[ast.stmt], env: dict[str, Any]) -> BlockResult:
    """Run a function body over ``env`` (mutated: assignments land in its objects)."""
    body = _parse_block(block) if isinstance(block, str) else block
    res = BlockResult()
    ev = _Eval(env)
    try:
        _run(body, ev, res, [])
    except _Return as r:
        res.returned = r.value
    except _Stop as s:
        res.failure = s.failure
    return res


def _is_logging(node: ast.AST) -> bool:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        f = node.value.func
        while isinstance(f, ast.Attribute):
            if f.attr in ("warning", "warning_once", "info", "info_once", "debug", "debug_once", "error", "warn"):
                return True
            f = f.value
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)  # docstrings


def _assign(target: ast.expr, value: Any, ev: _Eval, res: BlockResult) -> None:
    if isinstance(target, ast.Name):
        ev.env[target.id] = value
    elif isinstance(target, ast.Attribute):
        if target.attr.startswith("_"):
            raise NotModelled(ast.unparse(target))
        base = ev.visit(target.value)
        if not isinstance(base, Obj):
            raise NotModelled(ast.unparse(target))
        setattr(base, target.attr, value)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for t, v in zip(target.elts, value):
            _assign(t, v, ev, res)
        return
    else:
        raise NotModelled(ast.unparse(target))
    res.assigned[ast.unparse(target)] = value


def _message(node: ast.expr | None, ev: _Eval) -> str:
    if node is None:
        return ""
    if isinstance(node, ast.Call) and node.args:  # raise ValueError("...")
        node = node.args[0]
    try:
        return str(ev.visit(node))
    except NotModelled:
        return ast.unparse(node)


def _run(body: list[ast.stmt], ev: _Eval, res: BlockResult, tests: list[str]) -> None:
    for st in body:
        if _is_logging(st) or isinstance(st, ast.Pass):
            continue
        if isinstance(st, ast.Assign):
            value = ev.visit(st.value)
            for t in st.targets:
                _assign(t, value, ev, res)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            _assign(st.target, ev.visit(st.value), ev, res)
        elif isinstance(st, ast.AugAssign):
            cur = ev.visit(st.target)
            _assign(st.target, _BIN[type(st.op)](cur, ev.visit(st.value)), ev, res)
        elif isinstance(st, ast.If):
            if ev.visit(st.test):
                _run(st.body, ev, res, tests + [ast.unparse(st.test)])
            else:
                _run(st.orelse, ev, res, tests + [f"not ({ast.unparse(st.test)})"])
        elif isinstance(st, ast.Assert):
            if not ev.visit(st.test):
                raise _Stop(Failure("AssertionError", _message(st.msg, ev), ast.unparse(st.test), st.lineno))
        elif isinstance(st, ast.Raise):
            exc = st.exc
            name = ""
            if isinstance(exc, ast.Call):
                name = ast.unparse(exc.func).split(".")[-1]
            elif exc is not None:
                name = ast.unparse(exc).split(".")[-1]
            raise _Stop(Failure(name or "Exception", _message(exc, ev), " and ".join(tests), st.lineno))
        elif isinstance(st, ast.Return):
            raise _Return(ev.visit(st.value) if st.value is not None else None)
        else:
            raise NotModelled(f"<{type(st).__name__} statement at line {st.lineno}>")
