"""The result model's JSON form loads back into the same records."""
import dataclasses
import json

import pytest

from compare.model.skips import Skip

from compare.model.results import (Accuracy, Environment, NumericsCase, NumericsSection, OutputError, PairBitwise,
                                   PairVerdict, Report, ReportFormatError, ShapeParams, Status, VariantNumerics,
                                   VariantInfo, from_dict, to_dict)


def sample_report() -> Report:
    err = OutputError("y", "float32", 96, 1e-6, float("inf"), 3.0, 0, 1.3e-6, 1e-5, 0, 0, 0, 0)
    case = NumericsCase("N2 C8 G2 S24", "float32", "normal", (0, 1),
                        variants=(),
                        pairs=(PairBitwise("a", "b", "y", 96, 2, (0, 1, 2)),))
    case = NumericsCase(case.shape, case.dtype, case.input_kind, case.seeds,
                        (VariantNumerics("a", "pass", (), (err,)),), case.pairs)
    backward = NumericsCase("N2 C8 G2 S24", "bfloat16", "huge", (0,),
                            (VariantNumerics("a", "untrusted", ("not trustworthy",)),
                             VariantNumerics("torch", "fail", ("dx: ...",), (err,))), (),
                            direction="backward", verdicts=(PairVerdict("torch", "a", "less accurate", "B worse", ("dx: x",), ("dx",)),),
                            reference="torch")
    return Report("group_norm", "default", "float32", "a",
                  (VariantInfo("a", "group_norm", "triton", "why", "here"),),
                  Environment(device="cpu", command="python main.py compare"),
                  shapes=("N2 C8 G2 S24",), numerics=NumericsSection("cpu", "note", (case, backward), 2.0, "torch",
                                                                     ("plan",)))


def test_round_trip_is_exact():
    report = sample_report()
    text = json.dumps(to_dict(report), allow_nan=False)
    back = from_dict(json.loads(text))
    assert back == report
    assert back.numerics.cases[0].pairs[0].first_diff == (0, 1, 2)
    assert back.numerics.cases[0].variants[0].outputs[0].rel_l2 == float("inf")
    assert back.numerics.cases[1].verdicts[0].detail == ("dx: x",) and back.numerics.cases[1].direction == "backward"


def test_other_schema_version_is_refused():
    data = to_dict(sample_report())
    data["schema_version"] = 999
    with pytest.raises(ValueError, match="schema version 999"):
        from_dict(data)


def test_schema_1_report_migrates_its_yes_no_verdicts():
    data = to_dict(sample_report())
    data["schema_version"] = 1
    old = data["numerics"]["cases"][1]["verdicts"][0]
    for k in ("accuracy", "lost", "gained"):
        del old[k]
    old.update(as_accurate=False, basis="less accurate", detail=["dx: 3 non-finite", "dW: rel L2 1 against 0"])
    data["numerics"]["cases"][1]["verdicts"].append(dict(a="torch", b="a", as_accurate=True, basis="bitwise equal",
                                                         detail=[]))
    back = from_dict(data)
    lost, same = back.numerics.cases[1].verdicts
    assert (lost.accuracy, lost.lost, lost.basis) == ("less accurate", ("dx", "dW"), "B worse")
    assert (same.accuracy, same.basis) == ("as accurate", "bitwise equal")
    assert data["schema_version"] == 1   # the caller's dict is left as it was


def test_schema_2_skipped_lines_load_as_records_of_check_part_and_why():
    data = to_dict(sample_report())
    data["schema_version"] = 2
    data["skipped"] = ["timing float32: its process ended with exit code 1",
                       "timing backward, full: family swiglu has no backward pass",
                       "ir: bfloat16 (the compiled code is shown for float32: the first dtype asked for)"]
    back = from_dict(data)
    assert back.skipped == (Skip("timing", "its process ended with exit code 1", "float32"),
                            Skip("timing", "family swiglu has no backward pass", "backward, full"),
                            Skip("ir", "bfloat16 (the compiled code is shown for float32: the first dtype asked for)"))
    assert [str(s) for s in back.skipped] == data["skipped"]   # the words a reader saw are kept
    assert from_dict(to_dict(back)).skipped == back.skipped


def test_ulps_of_max_is_measured_at_the_largest_reference_value():
    e = OutputError("y", "float32", 96, 2 ** -20, 0.0, 1e6, 0, 1.3e-6, 1e-5, 0, 0, 0, 0, ref_max=3.0)
    assert e.ulps_of_max == 4.0     # an ULP at 3.0 in float32 is 2**-22


def test_states_and_shape_parameters_load_back_typed_and_are_written_as_an_object():
    values = {"channels": 8, "reads_x_twice": True, "spatial": [256]}
    report = dataclasses.replace(sample_report(), shape_params=(ShapeParams(values),))
    data = to_dict(report)
    assert data["shape_params"] == [values]   # typed data, not JSON text inside JSON
    back = from_dict(json.loads(json.dumps(data)))
    assert back.shape_params[0].values == values
    assert back.reads_x_twice == (True,)
    variant = back.numerics.cases[1].variants[0]
    assert variant.status is Status.UNTRUSTED and f"{variant.status}" == "untrusted"
    assert back.numerics.cases[1].verdicts[0].accuracy is Accuracy.LESS
    data["shape_params"] = [[1, 2]]
    with pytest.raises(ReportFormatError, match=r"shape_params\[0\]"):
        from_dict(data)


def test_schema_3_shape_parameters_held_as_json_text_load_as_objects():
    data = to_dict(sample_report())
    data["schema_version"] = 3
    data["shape_params"] = ['{"channels": 8, "reads_x_twice": true, "spatial": [256]}']
    back = from_dict(data)
    assert back.schema_version == 4 and back.shape_params[0].values["spatial"] == [256]
    assert back.reads_x_twice == (True,) and back.environment.kernel_ab_version == "" and back.interrupted is None
    data["shape_params"] = ["[1, 2]"]   # JSON text, but of no object: named, as any field of the wrong type
    with pytest.raises(ReportFormatError, match=r"shape_params\[0\]"):
        from_dict(data)


def test_an_interruption_says_how_far_the_run_got_and_what_never_ran():
    from compare.model.results import Interruption
    stop = Interruption("interrupted (Ctrl-C)", 3, 12, ("backward", "timing", "ir"))
    assert stop.text() == "interrupted (Ctrl-C) after 3 of 12 cases: backward, timing and compiled code not run"
    assert Interruption("terminated (SIGTERM)", 1, 2, ("ir",)).text() == \
        "terminated (SIGTERM) after 1 of 2 cases: compiled code not run"
    assert [(s.check, s.interrupted) for s in stop.skips()] == [("backward", True), ("timing", True), ("ir", True)]
    report = dataclasses.replace(sample_report(), interrupted=stop)
    assert from_dict(json.loads(json.dumps(to_dict(report)))).interrupted == stop
