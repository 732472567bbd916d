"""variants/spec.py: the text of a --variant (NAME=[git:REV:]PATH::CALLABLE[(ARGS)]) read into a Spec;
a malformed one is BadSpec with one line."""
import re

import pytest

from variants.spec import BadSpec, CallMap, Literal, parse


def test_a_spec_says_where_its_code_is_and_what_to_take():
    s = parse("a=git:origin/main:pkg/k.py::fwd")
    assert (s.name, s.rev, s.path, s.function, s.call) == ("a", "origin/main", "pkg/k.py", "fwd", None)
    assert s.where == "git:origin/main:pkg/k.py::fwd" and s.text == "a=git:origin/main:pkg/k.py::fwd"
    s = parse("b=some/dir/k.py::fwd")
    assert (s.name, s.rev, s.path, s.function) == ("b", None, "some/dir/k.py", "fwd")
    assert s.where == "some/dir/k.py::fwd"
    s = parse("c=odd::dir/k.py::fwd")   # the last '::' separates the callable
    assert (s.path, s.function) == ("odd::dir/k.py", "fwd")
    with pytest.raises(BadSpec, match="CALLABLE a Python name"):
        parse("c=k.py::not-a-name")


def test_parse_op_specs():
    s = parse("a=git:HEAD:pkg/norm.py::Fn.apply(X, W, B, num_channels, num_groups, eps=eps)")
    assert (s.rev, s.path, s.function) == ("HEAD", "pkg/norm.py", "Fn.apply")
    assert s.call == CallMap(("X", "W", "B", "num_channels", "num_groups"), (("eps", "eps"),))
    assert s.where == "git:HEAD:pkg/norm.py::Fn.apply(X, W, B, num_channels, num_groups, eps=eps)"
    assert parse("b=k.py::fwd,bwd").functions == ("fwd", "bwd")
    assert parse("b=my (copy)/k.py::f(X)").path == "my (copy)/k.py"
    assert parse("b=k.py::fwd").call is None and parse("b=k.py::fwd()").call == CallMap(())
    for bad, message in [("c=k.py::Fn.apply(x, weight", "one list in parentheses at the end"),
                         ("c=k.py::f(x, x)", "argument x is passed twice"),
                         ("c=k.py::f(eps=eps, x)", "positional argument follows keyword argument"),
                         ("c=k.py::f(x)[1:2]", "optionally followed by [INDEX]"),
                         ("c=k.py::f(x, [1, 2])", "nor a constant"),
                         ("c=k.py::f(x, 1e999)", "nor a constant"),   # inf: no literal to write it back as
                         ("c=k.py::f(*x)", "*args and **kwargs are not an argument mapping"),
                         ("c=k.py::f(x+1)", "is not a name of the family's op arguments"),
                         ("c=k.py::Fn..apply", "CALLABLE a Python name or dotted path"),
                         ("c=k.py::fwd,bwd(X)", "an argument list is for an op")]:
        with pytest.raises(BadSpec, match=re.escape(message)):
            parse(bad)


def test_an_op_call_takes_constants_keywords_and_the_element_of_its_result():
    s = parse("ce=git:HEAD:ops/ce.py::Fn.apply(X, target, None, ignore_index, 0.0, label_smoothing, "
              "reduction=reduction, softcap=None, tag='a, (b)', flag=False)[0]")
    assert s.function == "Fn.apply"
    assert s.call.positional == ("X", "target", Literal(None), "ignore_index", Literal(0.0), "label_smoothing")
    assert s.call.keywords == (("reduction", "reduction"), ("softcap", Literal(None)), ("tag", Literal("a, (b)")),
                               ("flag", Literal(False)))
    assert s.call.select == 0
    assert s.call.names == ("X", "target", "ignore_index", "label_smoothing", "reduction")
    assert parse(s.text).call == s.call   # the text it shows reads back as the same call
    assert s.call.text() == ("(X, target, None, ignore_index, 0.0, label_smoothing, reduction=reduction, "
                             "softcap=None, tag='a, (b)', flag=False)[0]")
    assert parse("n=k.py::f(X, -1, 1e-5)").call.positional == ("X", Literal(-1), Literal(1e-5))
