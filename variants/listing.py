"""`kernel-ab list`: what the registry holds, printed for a reader, wrapped to the terminal's width (or COLUMNS,
else 80)."""
from __future__ import annotations

import shutil
import textwrap

HEADERS = ("variant", "kind", "kernels", "runs on", "what it is")


def _table(rows: list[tuple], width: int) -> str:
    """The variants' table within `width`: its last column wrapped beside the others where 30 columns are left
    for it, else under each row, indented."""
    from tabulate import tabulate
    fixed = [max(len(str(c)) for c in col) for col in zip(HEADERS[:-1], *(r[:-1] for r in rows))]
    probe = tabulate([(*r[:-1], "") for r in rows], headers=HEADERS, tablefmt="plain").splitlines()[0]
    room = width - probe.index(HEADERS[-1])   # where tabulate starts the last column
    if room >= 30:
        wrapped = [(*r[:-1], textwrap.fill(str(r[-1]), room, break_long_words=False)) for r in rows]
        return "\n".join(line.rstrip() for line in tabulate(wrapped, headers=HEADERS, tablefmt="plain").splitlines())
    lines = []
    for row in (HEADERS, *rows):   # the description under each row: it would not fit beside them
        lines.append("  ".join(str(c).ljust(n) for c, n in zip(row[:-1], fixed)).rstrip())
        lines += textwrap.wrap(str(row[-1]), width, initial_indent="    ", subsequent_indent="    ",
                               break_long_words=False)
    return "\n".join(lines)


def show(registry) -> int:
    """`kernel-ab list`: every family, where it came from, its variants, presets, input kinds and dtypes."""
    width = max(40, shutil.get_terminal_size().columns)

    def say(text: str = "") -> None:
        print(textwrap.fill(text, width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False))
    say(f"families: {', '.join(registry.families)} (default {registry.default_family})")
    for family in registry.families.values():
        doc = (type(family).__doc__ or "").strip().splitlines()
        say()
        say(f"## family {family.name}: {doc[0] if doc else '(its class has no docstring)'}")
        print(f"from: {registry.origins.get(family.name, 'given')}")   # a path whole, to copy
        rows = [(v.name, v.kind, ", ".join(v.own_kernels) or "op", "GPU" if v.needs_gpu else "any", v.why)
                for v in registry.variants(family.name)]
        print(_table(rows, width))
        say(f"default pair: {' vs '.join(family.default_pair)}; --shape {family.shape_help}")
        say(f"input kinds: {', '.join(family.input_kinds)}; dtypes: {', '.join(family.dtypes)}")
        say(f"outputs: {', '.join(family.outputs)}; gradients: {', '.join(family.grads) or 'none'}")
        say("presets:")
        for preset in family.presets.values():
            marks = [m for m, name in (("default", family.default_preset), ("review on a GPU", family.gpu_preset))
                     if preset.name == name]
            default = f" ({', '.join(marks)})" if marks else ""
            say(f"  {preset.name}{default}: {preset.description}; {len(preset.shapes)} shapes")
        if family.op_params:
            from variants.ops import argument_names
            extra = [n for n in argument_names(family) if n not in family.op_params]
            also = f"; an argument list may also name {', '.join(extra)}" if extra else ""
            say(f"op (for --variant ops): ({', '.join(family.op_params)}) -> {family.outputs[0]}{also}")
    return 0
