"""variants/torch_modules.py: the torch submodules a library reads as attributes, imported before it."""
import subprocess
import sys
import textwrap


def test_a_submodule_read_as_an_attribute_is_imported_and_named():
    code = textwrap.dedent('''
        import sys, torch
        from variants.torch_modules import import_read_submodules
        source = "import torch\\ndef f(x):\\n    return isinstance(x, torch.distributed.tensor.DTensor) or torch.nn.functional.relu\\n"
        assert "torch.distributed.tensor" not in sys.modules
        got = import_read_submodules(source)
        assert "torch.distributed.tensor" in got, got
        assert "torch.nn.functional" not in got            # imported by torch itself already
        assert torch.distributed.tensor.DTensor is not None
        assert import_read_submodules(source) == ()        # nothing twice
        assert import_read_submodules("torch.no_such_module.x") == ()
        print("ok")
    ''')
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
