"""One-line error summaries name the real cause, not Triton's wrapper (compare/model/errors.py)."""
import ast

from triton.compiler.errors import CompilationError

from compare.model.errors import summarize


def test_a_compile_error_names_its_cause_first():
    source = "def kernel(x):\n    y = undefined_helper(x)\n"
    node = ast.parse(source).body[0].body[0]
    try:
        try:
            raise NameError("name 'undefined_helper' is not defined")
        except NameError as cause:
            raise CompilationError(source, node, repr(cause)) from cause
    except CompilationError as exc:
        line = summarize(exc)
    assert line.startswith("NameError: name 'undefined_helper' is not defined (CompilationError at 2:")
    assert "\n" not in line


def test_a_plain_error_is_its_type_and_first_line_and_last_line():
    assert summarize(ValueError("first\nmiddle\nlast")) == "ValueError: first ... last"
