"""Two examples under each command's --help, written as an installed user types them (`kernel-ab ...`)."""
from __future__ import annotations

import argparse

EXAMPLES = {   # (what it does, the command), each under 78 columns
    "list": (("every family: its variants, presets, input kinds and dtypes", "kernel-ab list"),
             ("also the families of another folder", "kernel-ab list --family-path ../mylib/kab_families")),
    "compare": (("the default family's default pair: numerics, timing (GPU), compiled code", "kernel-ab compare"),
                ("your own kernel against the float64 reference and torch",
                 "kernel-ab compare --variant mine=my_kernels.py::my_forward_kernel")),
    "ir": (("the compiled code of the default pair, every stage", "kernel-ab ir"),
           ("two variants' PTX, whole", "kernel-ab ir pointer_mutation explicit_offset --stage ptx --full")),
    "review": (("the ops of the Triton kernels the last commit changed", "kernel-ab review HEAD~1 HEAD --repo ."),
               ("a pull request's review, its comment in review/, failing on numerics",
                "kernel-ab review main HEAD --out review --fail-on-numerics")),
    "report": (("a saved report on the terminal again", "kernel-ab report out/report.json"),
               ("its pull-request comment", "kernel-ab report out/report.json --format markdown")),
    "pairwise": (("flat against torch in a timed report, on the rounds they shared",
                  "kernel-ab pairwise out/report.json flat torch"),
                 ("one variant against two others", "kernel-ab pairwise out/report.json flat torch inductor")),
    "record": (("an op's calls while its tests run, kept by value in rec/",
                "kernel-ab record mylib.ops:f --out rec -- pytest tests/test_f.py"),
               ("at most 3 calls, made on the CPU, from a script",
                "kernel-ab record mylib.ops:f --out rec --calls 3 --device cpu -- python3 a.py")),
    "diff": (("this run against the one saved before the change",
              "kernel-ab diff saved/report.json out/report.json"),
             ("the same as a pull-request comment",
              "kernel-ab diff saved/report.json out/report.json --format markdown")),
}


def add(subparsers: argparse._SubParsersAction) -> None:
    """Each command's examples as its help's epilog, kept as written."""
    for name, parser in subparsers.choices.items():
        if name in EXAMPLES:
            parser.epilog = "examples:\n" + "\n".join(f"  # {what}\n  {command}" for what, command in EXAMPLES[name])
            parser.formatter_class = argparse.RawDescriptionHelpFormatter
