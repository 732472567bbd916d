"""Source text of the hostile variant files that benchmarks/hostile_sweep.py loads with --variant. An op
variant is a correct autograd.Function with one hostile act at its import, forward or backward: acts that
leave the numbers right (a thread, a child) test only that the run ends clean, every other must show as that
variant's failure. A kernel variant is a @triton.jit forward whose body is the act (the interpreter runs it)."""
from __future__ import annotations

# the family's op arguments (`main.py list`: "op (for --variant ops)"), its tensors, and torch's math
OPS = {
    "group_norm": ("X, W, B, num_channels, num_groups, eps", ("X", "W", "B"),
                   "torch.nn.functional.group_norm(X, num_groups, W, B, eps)"),
    "layer_norm": ("X, W, B, eps", ("X", "W", "B"),
                   "torch.nn.functional.layer_norm(X, (X.shape[-1],), W, B, eps)"),
    "rms_norm": ("X, W, eps, offset, casting_mode", ("X", "W"),   # at least float32 (every casting mode)
                 "(lambda xf: (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * (offset + W.to(xf.dtype)))"
                 ".to(X.dtype))(X.to(torch.promote_types(X.dtype, torch.float32)))"),
}

# acts that end, stop or kill the process, or never return: each is tried at every place
ACTS = {
    "sys_exit_0": "sys.exit(0)",
    "sys_exit_3": "sys.exit(3)",
    "os_exit_0": "os._exit(0)",
    "os_exit_7": "os._exit(7)",
    "raise_keyboard_interrupt": "raise KeyboardInterrupt",   # the variant's, not the user's Ctrl-C: a failure
    "raise_system_exit": "raise SystemExit",
    "raise_generator_exit": "raise GeneratorExit",
    "raise_memory_error": "raise MemoryError",
    "sleep_3600": "time.sleep(3600)",
    "endless_loop": "while True:\n        pass",
    "non_daemon_thread": "threading.Thread(target=time.sleep, args=(3600,)).start()",
    "child_sleep_600": "subprocess.Popen(['sleep', '600'])",
    "sigsegv": "os.kill(os.getpid(), signal.SIGSEGV)",
    "sigkill": "os.kill(os.getpid(), signal.SIGKILL)",
    "sigabrt": "os.kill(os.getpid(), signal.SIGABRT)",
    "import_kernel_ab": "import variants.group_norm.common",
}
# these leave the variant's numbers right: the run must end clean, the variant's verdict is free
HARMLESS_ACTS = frozenset({"non_daemon_thread", "child_sleep_600"})
PLACES = ("import", "forward", "backward")

# writes into what the variant was given (the caller's tensors): (place, when, statement)
MUTATIONS = {
    "x_before_forward": ("forward", "before", "X.view(-1)[::2].add_(7.0)"),
    "x_after_forward": ("forward", "after", "X.view(-1)[::2].add_(7.0)"),
    "w_after_forward": ("forward", "after", "W.add_(0.5)"),
    "dy_before_backward": ("backward", "before", "dy.mul_(3.0)"),
    "dy_after_backward": ("backward", "after", "dy.add_(1.0)"),
    "x_in_backward": ("backward", "after", "X.view(-1)[::2].add_(7.0)"),
}
# what the op returns instead of y
WRONG_RETURNS = {
    "returns_wrong_shape": "y.reshape(-1)[:1]",
    "returns_wrong_dtype": "y.double()",
    "returns_none": "None",
    "returns_a_string": "'y'",
}

KERNEL_ACTS = {
    "os_exit_7": "os._exit(7)",
    "sys_exit_3": "sys.exit(3)",
    "raise_keyboard_interrupt": "raise KeyboardInterrupt",
    "sleep_3600": "time.sleep(3600)",
    "endless_loop": "while True:\n        pass",
    "sigsegv": "os.kill(os.getpid(), signal.SIGSEGV)",
    "sigabrt": "os.kill(os.getpid(), signal.SIGABRT)",
    "sigkill": "os.kill(os.getpid(), signal.SIGKILL)",
    "store_into_x": "tl.store(X_ptr, 123.0)",
    "stores_nothing": "pass",
    "store_far_out_of_bounds": "tl.store(Y_ptr + 1000000000, 1.0)",
}

_HEADER = '''"""kernel-ab hostile sweep: {what}."""
import os
import signal
import subprocess
import sys
import threading
import time

'''


def _indent(code: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line.lstrip() if i == 0 else " " * (spaces - 4) + line
                     for i, line in enumerate(code.splitlines()))


def op_source(family: str, act: str, place: str, *, statement: str = "", when: str = "before",
              returns: str = "y") -> str:
    """An op file for `family`: correct, but for `statement` (default: ACTS[act]) at `place`."""
    args, tensors, math = OPS[family]
    statement = statement or ACTS.get(act, "")
    hook = {p: {"before": "", "after": ""} for p in ("forward", "backward")}
    if place in hook:
        hook[place][when] = _indent(statement, 8) + "\n"
    at_import = f"{statement}\n\n" if place == "import" else ""
    names = ", ".join(tensors)
    nones = ", None" * (len(args.split(",")) - len(tensors))
    return (_HEADER.format(what=f"{family} op, {act} at {place}") + "import torch\n\n" + at_import + f'''
def _math({args}):
    return {math}


class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, {args}):
        ctx.save_for_backward({names})
        ctx.rest = ({args.split(", ", len(tensors))[-1]},)
{hook["forward"]["before"]}        y = _math({args})
{hook["forward"]["after"]}        return y

    @staticmethod
    def backward(ctx, dy):
        {names}, = ctx.saved_tensors
{hook["backward"]["before"]}        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in ({names},)]
            grads = torch.autograd.grad(_math(*leaves, *ctx.rest), leaves, dy)
{hook["backward"]["after"]}        return (*grads{nones})


def op({args}):
    y = Fn.apply({args})
    return {returns}
''')


def kernel_source(family: str, act: str, params: list[tuple[str, bool]], *, at_import: bool = False) -> str:
    """A forward kernel file for `family` (`params`: (name, is_constexpr) in the launcher's order)."""
    signature = ", ".join(f"{n}: tl.constexpr" if c else n for n, c in params)
    statement = KERNEL_ACTS.get(act) or ACTS[act]
    top, body = (statement + "\n", "pass") if at_import else ("", statement)
    return (_HEADER.format(what=f"{family} forward kernel, {act} {'at import' if at_import else 'in the kernel'}")
            + "import triton\nimport triton.language as tl\n\n" + top + f'''

@triton.jit
def forward_kernel({signature}):
    {_indent(body, 4).lstrip()}
''')
