"""variants/ imports one way: the family protocol is a leaf, the families import only the protocol, the
loading machinery imports the protocol and itself, and nothing under variants/ imports compare/. Every
import counts: module level, inside functions and under TYPE_CHECKING (read from the source, nothing run)."""
import ast
from pathlib import Path

VARIANTS = Path(__file__).resolve().parent.parent / "variants"
PROTOCOL = {"variants.family", "variants.operands", "variants.inputs", "variants.rows", "variants.variant",
            "variants.baselines", "variants.call_values", "variants.recorded_growth"}
LOADING = {"variants", "variants.catalog", "variants.discovery", "variants.external", "variants.git_tree",
           "variants.isolation", "variants.kernel_checks", "variants.listing", "variants.ops", "variants.spec",
           "variants.torch_modules", "variants.waiting", "variants.recorded", "variants.recorded_build"}


def _module(path: Path) -> str:
    parts = path.relative_to(VARIANTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every kernel-ab module `path` imports, wherever the import statement is."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names
                         if (VARIANTS.parent / node.module.replace(".", "/") / f"{a.name}.py").is_file())
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] in ("variants", "compare", "main")}


GRAPH = {_module(p): _imports(p) for p in VARIANTS.rglob("*.py")}


def _layer(module: str) -> str:
    if module in PROTOCOL:
        return "protocol"
    if module in LOADING:
        return "loading"
    return "family"


def test_every_module_of_variants_is_in_one_layer():
    families = {m for m in GRAPH if _layer(m) == "family"}
    assert {m.split(".")[1] for m in families} == {"group_norm", "layer_norm", "rms_norm", "swiglu", "cross_entropy"}
    assert PROTOCOL | LOADING <= set(GRAPH)


def test_the_protocol_imports_only_the_protocol():
    wrong = {m: sorted(i for i in GRAPH[m] if i not in PROTOCOL) for m in PROTOCOL}
    assert {m: w for m, w in wrong.items() if w} == {}


def test_a_family_imports_the_protocol_and_its_own_package_only():
    def allowed(module, imported):
        own = ".".join(module.split(".")[:2])
        return imported in PROTOCOL or imported == own or imported.startswith(own + ".")
    wrong = {m: sorted(i for i in imports if not allowed(m, i))
             for m, imports in GRAPH.items() if _layer(m) == "family"}
    assert {m: w for m, w in wrong.items() if w} == {}


def test_loading_imports_no_comparison_code_and_no_family():
    wrong = {m: sorted(i for i in GRAPH[m] if _layer(i) == "family" or not i.startswith("variants"))
             for m in LOADING}
    assert {m: w for m, w in wrong.items() if w} == {}


def test_there_is_no_import_circle_in_variants():
    def circle_from(start):
        stack, seen = [(start, (start,))], set()
        while stack:
            module, path = stack.pop()
            for nxt in GRAPH.get(module, ()):
                if nxt == start:
                    return path + (nxt,)
                if nxt in GRAPH and nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, path + (nxt,)))
        return None
    circles = [c for c in map(circle_from, sorted(GRAPH)) if c]
    # a family's package and its own modules may import each other (the kernels' shared code); nothing else
    assert [c for c in circles if len({".".join(m.split(".")[:2]) for m in c}) > 1] == []
