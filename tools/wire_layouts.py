# SPDX-License-Identifier: Apache-2.0
"""The wire layouts of every generation, as vmetrics' own tables state them.

The generators under tools/ take their SchedulerStats key lists (which keys, in which order)
and EngineCoreOutput field lists from here instead of keeping copies of their own. The data is
tests/fixtures/wire_layouts.json, which `vmetrics wire-reference --json` prints from the tables
the decoder runs on (src/protocol/wire_generations.cc); tools/regen_docs.sh rewrites it, and
the ctest wire_reference_current fails when it is stale. Reading a committed file keeps
tools/regen.sh free of a build.

What a field holds (its values, its defaults) stays with each generator: only the layout is
shared.
"""

import json
import os

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests",
                    "fixtures", "wire_layouts.json")

with open(PATH, encoding="utf-8") as _f:
    _LAYOUTS = json.load(_f)

_BY_NAME = {g["name"]: g for g in _LAYOUTS["generations"]}


def generation(name):
    """The layout of generation `name` ("g20260814-6adad087"), as a dict (see the JSON)."""
    if name not in _BY_NAME:
        raise KeyError(f"{name}: no such wire generation in {PATH}")
    return _BY_NAME[name]


def scheduler_stats_keys(name):
    """SchedulerStats keys of generation `name`, in declaration order, as a tuple."""
    return tuple(generation(name)["scheduler_stats_keys"])


def output_fields(name):
    """EngineCoreOutput fields of generation `name`, position by position, as a tuple."""
    return tuple(generation(name)["output_fields"])


def scheduler_stats_field_names():
    """Every SchedulerStats key of any generation, in the field table's order."""
    return tuple(row["name"] for row in _LAYOUTS["scheduler_stats_fields"])


def _factory_of(python_type, nested):
    # vLLM's stats dataclasses default every field to its type's empty value: None for an
    # Optional, 0, 0.0, False, an empty list or dict, or a fresh nested dataclass.
    if python_type.endswith("| None"):
        return lambda: None
    if python_type in ("int", "float", "bool"):
        return {"int": int, "float": float, "bool": bool}[python_type]
    if python_type.startswith("list["):
        return list
    if python_type.startswith("dict["):
        return dict
    return nested[python_type]


def scheduler_stats_factories(name, nested):
    """[(key, default factory)] for SchedulerStats of generation `name`, in declaration order.

    `nested` maps the type name of a non-Optional nested dataclass ("PrefixCacheStats") to a
    function returning a fresh value of it.
    """
    types = {row["name"]: row["python_type"] for row in _LAYOUTS["scheduler_stats_fields"]}
    return [(key, _factory_of(types[key], nested)) for key in scheduler_stats_keys(name)]


def scheduler_stats_defaults(name, nested):
    """SchedulerStats of generation `name` as a map at its defaults, keys in declaration order
    (`nested` as for scheduler_stats_factories)."""
    return {key: factory() for key, factory in scheduler_stats_factories(name, nested)}
