"""Which family each changed op belongs to and how to call it; a changed kernel no op reaches, by itself.

Sources, in order: the reviewer's `--mapping FILE` and then the reviewed repository's pyproject.toml, both
`[tool.kernel-ab.kernels]` (`"module:name" = "family"` or `{ family = ..., call = "(...)[0]" }`); else the
op's parameter names (compare/review/calls.py), else a kernel taking a family launcher's parameters. Ops
nothing maps come back with the line that would map them; an op whose changes others' comparisons cover, with them.
"""
from __future__ import annotations

import dataclasses
import json

from compare.review import calls
from compare.review.calls import Call, Fit, Miss
from compare.review.kernels import Change, ChangedOp, What
from compare.model.errors import UsageError
from variants.spec import Spec

TABLE = "[tool.kernel-ab.kernels]"
_FORM = 'a family\'s name or { family = "NAME", call = "(ARG, ...)" }'


@dataclasses.dataclass(frozen=True)
class TableEntry:
    family: str
    call: Call | None = None
    source: str = "pyproject.toml"   # or "--mapping FILE"
    reviewer: bool = False           # from --mapping: its lines come before the repository's

    @property
    def prefix(self) -> str:
        return TABLE if not self.reviewer else f"{self.source}'s {TABLE}"


@dataclasses.dataclass(frozen=True)
class Target:
    """One comparison of BASE against HEAD: an op (or a kernel) of a file, in a family."""

    path: str
    module: str
    callable: str                  # what the --variant spec names
    call: Call | None              # how it takes the family's op arguments (None: the family's order)
    family: str
    how: str                       # how the family was matched, for the report
    kernels: tuple[str, ...]       # the changed kernels it stands for (module:name)
    what: tuple[What, ...] = ()    # what changed in it
    by_names: bool = False         # fitted by its parameter names alone: compared in the family only if it fits

    @property
    def key(self) -> str:
        """Its name as the review's records give it (op_key's form)."""
        return f"{self.module}:{self.callable.split('.')[0]}"

    def variant(self, name: str, rev: str) -> Spec:
        """The --variant spec comparing it at `rev` as variant `name`."""
        return Spec.made(name, self.path, self.callable, rev, self.call.as_call_map() if self.call else None)

    def spec(self, name: str, rev: str) -> str:
        """The --variant text that compares it at `rev` by hand."""
        return self.variant(name, rev).text


@dataclasses.dataclass(frozen=True)
class Unmapped:
    kernel: str                # module:name of the op (or of the kernel no op reaches)
    why: str
    family: str = "<family>"   # the closest family, for the line that would fix it
    mapped: bool = False       # a table maps it already: another line would not help
    call: str = ""             # a starting point for the line's call (an op's)
    refused: str = ""          # why no line maps it: `fix`, read as a --mapping file's line, is refused so

    @property
    def fix(self) -> str:
        if self.call:
            return f'"{self.kernel}" = {{ family = "{self.family}", call = {json.dumps(self.call)} }}'
        return f'"{self.kernel}" = "{self.family}"'


@dataclasses.dataclass(frozen=True)
class JudgedThrough:
    """A changed op not compared on its own, all that changed in it being compared through other ops: their
    comparisons judge it, and it neither fails nor passes on its own."""

    op: str                      # module:name of the op (op_key's form)
    what: tuple[What, ...]       # what changed in it
    through: tuple[str, ...]     # the compared ops (or kernels) whose changes cover it, as Target.key


def _entry(key, value, source: str, reviewer: bool) -> TableEntry:
    bad = ValueError(f'{source}: {TABLE} must map "package.module:name" to {_FORM}; "{key}" = {value!r} does not')
    if not isinstance(key, str) or ":" not in key:
        raise ValueError(f'{source}: {TABLE} must map "package.module:name" to {_FORM}; key "{key}" has no ":"')
    if isinstance(value, str):
        return TableEntry(value, None, source, reviewer)
    if not isinstance(value, dict) or not isinstance(value.get("family"), str) or set(value) - {"family", "call"} \
            or not isinstance(value.get("call", ""), str):
        raise bad
    try:
        call = calls.parse_call(value["call"]) if "call" in value else None
    except ValueError as exc:
        raise ValueError(f'{source}: {TABLE} "{key}": {exc}') from None
    return TableEntry(value["family"], call, source, reviewer)


def read_table(text: str | None, source: str = "pyproject.toml", reviewer: bool = False) -> dict[str, TableEntry]:
    """The `[tool.kernel-ab.kernels]` table of a TOML text ({} where there is none; ValueError, one line
    naming `source` and the key, where it is not TOML or a value is not a family or {family, call})."""
    if text is None:
        return {}
    from variants.discovery import kernel_ab_table
    table = kernel_ab_table(text).get("kernels", {})
    if not isinstance(table, dict):
        raise ValueError(f'{source}: {TABLE} must map "package.module:name" to {_FORM}')
    return {k: _entry(k, v, source, reviewer) for k, v in table.items()}


def read_file(path: str) -> dict[str, TableEntry]:
    """The reviewer's `--mapping FILE` (UsageError, one line naming it, if unreadable, not TOML, or bad)."""
    import tomllib
    source = f"--mapping {path}"
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        tomllib.loads(text)
    except OSError as exc:
        raise UsageError(f"{source}: cannot read it ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{source}: not TOML: {exc}") from None
    try:
        table = read_table(text, source, reviewer=True)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not table:
        raise UsageError(f"{source}: no {TABLE} table in it (its lines map \"package.module:name\" to {_FORM})")
    return table


class _Known:
    """Each family's argument names (variants.ops.argument_names) and which of them are tensors, asked once
    (on meta inputs of its default preset's first shape)."""

    def __init__(self):
        self._names: dict[str, tuple[str, ...]] = {}
        self._tensors: dict[str, tuple[str, ...]] = {}

    def __call__(self, family) -> tuple[str, ...]:
        if family.name not in self._names:
            import torch
            from variants.ops import argument_names
            self._names[family.name] = argument_names(family)
            shape = family.preset(family.default_preset).shapes[0]
            args = family.op_arguments(family.make_inputs(shape, torch.float32, "meta", 0), shape)
            self._tensors[family.name] = tuple(n for n, v in args.items() if isinstance(v, torch.Tensor))
        return self._names[family.name]

    def tensors(self, family) -> tuple[str, ...]:
        self(family)
        return self._tensors[family.name]


def _unknown(entry: TableEntry, arguments: tuple[str, ...]) -> list[str]:
    """The names `entry`'s call passes that are no argument of its family's op (`arguments`: the op's)."""
    return [n for n in entry.call.names if n not in arguments] if entry.call is not None else []


def _checked(u: Unmapped, families, known: _Known) -> Unmapped:
    """`u`, its line read back as a --mapping file's line is (read_table, then its call's names against the
    family's op: `_unknown`); a line that would be refused is not offered, `refused` saying what the op takes
    that the family's does not. The placeholder family's line must fit some registered family."""
    if u.mapped:
        return u
    try:
        [entry] = read_table(f"{TABLE}\n{u.fix}\n", "the line").values()
    except ValueError as exc:
        return dataclasses.replace(u, refused=str(exc))
    named = entry.family in families
    fitting = [families[entry.family]] if named else [f for f in families.values() if getattr(f, "op_params", ())]
    unknown = [_unknown(entry, known(f)) for f in fitting]
    if entry.call is None or (unknown and not all(unknown)):
        return u
    if named:
        lacks = f"{entry.family}'s op has no argument {', '.join(unknown[0])} (its arguments: {', '.join(known(fitting[0]))})"
    else:   # each family lacks some name: those none has, else all of them together
        names = [n for n in entry.call.names if all(n not in known(f) for f in fitting)]
        lacks = f"no registered family's op takes {', '.join(names) or 'all of ' + ', '.join(entry.call.names)}"
    return dataclasses.replace(u, refused=lacks)


def _line(keys: list[str], table: dict[str, TableEntry]) -> tuple[str, TableEntry] | None:
    """The table line for the first of `keys` (the op's own, then its kernels'), the reviewer's first."""
    found = [(k, table[k]) for k in keys if k in table]
    return min(found, key=lambda f: (not f[1].reviewer, keys.index(f[0]))) if found else None


def _base_differs(changed: ChangedOp, family, known: _Known, found: Fit) -> str:
    """Why the call that fits the op at HEAD does not fit it at BASE ("" where it does)."""
    base = changed.base_op
    if base is None or base == changed.op:
        return ""
    at_base = calls.fit(base, family, known(family), known.tensors(family))
    if isinstance(at_base, Fit) and at_base.call == found.call:
        return ""
    return (f"{base.name}({', '.join(base.params)}) at BASE is not called as {changed.op.name}"
            f"({', '.join(changed.op.params)}) at HEAD is; compare it by hand")


def op_key(changed: ChangedOp) -> str:
    """The name an Unmapped gives an op, by which review's replay takes it over."""
    return f"{changed.module}:{changed.op.name.split('.')[0]}"


def _kernel_keys(changed: ChangedOp) -> tuple[str, ...]:
    return tuple(k if ":" in k else f"{changed.module}:{k}" for k in changed.kernels)


@dataclasses.dataclass(frozen=True)
class _Ranked:
    target: Target
    rank: int   # of ops standing for the same changes the highest is compared: the fit's score, +10 named by the table


def _target(changed: ChangedOp, family: str, call: Call | None, how: str, rank: int, by_names: bool = False) -> _Ranked:
    target = Target(changed.path, changed.module, changed.op.name, call, family, how, _kernel_keys(changed),
                    changed.what, by_names)
    return _Ranked(target, rank)


def _by_table(changed: ChangedOp, key: str, entry: TableEntry, families, known: _Known) -> _Ranked | Unmapped:
    own = op_key(changed)
    if entry.family not in families:
        return Unmapped(own, f"{entry.source} maps {key} to {entry.family!r}, which is no registered family "
                                f"(families: {', '.join(families)})")
    family = families[entry.family]
    said = f"{entry.prefix} maps {key} to {entry.family}"
    if entry.call is not None and key == own:
        if unknown := _unknown(entry, known(family)):
            raise UsageError(f'{entry.source}: {TABLE} "{key}": the call {entry.call.text()} names {unknown[0]!r}, '
                             f"no argument of {entry.family}'s op (arguments: {', '.join(known(family))})")
        return _target(changed, entry.family, entry.call, f"{said} with the call {entry.call.text()}", 13)
    found = calls.fit(changed.op, family, known(family), known.tensors(family))
    if isinstance(found, Miss):
        return Unmapped(own, f"{said}, but {found.why}", entry.family, call=found.guess.text())
    if differs := _base_differs(changed, family, known, found):
        return Unmapped(own, f"{said}, but {differs}", entry.family, mapped=True)
    return _target(changed, entry.family, found.call, f"{said}; {found.how}", found.score + 10 * (key == own))


def _by_names(changed: ChangedOp, families, known: _Known) -> _Ranked | Unmapped:
    own = op_key(changed)
    fits = {name: calls.fit(changed.op, f, known(f), known.tensors(f))
            for name, f in families.items() if getattr(f, "op_params", ())}
    scored = {name: f for name, f in fits.items() if isinstance(f, Fit)}
    top = max((f.score for f in scored.values()), default=None)
    winners = [name for name, f in scored.items() if f.score == top]
    if len(winners) == 1:
        found = scored[winners[0]]
        if differs := _base_differs(changed, families[winners[0]], known, found):
            return Unmapped(own, f"its parameters fit {winners[0]}, but {differs}", winners[0], mapped=True)
        return _target(changed, winners[0], found.call, f"matched by parameter names: {found.how}", found.score, True)
    if winners:
        return Unmapped(own, f"its parameters fit {' and '.join(winners)} alike", winners[0],
                        call=(scored[winners[0]].call or Call(())).text())
    misses = {name: f for name, f in fits.items() if isinstance(f, Miss)}
    most = max((m.matched for m in misses.values()), default=0)
    closest = [name for name, m in misses.items() if m.matched == most]
    params = ", ".join(changed.op.params)
    if most == 0 or len(closest) != 1:
        unmatched = [p for p in changed.op.params if all(p in misses[n].unmatched for n in closest)] if most else []
        guesses = {misses[n].guess.text() for n in closest}
        said = (f": {', '.join(unmatched)} {'matches' if len(unmatched) == 1 else 'match'} no op argument of "
                f"{', '.join(closest)} (each matches {most} of its parameters)" if unmatched else
                f"; closest, {' and '.join(closest)}: {misses[closest[0]].why}" if most else
                f" (families: {', '.join(families)})")
        return Unmapped(own, f"{changed.op.name}({params}) takes no registered family's op arguments{said}",
                        call=guesses.pop() if most and len(guesses) == 1 else f"({params})")
    miss = misses[closest[0]]
    return Unmapped(own, f"no family's op arguments fit it; closest, {closest[0]}: {miss.why}", closest[0],
                    call=miss.guess.text())


def _map_op(changed: ChangedOp, table, families, known: _Known) -> _Ranked | Unmapped:
    if changed.base_op is None:
        return Unmapped(op_key(changed), f"{changed.op.name} is new at HEAD: no version at BASE to compare with",
                        mapped=True)
    line = _line([op_key(changed), *_kernel_keys(changed)], table)
    return _by_table(changed, *line, families, known) if line else _by_names(changed, families, known)


def _kernel_fit(kernel, family) -> str | None:
    """How `kernel` fits one of `family`'s launchers (None if it fits none, or autotuning configures it)."""
    if kernel.tuned:
        return None
    for role, params in (("forward", family.forward_params), ("backward", family.backward_params)):
        if params and kernel.params[:len(params)] == tuple(params) and kernel.required <= len(params):
            return f"{kernel.name} takes {family.name}'s {role} launcher's parameters"
    return None


def _map_kernel(kernel, table, families) -> _Ranked | Unmapped:
    """A changed kernel no op reaches: compared by itself when it takes a family launcher's parameters."""
    def target(family: str, how: str) -> _Ranked:
        return _Ranked(Target(kernel.path, kernel.module, kernel.name, None, family, how, (kernel.key,),
                              (What(Change.KERNEL, kernel.name),)), 0)
    entry = table.get(kernel.key)
    if entry is not None:
        if entry.family not in families:
            return Unmapped(kernel.key, f"{entry.source} maps {kernel.key} to {entry.family!r}, which is no "
                                        f"registered family (families: {', '.join(families)})")
        how = _kernel_fit(kernel, families[entry.family])
        if how is None:
            return Unmapped(kernel.key, f"no op in its module launches it, and the kernel " + (
                "is autotuned" if kernel.tuned else f"does not take {entry.family}'s launchers' parameters"),
                entry.family, mapped=True)
        return target(entry.family, f"{entry.prefix} maps {kernel.key} to {entry.family}; {how}")
    fits = {name: how for name, f in families.items() if (how := _kernel_fit(kernel, f)) is not None}
    if len(fits) == 1:
        [(name, how)] = fits.items()
        return target(name, f"matched by parameter names: {how}")
    if fits:
        return Unmapped(kernel.key, f"its parameters fit {' and '.join(fits)} alike", next(iter(fits)))
    return Unmapped(kernel.key, "neither it nor an op launching it takes a registered family's parameters "
                                f"(families: {', '.join(families)})")


def plan(changes, table: dict, families) -> tuple[list[Target], list[Unmapped], list[JudgedThrough]]:
    """(what to compare, one per op or kernel; what cannot be compared, with why and the line that maps it; the
    ops judged through others, what changed in them being compared there). Each changed op is in one of them.
    `table`: read_table/read_file entries (a plain family name is taken as a pyproject.toml line)."""
    table = {k: v if isinstance(v, TableEntry) else TableEntry(v) for k, v in table.items()}
    ops = changes.ops
    known = _Known()
    reached = {k for changed in ops for k in _kernel_keys(changed)}
    by_op = [(changed, _map_op(changed, table, families, known)) for changed in ops]
    by_kernel = [_map_kernel(kernel, table, families) for _, kernel in changes.changed if kernel.key not in reached]
    best: dict[tuple, _Ranked] = {}
    for r in [r for _, r in by_op] + by_kernel:   # ops standing for the same changes: the best fit (then nearest)
        if isinstance(r, _Ranked) and ((same := (r.target.kernels, r.target.what)) not in best
                                       or r.rank > best[same].rank):
            best[same] = r
    unmapped, through = _not_compared(by_op, best)
    unmapped += [r for r in by_kernel if isinstance(r, Unmapped)]
    unmapped = [_checked(u, families, known) for u in unmapped]
    targets: dict[tuple[str, str], Target] = {}
    for r in best.values():
        place = (r.target.path, r.target.callable)
        kept = targets.get(place)   # one callable standing for several changes is compared once
        targets[place] = r.target if kept is None else dataclasses.replace(
            kept, kernels=kept.kernels + r.target.kernels, what=kept.what + r.target.what)
    return list(targets.values()), unmapped, through


def _not_compared(by_op, best: dict[tuple, _Ranked]) -> tuple[list[Unmapped], list[JudgedThrough]]:
    """The ops `best` does not compare: those to list as unmapped, and those judged through the compared ops
    covering what changed in them (a lower fit for the same changes, or no fit, but all it changed compared)."""
    compared = {w for r in best.values() for w in r.target.what}
    unmapped, through = [], []
    for changed, r in by_op:
        winner = best.get((r.target.kernels, r.target.what)) if isinstance(r, _Ranked) else None
        if winner is r:
            continue
        if winner is None and not (changed.what and set(changed.what) <= compared):
            unmapped.append(r)
            continue
        by = [b.target.key for b in best.values() if b is winner or set(b.target.what) & set(changed.what)]
        through.append(JudgedThrough(op_key(changed), changed.what, tuple(dict.fromkeys(by))))
    return unmapped, through
