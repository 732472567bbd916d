"""Which family each changed kernel belongs to, and what to compare: an op that launches it, else the kernel.

First the reviewed repository's `[tool.kernel-ab.kernels]` table (`"package.module:name" = "family"`), else
the parameter names: an op taking a family's `op_params` (any order), or a kernel taking its `forward_params`
or `backward_params`. An op is preferred: it is compared as its users call it.
"""
from __future__ import annotations

import dataclasses

from compare.review.kernels import Kernel, Op

TABLE = "[tool.kernel-ab.kernels]"


@dataclasses.dataclass(frozen=True)
class Target:
    """One comparison of BASE against HEAD: an op (or a kernel) of a file, in a family."""

    path: str
    module: str
    callable: str                  # what the --variant spec names
    call: tuple[str, ...] | None   # an op's arguments in its own order (None: the family's order)
    family: str
    how: str                       # how the family was matched, for the report
    kernels: tuple[str, ...]       # the changed kernels it stands for (module:name)

    def spec(self, name: str, rev: str) -> str:
        args = f"({', '.join(self.call)})" if self.call is not None else ""
        return f"{name}=git:{rev}:{self.path}::{self.callable}{args}"


@dataclasses.dataclass(frozen=True)
class Unmapped:
    kernel: str      # module:name
    why: str
    family: str = "<family>"   # the closest family, for the line that would fix it
    mapped: bool = False       # the table maps it already: another line would not help

    @property
    def fix(self) -> str:
        return f'"{self.kernel}" = "{self.family}"'


def read_table(text: str | None) -> dict[str, str]:
    """The `[tool.kernel-ab.kernels]` table of a pyproject.toml's text ({} where there is none;
    ValueError, one line, where it is not TOML or not a table of strings)."""
    if text is None:
        return {}
    from variants.discovery import kernel_ab_table
    table = kernel_ab_table(text).get("kernels", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) and ":" in k for k, v in table.items()):
        raise ValueError(f'pyproject.toml\'s {TABLE} must map "package.module:name" to a family\'s name')
    return dict(table)


def _op_call(op: Op, family) -> tuple[int, tuple[str, ...] | None, str] | None:
    """(score, call, how) when `op` can be called with `family`'s op arguments; None if it cannot."""
    from variants.ops import argument_names
    wanted, known = tuple(family.op_params), argument_names(family)
    if not wanted:
        return None
    if op.params[:len(wanted)] == wanted and op.required <= len(wanted):
        return 3, None, f"{op.name} takes {family.name}'s op arguments ({', '.join(wanted)})"
    usable = []
    for p in op.params:
        if p not in known:
            break
        usable.append(p)
    if len(usable) < op.required or not set(family.op_grads.values()) <= set(usable):
        return None
    same = set(usable) == set(wanted)
    how = (f"{op.name} takes {family.name}'s op arguments in its own order" if same else
           f"{op.name} takes {', '.join(usable)} of {family.name}'s op arguments")
    return (2 if same else 1), tuple(usable), how


def _kernel_fit(kernel: Kernel, family) -> str | None:
    """How `kernel` fits one of `family`'s launchers (None if it fits none, or autotuning configures it)."""
    if kernel.tuned:
        return None
    for role, params in (("forward", family.forward_params), ("backward", family.backward_params)):
        if params and kernel.params[:len(params)] == tuple(params) and kernel.required <= len(params):
            return f"{kernel.name} takes {family.name}'s {role} launcher's parameters"
    return None


def _best(kernel: Kernel, base: Kernel, family, only: str = "") -> tuple[int, Target] | None:
    """The best thing to compare `kernel` by in `family` (`only`: the op the table names), with its score."""
    ops_at_base = {o.name for o in base.ops}
    found = []
    for op in kernel.ops:
        if only and op.name.split(".")[0] != only:
            continue
        fit = _op_call(op, family) if op.name in ops_at_base else None
        if fit is not None:
            score, call, how = fit
            found.append((score + 10, Target(kernel.path, kernel.module, op.name, call, family.name, how, (kernel.key,))))
    how = None if only else _kernel_fit(kernel, family)
    if how is not None:
        found.append((5, Target(kernel.path, kernel.module, kernel.name, None, family.name, how, (kernel.key,))))
    return max(found, key=lambda f: f[0]) if found else None


def plan(changed: list[tuple[Kernel, Kernel]], table: dict[str, str], families) -> tuple[list[Target], list[Unmapped]]:
    """(what to compare, one per op; the changed kernels that cannot be compared, with why)."""
    targets: dict[tuple[str, str], Target] = {}
    unmapped = []
    for base, kernel in changed:
        named = [(k, table[k]) for k in (kernel.key, *(f"{kernel.module}:{o.name.split('.')[0]}" for o in kernel.ops))
                 if k in table]
        if named:
            key, family_name = named[-1] if len(named) > 1 else named[0]   # an op's line over the kernel's
            if family_name not in families:
                unmapped.append(Unmapped(kernel.key, f"pyproject.toml maps {key} to {family_name!r}, which is no "
                                         f"registered family (families: {', '.join(families)})"))
                continue
            named_op = key.partition(":")[2] if key != kernel.key else ""
            best = _best(kernel, base, families[family_name], named_op)
            if best is None:
                unmapped.append(Unmapped(kernel.key, _unfit(kernel, families[family_name]), family_name, mapped=True))
                continue
            target = dataclasses.replace(best[1], how=f"{TABLE} maps {key} to {family_name}; {best[1].how}")
        else:
            scored = [(b, f) for f in families.values() if (b := _best(kernel, base, f)) is not None]
            top = max((b[0] for b, _ in scored), default=None)
            winners = [(b, f) for b, f in scored if b[0] == top]
            if not winners:
                unmapped.append(Unmapped(kernel.key, "neither it nor an op launching it takes a registered family's "
                                         f"parameters (families: {', '.join(families)})"))
                continue
            if len(winners) > 1:
                names = [f.name for _, f in winners]
                unmapped.append(Unmapped(kernel.key, f"its parameters fit {' and '.join(names)} alike", names[0]))
                continue
            target = dataclasses.replace(winners[0][0][1], how=f"matched by parameter names: {winners[0][0][1].how}")
        place = (target.path, target.callable)
        if place in targets:   # one op launching several changed kernels is compared once
            kept = targets[place]
            targets[place] = dataclasses.replace(kept, kernels=kept.kernels + target.kernels)
        else:
            targets[place] = target
    return list(targets.values()), unmapped


def _unfit(kernel: Kernel, family) -> str:
    ops = "; ".join(f"{o.name}({', '.join(o.params)})" for o in kernel.ops) or "none found in its module"
    return (f"its ops ({ops}) do not take {family.name}'s op arguments ({', '.join(family.op_params)}), and the "
            "kernel " + ("is autotuned" if kernel.tuned else "does not take its launchers' parameters"))
