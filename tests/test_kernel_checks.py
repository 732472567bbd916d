"""variants/kernel_checks.py: what a loaded kernel is checked against (the family's launcher parameters)
and compile_failures, which compiles each kernel through its launcher without launching it."""
from variants import registry

FAMILY = "group_norm"


def test_family_launcher_params_match_every_registered_kernel():
    """The family's forward_params, which loaded kernels are checked against, are what its own kernels take."""
    import inspect
    reg = registry()
    family = reg.family(FAMILY)
    for v in reg.variants(FAMILY):
        if v.kind == "triton":
            assert tuple(inspect.signature(v.kernel.fn).parameters) == family.forward_params, v.name


def test_a_kernel_that_does_not_compile_is_a_failed_variant():
    """compile_failures (used on a GPU, where Triton compiles) compiles each kernel through the family's
    launcher without launching it, lists the one that raises Triton's CompilationError with its
    message and kernel line, and leaves other errors to the numerics."""
    import ast
    import dataclasses as dc

    import torch
    from triton.compiler.errors import CompilationError
    from variants.external import compile_failures

    reg = registry()
    family = reg.family(FAMILY)
    good = reg.get("explicit_offset")
    src = "def k(X_ptr):\n    y = tl.nosuch(X_ptr)\n"
    node = ast.parse(src).body[0].body[0]
    seen = []

    class Fake:
        def __init__(self, exc):
            self.exc = exc

        def warmup(self, *args, grid, **kwargs):
            seen.append((len(args), grid, sorted(kwargs)))
            raise self.exc

        def __getitem__(self, grid):
            raise AssertionError("compile_failures must not launch a kernel")

    no_compile = Fake(CompilationError(src, node, "AttributeError(\"module 'triton.language' has no attribute 'nosuch'\")"))
    variants = [good, dc.replace(good, name="nocompile", kernel=no_compile),
                dc.replace(good, name="crash", kernel=Fake(RuntimeError("out of bounds")))]
    shape = family.parse_shape("2,8,2,16").shapes[0]
    failures = compile_failures(family, variants, shape, torch.float32, "cpu")
    assert list(failures) == ["nocompile"]
    assert failures["nocompile"].splitlines() == [
        "does not compile: CompilationError: AttributeError(\"module 'triton.language' has no attribute 'nosuch'\")",
        "at line 2 of the kernel: y = tl.nosuch(X_ptr)"]
    # the launcher's real arguments reached warmup: 17 positional, BLOCK_SIZE by name, grid (batch, groups)
    assert seen == [(17, (2, 2), ["BLOCK_SIZE"])] * 2

    # the inputs are drawn once for every kernel (on an image shape a draw takes seconds), and the
    # progress hears of each kernel before it compiles
    draws, heard = [], []
    original = family.make_inputs

    def counting(*args, **kwargs):
        draws.append(args)
        return original(*args, **kwargs)
    family.make_inputs = counting
    try:
        compile_failures(family, variants, shape, torch.float32, "cpu", heard.append)
    finally:
        del family.make_inputs
    assert len(draws) == 1
    assert heard == [f"checking that {v.name}'s forward kernel compiles for {shape.label}" for v in variants]
