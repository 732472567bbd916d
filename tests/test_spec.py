"""variants/spec.py: the text of a --variant (NAME=[git:REV:]PATH::CALLABLE[(ARGS)]) read into a Spec;
a malformed one is BadSpec with one line."""
import pytest

from variants.spec import BadSpec, CallMap, parse


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
                         ("c=k.py::f(eps=eps, x)", "positional argument 'x' after a keyword one"),
                         ("c=k.py::f(x+1)", "is not a name of the family's op arguments"),
                         ("c=k.py::Fn..apply", "CALLABLE a Python name or dotted path"),
                         ("c=k.py::fwd,bwd(X)", "an argument list is for an op")]:
        with pytest.raises(BadSpec, match=message.replace("(", r"\(").replace("+", r"\+")):
            parse(bad)
