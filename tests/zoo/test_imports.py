"""zoo/ stands in layers (STYLE.md): no module imports another that imports it back, around a circle of any
length; no package (zoo.<package>) imports another that imports it back; and nothing in zoo/ imports
recipes/, the layer above it. Imports are read from the source with `ast`, those inside functions too (an
import put off into a function is the same arrow, only hidden)."""

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def zoo_modules():
    """{module name: its parsed source} for every zoo/**/*.py."""
    return {module_name(path): ast.parse(path.read_text(encoding="utf-8"), str(path))
            for path in sorted((ROOT / "zoo").rglob("*.py"))}


def imported_names(tree, importer):
    """Every module name an `import` or `from ... import` of `tree` (module `importer`) names, anywhere in
    it; `from P import N` names both P and P.N (N may be a module, or a name of P)."""
    package = importer if tree_is_package(importer) else importer.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = ".".join(filter(None, [base if node.level else "", node.module or ""]))
            yield source
            yield from (f"{source}.{alias.name}" for alias in node.names)


def tree_is_package(name):
    return (ROOT / name.replace(".", "/") / "__init__.py").exists()


def module_graph(modules):
    """{module: the zoo modules it imports}: a name that is a module of zoo counts as that module, so
    `from zoo.runs import checkpoints` is an arrow to zoo.runs.checkpoints, and to the package zoo.runs only
    when that package has an __init__.py of its own."""
    return {name: {imported for imported in imported_names(tree, name) if imported in modules and imported != name}
            for name, tree in modules.items()}


def package_of(module):
    """zoo.<package> for a module inside one, else the module itself (zoo, zoo.api)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or tree_is_package(module) else module


def package_graph(graph):
    packages = {}
    for module, imported in graph.items():
        arrows = packages.setdefault(package_of(module), set())
        arrows.update(package_of(other) for other in imported if package_of(other) != package_of(module))
    return packages


def cycles(graph):
    """One circle per strongly connected group of `graph` that has one, as a list of its nodes, the first
    node again at the end (Tarjan's algorithm finds the groups; a path inside each names the circle)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [circle_in(group, graph) for group in groups]


def circle_in(group, graph):
    """A circle through the group's first node, by a breadth-first search back to it inside the group."""
    start = min(group)
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for other in sorted(graph[path[-1]] & group):
            if other == start:
                return path + [start]
            if other not in seen:
                seen.add(other)
                paths.append(path + [other])
    raise AssertionError(f"{sorted(group)} is strongly connected but holds no circle through {start}")


def describe(circles):
    return "; ".join(" -> ".join(circle) for circle in circles)


def test_the_cycle_finder_names_a_circle_of_any_length_and_passes_a_layered_graph():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_an_import_inside_a_function_counts(tmp_path):
    tree = ast.parse("def f():\n    from zoo.pretraining.published import read_checkpoint\n")
    assert "zoo.pretraining.published" in set(imported_names(tree, "zoo.pretraining.checkpoint_checks"))


def test_no_zoo_module_imports_itself_back_around_a_circle():
    found = cycles(module_graph(zoo_modules()))
    assert not found, f"zoo's modules import each other in a circle: {describe(found)}"


def test_no_two_zoo_packages_import_each_other():
    found = cycles(package_graph(module_graph(zoo_modules())))
    assert not found, f"zoo's packages import each other in a circle: {describe(found)}"


def names_recipes(tree, importer):
    """Whether `tree` imports recipes/, or names one of its modules as a whole string (a module to import or
    to run: `python -m recipes.sentiment`, f"recipes.{name}"), not in a sentence."""
    if any(imported.split(".")[0] == "recipes" for imported in imported_names(tree, importer)):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.fullmatch(r"recipes(\.\w+)+", node.value):
            return True
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) and \
                re.fullmatch(r"recipes\.(\w+\.)*", node.values[0].value) and \
                all(isinstance(part, ast.FormattedValue) for part in node.values[1:]):
            return True
    return False


def test_a_module_named_by_a_string_counts_and_a_sentence_does_not():
    assert names_recipes(ast.parse('command = ["-m", f"recipes.{recipe}"]'), "zoo.api")
    assert names_recipes(ast.parse('importlib.import_module("recipes.sentiment")'), "zoo.api")
    assert not names_recipes(ast.parse('message = f"run recipes.{recipe} there"'), "zoo.runs.run_dir")


def test_no_zoo_module_imports_recipes():
    modules = zoo_modules()
    upward = sorted(name for name, tree in modules.items() if names_recipes(tree, name))
    assert not upward, f"{', '.join(upward)} import or run recipes/, the layer above zoo/: move what they need into zoo/."
