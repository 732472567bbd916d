"""`kernel-ab list`: what the registry holds, printed for a reader."""
from __future__ import annotations


def show(registry) -> int:
    """`kernel-ab list`: every family, where it came from, its variants, presets, input kinds and dtypes."""
    from tabulate import tabulate
    print(f"families: {', '.join(registry.families)} (default {registry.default_family})")
    for family in registry.families.values():
        doc = (type(family).__doc__ or "").strip().splitlines()
        print(f"\n## family {family.name}: {doc[0] if doc else '(its class has no docstring)'}")
        print(f"from: {registry.origins.get(family.name, 'given')}")
        rows = [(v.name, v.kind, ", ".join(v.own_kernels) or "op", "GPU" if v.needs_gpu else "any", v.why)
                for v in registry.variants(family.name)]
        print(tabulate(rows, headers=("variant", "kind", "kernels", "runs on", "what it is"), tablefmt="github"))
        print(f"default pair: {' vs '.join(family.default_pair)}; --shape {family.shape_help}")
        print(f"input kinds: {', '.join(family.input_kinds)}; dtypes: {', '.join(family.dtypes)}")
        print(f"outputs: {', '.join(family.outputs)}; gradients: {', '.join(family.grads) or 'none'}")
        print("presets:")
        for preset in family.presets.values():
            marks = [m for m, name in (("default", family.default_preset), ("review on a GPU", family.gpu_preset))
                     if preset.name == name]
            default = f" ({', '.join(marks)})" if marks else ""
            print(f"  {preset.name}{default}: {preset.description}; {len(preset.shapes)} shapes")
        if family.op_params:
            from variants.ops import argument_names
            extra = [n for n in argument_names(family) if n not in family.op_params]
            also = f"; an argument list may also name {', '.join(extra)}" if extra else ""
            print(f"op (for --variant ops): ({', '.join(family.op_params)}) -> {family.outputs[0]}{also}")
    return 0
