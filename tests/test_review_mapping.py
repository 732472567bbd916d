"""review's mapping of changed ops to a family and a call (compare/review/mapping.py, calls.py): torch-style and
Liger-style parameter names through the families' aliases and neutral constants, tables (the reviewer's
--mapping file before the repository's pyproject.toml) with inline calls, and the line that maps what fits none."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import main
from compare.review import calls, mapping
from compare.review.kernels import Change, ChangedOp, Op, What
from compare.review.kernels import Changes
from compare.model.errors import UsageError

DATA = Path(__file__).resolve().parent / "data"
CE_CALL = "(X, target, None, ignore_index, 0.0, label_smoothing, reduction)[0]"


@pytest.fixture(scope="module")
def families():
    from variants import registry
    return registry().families


def _changed(name: str, params: str, required: int | None = None, defaults: tuple[str, ...] = (),
             returns_tuple: bool = False, base: Op | None = None, kernel: str = "_k") -> ChangedOp:
    names = tuple(p.strip() for p in params.split(",") if p.strip())
    op = Op(name, names, len(names) if required is None else required, returns_tuple, defaults)
    return ChangedOp("lib/ops.py", "lib.ops", op, base or op, (f"lib.ops:{kernel}",), (What(Change.KERNEL, kernel),))


def _plan(families, *ops: ChangedOp, table=None):
    changes = Changes()
    changes.ops = list(ops)
    return mapping.plan(changes, table or {}, families)


def test_torch_style_layer_norm_maps_with_normalized_shape_in_the_family_order(families):
    [target], [], [] = _plan(families, _changed("layer_norm", "input, normalized_shape, weight, bias, eps", 2,
                                            ("None", "None", "1e-05")))
    assert target.family == "layer_norm"
    assert target.spec("n", "R") == "n=git:R:lib/ops.py::layer_norm(X, normalized_shape, W, B, eps)"
    assert target.how.startswith("matched by parameter names: layer_norm takes layer_norm's op arguments (X, W, B, eps)")
    assert target.what == (What(Change.KERNEL, "_k"),)


def test_the_normalized_shape_is_the_last_dimension_as_a_tuple(families):
    import torch
    for name in ("layer_norm", "rms_norm"):
        family = families[name]
        shape = family.parse_shape("4,96").shapes[0]
        args = family.op_arguments(family.make_inputs(shape, torch.float32, "cpu", 0), shape)
        assert args["normalized_shape"] == (96,) and tuple(args["X"].shape) == (4, 96)


def test_torch_style_rms_norm_is_not_taken_for_layer_norm(families):
    [target], [], [] = _plan(families, _changed("rms_norm", "input, normalized_shape, weight, eps", 2, ("None", "None")))
    assert target.family == "rms_norm" and target.call.text() == "(X, normalized_shape, W, eps)"


def test_group_norm_with_ligers_names_maps_in_the_family_order(families):
    [target], [], [] = _plan(families, _changed("LigerGroupNormFunction.apply",
                                            "X, affine_scaling_weight, affine_shifting_bias, num_channels, num_groups, eps"))
    assert target.family == "group_norm" and target.call is None
    assert "affine_scaling_weight as W, affine_shifting_bias as B" in target.how
    [torch_style], [], [] = _plan(families, _changed("group_norm", "input, num_groups, weight, bias, eps", 2,
                                                 ("None", "None", "1e-05")))
    assert torch_style.family == "group_norm" and torch_style.call.text() == "(X, num_groups, W, B, eps)"


def test_torch_style_cross_entropy_passes_its_unused_parameters_as_neutral_constants(families):
    op = _changed("cross_entropy", "input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing",
                  2, ("None", "None", "-100", "None", "'mean'", "0.0"))
    [target], [], [] = _plan(families, op)
    assert target.family == "cross_entropy"
    assert target.call.text() == "(X, target, None, None, ignore_index, None, reduction, label_smoothing)"
    assert "constants weight=None, size_average=None, reduce=None" in target.how


def test_a_tuple_result_takes_element_0_and_a_skipped_default_is_passed_as_its_literal(families):
    op = _changed("LigerCrossEntropyFunction.apply", "_input, target, weight, ignore_index, lse_square_scale, "
                  "label_smoothing, reduction, softcap, return_z_loss", 3,
                  ("-100", "0.0", "0.0", '"mean"', "None", "False"), returns_tuple=True)
    [target], [], [] = _plan(families, op)
    assert target.call.text() == CE_CALL
    assert target.how.endswith("its result's element 0 taken as loss")
    assert target.spec("ce.head", "abc") == f"ce.head=git:abc:lib/ops.py::LigerCrossEntropyFunction.apply{CE_CALL}"


def test_a_default_that_is_no_literal_is_passed_by_keyword_after_it(families):
    [target], [], [] = _plan(families, _changed("norm", "x, weight, dtype, eps", 2, ("torch.float32", "1e-6")))
    assert target.family == "rms_norm" and target.call.text() == "(X, W, eps=eps)"
    [], [unmapped], [] = _plan(families, _changed("Norm.apply", "x, weight, dtype, eps", 2, ("torch.float32", "1e-6")))
    assert "takes its arguments by position only" in unmapped.why


def test_a_table_line_with_a_call_is_used_verbatim(families):
    table = mapping.read_table('[tool.kernel-ab.kernels]\n"lib.ops:CE" = { family = "cross_entropy", '
                               f'call = "{CE_CALL}" }}\n')
    [target], [], [] = _plan(families, _changed("CE.apply", "logits, labels, w, a, b, c, d"), table=table)
    assert target.family == "cross_entropy" and target.call.text() == CE_CALL
    assert target.how == f"[tool.kernel-ab.kernels] maps lib.ops:CE to cross_entropy with the call {CE_CALL}"


def test_the_reviewers_file_overrides_the_repositorys_table(families, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('[tool.kernel-ab.kernels]\n"lib.ops:_k" = "layer_norm"\n')
    repo = mapping.read_table('[tool.kernel-ab.kernels]\n"lib.ops:norm" = "rms_norm"\n')
    op = _changed("norm", "X, W, eps, B", 3, ("None",))   # rms_norm and layer_norm both take it
    [target], [], [] = _plan(families, op, table={**repo, **mapping.read_file(str(path))})
    assert target.family == "layer_norm"   # its kernel's line, the reviewer's, over the repository's op line
    assert target.how.startswith(f"--mapping {path}'s [tool.kernel-ab.kernels] maps lib.ops:_k to layer_norm")
    [by_repo], [], [] = _plan(families, op, table=repo)
    assert by_repo.family == "rms_norm" and by_repo.how.startswith("[tool.kernel-ab.kernels] maps lib.ops:norm")
    [by_names], [], [] = _plan(families, op)
    assert by_names.family == "layer_norm"   # every layer_norm argument, in its own order, over some of rms_norm's


@pytest.mark.parametrize("text, says", [
    ("[tool.kernel-ab.kernels\n", "not TOML"),
    ('[tool.kernel-ab.kernels]\n"m:k" = 3\n', '"m:k" = 3 does not'),
    ('[tool.kernel-ab.kernels]\n"m:k" = { family = "rms_norm", call = "(X, W" }\n', '"m:k": call'),
    ('[tool.kernel-ab.kernels]\n"m:k" = { family = "rms_norm", calls = "(X)" }\n', '"m:k" = '),
    ('[tool.kernel-ab.kernels]\n"m:k" = { family = "rms_norm", call = "(X, f(W))" }\n', "is not a name of the family's op arguments nor a constant"),
    ("[project]\n", "no [tool.kernel-ab.kernels] table"),
])
def test_a_bad_mapping_file_is_one_usage_error_naming_the_file_and_key(tmp_path, text, says):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as err:
        mapping.read_file(str(path))
    assert str(err.value).startswith(f"--mapping {path}: ") and says in str(err.value)
    assert "\n" not in str(err.value)


def test_a_bad_mapping_file_exits_2_with_one_line(tmp_path, capsys):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "one"], check=True)
    (tmp_path / "bad.toml").write_text("[tool.kernel-ab.kernels\n")
    assert main.main(["review", "--repo", str(tmp_path), "HEAD", "HEAD", "--mapping", str(tmp_path / "bad.toml")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"kernel-ab: error: --mapping {tmp_path / 'bad.toml'}: not TOML")


def test_a_call_naming_no_argument_of_the_family_is_a_usage_error_naming_the_key(families):
    table = {"lib.ops:f": mapping.TableEntry("rms_norm", calls.parse_call("(X, weights)"), "--mapping m.toml", True)}
    with pytest.raises(UsageError, match=r"^--mapping m.toml: \[tool.kernel-ab.kernels\] \"lib.ops:f\": .* 'weights'"):
        _plan(families, _changed("f", "a, b"), table=table)


def test_an_op_nothing_fits_is_unmapped_with_the_line_that_maps_it(families):
    [], [unmapped], [] = _plan(families, _changed("f", "X, W, eps, offset, foo"))
    assert unmapped.family == "rms_norm" and unmapped.why.endswith("no rms_norm op argument matches foo")
    assert unmapped.refused.startswith("rms_norm's op has no argument foo (its arguments: X, W, eps")
    [], [none], [] = _plan(families, _changed("scale", "x, factor"))
    assert "factor matches no op argument of" in none.why
    assert none.refused == "no registered family's op takes factor"
    [], [lacking], [] = _plan(families, _changed("f", "X, eps"))
    assert lacking.fix == '"lib.ops:f" = { family = "<family>", call = "(X, eps)" }' and not lacking.refused


def test_of_two_ops_standing_for_the_same_change_the_better_fit_is_compared_and_the_other_judged_through_it(families):
    wrapper, function = _changed("rms_norm", "x, weight, foo"), _changed("RMSFunction.apply", "X, W, eps, offset, casting_mode")
    [target], [], [through] = _plan(families, wrapper, function)
    assert target.callable == "RMSFunction.apply"
    assert (through.op, through.what, through.through) == ("lib.ops:rms_norm", wrapper.what, ("lib.ops:RMSFunction",))


def test_an_op_fitting_a_family_less_well_than_another_for_the_same_change_is_judged_through_it(families):
    named, fitted = _changed("norm", "X, W, eps, offset, casting_mode"), _changed("Norm.apply", "X, W, eps, offset, casting_mode")
    table = {"lib.ops:Norm": "rms_norm"}   # its line ranks Norm above norm, whose parameters fit as well
    [target], [], [through] = _plan(families, fitted, named, table=table)
    assert (target.callable, through.op, through.through) == ("Norm.apply", "lib.ops:norm", ("lib.ops:Norm",))


def test_every_changed_op_is_compared_unmapped_or_judged_through_another_exactly_once(families):
    ops = [_changed("rms_norm", "x, weight, foo"), _changed("RMSFunction.apply", "X, W, eps, offset, casting_mode"),
           _changed("scale", "x, factor", kernel="_scale"), _changed("Norm.apply", "X, W, eps, offset, casting_mode")]
    targets, unmapped, through = _plan(families, *ops)
    planned = [t.key for t in targets] + [u.kernel for u in unmapped] + [j.op for j in through]
    assert sorted(planned) == sorted(mapping.op_key(op) for op in ops)
    assert [u.kernel for u in unmapped] == ["lib.ops:scale"]   # its kernel no compared op covers


def test_an_op_called_otherwise_at_base_is_not_compared(families):
    base = Op("f", ("X", "W", "B"), 3)
    [], [unmapped], [] = _plan(families, _changed("f", "X, W, B, eps", base=base))
    assert unmapped.family == "layer_norm" and unmapped.mapped
    assert unmapped.why == ("its parameters fit layer_norm, but f(X, W, B) at BASE is not called as f(X, W, B, eps) "
                            "at HEAD is; compare it by hand")


@pytest.mark.parametrize("text", [CE_CALL, "(X, W, eps=eps)", "(a, b, mode='x', n=-1, flag=True)"])
def test_a_call_reads_back_as_its_text(text):
    assert calls.parse_call(text).text() == text


@pytest.mark.parametrize("text", ["X, W", "(X)[-1]", "(X)(W)", "(*X)", "(X, **kw)", "(X)[0][1]", "(1e999)"])
def test_a_malformed_call_is_refused(text):
    with pytest.raises(ValueError):
        calls.parse_call(text).names   # noqa: B018 (parse_call raises before .names)


def _corpus() -> Path:
    return Path(os.environ.get("KERNEL_AB_CORPUS") or Path(__file__).resolve().parents[1].parent / "shared" / "corpus")


def test_the_corpus_mapping_file_compares_ligers_cross_entropy_function_as_called(families, tmp_path):
    bundle = _corpus() / "liger-kernel-prs.bundle"
    if not bundle.exists():
        pytest.skip(f"no corpus at {bundle} (set KERNEL_AB_CORPUS)")
    from compare.review.kernels import changes
    from compare.review.revisions import Repository
    subprocess.run(["git", "clone", "-q", str(bundle), str(tmp_path / "liger")], check=True)
    repo = Repository(str(tmp_path / "liger"))
    found = changes(repo, repo.commit("ce1329_base", "BASE"), repo.commit("ce1329_head", "HEAD"))
    [target], [fused], [] = mapping.plan(found, mapping.read_file(str(DATA / "liger_mapping.toml")), families)
    # the fused linear cross entropy launches the changed kernel too, and no family is a linear layer's
    assert fused.kernel == "liger_kernel.ops.fused_linear_cross_entropy:LigerFusedLinearCrossEntropyFunction"
    assert "no family's op arguments fit it" in fused.why
    assert (target.callable, target.family, target.call.text()) == ("LigerCrossEntropyFunction.apply", "cross_entropy",
                                                                    CE_CALL)
    assert "liger_kernel.ops.cross_entropy:liger_cross_entropy_kernel" in target.kernels
