"""The result model's JSON form loads back into the same records."""
import json

import pytest

from compare.results import (Environment, NumericsCase, NumericsSection, OutputError, PairBitwise, PairVerdict, Report,
                             VariantNumerics, VariantInfo, from_dict, to_dict)


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
                            direction="backward", verdicts=(PairVerdict("torch", "a", False, "less accurate", ("dx: x",)),),
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
