"""YAML (and JSON) read so that nothing is lost or buried: PyYAML's safe loader, refusing a mapping that names a
key twice (YAML would keep the last, in silence) and a document whose aliases expand past MAX_VALUES values (a
"billion laughs": a few hundred bytes that hold 9**9 values, which whoever walks them, or shows them in an
error, pays for). zoo.core.config reads config files and overrides' values with it."""

import yaml

MAX_VALUES = 100_000  # values a config document may hold, its aliases expanded: a run's config.json holds ~100


class Refused(ValueError):
    """A document refused: a key given twice, too many values through aliases, an alias inside itself."""


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that names a key twice (the line of each)."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` merges on purpose
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class names it
                break
            if first is not None:
                raise Refused(f"line {line}: {key!r} is given twice in one mapping (first at line {first}), and "
                              "YAML would keep only the last: give it once.")
            seen[key] = line
        return super().construct_mapping(node, deep)


def load(text, where):
    """The value a YAML (or JSON) document holds, read by `_Loader`; a document whose aliases expand past
    MAX_VALUES values is refused before it is built. Refused names `where` (a file, an override)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _count_values(node, {}, set(), where)
        return loader.construct_document(node)
    except Refused as error:
        raise Refused(f"{where}, {error}" if str(error).startswith("line ") else str(error)) from None
    except RecursionError:
        raise Refused(f"{where} is nested too deeply to be a config.") from None
    finally:
        loader.dispose()


def _count_values(node, counted, open_nodes, where):
    """The values `node` holds with its aliases expanded (each node counted once, then by reference)."""
    if id(node) in counted:
        return counted[id(node)]
    if id(node) in open_nodes:
        raise Refused(f"{where} holds an alias inside the value it names (line {node.start_mark.line + 1}): "
                      "a config is a tree.")
    open_nodes.add(id(node))
    children = [item for pair in node.value for item in pair] if isinstance(node, yaml.MappingNode) else \
        node.value if isinstance(node, yaml.SequenceNode) else []
    total = 1 + sum(_count_values(child, counted, open_nodes, where) for child in children)
    open_nodes.discard(id(node))
    if total > MAX_VALUES:
        raise Refused(f"{where} expands to more than {MAX_VALUES:,} values through its aliases (a config holds "
                      "a few hundred): write it without aliases that repeat each other.")
    counted[id(node)] = total
    return total
