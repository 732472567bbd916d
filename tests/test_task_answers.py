"""A distributed task's answer (compare/model/task_answers.py): one record whatever ended the task, the same after
its JSON line (task worker to runner) and after pickling (a Dask worker to where the run started)."""
import pickle

import pytest

from compare.model.jsonform import ReportFormatError
from compare.model.states import Failure
from compare.model.task_answers import CrashedVariants, TaskAnswer, TaskState

ANSWERS = [
    TaskAnswer.ok({"case": {"shape": "S", "ratio": "NaN"}, "seconds": [1.5, 2]}, ("stray",)),
    TaskAnswer.error("numerics forward float32 normal S: ValueError: no such dtype"),
    TaskAnswer.lost("its worker process crashed the process (SIGKILL)"),
    TaskAnswer.crashed(CrashedVariants(("a", "b"), "poisoned the CUDA context", "timing float32 S", Failure.TAMPER)),
]


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda a: a.state.value)
def test_an_answer_is_the_same_after_its_json_line_and_after_pickling(answer):
    line = answer.as_json()
    assert "\n" not in line
    assert TaskAnswer.from_json(line) == answer
    assert pickle.loads(pickle.dumps(answer)) == answer
    assert TaskAnswer.from_json(line).state is answer.state


def test_each_kind_of_answer_has_its_own_state_and_keeps_what_it_says():
    ok, error, lost, crashed = ANSWERS
    assert [a.state for a in ANSWERS] == [TaskState.OK, TaskState.ERROR, TaskState.LOST, TaskState.CRASHED]
    assert ok.result["seconds"] == [1.5, 2] and ok.left_behind == ("stray",)
    assert lost.line.endswith("(SIGKILL)") and lost.result is None
    assert crashed.crash.variants == ("a", "b") and crashed.crash.failure is Failure.TAMPER


def test_a_line_of_another_form_is_refused_naming_the_field():
    with pytest.raises(ReportFormatError, match="state"):
        TaskAnswer.from_json('{"state": "fine"}')
