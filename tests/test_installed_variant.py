"""--variant NAME=package.module:CALLABLE loads a kernel from an importable (installed) package, as Python's
module:attr names it; a package or module that is not there, or a bad form, is one line and exit 2."""
import shutil
import sys
from pathlib import Path

import pytest
import torch

import main
from compare.checks import numerics
from compare.runtime.backend import configure
from variants import registry
from variants.external import BadSpec, ExternalKernels
from variants.spec import parse

ROOT = Path(__file__).resolve().parent.parent
BACKEND = configure("auto")
REG = registry()
RMS = REG.family("rms_norm")


@pytest.fixture
def released(tmp_path, monkeypatch):
    """`relpkg`, a package on sys.path holding rms_norm's explicit-offset kernels and their helpers."""
    pkg = tmp_path / "relpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("common", "explicit_offset"):
        text = (ROOT / "variants" / "rms_norm" / f"{name}.py").read_text()
        (pkg / f"{name}.py").write_text(text.replace("variants.rms_norm", "relpkg"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for key in [k for k in sys.modules if k.split(".")[0] == "relpkg"]:
        del sys.modules[key]
    shutil.rmtree(pkg)


def test_a_kernel_from_a_package_runs_as_the_registered_one(released):
    with ExternalKernels() as kernels:
        variant = kernels.load("rel=relpkg.explicit_offset:rms_norm_forward,rms_norm_backward", RMS)
        assert variant.kernel is sys.modules["relpkg.explicit_offset"].rms_norm_forward
        assert variant.own_kernels == ("forward", "backward")
        assert variant.origin.startswith(f"relpkg.explicit_offset:rms_norm_forward,rms_norm_backward ({released})")
        shape = RMS.parse_shape("3,40").shapes[0]
        for direction in ("forward", "backward"):
            case = numerics.run_case(RMS, [REG.get("explicit_offset", "rms_norm"), variant], shape, torch.float32,
                                     BACKEND, (0,), direction=direction)
            assert [v.status for v in case.variants] == ["pass", "pass"]
            assert all(p.equal for p in case.pairs)   # same code, same bits


@pytest.mark.parametrize("text, says", [
    ("a=relpkg.nope:rms_norm_forward", "no module relpkg.nope in the installed relpkg"),
    ("a=no_such_package_here.mod:fn", "no module no_such_package_here is installed"),
    ("a=relpkg.explicit_offset:missing", "relpkg.explicit_offset has no function missing"),
    ("a=relpkg.explicit_offset:rms_norm_forward(X, W)", "an argument list is for ops only"),
])
def test_a_bad_installed_spec_is_one_line(released, text, says):
    with ExternalKernels() as kernels, pytest.raises(BadSpec) as err:
        kernels.load(text, RMS)
    assert says in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("text", ["a=relpkg/explicit_offset.py:fn", "a=relpkg.mod:", "a=relpkg mod:fn"])
def test_a_malformed_module_spec_is_refused(text):
    with pytest.raises(BadSpec, match="module"):
        parse(text)


def test_the_command_line_refuses_a_package_not_installed(capsys):
    code = main.main(["compare", "--family", "rms_norm", "--variant", "a=no_such_package_here.mod:fn",
                      "--check", "numerics", "--shape", "2,8", "--trials", "1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("kernel-ab: error: --variant a: no module no_such_package_here is installed")
