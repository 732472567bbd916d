"""`kernel-ab review BASE HEAD`: find the Triton kernels a change touched and compare what launches them.

`revisions.py` reads a revision's Python files through git; `kernels.py` finds its kernels and the ops
that launch them with `ast` and says which changed; `mapping.py` gives each a family (the reviewed
repository's `[tool.kernel-ab.kernels]`, else its parameter names); `command.py` runs compare's pipeline
on each changed op at both revisions; `render.py` says it all in one report.
"""
